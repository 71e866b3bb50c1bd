"""A real ``stowage serve`` for the whole session.

The binary is ``$STOWAGE_BIN`` (default: ``<repo>/target/debug/stowage``). The
server gets a temporary ``stowage.toml`` (SQLite store in a temp dir, a token
file with two tenants), listens on ``127.0.0.1:0`` and prints ``listening on
URL``; the fixture reads that line, and stops the server (SIGTERM, then SIGKILL)
at the end.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from stowage_client import AsyncStowageClient, StowageClient

REPO = Path(__file__).resolve().parents[3]
TOKEN_ACME = "acme-token-0123456789abcdef"
TOKEN_GLOBEX = "globex-token-fedcba9876543210"
STARTUP_TIMEOUT = 120.0


@dataclass
class Server:
    url: str
    token: str
    other_token: str
    process: subprocess.Popen
    log: Path
    directory: Path

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def _binary() -> Path:
    path = Path(os.environ.get("STOWAGE_BIN") or REPO / "target" / "debug" / "stowage")
    if not path.is_file():
        pytest.exit(f"stowage binary not found at {path} (build it or set STOWAGE_BIN)", returncode=2)
    return path


def _write_config(directory: Path) -> Path:
    config = directory / "stowage.toml"
    config.write_text(
        '[stores.main]\nadapter = "sqlite"\ndata_dir = "data"\n\n'
        '[server]\ntoken_file = "tokens"\nreplay_events = 1024\nmax_body_bytes = 1048576\n'
    )
    tokens = directory / "tokens"
    tokens.write_text(f"# tenant token\nacme {TOKEN_ACME}\nglobex {TOKEN_GLOBEX}\n")
    tokens.chmod(0o600)
    return config


def start_server(directory: Path, listen: str = "127.0.0.1:0") -> Server:
    """Starts ``stowage serve`` with the configuration in ``directory`` (written if missing)."""
    config = directory / "stowage.toml"
    if not config.exists():
        _write_config(directory)
    log = directory / "server.log"
    cache = Path(os.environ.get("STOWAGE_CACHE_DIR") or directory / "cache")
    env = {**os.environ, "STOWAGE_CACHE_DIR": str(cache)}
    with open(log, "ab") as log_file:
        process = subprocess.Popen(
            [str(_binary()), "--config", str(config), "serve", "--listen", listen],
            stdout=subprocess.PIPE,
            stderr=log_file,
            env=env,
            cwd=directory,
        )
    lines: "queue.Queue[str]" = queue.Queue()

    def read_stdout() -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
        lines.put("")

    threading.Thread(target=read_stdout, daemon=True).start()
    try:
        first = lines.get(timeout=STARTUP_TIMEOUT)
    except queue.Empty:
        process.kill()
        raise RuntimeError(f"stowage serve printed nothing in {STARTUP_TIMEOUT}s; log:\n{log.read_text()}")
    prefix = "listening on "
    if not first.startswith(prefix):
        process.kill()
        process.wait()
        raise RuntimeError(f"unexpected first line {first!r} from stowage serve; log:\n{log.read_text()}")
    return Server(first[len(prefix):].strip(), TOKEN_ACME, TOKEN_GLOBEX, process, log, directory)


def stop_server(running: Server) -> int:
    """SIGTERM (graceful shutdown), SIGKILL after 30 s; returns the exit code."""
    process = running.process
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    directory = tmp_path_factory.mktemp("stowage")
    try:
        running = start_server(directory)
    except RuntimeError as e:
        pytest.exit(str(e), returncode=2)
    try:
        yield running
    finally:
        stop_server(running)


@pytest.fixture
def client(server: Server) -> Iterator[StowageClient]:
    with StowageClient(server.url, server.token, timeout=30) as c:
        yield c


@pytest.fixture
async def aclient(server: Server):
    async with AsyncStowageClient(server.url, server.token, timeout=30) as c:
        yield c


@pytest.fixture
def conv() -> str:
    """A fresh conversation id."""
    return f"conv-{uuid.uuid4().hex[:12]}"
