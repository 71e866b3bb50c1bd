"""Replays the pinned workload (shared/bench/WORKLOAD.md) on one Python peer, once, in this
fresh process, and writes one RunResult JSON (the schema of bench/src/report/mod.rs).

    python bench/peers/run.py --peer sqlitesession|langgraph|sqlite3 --run N --out FILE
                              [--tmp-dir DIR] [--quick]

Phases A and C share one store, B (and D) use a second, fresh one, each in a fresh
directory on the normal file system (tmpfs is refused). Every message is generated,
converted and grouped into its call's arguments before the timer starts; the timer
(time.perf_counter_ns) brackets exactly one call. GC stays on; before each phase the
harness runs gc.collect(); gc.freeze(). Phase E (Stowage's own addition) is not run here.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from time import perf_counter_ns

sys.path.insert(0, str(Path(__file__).resolve().parent))

import asyncio  # noqa: E402

from stores import PEERS  # noqa: E402
from workload import (  # noqa: E402
    DIGEST_A, DIGEST_B, TURN, b_call_order, buckets, conv_id, conversation, digest, latency_us,
    per_second, turn,
)

SCALES = {
    "full": dict(a=2000, bucket=100, newest=100, newest_loads=200, all_loads=20, convs=100, turns=25),
    "quick": dict(a=200, bucket=20, newest=20, newest_loads=10, all_loads=2, convs=10, turns=5),
}
SLOW_NS = 5_000_000
MEMORY_FILESYSTEMS = {"tmpfs", "ramfs", "devtmpfs", "hugetlbfs"}


class WalWatch:
    """Bytes 12..20 of a WAL header change when the WAL restarts after a checkpoint; a
    change seen after call i means call i - 1 ran the checkpoint (see walwatch.rs)."""

    def __init__(self, directory: Path) -> None:
        self.directory, self.files = directory, []

    def observe(self) -> bool:
        if not self.files:
            self.files = [[os.open(p, os.O_RDONLY), None] for p in self.directory.rglob("*-wal")]
        restarted = False
        for entry in self.files:
            header = os.pread(entry[0], 8, 12)
            if len(header) < 8:
                continue
            if entry[1] is not None and entry[1] != header:
                restarted = True
            entry[1] = header
        return restarted

    def close(self) -> None:
        for fd, _ in self.files:
            os.close(fd)
        self.files = []


def fsync_probe(directory: Path, rounds: int = 32) -> float:
    """Median µs of (write 4 KiB, fdatasync): the device's flush latency right now."""
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    times = []
    try:
        for i in range(rounds):
            os.pwrite(fd, b"\x5a" * 4096, (i % 16) * 4096)
            start = perf_counter_ns()
            os.fdatasync(fd)
            times.append(perf_counter_ns() - start)
    finally:
        os.close(fd)
        os.unlink(path)
    return latency_us(times)[0]


def checkpoint_calls(seen):
    return [i - 1 for i, s in enumerate(seen) if s and i > 0]


def filesystem_of(path: Path) -> str:
    path = path.resolve()
    best = (-1, "")
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            fields = line.split()
            target = fields[1].replace("\\040", " ")
            if str(path).startswith(target) and len(target) > best[0]:
                best = (len(target), fields[2])
    return best[1]


