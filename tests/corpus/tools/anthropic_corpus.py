import json
import os
from lib import *

C = common()
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'anthropic') + '/'
SIG = "EqQBCkgIBxABGAIiQL3c1WmVtyR4bVFyS0dNLmFtQ0ZBa2tMb2tPZk9ZQ2JpZXJ0bEFsT2hpNmF1cExURGtvNHFXdTZrTUVYMWJqbEExZxIMbUx7n6rOQ2x0YWtvGgxTuW5K8PqZ0B1e3d4iMIqT5WfYdT9mW0t0uV6cQ3dPbGdPdkdbT0N5a1FxQ0h3RzRvWk1ZbnN5bGZ0R1V3SDY="
RED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIxxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB7URj2pC2DwYQ3QoS0XB7F3QQq8iM9Xn2rBvAH0OZhTZQ=="

big_input = big_table_args(200)
exotic_input = '{"lat":4.735e1,"lon":-1.22E+2,"elevation":-0,"precision":1e-400,"overflow":1e400,"id":12345678901234567890123,"ratio":0.1000000000000000055511151231257827,"count":100.0,"flags":[true,false,null],"name":"K\\u00f6ln","payload":"{\\"inner\\":{\\"x\\":[1,2,{\\"y\\":\\"z\\"}]}}","empty":{},"list":[]}'

basic = [
# 1. string system prompt, string content, response fields with full usage
r'''{"system":"You are a concise geography tutor.","messages":[
 {"role":"user","content":"What is the capital of Australia?"},
 {"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Canberra."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":21,"output_tokens":6,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"server_tool_use":null,"service_tier":"standard"}},
 {"role":"user","content":"And of New Zealand?"},
 {"role":"assistant","content":"Wellington."}
]}''',
# 2. system as blocks with cache_control (both TTLs), prompt caching usage, stop_sequence
r'''{"system":[{"type":"text","text":"You answer questions about the attached style guide.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"STYLE GUIDE v7: Use sentence case for headings. Prefer active voice. Spell out numbers under ten.","cache_control":{"type":"ephemeral","ttl":"1h"}}],
 "messages":[
 {"role":"user","content":[{"type":"text","text":"Should headings use title case?","cache_control":{"type":"ephemeral","ttl":"5m"}}]},
 {"role":"assistant","content":[{"type":"text","text":"No — the guide asks for sentence case.\n\nEND"}],"stop_reason":"stop_sequence","stop_sequence":"END","usage":{"input_tokens":12,"output_tokens":11,"cache_creation_input_tokens":2048,"cache_read_input_tokens":1024,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":2048}}}
]}''',
# 3. text with every citation location type
r'''{"messages":[
 {"role":"user","content":"What do the sources say about the launch date?"},
 {"role":"assistant","content":[
  {"type":"text","text":"According to the sources, "},
  {"type":"text","text":"the launch is planned for 14 March","citations":[{"type":"char_location","cited_text":"Launch: 14 March.","document_index":0,"document_title":"Plan.txt","start_char_index":120,"end_char_index":137}]},
  {"type":"text","text":", confirmed in the board minutes","citations":[{"type":"page_location","cited_text":"The board confirms the March launch.","document_index":1,"document_title":null,"start_page_number":3,"end_page_number":4}]},
  {"type":"text","text":", the FAQ","citations":[{"type":"content_block_location","cited_text":"Q: When? A: March.","document_index":2,"document_title":"FAQ","start_block_index":0,"end_block_index":1}]},
  {"type":"text","text":", the press","citations":[{"type":"web_search_result_location","cited_text":"Launch set for mid-March","url":"https://example.com/news/launch","title":"Launch news","encrypted_index":"Eo8BCioIAhgBIiQ0ZTM1YjU2Ni1mNzQ4LTRhNDEtYjU3ZS1hNjY0ZjBkYzBhNGISDA=="}]},
  {"type":"text","text":" and the wiki.","citations":[{"type":"search_result_location","cited_text":"March 14 launch","source":"https://wiki.example.com/launch","title":"Launch page","search_result_index":0,"start_block_index":0,"end_block_index":0}]}
 ],"stop_reason":"end_turn","usage":{"input_tokens":3051,"output_tokens":98}}
]}''',
# 4. unicode and escapes; an empty final assistant message used as a prefill
r'''{"system":"Réponds en français. 日本語も可。","messages":[
 {"role":"user","content":"Écris «bonjour» en arabe, japonais et avec un emoji: 👋🏽 — e\u0301 \ud83e\udd16 NUL:\u0000 LS:\u2028"},
 {"role":"assistant","content":[{"type":"text","text":"مرحبا — こんにちは — 👋🏽🤖"}]},
 {"role":"user","content":"Encore, mais commence par «Voici»."},
 {"role":"assistant","content":[]}
]}''',
]

