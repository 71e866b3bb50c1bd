"""Validates corpus lines against the official SDK request types (openai, anthropic on PyPI),
with unknown keys forbidden, after applying the documented --pure reduction.

usage: check_provider_shapes.py CORPUS_DIR [--write-pure]
With --write-pure, writes <name>.pure.jsonl next to every file whose pure reduction differs from it
(numbers keep their spelling). Deliberately unknown types and fields (FUTURE_TYPES, FUTURE_KEYS) are
left out of the validation only."""
import importlib, json, pkgutil, sys, os
from pydantic import TypeAdapter, ConfigDict

def forbid_extra(package):
    for mod in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):
        try:
            m = importlib.import_module(mod.name)
        except Exception:
            continue
        for obj in vars(m).values():
            if isinstance(obj, type) and hasattr(obj, '__required_keys__') and hasattr(obj, '__total__'):
                try:
                    obj.__pydantic_config__ = ConfigDict(extra='forbid', arbitrary_types_allowed=True)
                except Exception:
                    pass

import openai.types, anthropic.types
forbid_extra(openai.types); forbid_extra(anthropic.types)
from openai.types.chat import ChatCompletionMessageParam
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses import ResponseInputItemParam
from anthropic.types import MessageParam, TextBlockParam
from anthropic.types.beta import BetaMessageParam

import typing
from anthropic.types import ContentBlockParam
from anthropic.types.beta import BetaContentBlockParam

def params_only(union):
    """The request (TypedDict) members of a union: the SDK also admits response models there,
    which accept unknown keys."""
    members = tuple(t for t in typing.get_args(union) if hasattr(t, '__required_keys__'))
    return TypeAdapter(typing.Union[members])

BLOCK = params_only(ContentBlockParam)
from anthropic.types import WebSearchToolRequestErrorParam
WEB_SEARCH_ERROR = TypeAdapter(WebSearchToolRequestErrorParam)
BETA_BLOCK = params_only(BetaContentBlockParam)

