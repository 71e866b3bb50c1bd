"""Helpers to author corpus lines as raw JSON text: lines are written as JSON source, so number
spellings (1e400, -0, 100.0) and escapes stay exactly as authored."""
import base64, json, struct, os

def minify(text: str) -> str:
    out, i, n = [], 0, len(text)
    in_str = False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == '\\':
                out.append(text[i + 1]); i += 2; continue
            if c == '"':
                in_str = False
        else:
            if c == '"':
                in_str = True; out.append(c)
            elif c in ' \t\r\n':
                pass
            else:
                out.append(c)
        i += 1
    s = ''.join(out)
    json.loads(s)  # must stay valid
    return s

def jstr(s: str, ascii_only=False) -> str:
    """A JSON string literal for s."""
    return json.dumps(s, ensure_ascii=ascii_only)

def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")
PDF = b"%PDF-1.4\n1 0 obj <</Type/Catalog/Pages 2 0 R>> endobj\n2 0 obj <</Type/Pages/Kids[]/Count 0>> endobj\ntrailer <</Root 1 0 R>>\n%%EOF\n"
def wav(samples=16):
    data = bytes((i * 37) % 256 for i in range(samples))
    return b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, 8000, 8000, 1, 8) + b"data" + struct.pack("<I", len(data)) + data
MP3 = b"ID3\x03\x00\x00\x00\x00\x00\x0f" + bytes(15) + b"\xff\xfb\x90\x64" + bytes(range(48))
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + bytes(range(32)) + b"\xff\xd9"

def write(path, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = ''.join(minify(l) + '\n' for l in lines)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    size = len(text.encode())
    assert size < 100_000, (path, size)
    print(f"{path}: {len(lines)} lines, {size} bytes")

def write_raw(path, lines):
    """Lines written exactly as given (for malformed cases)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(''.join(l + '\n' for l in lines))
    print(f"{path}: {len(lines)} lines")

def big_table_args(rows=260):
    """~20 KB of tool arguments: a realistic bulk-insert payload as JSON text."""
    cities = ["Zürich", "São Paulo", "東京", "القاهرة", "Kraków", "Reykjavík", "Δελφοί", "Ōsaka", "Montréal", "Dakar"]
    items = []
    for i in range(rows):
        c = cities[i % len(cities)]
        items.append('{"row":%d,"city":%s,"temp_c":%s,"ok":%s,"tags":[%s]}' % (
            i, json.dumps(c, ensure_ascii=False), ["-0", "1e1", "21.50", "3.0E-2", "-12.25", "0.1", "7", "1E+2"][i % 8],
            "true" if i % 3 else "false", ",".join(json.dumps(t) for t in (["a"], ["b", "c"], [])[i % 3])))
    return '{"table":"readings","mode":"upsert","rows":[' + ",".join(items) + '],"note":"bulk"}'

def sub(text: str, **kw) -> str:
    for k, v in kw.items():
        text = text.replace('@' + k + '@', v)
    return text

COMMON = {}
def common():
    if not COMMON:
        COMMON.update(
            PNG=b64(PNG), PDF=b64(PDF), WAV=b64(wav()), MP3=b64(MP3), JPEG=b64(JPEG),
        )
    return COMMON