tools = [
# 1. parallel tool use and parallel results in one user message; is_error; caller
r'''{"system":"Use the tools when needed.","messages":[
 {"role":"user","content":"Compare the weather in Oslo and Lima, and tell me the time in Lima."},
 {"role":"assistant","content":[
  {"type":"text","text":"I'll look these up in parallel."},
  {"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"city":"Oslo","unit":"celsius"}},
  {"type":"tool_use","id":"toolu_01BXcKQx4s2pQ7mR8vT3nW5y","name":"get_weather","input":{"city":"Lima","unit":"celsius"},"caller":{"type":"direct"}},
  {"type":"tool_use","id":"toolu_01CtZrM9hK2fG8dL4pQ6sV1x","name":"get_time","input":{}}
 ],"stop_reason":"tool_use","usage":{"input_tokens":512,"output_tokens":141}},
 {"role":"user","content":[
  {"type":"tool_result","tool_use_id":"toolu_01A09q90qw90lq917835lq9","content":"4 °C, snow"},
  {"type":"tool_result","tool_use_id":"toolu_01BXcKQx4s2pQ7mR8vT3nW5y","content":[{"type":"text","text":"19 °C"},{"type":"text","text":", overcast"}]},
  {"type":"tool_result","tool_use_id":"toolu_01CtZrM9hK2fG8dL4pQ6sV1x","content":"missing required argument: tz","is_error":true,"cache_control":{"type":"ephemeral"}}
 ]},
 {"role":"assistant","content":[{"type":"text","text":"Oslo is 4 °C with snow; Lima 19 °C and overcast. I couldn't get the time."}],"stop_reason":"end_turn","usage":{"input_tokens":790,"output_tokens":30}}
]}''',
# 2. large input, exotic numbers, nested JSON in a string, results with images, search results and documents
sub(r'''{"messages":[
 {"role":"user","content":"Load the readings, geocode Köln and fetch the chart."},
 {"role":"assistant","content":[
  {"type":"tool_use","id":"toolu_01Bulk000000000000000001","name":"db_upsert","input":@BIG@},
  {"type":"tool_use","id":"toolu_01Geo0000000000000000002","name":"geo_lookup","input":@EXOTIC@,"cache_control":{"type":"ephemeral"}},
  {"type":"tool_use","id":"toolu_01Chart00000000000000003","name":"render_chart","input":{"series":"readings"}},
  {"type":"tool_use","id":"toolu_01Docs000000000000000004","name":"search_docs","input":{"q":"retention policy"}}
 ],"stop_reason":"tool_use","usage":{"input_tokens":4000,"output_tokens":6000}},
 {"role":"user","content":[
  {"type":"tool_result","tool_use_id":"toolu_01Bulk000000000000000001","content":"upserted 200 rows"},
  {"type":"tool_result","tool_use_id":"toolu_01Geo0000000000000000002","content":[{"type":"text","text":"{\"lat\":50.9375,\"lon\":6.9603}"}]},
  {"type":"tool_result","tool_use_id":"toolu_01Chart00000000000000003","content":[{"type":"text","text":"Chart attached."},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"@PNG@"}}]},
  {"type":"tool_result","tool_use_id":"toolu_01Docs000000000000000004","content":[
   {"type":"search_result","source":"https://docs.example.com/retention","title":"Retention policy","content":[{"type":"text","text":"Logs are kept for 30 days."}],"citations":{"enabled":true}},
   {"type":"document","source":{"type":"text","media_type":"text/plain","data":"Backups: 90 days."},"title":"backup.txt"}
  ]},
  {"type":"text","text":"Also: keep it short."}
 ]},
 {"role":"assistant","content":[{"type":"text","text":"Loaded 200 rows; Köln is at 50.94 N, 6.96 E; logs 30 days, backups 90 days."}]}
]}''', BIG=big_input, EXOTIC=exotic_input, **C),
]

