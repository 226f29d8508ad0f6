"""One process's figures for ``eval.bench_writes`` on one store: per memory, in turn, a
plain ``get``, ``update(importance=...)`` and the engine's bare commit (the floor) of the
same memory, then ``feedback`` and ``tombstone`` of two others, and ``update(text=...)``
of a fourth (it takes the text of the tombstoned one: its mentions and facts leave, that
text's come in); the p50 of each. Each memory is read once untimed first, so that the
timed ``get`` finds its pages as warm as the read inside each write does (a first read of
a memory cost more).

The floor is one ``SET`` of a field to its own value, in a transaction of its own, through
the engine's write connection: what a durable commit of one node costs (the WAL written
and synced), without the version row, event, change-ring row or reads a store write adds.

It imports graphmem alone, so that ``bench_writes --baseline DIR`` runs it as a script
with another checkout's graphmem: ``python eval/_writes_probe.py DB IDS_JSON``.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from graphmem import MemoryStore
from graphmem.algorithms import engine_of
from graphmem.engines import KuzuEngine

#: The floor's statement: a write Kuzu logs and syncs, that changes nothing.
FLOOR = "MATCH (m:Memory {id: $id}) SET m.importance = m.importance"
#: What is timed, in the order printed.
OPS = ("get", "floor", "update(importance=...)", "feedback", "tombstone", "update(text=...)")
CPU_OPS = tuple(f"cpu {name}" for name in OPS)
#: The order they run in: the floor after the update of the same memory, not before it
#: (a commit outside the store's own writes is another writer's to the store, which then
#: reads that memory's row again: 0.6 ms of an update right after it, at 100k memories,
#: against 0.2-0.4 ms for the row the recall index holds).
_ORDER = ("get", "update(importance=...)", "floor", "feedback", "tombstone",
          "update(text=...)")


def probe(db: Path, ids: Sequence[str]) -> dict[str, float]:
    """The p50 in ms of each of ``OPS`` over ``ids`` (four memories a sample: the first
    is read, updated and committed bare; the second given feedback; the third
    tombstoned; the fourth given the third's text; one more warms up), with the recall
    index loaded, as in a sidecar: wall time, and as ``cpu <op>`` the process's CPU
    time, which load stretches less."""
    samples = (len(ids) - 1) // 4
    rng = random.Random(11)
    with MemoryStore(db, embedder="hashing") as store:
        engine = engine_of(store)
        if not isinstance(engine, KuzuEngine):
            raise SystemExit("the floor is measured on a Kuzu store")
        store.recall("Caroline Lisbon", k=5)  # the recall index is loaded
        warm = ids[-1]  # the first calls load what later ones reuse
        store.get(warm)
        store.update(warm, importance=0.5)
        store.update(warm, text=store.get(warm).text + " (edited)")
        engine.db.run_auto(FLOOR, {"id": warm})
        texts: dict[str, str] = {}
        calls: dict[str, Callable[[str], object]] = {
            "get": store.get,
            "floor": lambda i: engine.db.run_auto(FLOOR, {"id": i}),
            "update(importance=...)": lambda i: store.update(
                i, importance=rng.uniform(0.1, 0.9)),
            "feedback": lambda i: store.feedback(i, useful=True),
            "tombstone": lambda i: store.tombstone(i, reason="bench"),
            "update(text=...)": lambda i: store.update(i, text=texts[i]),
        }
        times: dict[str, list[float]] = {name: [] for name in (*OPS, *CPU_OPS)}
        for k in range(samples):
            first, second, third, fourth = ids[4 * k:4 * k + 4]
            for memory_id in (first, second, third, fourth):
                store.get(memory_id)
            texts[fourth] = store.get(third).text
            for name, memory_id in zip(_ORDER, (first, first, first, second, third, fourth),
                                       strict=True):
                cpu, started = time.process_time(), time.perf_counter()
                calls[name](memory_id)
                times[name].append((time.perf_counter() - started) * 1000)
                times[f"cpu {name}"].append((time.process_time() - cpu) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


if __name__ == "__main__":
    print(json.dumps(probe(Path(sys.argv[1]), json.loads(sys.argv[2]))))
