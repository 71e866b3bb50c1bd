"""The stores users pick instead, each behind the same small interface as the Rust runner.

A store has: `prepare(message)` (untimed conversion to its input type), `open_conversation`
(untimed: session objects and configs are opened before timing), `build_call(conv, batch)`
(untimed: the argument list of one append call, built in call order), and the timed calls
`append(*args)`, `load_newest(conv, n)`, `load_all(conv)`, each exactly one call into the
store's public API (plus, for LangGraph, taking the messages out of the returned checkpoint).
`is_async` says whether those calls are awaited.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from workload import compact

SYNC_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def default_sync(path: Path) -> tuple[str, str]:
    """`synchronous` as a fresh connection to `path` gets it (the libraries never set it)."""
    conn = sqlite3.connect(path)
    try:
        value = conn.execute("PRAGMA synchronous").fetchone()[0]
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()
    return SYNC_NAMES.get(value, str(value)), mode


def base_notes() -> list[str]:
    return [f"Python {sys.version.split()[0]}, sqlite3 module on SQLite {sqlite3.sqlite_version}"]


class RawSqlite3:
    """Python's sqlite3 with the native baseline's schema and settings (WAL, FULL)."""

    row = "py:sqlite3"
    label = "Python sqlite3"
    is_async = False
    input = "dict; json.dumps(separators=(',', ':')) inside the call"
    output = "dict; json.loads inside the call"
    INSERT = "INSERT INTO messages (conv, body) VALUES (?, ?)"

    def __init__(self, directory: Path, sync: str = "FULL") -> None:
        self.conn = sqlite3.connect(directory / "raw.db")
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={sync}")
        self.conn.executescript(
            "CREATE TABLE IF NOT EXISTS messages ("
            " id INTEGER PRIMARY KEY, conv TEXT NOT NULL, body TEXT NOT NULL);"
            "CREATE INDEX IF NOT EXISTS messages_conv_id ON messages (conv, id);"
        )
        self.sync = sync
        self.notes = base_notes() + [
            f"WAL, synchronous={sync}; one transaction per call (executemany + commit)"]

    def prepare(self, msg):
        return msg.value()

    def open_conversation(self, conv):
        pass

    def build_call(self, conv, batch):
        return (conv, batch)

    def append(self, conv, batch):
        with self.conn:
            self.conn.executemany(self.INSERT, [(conv, json.dumps(v, separators=(",", ":"))) for v in batch])

    def load_newest(self, conv, n):
        rows = self.conn.execute(
            "SELECT body FROM messages WHERE conv = ? ORDER BY id DESC LIMIT ?", (conv, n)).fetchall()
        return [json.loads(body) for (body,) in reversed(rows)]

    def load_all(self, conv):
        rows = self.conn.execute("SELECT body FROM messages WHERE conv = ? ORDER BY id", (conv,)).fetchall()
        return [json.loads(body) for (body,) in rows]

    def canonical(self, out):
        return compact(out)

    def close(self):
        self.conn.close()


class AgentsSession:
    """OpenAI Agents SDK `SQLiteSession`: one session object per conversation, one file."""

    row = "py:sqlitesession"
    label = "OpenAI Agents SQLiteSession"
    is_async = True
    input = "dict (the Chat Completions message); the SDK json.dumps it inside add_items"
    output = "dict; json.loads inside get_items"

    def __init__(self, directory: Path) -> None:
        from agents import SQLiteSession  # noqa: F401 (import cost outside timing)

        self.path = directory / "sessions.db"
        self.sessions = {}
        self._cls = SQLiteSession
        self.sync = None
        self.notes = base_notes() + [f"openai-agents {metadata.version('openai-agents')}; "
                                     "add_items/get_items run in asyncio.to_thread (the SDK's own)"]

    def prepare(self, msg):
        return msg.value()

    def open_conversation(self, conv):
        self.sessions[conv] = self._cls(conv, self.path)
        if self.sync is None:
            self.sync, mode = default_sync(self.path)
            self.notes.append(f"journal_mode={mode}, synchronous={self.sync} (SDK default, not set by the SDK)")

    def build_call(self, conv, batch):
        return (conv, batch)

    async def append(self, conv, batch):
        await self.sessions[conv].add_items(batch)

    async def load_newest(self, conv, n):
        return await self.sessions[conv].get_items(limit=n)

    async def load_all(self, conv):
        return await self.sessions[conv].get_items()

    def canonical(self, out):
        return compact(out)

    def close(self):
        for session in self.sessions.values():
            session.close()


class LangGraphSaver:
    """LangGraph `SqliteSaver` as a graph with a `messages` channel (add_messages reducer)
    uses it: each turn puts a checkpoint holding the thread's whole message list; loading
    reads the latest checkpoint. Only `put` and `get_tuple` are timed (a graph run would
    also call `put_writes`)."""

    row = "py:langgraph"
    label = "LangGraph SqliteSaver"
    is_async = False
    input = "a checkpoint dict holding the whole message list (dicts); serialised by the saver's serde"
    output = "dicts from the latest checkpoint, decoded by get_tuple"

    def __init__(self, directory: Path) -> None:
        from langgraph.checkpoint.base import LATEST_VERSION
        from langgraph.checkpoint.base.id import uuid6
        from langgraph.checkpoint.sqlite import SqliteSaver

        self.path = directory / "checkpoints.db"
        self.conn = sqlite3.connect(self.path, check_same_thread=False)
        self.saver = SqliteSaver(self.conn)
        self.saver.setup()
        self._uuid6 = uuid6
        self._version = LATEST_VERSION
        self.threads = {}
        self.sync, mode = default_sync(self.path)
        self.notes = base_notes() + [
            f"langgraph-checkpoint-sqlite {metadata.version('langgraph-checkpoint-sqlite')}, "
            f"langgraph-checkpoint {metadata.version('langgraph-checkpoint')}",
            f"journal_mode={mode}, synchronous={self.sync} (library default)",
            "each put stores the full message list: bytes grow with the square of the history"]

    def prepare(self, msg):
        return msg.value()

    def open_conversation(self, conv):
        self.threads[conv] = {"messages": [], "parent": None, "version": None, "step": -1}

    def build_call(self, conv, batch):
        thread = self.threads[conv]
        messages = thread["messages"] + batch
        step = thread["step"] + 1
        version = self.saver.get_next_version(thread["version"], None)
        checkpoint_id = str(self._uuid6(clock_seq=step))
        configurable = {"thread_id": conv, "checkpoint_ns": ""}
        if thread["parent"] is not None:
            configurable["checkpoint_id"] = thread["parent"]
        checkpoint = {
            "v": self._version,
            "id": checkpoint_id,
            "ts": datetime.now(timezone.utc).isoformat(),
            "channel_values": {"messages": messages},
            "channel_versions": {"messages": version},
            "versions_seen": {},
            "pending_sends": [],
            "updated_channels": ["messages"],
        }
        thread.update(messages=messages, parent=checkpoint_id, version=version, step=step)
        return ({"configurable": configurable}, checkpoint, {"source": "loop", "step": step, "parents": {}},
                {"messages": version})

    def append(self, config, checkpoint, meta, new_versions):
        self.saver.put(config, checkpoint, meta, new_versions)

    def _latest(self, conv):
        found = self.saver.get_tuple({"configurable": {"thread_id": conv, "checkpoint_ns": ""}})
        return found.checkpoint["channel_values"]["messages"] if found else []

    def load_newest(self, conv, n):
        return self._latest(conv)[-n:]

    def load_all(self, conv):
        return self._latest(conv)

    def canonical(self, out):
        return compact(out)

    def close(self):
        self.conn.close()


PEERS = {"sqlite3": RawSqlite3, "sqlitesession": AgentsSession, "langgraph": LangGraphSaver}