thinking = [
# 1. thinking with signature, redacted thinking, interleaved with tool use
sub(r'''{"messages":[
 {"role":"user","content":"Is 2^61 - 1 prime? Verify with the tool."},
 {"role":"assistant","content":[
  {"type":"thinking","thinking":"2^61 − 1 = 2305843009213693951 is a known Mersenne prime (M61). Still, the user asked to verify with the tool.","signature":"@SIG@"},
  {"type":"redacted_thinking","data":"@RED@"},
  {"type":"tool_use","id":"toolu_01PrimeCheck0000000000001","name":"is_prime","input":{"n":2305843009213693951}}
 ],"stop_reason":"tool_use","usage":{"input_tokens":88,"output_tokens":412,"output_tokens_details":{"thinking_tokens":380}}},
 {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01PrimeCheck0000000000001","content":"true"}]},
 {"role":"assistant","content":[
  {"type":"thinking","thinking":"Tool confirms primality.","signature":"@SIG@"},
  {"type":"text","text":"Yes — 2^61 − 1 is prime (it is the Mersenne prime M61)."}
 ],"stop_reason":"end_turn","usage":{"input_tokens":530,"output_tokens":40}}
]}''', SIG=SIG, RED=RED),
]

documents = [
# 1. images base64 and URL, documents: base64 PDF with title/context/citations, URL PDF, text source, content source
sub(r'''{"messages":[
 {"role":"user","content":[
  {"type":"image","source":{"type":"base64","media_type":"image/png","data":"@PNG@"},"cache_control":{"type":"ephemeral"}},
  {"type":"image","source":{"type":"url","url":"https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg"}},
  {"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"@PDF@"},"title":"Q3 report","context":"Internal, unaudited figures.","citations":{"enabled":true},"cache_control":{"type":"ephemeral","ttl":"1h"}},
  {"type":"document","source":{"type":"url","url":"https://assets.anthropic.com/m/1cd9d098ac3e6467/original/Claude-3-Model-Card-October-Addendum.pdf"}},
  {"type":"document","source":{"type":"text","media_type":"text/plain","data":"The grass is green.\nThe sky is blue."},"title":"My Document","context":"Trustworthy.","citations":{"enabled":true}},
  {"type":"document","source":{"type":"content","content":[{"type":"text","text":"First chunk."},{"type":"text","text":"Second chunk."}]},"title":"Chunks"},
  {"type":"document","source":{"type":"content","content":"One string chunk."}},
  {"type":"text","text":"What do these have in common?"}
 ]},
 {"role":"assistant","content":[{"type":"text","text":"Not much: ","citations":null},{"type":"text","text":"one says the grass is green.","citations":[{"type":"char_location","cited_text":"The grass is green.","document_index":4,"document_title":"My Document","start_char_index":0,"end_char_index":20}]}]}
]}''', **C),
# 2. search results as user content blocks
r'''{"messages":[
 {"role":"user","content":[
  {"type":"search_result","source":"https://kb.example.com/vpn","title":"VPN setup","content":[{"type":"text","text":"Install the client, then sign in with SSO."}],"citations":{"enabled":true},"cache_control":{"type":"ephemeral"}},
  {"type":"search_result","source":"https://kb.example.com/mfa","title":"MFA","content":[{"type":"text","text":"MFA is mandatory."},{"type":"text","text":"Use an authenticator app."}]},
  {"type":"text","text":"How do I get on the VPN?"}
 ]},
 {"role":"assistant","content":[{"type":"text","text":"Install the client and sign in with SSO","citations":[{"type":"search_result_location","cited_text":"Install the client, then sign in with SSO.","source":"https://kb.example.com/vpn","title":"VPN setup","search_result_index":0,"start_block_index":0,"end_block_index":0}]},{"type":"text","text":"; MFA is required."}]}
]}''',
]

