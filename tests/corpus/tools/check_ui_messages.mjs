// Validates every line of tests/corpus/ai-sdk-ui/*.jsonl with validateUIMessages from the `ai` package.
// usage: node check_ui_messages.mjs CORPUS_DIR   (run where `ai` and `zod` are installed)
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
const require = createRequire(process.cwd() + '/');
const { validateUIMessages } = require('ai');
const dir = join(process.argv[2], 'ai-sdk-ui');
let failures = 0;
for (const name of readdirSync(dir).sort()) {
  if (!name.endsWith('.jsonl')) continue;
  const lines = readFileSync(join(dir, name), 'utf8').split('\n').filter(l => l.trim());
  for (const [i, text] of lines.entries()) {
    const line = JSON.parse(text);
    const messages = line.messages.map(({ x_stowage, ...m }) => m);
    try {
      await validateUIMessages({ messages });
      console.log(`ai-sdk-ui/${name}:${i + 1}: ok`);
    } catch (e) {
      const expected = name.includes('future');
      if (!expected) failures++;
      console.log(`ai-sdk-ui/${name}:${i + 1}: INVALID${expected ? ' (expected: newer than AI SDK 5)' : ''} ${String(e.message).slice(0, 400)}`);
    }
  }
}
console.log('failures:', failures);
process.exit(failures ? 1 : 0);
