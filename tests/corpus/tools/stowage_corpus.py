import os
from lib import *
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'stowage') + '/'

lines = [
# 1. every part kind, extras keyed by format, provider parts of every format, usage/cost, stop reasons, JSON metadata kept verbatim
r'''{"conversation_id":"conv-0001","meta":{"agent_id":"support-bot","title":"Weather & files — Übersicht","metadata":{"tenant":"acme","score":1.50,"big":12345678901234567890123,"tiny":1e-400}},
"messages":[
 {"id":"m-001","role":"system","created_at":1754031600000,"parts":[
   {"type":"text","text":"You are a travel assistant.","extra":{"anthropic":{"cache_control":{"type":"ephemeral","ttl":"1h"}}}}],
  "extra":{"anthropic":{"$content":"array"}}},
 {"id":"m-002","role":"developer","created_at":1754031600001,"parts":[{"type":"text","text":"Prefer metric units."}],"extra":{"openai":{"name":"policy"}}},
 {"id":"m-003","role":"user","created_at":1754031600002,"metadata":{"client":"web","v":2.0},"parts":[
   {"type":"text","text":"Weather in Oslo and Lima? 🇳🇴🇵🇪"},
   {"type":"media","mime_type":"image/png","source":{"inline":[137,80,78,71,13,10,26,10]},"extra":{"openai":{"image_url":{"detail":"low"}}}},
   {"type":"media","mime_type":"image/*","source":{"url":"https://upload.wikimedia.org/wikipedia/commons/4/47/PNG_transparency_demonstration_1.png"},"extra":{"openai":{"image_url":{"detail":"high"}}}},
   {"type":"media","mime_type":"application/pdf","source":{"url":"data:application/pdf;base64,JVBERi0xLjQK\r\nJSVFT0YK"},"name":"q3.pdf","extra":{"anthropic":{"title":"Q3 report","context":"unaudited","citations":{"enabled":true}}}},
   {"type":"media","mime_type":"audio/wav","source":{"inline":[82,73,70,70]}},
   {"type":"provider","format":"anthropic","value":{"type":"document","source":{"type":"text","media_type":"text/plain","data":"The grass is green."},"title":"My Document"}},
   {"type":"provider","format":"openai","value":{"type":"file","file":{"file_id":"file-6F2ksmvXxt4VdoqmHRw6kL"}}}
 ]},
 {"id":"m-004","role":"assistant","created_at":1754031601000,
  "usage":{"input_tokens":1302,"output_tokens":210,"cached_tokens":1024,"cost":0.004215},"stop_reason":"tool_use",
  "metadata":{"model":"claude-sonnet-4-5"},
  "extra":{"anthropic":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","model":"claude-sonnet-4-5","stop_sequence":null,"usage":{"cache_creation_input_tokens":0,"service_tier":"standard"}}},
  "parts":[
   {"type":"thinking","text":"Two lookups; call both.","signature":"EqQBCkgIBxABGAIiQL3c1WmVtyR4"},
   {"type":"thinking","text":"EmwKAhgBEgy3va3pzix/LafPsn4a","redacted":true},
   {"type":"thinking","text":"**Planning**\n\nCall the tool twice.","extra":{"openai-responses":{"id":"rs_68a2b3c4","encrypted_content":"gAAAAABpF3H8","summary":[{"type":"summary_text","text":"**Planning**"},{"type":"summary_text","text":"Call the tool twice."}]}}},
   {"type":"text","text":"Let me check both cities.","extra":{"anthropic":{"citations":null},"ai-sdk-ui":{"state":"done"}}},
   {"type":"tool_call","id":"toolu_01Oslo","name":"get_weather","arguments":"{\"city\":\"Oslo\",\"lat\":5.99e1,\"n\":1e400}","extra":{"anthropic":{"caller":{"type":"direct"}}}},
   {"type":"tool_call","id":"call_trunc","name":"book","arguments":"{\"people\": 2, \"time\": \"19:3"},
   {"type":"tool_call","id":"call_cust_7","name":"sql_grammar","arguments":"SELECT 1;","extra":{"openai":{"$custom":true}}},
   {"type":"provider","format":"anthropic","value":{"type":"server_tool_use","id":"srvtoolu_01WYG3ziw53XMcoyKL4XcZmE","name":"web_search","input":{"query":"Lima weather"}}},
   {"type":"provider","format":"anthropic","value":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01WYG3ziw53XMcoyKL4XcZmE","content":{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}}},
   {"type":"provider","format":"openai-responses","value":{"type":"web_search_call","id":"ws_68a1","status":"completed","action":{"type":"search","query":"Lima weather"}}},
   {"type":"provider","format":"ai-sdk-ui","value":{"type":"data-weather","data":{"city":"Lima","tempC":1.95E1}}},
   {"type":"provider","format":"ai-sdk-ui","value":{"type":"source-url","sourceId":"src-1","url":"https://weather.example/lima"}}
 ]},
 {"id":"m-005","role":"tool","created_at":1754031602000,"parts":[
   {"type":"tool_result","call_id":"toolu_01Oslo","content":"4 °C, snow"},
   {"type":"tool_result","call_id":"call_trunc","content":"error: arguments are not valid JSON","is_error":true},
   {"type":"tool_result","call_id":"call_cust_7","content":"{\"rows\":1}","extra":{"ai-sdk-ui":{"$output":"json"},"openai":{"$custom":true}}},
   {"type":"tool_result","call_id":"toolu_01Lima","content":"19 °C, overcast","extra":{"anthropic":{"content":[{"type":"text","text":"19 °C"},{"type":"text","text":", overcast"}]}}}
 ]},
 {"id":"m-006","role":"assistant","created_at":1754031603000,"stop_reason":"pause_turn","usage":{"input_tokens":1,"output_tokens":1},"parts":[{"type":"text","text":"Lima is warmer."}]},
 {"id":"m-007","role":"assistant","created_at":1754031604000,"stop_reason":"end_turn","parts":[]},
 {"id":"m-008","role":"system","created_at":1754031605000,"parts":[{"type":"text","text":"Late instruction: be brief."}]}
]}''',
# 2. display records stored alongside the messages
r'''{"conversation_id":"conv-0002","messages":[
 {"id":"m-1","role":"user","created_at":1754031700000,"parts":[{"type":"text","text":"Delete /tmp/x?"}]},
 {"id":"m-2","role":"assistant","created_at":1754031701000,"parts":[{"type":"tool_call","id":"call_del","name":"delete_file","arguments":"{\"path\":\"/tmp/x\"}"}]}
],
"display":[
 {"scope":{"tenant":"acme","user":"u-42"},"conversation_id":"conv-0002","seq":1,"message_id":"m-1","message_type":"user","content_type":"text","content":{"text":"Delete /tmp/x?"},"created_at":1754031700000,"updated_at":1754031700000},
 {"scope":{"tenant":"acme","user":"u-42"},"conversation_id":"conv-0002","seq":2,"message_id":"m-2","message_type":"assistant","content_type":"tool_call","tool_call_id":"call_del","status":"pending","content":{"name":"delete_file","arguments":{"path":"/tmp/x"}},"metadata":{"display_text":"Deleting /tmp/x…","n":1.0e0},"created_at":1754031701000,"updated_at":1754031701500}
]}''',
# 3. unicode, empty text, escapes
r'''{"conversation_id":"conv-ünï-😀","messages":[
 {"role":"user","parts":[{"type":"text","text":""},{"type":"text","text":"e\u0301 \ud83d\ude00 NUL:\u0000 LS:\u2028 BOM:\ufeff مرحبا 東京 👩‍💻"}]},
 {"role":"assistant","parts":[{"type":"text","text":"\"quoted\" \\ back\\slash \/ slash\ttab"}]}
]}''',
# 4. nothing yet
r'''{"conversation_id":null,"messages":[]}''',
]

# Needs the proposed ConversationMeta.extra and Provider.extra (docs/formats.md, "What the model cannot carry").
proposed = [
r'''{"conversation_id":"conv-0003","meta":{"title":"Request params kept","extra":{"openai":{"model":"gpt-4.1-mini","temperature":7E-1,"tools":[{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"tz":{"type":"string"}}}}}]}}},
"messages":[
 {"id":"m-1","role":"user","parts":[{"type":"text","text":"Time in Asia/Kolkata?"}]},
 {"id":"m-2","role":"assistant","parts":[
   {"type":"provider","format":"openai","value":{"id":"call_mcp_1","type":"mcp","mcp":{"server":"clock"}},"extra":{"openai":{"$in":"tool_calls"}}}
 ]},
 {"id":"m-3","role":"tool","parts":[{"type":"provider","format":"openai","value":{"role":"function","name":"calculator","content":"4"},"extra":{"openai":{"$in":"message"}}}]}
]}''',
]
write(ROOT + 'transcripts.jsonl', lines)
write(ROOT + 'proposed-extras.jsonl', proposed)
