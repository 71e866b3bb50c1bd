"""The README snippet runs as-is against the test server (so it never rots)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

SNIPPET = Path(__file__).resolve().parents[1] / "README-snippet.md"


def python_block(markdown: str) -> str:
    blocks = re.findall(r"^```python\n(.*?)^```", markdown, flags=re.S | re.M)
    assert len(blocks) == 1, "README-snippet.md holds exactly one python block"
    return blocks[0]


def test_readme_snippet_runs(server) -> None:
    code = python_block(SNIPPET.read_text())
    env = {**os.environ, "STOWAGE_URL": server.url, "STOWAGE_TOKEN": server.token}
    env.pop("OPENAI_API_KEY", None)  # it must not need (or call) a model
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "['Hi!', 'Hello.']"
    assert lines[1] == "[{'role': 'user', 'content': 'Hi!'}, {'role': 'assistant', 'content': 'Hello.'}]"
    assert lines[2] == "[{'role': 'user', 'content': \"What's the weather?\"}]"
