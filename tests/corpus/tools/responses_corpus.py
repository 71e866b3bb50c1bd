import json
import os
from lib import *

C = common()
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'openai-responses') + '/'
ENC = "gAAAAABpF3H8wQ2k9lCqZ8mJ1bW0s5XnQm7J1YV3eR5tTq9c0oQp7dFz2Lr4u8N6hG1jKs3aPx0yB9vE2wUiO5nC4mD7fH8gJ2kL1qR6sT3uV9wX0yZ5aB4cD8eF1gH6iJ3kL7mN2oP5qR9sT0uV4wX8yZ1aB5cD9eF2gH7iJ4kL8mN3oP6qR0sT1uV5wX9yZ2aB6cD0eF3gH8iJ5kL9mN4oP7qR1sT2uV6wX0=="
big = big_table_args(150)
exotic_args = '{"lat":4.735e1,"lon":-1.22E+2,"elevation":-0,"precision":1e-400,"overflow":1e400,"id":12345678901234567890123,"ratio":0.1000000000000000055511151231257827,"count":100.0,"payload":"{\\"inner\\":{\\"x\\":[1,2,{\\"y\\":\\"z\\"}]}}"}'

agents = [
# 1. what an OpenAI Agents SDK session stores: easy input, output message dumps, reasoning, parallel function calls
sub(r'''{"session_id":"conversation_123","items":[
 {"role":"user","content":"What city is the Golden Gate Bridge in?"},
 {"id":"rs_68a2b3c4d5e6f70819a0b1c2d3e4f5a6","summary":[],"type":"reasoning","encrypted_content":"@ENC@"},
 {"id":"msg_68a2b3c4d5e6f70819a0b1c2d3e4f5a7","content":[{"annotations":[],"text":"San Francisco.","type":"output_text","logprobs":[]}],"role":"assistant","status":"completed","type":"message"},
 {"role":"user","content":"What's the weather there and in Oakland?"},
 {"id":"rs_68a2b3c4d5e6f70819a0b1c2d3e4f5a8","summary":[{"text":"**Planning lookups**\n\nTwo independent cities, so I'll call the weather tool twice.","type":"summary_text"},{"text":"**Units**\n\nUse Fahrenheit for US cities.","type":"summary_text"}],"type":"reasoning","encrypted_content":"@ENC@","status":"completed"},
 {"arguments":"{\"city\":\"San Francisco\",\"unit\":\"f\"}","call_id":"call_S0f1X2bV3n4M5","name":"get_weather","type":"function_call","id":"fc_68a2b3c4d5e6f70819a0b1c2d3e4f5a9","status":"completed"},
 {"arguments":"{\"city\":\"Oakland\",\"unit\":\"f\"}","call_id":"call_Oak9Q8w7E6r5T","name":"get_weather","type":"function_call","id":"fc_68a2b3c4d5e6f70819a0b1c2d3e4f5aa","status":"completed"},
 {"call_id":"call_S0f1X2bV3n4M5","output":"{\"temp_f\":61,\"sky\":\"fog\"}","type":"function_call_output"},
 {"call_id":"call_Oak9Q8w7E6r5T","output":"{\"temp_f\":68,\"sky\":\"sun\"}","type":"function_call_output"},
 {"id":"msg_68a2b3c4d5e6f70819a0b1c2d3e4f5ab","content":[{"annotations":[],"text":"San Francisco: 61 °F and foggy. Oakland: 68 °F and sunny.","type":"output_text","logprobs":[]}],"role":"assistant","status":"completed","type":"message","phase":"final_answer"}
]}''', ENC=ENC),
# 2. large, nested and exotic arguments; outputs as content lists; empty output
sub(r'''{"items":[
 {"type":"message","role":"user","content":[{"type":"input_text","text":"Load the readings and geocode Köln; attach the chart."}]},
 {"type":"function_call","call_id":"call_bulk","name":"db_upsert","arguments":@BIG@},
 {"type":"function_call","call_id":"call_geo","name":"geo_lookup","arguments":@EXOTIC@,"namespace":"maps"},
 {"type":"function_call_output","call_id":"call_bulk","output":""},
 {"type":"function_call_output","call_id":"call_geo","output":[{"type":"input_text","text":"Köln: 50.9375 N, 6.9603 E"},{"type":"input_image","image_url":"data:image/png;base64,@PNG@","detail":"low"},{"type":"input_file","file_data":"data:application/pdf;base64,@PDF@","filename":"koeln.pdf"}],"status":"completed"},
 {"role":"assistant","content":"Done: 150 rows loaded; Köln geocoded."}
]}''', BIG=jstr(big), EXOTIC=jstr(exotic_args), **C),
]