def force(x):
    """Lazily validated iterables raise only when iterated."""
    if isinstance(x, dict):
        return {k: force(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [force(v) for v in x]
    if hasattr(x, '__iter__') and not isinstance(x, (str, bytes)):
        return [force(v) for v in x]
    return x

def check(adapter, value):
    force(adapter.validate_python(value))

# ---- the documented pure reductions (docs/formats.md, "What --pure leaves out")
OPENAI_MESSAGE_KEYS = {
    'system': {'role', 'content', 'name'}, 'developer': {'role', 'content', 'name'}, 'user': {'role', 'content', 'name'},
    'assistant': {'role', 'content', 'name', 'refusal', 'tool_calls', 'function_call', 'audio'},
    'tool': {'role', 'content', 'tool_call_id'}, 'function': {'role', 'content', 'name'},
}
def pure_openai(line):
    out = {k: v for k, v in line.items() if k != 'x_stowage'}
    msgs = []
    for m in line['messages']:
        keys = OPENAI_MESSAGE_KEYS[m['role']]
        p = {k: v for k, v in m.items() if k in keys}
        if p.get('tool_calls') in (None, []) and 'tool_calls' in p:
            del p['tool_calls']
        if isinstance(p.get('audio'), dict):
            p['audio'] = {'id': p['audio']['id']}
        msgs.append(p)
    out['messages'] = msgs
    return out

def pure_anthropic(line):
    out = {k: v for k, v in line.items() if k != 'x_stowage'}
    out['messages'] = [{'role': m['role'], 'content': m['content']} for m in line['messages']]
    return out

def pure_responses(line):
    return {k: ([{kk: vv for kk, vv in i.items() if kk != 'x_stowage'} for i in v] if k == 'items' else v)
            for k, v in line.items() if k != 'x_stowage'}

FUTURE_TYPES = {'hologram', 'holodeck_call'}   # deliberately unknown types (kept opaque)
FUTURE_KEYS = {'lang_hint'}                      # deliberately unknown fields on known blocks

def without_future(value):
    if isinstance(value, dict):
        return {k: without_future(v) for k, v in value.items() if k not in FUTURE_KEYS}
    if isinstance(value, list):
        return [without_future(v) for v in value if not (isinstance(v, dict) and v.get('type') in FUTURE_TYPES)]
    return value

def validate(fmt, line):
    p = validate_pure(fmt, line)
    return p

def validate_pure(fmt, line):
    line = without_future(line)
    if fmt == 'openai':
        p = pure_openai(line)
        a = TypeAdapter(ChatCompletionMessageParam)
        for m in p['messages']:
            check(a, m)
        extra = {k: v for k, v in p.items() if k != 'messages'}
        if extra:
            check(TypeAdapter(CompletionCreateParamsNonStreaming), {**extra, 'messages': p['messages']})
        return p
    if fmt == 'anthropic':
        p = pure_anthropic(line)
        for n, m in enumerate(p['messages']):
            if m['role'] not in ('user', 'assistant'):
                raise ValueError(f'messages[{n}].role')
            if isinstance(m['content'], str):
                continue
            for k, b in enumerate(m['content']):
                if b.get('type') == 'web_search_tool_result' and isinstance(b.get('content'), dict):
                    # pydantic takes a dict for the Iterable branch of this union and fails late;
                    # check the error object on its own, then the block around it
                    check(WEB_SEARCH_ERROR, b['content'])
                    b = {**b, 'content': []}
                try:
                    check(BLOCK, b)
                except Exception:
                    try:
                        check(BETA_BLOCK, b)   # beta blocks: mcp_tool_use, compaction, file sources
                    except Exception as e:
                        raise ValueError(f"messages[{n}].content[{k}] {b.get('type')}: {str(e)[:800]}")
        if 'system' in p and not isinstance(p['system'], str):
            t = TypeAdapter(TextBlockParam)
            for b in p['system']:
                check(t, b)
        return p
    if fmt == 'openai-responses':
        p = pure_responses(line)
        a = TypeAdapter(ResponseInputItemParam)
        for n, i in enumerate(p['items']):
            try:
                check(a, i)
            except Exception as e:
                raise ValueError(f"items[{n}] {i.get('type', i.get('role'))}: " + '; '.join(x for x in str(e).split('\n') if 'Extra inputs' in x or 'Field required' in x or 'Input should' in x or x.startswith(i.get('type','message')))[:1500])
        return p
    raise SystemExit(fmt)

class RawNumber(str):
    """A JSON number kept as its source text."""

def loads_exact(text):
    return json.loads(text, parse_float=RawNumber, parse_int=RawNumber)

def dumps_exact(value):
    if isinstance(value, RawNumber):
        return str(value)
    if isinstance(value, dict):
        return '{' + ','.join(json.dumps(k, ensure_ascii=False) + ':' + dumps_exact(v) for k, v in value.items()) + '}'
    if isinstance(value, list):
        return '[' + ','.join(dumps_exact(v) for v in value) + ']'
    return json.dumps(value, ensure_ascii=False).replace('\u2028', '\\u2028').replace('\u2029', '\\u2029')

def main(root, write_pure=False):
    failures = 0
    for fmt in ('openai', 'anthropic', 'openai-responses'):
        d = os.path.join(root, fmt)
        for name in sorted(os.listdir(d)):
            if not name.endswith('.jsonl') or name.endswith('.pure.jsonl'):
                continue
            expect_fail = 'future' in name
            pure_lines, changed = [], False
            for n, text in enumerate(open(os.path.join(d, name), encoding='utf-8'), 1):
                line = json.loads(text)
                try:
                    p = validate(fmt, line)
                    exact = loads_exact(text)
                    reduced = PURE[fmt](exact)
                    pure_lines.append(reduced)
                    changed |= PURE[fmt](line) != line
                    status = 'ok'
                except Exception as e:
                    pure_lines.append(None)
                    status = 'INVALID ' + str(e).replace('\n', ' | ')[:600]
                    if not expect_fail:
                        failures += 1
                print(f"{fmt}/{name}:{n}: {status}")
            if write_pure and changed and None not in pure_lines:
                out = os.path.join(d, name[:-len('.jsonl')] + '.pure.jsonl')
                with open(out, 'w', encoding='utf-8') as f:
                    f.write(''.join(dumps_exact(l) + '\n' for l in pure_lines))
                print('wrote', out)
    print('failures:', failures)
    return failures

PURE = {'openai': pure_openai, 'anthropic': pure_anthropic, 'openai-responses': pure_responses}

if __name__ == '__main__':
    sys.exit(1 if main(sys.argv[1], '--write-pure' in sys.argv[2:]) else 0)
