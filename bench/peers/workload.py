"""The pinned workload of shared/bench/WORKLOAD.md, in Python: generator, digests, statistics.

Mirrors bench/src/workload.rs and bench/src/stats.rs byte for byte; `python workload.py`
checks the PRNG test vector, the first message, set A's size and both digests.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

SEED = 20261122
MASK = (1 << 64) - 1
TURN = 4
WORDS = (
    "agent tool memory vector query result store token model prompt context "
    "window search index record stream batch commit branch merge schema table "
    "column cursor buffer cache latency file disk page block write read append "
    "load session thread message reply user system function argument value "
    "string number object array field key hash seed state step event trace "
    "span node edge graph the of and with"
).split()
assert len(WORDS) == 64
ENVELOPE_BYTES = (28, 170, 61, 33)
TARGET_BYTES = 1024
DIGEST_A = "5460942fcac9e1b28d58961111fdced9185f61b188f41498558c8feed3d0ae6e"
DIGEST_B = "377741822c948cf52eedd492acab37625c39220c0f685360663dadee81af6336"


class SplitMix64:
    """splitmix64 seeded for message (c, m): state = SEED + (c << 32) + m (mod 2^64)."""

    def __init__(self, c: int, m: int) -> None:
        self.state = (SEED + (c << 32) + m) & MASK

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)


def conv_id(c: int) -> str:
    return f"conv-{c:04d}"


def call_id(c: int, m: int) -> str:
    return f"call_{c:04d}_{m:05d}"


def text(c: int, m: int) -> str:
    envelope = ENVELOPE_BYTES[m % 4]
    rng = SplitMix64(c, m)
    out = ""
    while envelope + len(out) < TARGET_BYTES:
        word = WORDS[rng.next() % 64]
        out = word if not out else out + " " + word
    return out


def canonical_with_text(c: int, m: int, t: str) -> str:
    shape = m % 4
    if shape == 0:
        return '{"role":"user","content":"' + t + '"}'
    if shape == 1:
        return (
            '{"role":"assistant","content":null,"tool_calls":[{"id":"' + call_id(c, m)
            + '","type":"function","function":{"name":"search_docs","arguments":"{\\"query\\":\\"'
            + t + '\\",\\"top_k\\":5}"}}]}'
        )
    if shape == 2:
        return '{"role":"tool","tool_call_id":"' + call_id(c, m - 1) + '","content":"' + t + '"}'
    return '{"role":"assistant","content":"' + t + '"}'


def canonical(c: int, m: int) -> str:
    return canonical_with_text(c, m, text(c, m))


def compact(value) -> str:
    """Compact JSON, keys in their order: the canonical form of a decoded message."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Message:
    c: int
    m: int
    canonical: str

    def value(self) -> dict:
        return json.loads(self.canonical)


def message(c: int, m: int) -> Message:
    return Message(c, m, canonical(c, m))


def conversation(c: int, count: int) -> list[Message]:
    return [message(c, m) for m in range(count)]


def turn(c: int, t: int) -> list[Message]:
    return [message(c, m) for m in range(t * TURN, (t + 1) * TURN)]


def b_call_order(convs: int, turns: int) -> list[tuple[int, int]]:
    return [(c, t) for t in range(turns) for c in range(convs)]


def digest(canonicals) -> str:
    h = hashlib.sha256()
    for item in canonicals:
        h.update(item.encode())
        h.update(b"\n")
    return h.hexdigest()


# Statistics (WORKLOAD.md §2).

def median(values):
    s = sorted(values)
    n = len(s)
    if n == 0:
        return None
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def p99(values):
    s = sorted(values)
    n = len(s)
    return s[(99 * n + 99) // 100 - 1] if n else None


def latency_us(times_ns):
    us = [t / 1e3 for t in times_ns]
    return (median(us) or 0.0), (p99(us) or 0.0)


def per_second(count, total_ns):
    return count / (total_ns / 1e9) if total_ns else 0.0


def buckets(times_ns, size):
    out = []
    for start in range(0, len(times_ns), size):
        chunk = times_ns[start:start + size]
        med, tail = latency_us(chunk)
        out.append({"from": start, "to": start + len(chunk), "median_us": med, "p99_us": tail})
    return out


def self_check() -> None:
    rng = SplitMix64(0, 0)
    assert [rng.next(), rng.next(), rng.next()] == [
        646995126359979506, 2253979286968669252, 12877417409365039896]
    for m in range(4):
        assert len(canonical_with_text(0, m + 4, "")) == ENVELOPE_BYTES[m]
    assert canonical(0, 0).startswith(
        '{"role":"user","content":"hash query buffer field branch record graph cache ')
    a = conversation(0, 2000)
    assert sum(len(x.canonical) for x in a) == 2_053_341
    assert digest(x.canonical for x in a) == DIGEST_A
    b = [x for c, t in b_call_order(100, 25) for x in turn(c, t)]
    assert digest(x.canonical for x in b) == DIGEST_B
    assert compact(message(3, 5).value()) == message(3, 5).canonical
    assert p99(list(range(2000))) == 1979 and p99(list(range(200))) == 197
    assert median([4, 1, 3, 2]) == 2.5


if __name__ == "__main__":
    self_check()
    print("workload.py: PRNG vector, first message, set A size, digests A and B: ok")