content = [
# 1. typed input messages with every input content type; system and developer roles; phase; refusal
sub(r'''{"items":[
 {"type":"message","role":"system","content":[{"type":"input_text","text":"You are a meticulous reviewer."}]},
 {"type":"message","role":"developer","content":"Cite the page when you can.","phase":"commentary"},
 {"type":"message","role":"user","status":"completed","content":[
  {"type":"input_text","text":"Review these.","prompt_cache_breakpoint":{"mode":"explicit"}},
  {"type":"input_image","image_url":"https://upload.wikimedia.org/wikipedia/commons/4/47/PNG_transparency_demonstration_1.png","detail":"high"},
  {"type":"input_image","file_id":"file-Xy12Ab34Cd56","detail":"auto"},
  {"type":"input_image","image_url":"data:image/jpeg;base64,@JPEG@","detail":"original"},
  {"type":"input_file","file_id":"file-6F2ksmvXxt4VdoqmHRw6kL"},
  {"type":"input_file","file_url":"https://www.berkshirehathaway.com/letters/2024ltr.pdf","detail":"low"},
  {"type":"input_file","file_data":"data:application/pdf;base64,@PDF@","filename":"draft ✓.pdf"}
 ]},
 {"id":"msg_0a1b2c","type":"message","role":"assistant","status":"completed","phase":"commentary","content":[{"type":"output_text","text":"Checking the letter first.","annotations":[]}]},
 {"id":"msg_0a1b2d","type":"message","role":"assistant","status":"incomplete","content":[
  {"type":"output_text","text":"The letter is from 2024","annotations":[{"type":"url_citation","start_index":0,"end_index":24,"url":"https://www.berkshirehathaway.com/letters/2024ltr.pdf","title":"2024 letter"},{"type":"file_citation","file_id":"file-6F2ksmvXxt4VdoqmHRw6kL","filename":"notes.pdf","index":3},{"type":"container_file_citation","container_id":"cntr_1","file_id":"cfile_2","filename":"out.csv","start_index":4,"end_index":10},{"type":"file_path","file_id":"file-path-9","index":1}],"logprobs":[{"token":"The","bytes":[84,104,101],"logprob":-1.0E-4,"top_logprobs":[{"token":"The","bytes":[84,104,101],"logprob":-0.0001},{"token":"A","bytes":[65],"logprob":-9.21}]}]},
  {"type":"output_text","text":"; the draft is empty.","annotations":[]},
  {"type":"refusal","refusal":"I won't assess the private image."}
 ]},
 {"role":"user","content":""},
 {"role":"assistant","content":[{"type":"input_text","text":"Your last message was empty."}]}
]}''', **C),
# 2. unicode
r'''{"items":[
 {"role":"user","content":"Translate 👩‍💻 and «東京» to Arabic; keep e\u0301 and \ud83d\ude00. NUL:\u0000 LS:\u2028"},
 {"role":"assistant","content":"مبرمجة 👩‍💻 — طوكيو «東京» — é 😀"}
]}''',
]

