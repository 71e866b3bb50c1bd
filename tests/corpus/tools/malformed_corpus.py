import json
import os
from lib import *
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'malformed') + '/'

OK = {
 'openai': '{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}',
 'anthropic': '{"system":"s","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"hello"}]}]}',
 'openai-responses': '{"items":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}',
 'ai-sdk-ui': '{"id":"c1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}]}',
 'stowage': '{"conversation_id":"ok-1","messages":[{"role":"user","parts":[{"type":"text","text":"hi"}]}]}',
}

# (file, format or None for auto-detection, lines after the valid first line, expected line, field path prefix, reason hint)
cases = [
 ('syntax-truncated', None, ['{"messages":[{"role":"user","content":"hi"}'], 2, 'column', 'not valid JSON'),
 ('syntax-not-object', None, ['[{"role":"user","content":"hi"}]'], 2, '(line)', 'expected a JSON object'),
 ('blank-lines-counted', 'openai', ['', '   ', '{"messages":[{"role":"user","content":42}]}'], 4, 'messages[0].content', 'expected a string, an array of parts, or null'),
 ('openai-unknown-role', 'openai', ['{"messages":[{"role":"robot","content":"beep"}]}'], 2, 'messages[0].role', 'unsupported role'),
 ('openai-arguments-object', 'openai', ['{"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{"a":1}}}]}]}'], 2, 'messages[1].tool_calls[0].function.arguments', 'expected a string'),
 ('openai-tool-calls-not-array', 'openai', ['{"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":{"id":"c1"}}]}'], 2, 'messages[1].tool_calls', 'expected an array'),
 ('openai-tool-without-call-id', 'openai', ['{"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","content":"r"}]}'], 2, 'messages[2].tool_call_id', 'missing'),
 ('openai-part-without-type', 'openai', ['{"messages":[{"role":"user","content":[{"text":"hi"}]}]}'], 2, 'messages[0].content[0].type', 'missing'),
 ('openai-duplicate-key', 'openai', ['{"messages":[{"role":"user","role":"assistant","content":"x"}]}'], 2, 'messages[0].role', 'duplicate key'),
 ('openai-invalid-base64', 'openai', ['{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,@@not base64@@"}}]}]}'], 2, 'messages[0].content[0].image_url.url', 'invalid base64'),
 ('openai-messages-missing', 'openai', ['{"model":"gpt-4.1"}'], 2, 'messages', 'missing'),
 ('openai-bad-x-stowage', 'openai', ['{"messages":[{"role":"user","content":"x","x_stowage":{"idd":"m1"}}]}'], 2, 'messages[0].x_stowage', 'unknown field'),
 ('anthropic-input-not-object', 'anthropic', ['{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":"{\\"a\\":1}"}]}]}'], 2, 'messages[1].content[0].input', 'expected an object'),
 ('anthropic-is-error-not-bool', 'anthropic', ['{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r","is_error":"yes"}]}]}'], 2, 'messages[2].content[0].is_error', 'expected a boolean'),
 ('anthropic-usage-negative', 'anthropic', ['{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"text","text":"y"}],"usage":{"input_tokens":3,"output_tokens":-1}}]}'], 2, 'messages[1].usage.output_tokens', 'expected a count'),
 ('anthropic-usage-fraction', 'anthropic', ['{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"text","text":"y"}],"usage":{"input_tokens":2.5,"output_tokens":1}}]}'], 2, 'messages[1].usage.input_tokens', 'expected a count'),
 ('anthropic-system-number', 'anthropic', ['{"system":7,"messages":[{"role":"user","content":"x"}]}'], 2, 'system', 'expected a string or an array'),
 ('anthropic-lone-surrogate', 'anthropic', ['{"messages":[{"role":"user","content":[{"type":"text","text":"broken \\udc00 surrogate"}]}]}'], 2, 'messages[0].content[0].text', 'surrogate'),
 ('anthropic-signature-not-string', 'anthropic', ['{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":12}]}]}'], 2, 'messages[1].content[0].signature', 'expected a string'),
 ('anthropic-tool-result-content-number', 'anthropic', ['{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":5}]}]}'], 2, 'messages[2].content[0].content', 'expected a string or an array'),
 ('anthropic-block-not-object', 'anthropic', ['{"messages":[{"role":"user","content":["hi"]}]}'], 2, 'messages[0].content[0]', 'expected an object'),
 ('responses-item-unidentifiable', 'openai-responses', ['{"items":[{"content":"who am I?"}]}'], 2, 'items[0]', 'neither type, role nor id'),
 ('responses-function-call-without-call-id', 'openai-responses', ['{"items":[{"role":"user","content":"x"},{"type":"function_call","name":"f","arguments":"{}"}]}'], 2, 'items[1].call_id', 'missing'),
 ('responses-items-not-array', 'openai-responses', ['{"items":{"role":"user","content":"x"}}'], 2, 'items', 'expected an array'),
 ('responses-summary-not-array', 'openai-responses', ['{"items":[{"role":"user","content":"x"},{"type":"reasoning","id":"rs_1","summary":"thought"}]}'], 2, 'items[1].summary', 'expected an array'),
 ('responses-output-number', 'openai-responses', ['{"items":[{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":42}]}'], 2, 'items[1].output', 'expected a string or an array'),
 ('ui-role-tool', 'ai-sdk-ui', ['{"messages":[{"id":"t1","role":"tool","parts":[{"type":"text","text":"x"}]}]}'], 2, 'messages[0].role', 'unsupported role'),
 ('ui-missing-id', 'ai-sdk-ui', ['{"messages":[{"role":"user","parts":[{"type":"text","text":"x"}]}]}'], 2, 'messages[0].id', 'missing'),
 ('ui-parts-not-array', 'ai-sdk-ui', ['{"messages":[{"id":"u1","role":"user","parts":"hello"}]}'], 2, 'messages[0].parts', 'expected an array'),
 ('ui-tool-without-call-id', 'ai-sdk-ui', ['{"messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"x"}]},{"id":"a1","role":"assistant","parts":[{"type":"tool-weather","state":"input-available","input":{}}]}]}'], 2, 'messages[1].parts[0].toolCallId', 'missing'),
 ('ui-output-error-without-text', 'ai-sdk-ui', ['{"messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"x"}]},{"id":"a1","role":"assistant","parts":[{"type":"tool-weather","toolCallId":"c1","state":"output-error","input":{}}]}]}'], 2, 'messages[1].parts[0].errorText', 'missing'),
 ('ui-file-without-url', 'ai-sdk-ui', ['{"messages":[{"id":"u1","role":"user","parts":[{"type":"file","mediaType":"image/png"}]}]}'], 2, 'messages[0].parts[0].url', 'missing'),
 ('stowage-unknown-part-type', 'stowage', ['{"conversation_id":"bad-1","messages":[{"role":"user","parts":[{"type":"video","url":"x"}]}]}'], 2, 'messages[0].parts[0]', 'unknown variant'),
 ('stowage-extra-not-object', 'stowage', ['{"conversation_id":"bad-2","messages":[{"role":"user","parts":[{"type":"text","text":"x","extra":"cache"}]}]}'], 2, 'messages[0].parts[0].extra', 'expected an object keyed by format'),
 ('stowage-duplicate-conversation', 'stowage', ['{"conversation_id":"ok-1","messages":[]}'], 2, 'conversation_id', 'already appears on line 1'),
]

expected = {
  "about": "Each file has one or more lines that import cleanly, then a line that must be refused. Importing the file (with --format when `format` is not null) must fail, report `line` and a field path that starts with `field`, and leave the store without any conversation from the file. `reason` describes the cause for people; tests assert `line` and `field` only.",
  "cases": [],
}
for name, fmt, bad, line, field, reason in cases:
    first = OK[fmt or 'openai']
    write_raw(ROOT + name + '.jsonl', [first] + bad)
    expected["cases"].append({"file": name + ".jsonl", "format": fmt, "line": line, "field": field, "reason": reason})

with open(ROOT + 'expected.json', 'w') as f:
    json.dump(expected, f, indent=2, ensure_ascii=False)
    f.write('\n')
print(len(cases), 'cases')