server_tools = [
# 1. web search (results and an error), web fetch (result and error), pause_turn
r'''{"messages":[
 {"role":"user","content":"Find the current population of Iceland and open the statistics page."},
 {"role":"assistant","content":[
  {"type":"server_tool_use","id":"srvtoolu_01WYG3ziw53XMcoyKL4XcZmE","name":"web_search","input":{"query":"Iceland population 2025"}},
  {"type":"web_search_tool_result","tool_use_id":"srvtoolu_01WYG3ziw53XMcoyKL4XcZmE","content":[
   {"type":"web_search_result","url":"https://www.statice.is/statistics/population/","title":"Statistics Iceland: Population","encrypted_content":"EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2QSDDI3YTUxNjgxMWRmYTBiYw==","page_age":"2 days ago"},
   {"type":"web_search_result","url":"https://en.wikipedia.org/wiki/Demographics_of_Iceland","title":"Demographics of Iceland","encrypted_content":"EpUKCioIARgBIiQ5MmY0ZDZlZi1lYzQzLTQ4NzAtYjBlMS1lM2E1NTg0MTJkN2YSDA==","page_age":null}
  ]},
  {"type":"server_tool_use","id":"srvtoolu_01Q7Wk0KqPz3N5e1Xy2Ac9Bd","name":"web_search","input":{"query":"Hagstofa mannfjöldi"}},
  {"type":"web_search_tool_result","tool_use_id":"srvtoolu_01Q7Wk0KqPz3N5e1Xy2Ac9Bd","content":{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}},
  {"type":"server_tool_use","id":"srvtoolu_01FetchA0000000000000001","name":"web_fetch","input":{"url":"https://www.statice.is/statistics/population/"}},
  {"type":"web_fetch_tool_result","tool_use_id":"srvtoolu_01FetchA0000000000000001","content":{"type":"web_fetch_result","url":"https://www.statice.is/statistics/population/","retrieved_at":"2025-08-01T10:00:00Z","content":{"type":"document","source":{"type":"text","media_type":"text/plain","data":"Population 1 January 2025: 389,444."},"title":"Population","citations":{"enabled":true}}}},
  {"type":"server_tool_use","id":"srvtoolu_01FetchB0000000000000002","name":"web_fetch","input":{"url":"https://intranet.example/secret"}},
  {"type":"web_fetch_tool_result","tool_use_id":"srvtoolu_01FetchB0000000000000002","content":{"type":"web_fetch_tool_result_error","error_code":"url_not_accessible"}},
  {"type":"text","text":"Iceland had 389,444 inhabitants on 1 January 2025.","citations":[{"type":"web_search_result_location","cited_text":"Population 1 January 2025: 389,444.","url":"https://www.statice.is/statistics/population/","title":"Statistics Iceland: Population","encrypted_index":"Eo8BCioIAhgBIiQ0ZTM1YjU2NhIM"}]}
 ],"stop_reason":"pause_turn","usage":{"input_tokens":6120,"output_tokens":512,"server_tool_use":{"web_search_requests":2,"web_fetch_requests":2}}},
 {"role":"user","content":"Thanks."}
]}''',
# 2. code execution, bash and text editor results, container upload, tool search
r'''{"messages":[
 {"role":"user","content":[{"type":"container_upload","file_id":"file_011CNha8iCJcU1wXNR6q4V8w"},{"type":"text","text":"Analyse the uploaded CSV and fix the typo in notes.md."}]},
 {"role":"assistant","content":[
  {"type":"server_tool_use","id":"srvtoolu_01CodeExec000000000000001","name":"code_execution","input":{"code":"import pandas as pd\ndf = pd.read_csv('data.csv')\nprint(df.describe())"}},
  {"type":"code_execution_tool_result","tool_use_id":"srvtoolu_01CodeExec000000000000001","content":{"type":"code_execution_result","stdout":"count 3.0\nmean 2.0\n","stderr":"","return_code":0,"content":[{"type":"code_execution_output","file_id":"file_011CPlotOut000000000001"}]}},
  {"type":"server_tool_use","id":"srvtoolu_01CodeExec000000000000002","name":"code_execution","input":{"code":"while True: pass"}},
  {"type":"code_execution_tool_result","tool_use_id":"srvtoolu_01CodeExec000000000000002","content":{"type":"code_execution_tool_result_error","error_code":"execution_time_exceeded"}},
  {"type":"server_tool_use","id":"srvtoolu_01CodeExec000000000000003","name":"code_execution","input":{"code":"print('secret')"}},
  {"type":"code_execution_tool_result","tool_use_id":"srvtoolu_01CodeExec000000000000003","content":{"type":"encrypted_code_execution_result","encrypted_stdout":"EuQDCioIARgBIiQ1ZjVhYjM=","stderr":"","return_code":0,"content":[]}},
  {"type":"server_tool_use","id":"srvtoolu_01Bash0000000000000000001","name":"bash_code_execution","input":{"command":"wc -l data.csv"}},
  {"type":"bash_code_execution_tool_result","tool_use_id":"srvtoolu_01Bash0000000000000000001","content":{"type":"bash_code_execution_result","stdout":"4 data.csv\n","stderr":"","return_code":0,"content":[]}},
  {"type":"server_tool_use","id":"srvtoolu_01Bash0000000000000000002","name":"bash_code_execution","input":{"command":"rm -rf /"}},
  {"type":"bash_code_execution_tool_result","tool_use_id":"srvtoolu_01Bash0000000000000000002","content":{"type":"bash_code_execution_tool_result_error","error_code":"unavailable"}},
  {"type":"server_tool_use","id":"srvtoolu_01Edit0000000000000000001","name":"text_editor_code_execution","input":{"command":"view","path":"notes.md"}},
  {"type":"text_editor_code_execution_tool_result","tool_use_id":"srvtoolu_01Edit0000000000000000001","content":{"type":"text_editor_code_execution_view_result","file_type":"text","content":"# Notse\nSee data.csv\n","num_lines":2,"start_line":1,"total_lines":2}},
  {"type":"server_tool_use","id":"srvtoolu_01Edit0000000000000000002","name":"text_editor_code_execution","input":{"command":"str_replace","path":"notes.md","old_str":"Notse","new_str":"Notes"}},
  {"type":"text_editor_code_execution_tool_result","tool_use_id":"srvtoolu_01Edit0000000000000000002","content":{"type":"text_editor_code_execution_str_replace_result","old_start":1,"old_lines":1,"new_start":1,"new_lines":1,"lines":["-# Notse","+# Notes"]}},
  {"type":"server_tool_use","id":"srvtoolu_01Edit0000000000000000003","name":"text_editor_code_execution","input":{"command":"create","path":"summary.md","file_text":"mean = 2.0\n"}},
  {"type":"text_editor_code_execution_tool_result","tool_use_id":"srvtoolu_01Edit0000000000000000003","content":{"type":"text_editor_code_execution_create_result","is_file_update":false}},
  {"type":"server_tool_use","id":"srvtoolu_01Edit0000000000000000004","name":"text_editor_code_execution","input":{"command":"view","path":"missing.md"}},
  {"type":"text_editor_code_execution_tool_result","tool_use_id":"srvtoolu_01Edit0000000000000000004","content":{"type":"text_editor_code_execution_tool_result_error","error_code":"file_not_found","error_message":"missing.md does not exist"}},
  {"type":"server_tool_use","id":"srvtoolu_01Search000000000000000001","name":"tool_search_tool_regex","input":{"query":"weather"}},
  {"type":"tool_search_tool_result","tool_use_id":"srvtoolu_01Search000000000000000001","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"get_weather"}]}},
  {"type":"text","text":"Mean is 2.0; I fixed the heading typo and wrote summary.md."}
 ],"stop_reason":"end_turn","container":{"id":"container_011CNha8kPfJ2mS7sJbYQqLc","expires_at":"2025-08-01T11:00:00Z"},"usage":{"input_tokens":9000,"output_tokens":700}}
]}''',
# 3. refusal and context-window stop reasons
r'''{"messages":[
 {"role":"user","content":"Explain how to culture a dangerous pathogen."},
 {"role":"assistant","content":[],"stop_reason":"refusal","stop_details":{"type":"refusal","category":"bio","explanation":null},"usage":{"input_tokens":15,"output_tokens":0}},
 {"role":"user","content":"Then summarise this very long log."},
 {"role":"assistant","content":[{"type":"text","text":"The log starts with"}],"stop_reason":"model_context_window_exceeded","usage":{"input_tokens":199000,"output_tokens":5}},
 {"role":"user","content":"OK, just the first line."},
 {"role":"assistant","content":[{"type":"text","text":"Line 1: boot OK."}],"stop_reason":"max_tokens","usage":{"input_tokens":40,"output_tokens":8}}
]}''',
]

