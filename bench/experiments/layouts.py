#!/usr/bin/env python3
"""What a message table's layout costs SQLite alone, on B's and A's inserts and C's loads.

Replays the workload's call shapes (A: 2,000 one-message commits to one conversation, then C's
loads of its newest 100 and of all of it; B: 25 rounds of a 4-message commit to each of 100
conversations) with Python's sqlite3 (WAL, synchronous=NORMAL, an 8 MiB cache, ~1.1 KB bodies)
against several layouts, and prints each phase's median. Python's own overhead is in every row
alike: compare rows with each other, not with Stowage or native figures.

    python3 bench/experiments/layouts.py [DIR]   # DIR: a directory on a real disk (default /tmp)
"""

import os
import sqlite3
import statistics
import sys
import time
import uuid

BODY = os.urandom(560).hex().encode()[:1100]
TAG = os.urandom(21)
POS_COLUMNS = "(pos INTEGER PRIMARY KEY, id TEXT NOT NULL, role INT NOT NULL, created_at INT NOT NULL, " \
              "content BLOB NOT NULL, tag BLOB NOT NULL, hv INT, hu INT, idh INT)"
POS_INSERT = "INSERT INTO m (pos, id, role, created_at, content, tag, hv, hu, idh) VALUES (?,?,?,?,?,?,?,?,?)"
POS_NEWEST = "SELECT pos, id, role, created_at, content, tag FROM m WHERE pos > (? << 32) AND pos < ((? + 1) << 32) ORDER BY pos DESC LIMIT 100"
POS_ALL = "SELECT pos, id, role, created_at, content, tag FROM m WHERE pos > (? << 32) AND pos < ((? + 1) << 32) ORDER BY pos"


def pos_layout(index):
    def schema(db):
        db.execute("CREATE TABLE m " + POS_COLUMNS)
        if index:
            db.execute(index)

    def insert(c, m):
        return POS_INSERT, ((c << 32) + m + 1, str(uuid.uuid4()), 1, 1, BODY, TAG, None, None,
                            int.from_bytes(os.urandom(8), "big") >> 1)

    return schema, insert, (POS_NEWEST, lambda c: (c, c)), (POS_ALL, lambda c: (c, c))


def append_order(db):
    db.execute("CREATE TABLE m (rid INTEGER PRIMARY KEY, cid INT NOT NULL, seq INT NOT NULL, id TEXT NOT NULL, "
               "role INT NOT NULL, created_at INT NOT NULL, content BLOB NOT NULL, tag BLOB NOT NULL, hv INT, hu INT)")
    db.execute("CREATE UNIQUE INDEX ms ON m (cid, seq)")
    db.execute("CREATE UNIQUE INDEX mi ON m (cid, id)")


def native_layout(with_message_id):
    def schema(db):
        if with_message_id:
            db.execute("CREATE TABLE m (id INTEGER PRIMARY KEY, conv TEXT NOT NULL, mid TEXT NOT NULL, body TEXT NOT NULL)")
            db.execute("CREATE UNIQUE INDEX mi ON m (conv, mid)")
            db.execute("CREATE INDEX mc ON m (conv, id)")
        else:
            db.execute("CREATE TABLE m (id INTEGER PRIMARY KEY, conv TEXT NOT NULL, body TEXT NOT NULL)")
            db.execute("CREATE INDEX mi ON m (conv, id)")

    def insert(c, m):
        if with_message_id:
            return "INSERT INTO m (conv, mid, body) VALUES (?,?,?)", (f"conv-{c:04}", str(uuid.uuid4()), BODY.decode())
        return "INSERT INTO m (conv, body) VALUES (?,?)", (f"conv-{c:04}", BODY.decode())

    newest = ("SELECT id, body FROM m WHERE conv = ? ORDER BY id DESC LIMIT 100", lambda c: (f"conv-{c:04}",))
    everything = ("SELECT id, body FROM m WHERE conv = ? ORDER BY id", lambda c: (f"conv-{c:04}",))
    return schema, insert, newest, everything


LAYOUTS = {
    "stowage (cid<<32|seq, unique (cid, id))": (pos_layout("CREATE UNIQUE INDEX mi ON m (pos >> 32, id)"), 4096),
    "  without the id index": (pos_layout(None), 4096),
    "  id index on a 64-bit hash": (pos_layout("CREATE UNIQUE INDEX mi ON m (pos >> 32, idh)"), 4096),
    "  8 KiB pages": (pos_layout("CREATE UNIQUE INDEX mi ON m (pos >> 32, id)"), 8192),
    "  16 KiB pages": (pos_layout("CREATE UNIQUE INDEX mi ON m (pos >> 32, id)"), 16384),
    "append order, unique (cid, seq), (cid, id)": ((append_order,
        lambda c, m: ("INSERT INTO m (cid, seq, id, role, created_at, content, tag, hv, hu) VALUES (?,?,?,?,?,?,?,?,?)",
                      (c, m + 1, str(uuid.uuid4()), 1, 1, BODY, TAG, None, None)),
        ("SELECT seq, id, role, created_at, content, tag FROM m WHERE cid = ? ORDER BY seq DESC LIMIT 100", lambda c: (c,)),
        ("SELECT seq, id, role, created_at, content, tag FROM m WHERE cid = ? ORDER BY seq", lambda c: (c,))), 4096),
    "native (append order, index (conv, id))": (native_layout(False), 4096),
    "  and a unique message-id index": (native_layout(True), 4096),
}


def us(samples):
    return statistics.median(samples) / 1000


def run(name, layout, page, base, quiet=False):
    schema, insert, newest, everything = layout
    path = os.path.join(base, "layout-experiment.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"PRAGMA page_size = {page}")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("PRAGMA cache_size = -8192")
    schema(db)

    def commit(statements):
        start = time.perf_counter_ns()
        db.execute("BEGIN")
        for sql, args in statements:
            db.execute(sql, args)
        db.execute("COMMIT")
        return time.perf_counter_ns() - start

    a = [commit([insert(1000, m)]) for m in range(2000)]
    loads = []
    for (sql, args), rounds in ((newest, 200), (everything, 50)):
        times = []
        for _ in range(rounds):
            start = time.perf_counter_ns()
            db.execute(sql, args(1000)).fetchall()
            times.append(time.perf_counter_ns() - start)
        loads.append(us(times))
    b = [commit([insert(c + 1, 4 * t + k) for k in range(4)]) for t in range(25) for c in range(100)]
    db.close()
    if not quiet:
        print(f"{name:44} B {us(b):6.1f} µs  A {us(a):5.1f} µs  newest 100 {loads[0]:6.1f} µs  all {loads[1] / 1000:5.2f} ms")


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
    # A first, unprinted round: the process's first loads also pay for growing its heap.
    first, (layout, page) = next(iter(LAYOUTS.items()))
    run(first, layout, page, base, quiet=True)
    for name, (layout, page) in LAYOUTS.items():
        run(name, layout, page, base)


if __name__ == "__main__":
    main()
