import json
import os
from lib import *

C = common()
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'ai-sdk-ui') + '/'
SIG = "EqQBCkgIBxABGAIiQL3c1WmVtyR4bVFyS0dNLmFtQ0ZBa2tMb2tPZk9ZQ2JpZXJ0bEFsT2hpNmF1cExURGtvNHFXdTZrTUVYMWJqbEExZxIMbUx7n6rOQ2x0YWtvGgw="
ENC = "gAAAAABpF3H8wQ2k9lCqZ8mJ1bW0s5XnQm7J1YV3eR5tTq9c0oQp7dFz2Lr4u8N6hG1jKs3aPx0yB9vE2wUiO5nC4mD7fH8g=="
big = big_table_args(120)

chat = [
# 1. a multi-step assistant turn: step-start, reasoning (Anthropic signature), parallel tool calls with results, text; metadata
sub(r'''{"id":"chat_7fQ2mZ","messages":[
 {"id":"sys-1","role":"system","parts":[{"type":"text","text":"You are a travel assistant."}]},
 {"id":"u-1","role":"user","parts":[{"type":"text","text":"Weather in Oslo and Lima? Then suggest one of them."}],"metadata":{"createdAt":1754031600000,"client":"web"}},
 {"id":"a-1","role":"assistant","metadata":{"model":"claude-sonnet-4-5","totalUsage":{"inputTokens":1302,"outputTokens":210,"totalTokens":1512}},"parts":[
  {"type":"step-start"},
  {"type":"reasoning","text":"Two independent lookups; call both.","state":"done","providerMetadata":{"anthropic":{"signature":"@SIG@"}}},
  {"type":"text","text":"Let me check both cities.","state":"done"},
  {"type":"tool-getWeather","toolCallId":"toolu_01Oslo","state":"output-available","input":{"city":"Oslo"},"output":{"tempC":4,"sky":"snow"}},
  {"type":"tool-getWeather","toolCallId":"toolu_01Lima","state":"output-available","input":{"city":"Lima"},"output":{"tempC":19.5,"sky":"overcast"},"callProviderMetadata":{"anthropic":{"caller":{"type":"direct"}}}},
  {"type":"step-start"},
  {"type":"text","text":"Lima is warmer (19.5 °C, overcast) than Oslo (4 °C, snow) — pick Lima.","state":"done","providerMetadata":{"anthropic":{"citations":[]}}}
 ]},
 {"id":"u-2","role":"user","parts":[{"type":"text","text":"Thanks!"}]},
 {"id":"a-2","role":"assistant","parts":[{"type":"step-start"},{"type":"text","text":"Enjoy Lima!","state":"done"}]}
]}''', SIG=SIG),
# 2. every tool state, dynamic tools, provider-executed tools, approvals, errors, preliminary output
sub(r'''{"id":"chat_states","messages":[
 {"id":"u-1","role":"user","parts":[{"type":"text","text":"Run all the tools."}]},
 {"id":"a-1","role":"assistant","parts":[
  {"type":"step-start"},
  {"type":"tool-bulkLoad","toolCallId":"call_bulk","state":"output-available","input":@BIG@,"output":"loaded 120 rows"},
  {"type":"tool-geocode","toolCallId":"call_geo","state":"output-available","input":{"q":"Köln","lat":4.735e1,"id":12345678901234567890123,"overflow":1e400,"neg":-0,"nested":"{\"a\":[1,{\"b\":null}]}"},"output":{"lat":50.9375,"lon":6.9603E0,"alt":-0.0},"preliminary":false},
  {"type":"tool-search","toolCallId":"call_srch","state":"output-available","input":{"q":"rota"},"output":{"status":"searching","hits":0},"preliminary":true},
  {"type":"tool-divide","toolCallId":"call_div","state":"output-error","input":{"a":1,"b":0},"errorText":"Division by zero"},
  {"type":"tool-parse","toolCallId":"call_parse","state":"output-error","input":null,"rawInput":"{\"broken\": tr","errorText":"Invalid input for tool parse: JSON parse error"},
  {"type":"dynamic-tool","toolName":"mcp__wiki__search","toolCallId":"call_dyn_1","title":"Wiki search","state":"output-available","input":{"q":"holidays"},"output":{"content":[{"type":"text","text":"25 Dec"}]},"callProviderMetadata":{"mcp":{"server":"wiki"}}},
  {"type":"dynamic-tool","toolName":"mcp__wiki__edit","toolCallId":"call_dyn_2","state":"output-error","input":{"page":"x"},"errorText":"read-only"},
  {"type":"tool-webSearch","toolCallId":"srvtoolu_01WYG3","state":"output-available","providerExecuted":true,"input":{"query":"Lima weather"},"output":[{"url":"https://weather.example/lima","title":"Lima","pageAge":null}]},
  {"type":"step-start"},
  {"type":"tool-deleteFile","toolCallId":"call_del","state":"approval-requested","input":{"path":"/tmp/x"},"approval":{"id":"appr_1"}},
  {"type":"tool-sendMail","toolCallId":"call_mail","state":"approval-responded","input":{"to":"bo@example.com"},"approval":{"id":"appr_2","approved":true,"reason":"ok by user"}},
  {"type":"tool-wipeDisk","toolCallId":"call_wipe","state":"output-denied","input":{"disk":"/dev/sda"},"approval":{"id":"appr_3","approved":false,"reason":"never"}},
  {"type":"tool-archive","toolCallId":"call_arch","state":"output-available","input":{"path":"/tmp/y"},"output":"archived","approval":{"id":"appr_4","approved":true}},
  {"type":"tool-lookup","toolCallId":"call_look","state":"input-available","input":{"sku":"A-1"}},
  {"type":"tool-draft","toolCallId":"call_draft","state":"input-streaming","input":{"subject":"Quarterly"}},
  {"type":"tool-draft2","toolCallId":"call_draft2","state":"input-streaming"},
  {"type":"dynamic-tool","toolName":"mcp__cal__add","toolCallId":"call_dyn_3","state":"input-streaming","input":{"title":"Sync"}},
  {"type":"dynamic-tool","toolName":"mcp__cal__list","toolCallId":"call_dyn_4","state":"input-available","input":{}}
 ]}
]}''', BIG=big),
# 3. files, sources, data parts, reasoning from OpenAI and redacted Anthropic reasoning, consecutive assistant messages, empty parts
sub(r'''{"messages":[
 {"id":"u-1","role":"user","parts":[
  {"type":"text","text":"Summarise the PDF and the photo."},
  {"type":"file","mediaType":"application/pdf","filename":"q3-report.pdf","url":"data:application/pdf;base64,@PDF@"},
  {"type":"file","mediaType":"image/png","url":"https://upload.wikimedia.org/wikipedia/commons/4/47/PNG_transparency_demonstration_1.png","providerMetadata":{"openai":{"imageDetail":"high"}}},
  {"type":"file","mediaType":"text/plain","filename":"notes.txt","url":"data:text/plain;base64,SGVsbG8sIHdvcmxkIQ"},
  {"type":"data-context","id":"ctx-1","data":{"tenant":"acme","plan":"pro","limits":{"rpm":6E1}}}
 ]},
 {"id":"a-1","role":"assistant","parts":[
  {"type":"step-start"},
  {"type":"reasoning","text":"**Reading the report**\n\nIt is a stub.","providerMetadata":{"openai":{"itemId":"rs_68a2b3c4","reasoningEncryptedContent":"@ENC@"}}},
  {"type":"reasoning","text":"","providerMetadata":{"anthropic":{"redactedData":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIxxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB7URj2pC2DwYQ=="}}},
  {"type":"source-url","sourceId":"src-1","url":"https://en.wikipedia.org/wiki/Portable_Network_Graphics","title":"PNG — Wikipedia"},
  {"type":"source-url","sourceId":"src-2","url":"https://example.com/no-title","providerMetadata":{"perplexity":{"rank":1}}},
  {"type":"source-document","sourceId":"src-3","mediaType":"application/pdf","title":"Q3 report","filename":"q3-report.pdf"},
  {"type":"text","text":"The PDF is an empty stub; the photo shows dice.","providerMetadata":{"openai":{"itemId":"msg_68a2b3c5"}}},
  {"type":"file","mediaType":"image/png","url":"data:image/png;base64,@PNG@"},
  {"type":"data-weather","data":{"city":"Lima","tempC":19.5,"forecast":[{"d":1,"t":20},{"d":2,"t":1.95E1}]}},
  {"type":"data-status","id":"status-1","data":"done"}
 ]},
 {"id":"a-2","role":"assistant","parts":[{"type":"text","text":"(Second assistant message in a row, e.g. after a regenerate.)"}]},
 {"id":"a-3","role":"assistant","parts":[]},
 {"id":"u-2","role":"user","parts":[{"type":"text","text":"Übersetze «Guten Tag» ins Japanische 🇯🇵: e\u0301 \ud83d\ude00 NUL:\u0000 LS:\u2028"}]},
 {"id":"a-4","role":"assistant","parts":[{"type":"text","text":"こんにちは 🇯🇵"},{"type":"step-start"},{"type":"text","text":"(Hallo.)"},{"type":"step-start"}]}
]}''', PDF=C['PDF'], PNG=C['PNG'], ENC=ENC),
]

future = [
# parts and fields added after AI SDK 5 (kept as they are), and a part type that does not exist yet
r'''{"id":"chat_future","messages":[
 {"id":"u-1","role":"user","parts":[{"type":"text","text":"Show me the diagram."},{"type":"file","mediaType":"image","url":"https://example.com/d.png","providerReference":{"openai":"file-abc123"}}]},
 {"id":"a-1","role":"assistant","parts":[
  {"type":"step-start"},
  {"type":"custom","kind":"openai.compaction","providerMetadata":{"openai":{"itemId":"cmp_1"}}},
  {"type":"reasoning-file","mediaType":"image/png","url":"https://example.com/thought.png"},
  {"type":"tool-render","toolCallId":"call_r1","title":"Render","toolMetadata":{"ui":"card"},"state":"output-available","input":{"id":"d"},"output":"ok","resultProviderMetadata":{"openai":{"itemId":"fco_1"}},"approval":{"id":"appr_9","approved":true,"isAutomatic":true}},
  {"type":"hologram","frames":3}
 ]}
]}''',
]

write(ROOT + 'chats.jsonl', chat)
write(ROOT + 'future.jsonl', future)
