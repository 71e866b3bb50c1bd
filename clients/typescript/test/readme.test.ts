import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import { PACKAGE_ROOT, startServer, type TestServer } from "./support/server.js";

const run = promisify(execFile);
let server: TestServer;

before(async () => {
  server = await startServer();
});
after(async () => {
  await server?.stop();
});

function jsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? "");
}

test("README-snippet.md has exactly one js block, and README.md shows the same one", async () => {
  const snippet = jsBlocks(await readFile(join(PACKAGE_ROOT, "README-snippet.md"), "utf8"));
  assert.equal(snippet.length, 1);
  const readme = jsBlocks(await readFile(join(PACKAGE_ROOT, "README.md"), "utf8"));
  assert.ok(readme.includes(snippet[0] ?? ""), "README.md's quick start is README-snippet.md's block");
});

function checkOutput(stdout: string): void {
  const lines = stdout.trim().split("\n");
  assert.deepEqual(lines.slice(0, 2), ["1 user Weather in Paris?", "2 assistant 18 °C and sunny."]);
  assert.deepEqual(JSON.parse(lines[2] ?? ""), [
    { id: "u1", role: "user", parts: [{ type: "text", text: "Hi!" }] },
    { id: "a1", role: "assistant", parts: [{ type: "text", text: "Hello! How can I help?" }] },
  ]);
}

test("the README snippet runs as-is with node against a real server (installed as a dependency)", async () => {
  const [code] = jsBlocks(await readFile(join(PACKAGE_ROOT, "README-snippet.md"), "utf8"));
  assert.ok(code);
  // A scratch project where `@stowage/client` resolves to this package, as after `npm install`.
  const dir = await mkdtemp(join(tmpdir(), "stowage-snippet-"));
  try {
    await mkdir(join(dir, "node_modules/@stowage"), { recursive: true });
    await symlink(PACKAGE_ROOT, join(dir, "node_modules/@stowage/client"), "dir");
    await writeFile(join(dir, "snippet.mjs"), code);
    const { stdout } = await run(process.execPath, ["snippet.mjs"], {
      cwd: dir,
      env: { ...process.env, STOWAGE_URL: server.url, STOWAGE_TOKEN: server.acmeToken },
    });
    checkOutput(stdout);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("the README snippet runs from the package directory, as .ci/readme-snippets.py runs it", async () => {
  const [code] = jsBlocks(await readFile(join(PACKAGE_ROOT, "README-snippet.md"), "utf8"));
  assert.ok(code);
  // `@stowage/client` resolves to this package by self-reference (its `exports`).
  const script = join(PACKAGE_ROOT, `.readme-snippet-test-${process.pid}.mjs`);
  await writeFile(script, code);
  try {
    const { stdout } = await run(process.execPath, [script], {
      cwd: PACKAGE_ROOT,
      env: { ...process.env, STOWAGE_URL: server.url, STOWAGE_TOKEN: server.acmeToken },
    });
    checkOutput(stdout);
  } finally {
    await rm(script, { force: true });
  }
});