hosted = [
# 1. web search, file search, image generation, code interpreter
sub(r'''{"items":[
 {"role":"user","content":"Search the web and my files for the 2024 letter, draw a cat, then compute 2**64."},
 {"type":"web_search_call","id":"ws_68a1","status":"completed","action":{"type":"search","query":"berkshire 2024 letter","queries":["berkshire 2024 letter","buffett letter 2024"],"sources":[{"type":"url","url":"https://www.berkshirehathaway.com/letters/2024ltr.pdf"}]}},
 {"type":"web_search_call","id":"ws_68a2","status":"completed","action":{"type":"open_page","url":"https://www.berkshirehathaway.com/letters/2024ltr.pdf"}},
 {"type":"web_search_call","id":"ws_68a3","status":"failed","action":{"type":"find_in_page","url":"https://www.berkshirehathaway.com/letters/2024ltr.pdf","pattern":"float"}},
 {"type":"file_search_call","id":"fs_68a4","status":"completed","queries":["2024 letter"],"results":[{"file_id":"file-6F2ksmvXxt4VdoqmHRw6kL","filename":"2024ltr.pdf","score":0.9312,"text":"To the Shareholders of Berkshire Hathaway Inc.:","attributes":{"year":2024,"public":true,"lang":"en"}}]},
 {"type":"file_search_call","id":"fs_68a5","status":"searching","queries":["nothing"],"results":null},
 {"type":"image_generation_call","id":"ig_68a6","status":"completed","result":"@PNG@"},
 {"type":"code_interpreter_call","id":"ci_68a7","status":"completed","container_id":"cntr_68a7","code":"print(2**64)","outputs":[{"type":"logs","logs":"18446744073709551616\n"},{"type":"image","url":"https://files.example/cntr_68a7/plot.png"}]},
 {"id":"msg_68a8","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Found the letter, drew a cat, and 2**64 = 18446744073709551616.","annotations":[]}]}
]}''', **C),
# 2. computer use, local shell, shell and apply_patch (client-executed tools)
sub(r'''{"items":[
 {"role":"user","content":"Open the settings page, list the repo, and fix the typo in README."},
 {"type":"computer_call","id":"cu_01","call_id":"call_cu_01","status":"completed","pending_safety_checks":[{"id":"cu_sc_1","code":"malicious_instructions","message":"Page text asks to ignore instructions."}],"action":{"type":"click","button":"left","x":412,"y":88}},
 {"type":"computer_call_output","call_id":"call_cu_01","output":{"type":"computer_screenshot","image_url":"data:image/png;base64,@PNG@"},"acknowledged_safety_checks":[{"id":"cu_sc_1","code":"malicious_instructions","message":"Page text asks to ignore instructions."}]},
 {"type":"computer_call","id":"cu_02","call_id":"call_cu_02","status":"completed","pending_safety_checks":[],"actions":[{"type":"scroll","x":400,"y":300,"scroll_x":0,"scroll_y":-640},{"type":"keypress","keys":["CTRL","L"]},{"type":"type","text":"about:config"},{"type":"wait"},{"type":"screenshot"}]},
 {"type":"computer_call_output","call_id":"call_cu_02","output":{"type":"computer_screenshot","file_id":"file-Shot0002"},"id":"cuo_02","status":"completed"},
 {"type":"local_shell_call","id":"lsh_01","call_id":"call_lsh_01","status":"completed","action":{"type":"exec","command":["ls","-la"],"env":{"LANG":"C.UTF-8"},"timeout_ms":10000,"working_directory":"/repo","user":"dev"}},
 {"type":"local_shell_call_output","id":"call_lsh_01","output":"{\"stdout\":\"README.md\\nsrc\\n\",\"exit_code\":0}","status":"completed"},
 {"type":"shell_call","call_id":"call_sh_01","action":{"commands":["grep -n teh README.md"],"timeout_ms":5000,"max_output_length":4096},"status":"completed","id":"sh_01"},
 {"type":"shell_call_output","call_id":"call_sh_01","output":[{"stdout":"3:teh quick fox\n","stderr":"","outcome":{"type":"exit","exit_code":0}}],"max_output_length":4096},
 {"type":"apply_patch_call","call_id":"call_ap_01","status":"completed","operation":{"type":"update_file","path":"README.md","diff":"@@ -3 +3 @@\n-teh quick fox\n+the quick fox\n"}},
 {"type":"apply_patch_call_output","call_id":"call_ap_01","status":"completed","output":"patched README.md"},
 {"role":"assistant","content":"Fixed the typo in README.md."}
]}''', **C),
# 3. MCP, custom tools, item references, compaction, tool search, and a type that does not exist yet
r'''{"items":[
 {"role":"user","content":"Use the wiki MCP server to find the on-call rota, and format the reply with the grammar tool."},
 {"type":"mcp_list_tools","id":"mcpl_01","server_label":"wiki","tools":[{"name":"search","input_schema":{"type":"object","properties":{"q":{"type":"string"}}},"description":"Search pages","annotations":{"readOnlyHint":true}}],"error":null},
 {"type":"mcp_approval_request","id":"mcpr_01","server_label":"wiki","name":"search","arguments":"{\"q\":\"on-call rota\"}"},
 {"type":"mcp_approval_response","approval_request_id":"mcpr_01","approve":true,"reason":"read-only"},
 {"type":"mcp_call","id":"mcp_01","server_label":"wiki","name":"search","arguments":"{\"q\":\"on-call rota\"}","output":"Rota: Ana (Mon–Wed), Bo (Thu–Sun)","error":null,"status":"completed","approval_request_id":"mcpr_01"},
 {"type":"mcp_call","id":"mcp_02","server_label":"wiki","name":"search","arguments":"{\"q\":\"pager\"}","error":{"type":"mcp_protocol_error","code":-32603,"message":"timeout"},"status":"failed"},
 {"type":"custom_tool_call","id":"ctc_01","call_id":"call_grammar_01","name":"format_reply","input":"ROTA: Ana Mon-Wed; Bo Thu-Sun"},
 {"type":"custom_tool_call_output","call_id":"call_grammar_01","output":"Ana: Monday–Wednesday\nBo: Thursday–Sunday"},
 {"type":"custom_tool_call_output","call_id":"call_grammar_00","output":[{"type":"input_text","text":"earlier attempt"}],"id":"ctco_00"},
 {"type":"item_reference","id":"msg_prev_turn_0001"},
 {"id":"msg_prev_turn_0002"},
 {"type":"compaction","id":"cmp_01","encrypted_content":"gAAAAABpCompacted0000=="},
 {"type":"tool_search_call","id":"tsc_01","call_id":"call_ts_01","execution":"server","status":"completed","arguments":{"query":"calendar"}},
 {"type":"tool_search_output","id":"tso_01","call_id":"call_ts_01","execution":"server","status":"completed","tools":[{"type":"function","name":"cal_lookup","parameters":{"type":"object","properties":{}},"strict":false}]},
 {"type":"holodeck_call","id":"hd_01","call_id":"call_hd_01","scene":{"fog":0.25e0}},
 {"role":"assistant","content":"Ana is on call Monday–Wednesday, Bo Thursday–Sunday."}
]}''',
]

write(ROOT + 'agents-session.jsonl', agents)
write(ROOT + 'message-content.jsonl', content)
write(ROOT + 'hosted-tools.jsonl', hosted)