beta = [
# 1. MCP connector, file sources, compaction
r'''{"messages":[
 {"role":"user","content":[
  {"type":"image","source":{"type":"file","file_id":"file_011CNvxoj286tYUAZFiZMf1U"}},
  {"type":"document","source":{"type":"file","file_id":"file_011CNvxpKz1cZ2s7wQhT9mAe"},"title":"Spec v2"},
  {"type":"text","text":"Open a ticket about the chart in the spec."}
 ]},
 {"role":"assistant","content":[
  {"type":"mcp_tool_use","id":"mcptoolu_014Q35RayjACSWkSj4X2yov1","name":"create_ticket","server_name":"linear","input":{"title":"Chart mislabelled","priority":2}},
  {"type":"mcp_tool_result","tool_use_id":"mcptoolu_014Q35RayjACSWkSj4X2yov1","is_error":false,"content":[{"type":"text","text":"Created ENG-4312"}]},
  {"type":"mcp_tool_use","id":"mcptoolu_01Zq0000000000000000000","name":"assign","server_name":"linear","input":{"ticket":"ENG-4312","to":"nobody"}},
  {"type":"mcp_tool_result","tool_use_id":"mcptoolu_01Zq0000000000000000000","is_error":true,"content":"user not found"},
  {"type":"text","text":"Created ENG-4312 but could not assign it."}
 ]},
 {"role":"user","content":"Summarise everything so far."},
 {"role":"assistant","content":[{"type":"compaction","content":"User shared a spec; ticket ENG-4312 was created, assignment failed."},{"type":"text","text":"Summary saved."}]}
]}''',
# 2. a block type that did not exist when this was written, and a future field on a known block
r'''{"messages":[
 {"role":"user","content":[{"type":"hologram","source":{"type":"url","url":"https://example.com/h.holo"},"depth":3},{"type":"text","text":"Describe it.","lang_hint":"en"}]},
 {"role":"assistant","content":[{"type":"text","text":"A rotating cube."}],"stop_reason":"end_turn"}
]}''',
]

write(ROOT + 'basic.jsonl', basic)
write(ROOT + 'tools.jsonl', tools)
write(ROOT + 'thinking.jsonl', thinking)
write(ROOT + 'documents.jsonl', documents)
write(ROOT + 'server-tools.jsonl', server_tools)
write(ROOT + 'beta-and-future.jsonl', beta)