def bytes_under(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def check_equal(store, what, got, want):
    if len(got) != len(want):
        raise SystemExit(f"check failed: {what}: {len(got)} messages, expected {len(want)}")
    for i, (out, msg) in enumerate(zip(got, want)):
        if store.canonical(out) != msg.canonical:
            raise SystemExit(f"check failed: {what}: message {i} (m = {msg.m}) differs")


async def timed(store, fn, arglist, after):
    """Times each call of fn(*args); after(i, result) runs outside the timer."""
    times = []
    if store.is_async:
        for i, args in enumerate(arglist):
            start = perf_counter_ns()
            result = await fn(*args)
            times.append(perf_counter_ns() - start)
            after(i, result)
    else:
        for i, args in enumerate(arglist):
            start = perf_counter_ns()
            result = fn(*args)
            times.append(perf_counter_ns() - start)
            after(i, result)
    return times


def settle():
    gc.collect()
    gc.freeze()


async def phase_a_c(peer_cls, directory, scale, out):
    store = peer_cls(directory)
    conv = conv_id(0)
    store.open_conversation(conv)
    messages = conversation(0, scale["a"])
    if scale["a"] == 2000:
        assert digest(m.canonical for m in messages) == DIGEST_A
        out["checks"].append("set A digest matches WORKLOAD.md")
    calls = [store.build_call(conv, [store.prepare(m)]) for m in messages]
    watch, seen = WalWatch(directory), []
    settle()
    times = await timed(store, store.append, calls, lambda i, r: seen.append(watch.observe()))
    watch.close()
    del calls
    med, tail = latency_us(times)
    bs = buckets(times, scale["bucket"])
    out["metrics"].update({
        "a.median_us": med, "a.p99_us": tail, "a.appends_per_s": per_second(len(times), sum(times)),
        "a.first_bucket_median_us": bs[0]["median_us"], "a.last_bucket_median_us": bs[-1]["median_us"],
        "a.checkpoints": len(checkpoint_calls(seen)),
    })
    out["a_buckets"] = bs

    n, loads = scale["newest"], scale["newest_loads"]
    want_newest = messages[len(messages) - n:]

    def check(kind, want, count):
        def after(i, result):
            if i == 0 or i == count - 1:
                check_equal(store, kind, result, want)
        return after

    settle()
    newest = await timed(store, store.load_newest, [(conv, n)] * loads, check("C newest", want_newest, loads))
    all_loads = scale["all_loads"]
    every = await timed(store, store.load_all, [(conv,)] * all_loads, check("C all", messages, all_loads))
    out["checks"].append(f"C: newest {n} and all {len(messages)} read back equal")
    med, tail = latency_us(newest)
    out["metrics"].update({"c.newest.median_us": med, "c.newest.p99_us": tail,
                           "c.all.median_us": latency_us(every)[0]})
    store.close()
    return store


async def phase_b_d(peer_cls, directory, scale, out):
    store = peer_cls(directory)
    convs = [conv_id(c) for c in range(scale["convs"])]
    for conv in convs:
        store.open_conversation(conv)
    turns = [(c, turn(c, t)) for c, t in b_call_order(scale["convs"], scale["turns"])]
    if scale["convs"] == 100 and scale["turns"] == 25:
        assert digest(m.canonical for _, batch in turns for m in batch) == DIGEST_B
        out["checks"].append("set B digest (append order) matches WORKLOAD.md")
    calls = [store.build_call(convs[c], [store.prepare(m) for m in batch]) for c, batch in turns]
    del turns
    watch, seen = WalWatch(directory), []
    settle()
    times = await timed(store, store.append, calls, lambda i, r: seen.append(watch.observe()))
    watch.close()
    del calls
    med, tail = latency_us(times)
    ckpts = set(checkpoint_calls(seen))
    slow = [i for i, t in enumerate(times) if t > SLOW_NS]
    out["metrics"].update({
        "b.msgs_per_s": per_second(len(times) * TURN, sum(times)), "b.median_us": med, "b.p99_us": tail,
        "b.checkpoints": len(ckpts), "b.calls_over_5ms": len(slow),
        "b.calls_over_5ms_on_checkpoint": sum(1 for i in slow if i in ckpts),
    })
    checked = sorted({0, scale["convs"] // 2, scale["convs"] - 1})
    for c in checked:
        got = store.load_all(conv_id(c))
        if store.is_async:
            got = await got
        check_equal(store, f"B {conv_id(c)}", got, conversation(c, scale["turns"] * TURN))
    out["checks"].append(f"B: conversations {checked} read back equal")
    out["metrics"]["d.bytes_before_close"] = bytes_under(directory)
    store.close()
    out["metrics"]["d.bytes"] = bytes_under(directory)
    return store


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", choices=sorted(PEERS), required=True)
    parser.add_argument("--run", type=int, default=0)
    parser.add_argument("--out")
    parser.add_argument("--tmp-dir", default=tempfile.gettempdir())
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    base = Path(args.tmp_dir)
    base.mkdir(parents=True, exist_ok=True)
    if filesystem_of(base) in MEMORY_FILESYSTEMS:
        raise SystemExit(f"{base} is on {filesystem_of(base)}: pass --tmp-dir on the normal file system")
    scale_name = "quick" if args.quick else "full"
    scale = SCALES[scale_name]
    peer_cls = PEERS[args.peer]
    out = {"schema": 1, "run": args.run, "scale": scale_name, "metrics": {}, "a_buckets": [],
           "e_curve": [], "checks": []}
    run_dir = Path(tempfile.mkdtemp(prefix="stowage-bench-py-", dir=base))
    try:
        out["metrics"]["env.fsync_probe_before_us"] = fsync_probe(run_dir)
        (run_dir / "a-c").mkdir()
        (run_dir / "b-d").mkdir()
        await phase_a_c(peer_cls, run_dir / "a-c", scale, out)
        store = await phase_b_d(peer_cls, run_dir / "b-d", scale, out)
        out["metrics"]["env.fsync_probe_after_us"] = fsync_probe(run_dir)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    out["description"] = {
        "row": peer_cls.row, "label": peer_cls.label, "sync": store.sync or "FULL", "baseline": False,
        "input": peer_cls.input, "output": peer_cls.output,
        "notes": store.notes + ["phase E not run (Stowage's own addition)"],
    }
    text = json.dumps(out, indent=2) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    asyncio.run(main())
