"""The in-memory-plus-/data pattern: one file per conversation under /data,
loaded once into memory, written back whole and durably after every change.

Layout (the store's adapter directory is preopened at /data)::

    /data/stowage-example-py/<sha256 of the scope>/<sha256 of the conversation id>.json

Hashed names keep any id (``../x``, 512 bytes, ``CON``) a safe, fixed-length
file name; the real scope and id are stored inside the file. A file is::

    <token>\\n<JSON of the conversation's state>

Durability: `save` writes a temporary file beside the target, fsyncs it,
renames it over the target and fsyncs the directory, so once it returns the
new state survives a crash or power loss, and a crash mid-write leaves the old
file (plus a stray ``*.tmp`` file that readers ignore). Not guaranteed: several
hosts writing the same store at once (the host serialises writers of a
conversation only within its own process).

Memory: the host runs up to a few instances of the adapter at once, each with
its own memory. Every write stamps a fresh random token on the file's first
line, so an instance re-reads a file only when its token changed: a cached
state is never used after another instance wrote the file.
"""

import hashlib
import json
import os
from typing import Callable, Dict, Iterator, Optional, Tuple

ROOT = "/data/stowage-example-py"
CACHE_SIZE = 256  # conversations kept in memory per instance


def scope_dir(tenant: str, user: str) -> str:
    return f"{ROOT}/{_hash(json.dumps([tenant, user]))}"


def conversation_path(tenant: str, user: str, conversation_id: str) -> str:
    return f"{scope_dir(tenant, user)}/{_hash(conversation_id)}.json"


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class StorageError(Exception):
    """A file could not be read or written; the message says which and why."""


class Files:
    """Reads and writes state files through an in-memory cache of decoded states.

    `decode` turns a file's JSON into a state object, `encode` a state back.
    """

    def __init__(self, decode: Callable[[dict], object], encode: Callable[[object], dict]):
        self._decode = decode
        self._encode = encode
        self._cache: Dict[str, Tuple[str, object]] = {}  # path -> (token, state)

    def load(self, path: str) -> Optional[object]:
        """The state in `path`, or None if there is no such file."""
        try:
            with open(path, "rb") as f:
                token = f.readline().rstrip(b"\n").decode("ascii", "replace")
                cached = self._cache.get(path)
                if cached is not None and cached[0] == token:
                    return cached[1]
                body = f.read()
        except FileNotFoundError:
            self._cache.pop(path, None)
            return None
        except OSError as e:
            raise StorageError(f"reading {path}: {e}") from e
        try:
            state = self._decode(json.loads(body))
        except (ValueError, KeyError, TypeError, IndexError) as e:
            raise StorageError(f"{path} is damaged: {e}") from e
        self._remember(path, token, state)
        return state

    def save(self, path: str, state: object) -> None:
        """Writes `state` to `path` durably (see the module's documentation)."""
        token = os.urandom(8).hex()
        data = token.encode("ascii") + b"\n" + json.dumps(self._encode(state), separators=(",", ":")).encode("utf-8")
        directory = os.path.dirname(path)
        tmp = f"{path}.{token}.tmp"
        try:
            _ensure_dir(directory)
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            _fsync_dir(directory)
        except OSError as e:
            self.forget(path)
            _remove_quietly(tmp)
            raise StorageError(f"writing {path}: {e}") from e
        self._remember(path, token, state)

    def delete(self, path: str) -> bool:
        """Removes `path` durably; False if it did not exist."""
        self.forget(path)
        try:
            os.remove(path)
        except FileNotFoundError:
            return False
        except OSError as e:
            raise StorageError(f"deleting {path}: {e}") from e
        try:
            _fsync_dir(os.path.dirname(path))
        except OSError as e:
            raise StorageError(f"deleting {path}: {e}") from e
        return True

    def forget(self, path: str) -> None:
        """Drops the cached state of `path` (after a failed write, its memory may be ahead of the file)."""
        self._cache.pop(path, None)

    def paths(self, directory: str) -> Iterator[str]:
        """Every state file in `directory` (none if it does not exist)."""
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return
        except OSError as e:
            raise StorageError(f"listing {directory}: {e}") from e
        for name in names:
            if name.endswith(".json"):
                yield f"{directory}/{name}"

    def scope_dirs(self) -> Iterator[str]:
        """Every scope directory of the store."""
        try:
            names = os.listdir(ROOT)
        except FileNotFoundError:
            return
        except OSError as e:
            raise StorageError(f"listing {ROOT}: {e}") from e
        for name in names:
            if not name.startswith("."):
                yield f"{ROOT}/{name}"

    def _remember(self, path: str, token: str, state: object) -> None:
        self._cache.pop(path, None)
        if len(self._cache) >= CACHE_SIZE:
            self._cache.pop(next(iter(self._cache)))  # the least recently stored
        self._cache[path] = (token, state)


def _ensure_dir(directory: str) -> None:
    """Creates `directory` (and ROOT) if missing, fsyncing each parent whose entries changed."""
    for d in (ROOT, directory):
        if not os.path.isdir(d):
            os.makedirs(d, exist_ok=True)
            _fsync_dir(os.path.dirname(d))


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
