#!/usr/bin/env python3
"""Executes every code block of README.md, so none of them rots.

- the Quick start block: its two commands are CI steps of their own (skipped here;
  tests/tests/readme.rs checks they are the commands CI runs);
- ```rust: the embedding snippet, run as `examples/embedding.rs`, built by the
  test command (the test above checks the two are the same code);
- ```toml: written as a configuration file, then `stowage --config FILE list`
  must accept it;
- ```sh: run with bash in a scratch directory, `stowage` on PATH;
- ```python: run with the Python client's venv against a live `stowage serve`
  (env STOWAGE_URL, STOWAGE_TOKEN);
- ```js: run with node from the TypeScript client's package directory (so
  `@stowage/client` resolves to it) against the same server;
- a block preceded by `<!-- readme-snippets: skip (reason) -->`, or with no
  language / `text`, is not run.

Exit status 0 only if every block ran successfully.
"""

import hashlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STOWAGE = Path(os.environ.get("STOWAGE_BIN", ROOT / "target/debug/stowage"))
VENV_PYTHON = Path(os.environ.get("STOWAGE_PY_VENV", ROOT / "target/python-venv")) / "bin/python"
TS_CLIENT = ROOT / "clients/typescript"
TOKEN = "readme-snippet-token"


def blocks(text):
    """Yields (line number, info string, body, skip reason) per fenced block."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            info = lines[i][3:].strip()
            start = i + 1
            j = start
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            skip = None
            k = i - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            m = re.match(r"<!--\s*readme-snippets:\s*skip\s*\((.*)\)\s*-->", lines[k].strip()) if k >= 0 else None
            if m:
                skip = m.group(1)
            yield start, info, "\n".join(lines[start:j]) + "\n", skip
            i = j + 1
        else:
            i += 1


def run(cmd, **kw):
    print("  $", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run(cmd, timeout=600, **kw).returncode == 0


class Server:
    """A `stowage serve` on a free port with one token (tenant `acme`)."""

    def __init__(self, workdir):
        config = workdir / "server.toml"
        digest = hashlib.sha256(TOKEN.encode()).hexdigest()
        config.write_text(
            'default = "main"\n[stores.main]\nadapter = "sqlite"\ndata_dir = "server-data"\n'
            f'[server]\n[[server.tokens]]\ntenant = "acme"\nsha256 = "{digest}"\n'
        )
        self.proc = subprocess.Popen(
            [STOWAGE, "--config", config, "serve", "--listen", "127.0.0.1:0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening on "):
            self.proc.kill()
            raise SystemExit(f"stowage serve did not start: {line!r}")
        self.url = line.removeprefix("listening on ")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def main():
    readme = (ROOT / "README.md").read_text()
    quick_start_at = readme[: readme.index("## Quick start")].count("\n")
    failures, ran, skipped = [], 0, 0
    with tempfile.TemporaryDirectory(prefix="stowage-readme-") as tmp:
        work = Path(tmp)
        server = None
        env = dict(os.environ, PATH=f"{STOWAGE.parent}:{os.environ['PATH']}", STOWAGE_TOKEN=TOKEN)
        try:
            for n, (line, info, body, skip) in enumerate(blocks(readme)):
                lang = info.split()[0] if info else ""
                where = f"README.md:{line} ({lang or 'no language'})"
                if skip or lang in ("", "text", "console") or (lang == "sh" and quick_start_at < line < quick_start_at + 30):
                    print(f"skip {where}: {skip or 'not code / the Quick start commands (CI steps)'}")
                    skipped += 1
                    continue
                print(f"run  {where}", flush=True)
                scratch = work / f"block-{n}"
                scratch.mkdir()
                if lang in ("python", "js") and server is None:
                    server = Server(work)
                    env["STOWAGE_URL"] = server.url
                if lang == "rust":
                    # Built by `cargo test --workspace` (which compiles the examples);
                    # `cargo run -p` alone would resolve features differently and
                    # rebuild wasmtime.
                    ok = run([ROOT / "target/debug/examples/embedding"], cwd=ROOT)
                elif lang == "toml":
                    (scratch / "stowage.toml").write_text(body)
                    ok = run([STOWAGE, "--config", scratch / "stowage.toml", "list"], cwd=scratch, env=env)
                elif lang == "sh":
                    ok = run(["bash", "-euo", "pipefail", "-c", body], cwd=scratch, env=env)
                elif lang == "python":
                    (scratch / "snippet.py").write_text(body)
                    ok = run([VENV_PYTHON, scratch / "snippet.py"], cwd=scratch, env=env)
                elif lang == "js":
                    script = TS_CLIENT / f".readme-snippet-{n}.mjs"
                    script.write_text(body)
                    try:
                        ok = run(["node", script], cwd=TS_CLIENT, env=env)
                    finally:
                        script.unlink()
                else:
                    print(f"  no runner for {lang!r}: mark it `<!-- readme-snippets: skip (reason) -->`")
                    ok = False
                ran += 1
                if not ok:
                    failures.append(where)
        finally:
            if server is not None:
                server.stop()
    print(f"README snippets: {ran} ran, {skipped} skipped, {len(failures)} failed")
    for where in failures:
        print(f"  FAILED {where}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
