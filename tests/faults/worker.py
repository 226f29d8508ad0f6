"""A process for the fault tests to kill: it does one kind of work and says what it committed.

    python -m tests.faults.worker add_many DB            "ACK <batch>" after each batch commits
    python -m tests.faults.worker lifecycle DB NOW       "ACK done" after run_lifecycle(apply)
    python -m tests.faults.worker ump DB FILE            "ACK done" after import_ump returns
    python -m tests.faults.worker compact ROOT DB TODAY  "ACK <file>" after each file (and its
                                                         memories) is compacted
    python -m tests.faults.worker index DB SEED          "PROGRESS <step>" after each open (the
                                                         recall index read or built), write
                                                         and close (the index file written)
    python -m tests.faults.worker fields DB SEED         "ACK <id> <version>" after each field
                                                         write (update, feedback, tombstone)

Each prints READY when its store is open, then works, printing "PROGRESS <step>" after each
step of the work (a batch embedded, a transaction committed, a lifecycle job applied), so
the tests can kill it at a known point inside the work and tell an interrupted run ("ACK
done" never printed) from a finished one; after the work it waits to be killed.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

from graphmem import MemoryStore, Settings
from graphmem._time import parse_iso

BATCH = 200
#: What the lifecycle trials run with: archives apply, so every job has work.
LIFECYCLE_SETTINGS = Settings(auto_archive_enabled=True, hot_set_size=100)


def add_many(db: str) -> None:
    with MemoryStore(db, embedder="hashing") as store:
        print("READY", flush=True)
        batch = 0
        while True:
            records = [{"id": f"urn:kill:{batch}:{i}", "text": f"batch {batch} memory {i}",
                        "tags": [f"b{batch}"]} for i in range(BATCH)]
            store.add_many(records, batch_size=BATCH)
            print(f"ACK {batch}", flush=True)
            batch += 1


def _wait() -> None:
    while True:
        time.sleep(1)


def _progress(store: MemoryStore) -> None:
    """Print ``PROGRESS <step>`` after every commit of the store and every batch embedded."""
    engine = store._ctx.engine

    def after(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def step(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            label = args[0] if name == "job" and args else ""
            print(f"PROGRESS {name} {label}".rstrip(), flush=True)
            return result
        return step

    engine.commit = after("commit", engine.commit)  # type: ignore[method-assign]
    open_writer = engine.writer

    @contextlib.contextmanager
    def writer() -> Iterator[Any]:
        with open_writer() as batches:
            yield batches
        print("PROGRESS commit", flush=True)

    engine.writer = writer  # type: ignore[method-assign]
    engine.apply_decisions = after("job", engine.apply_decisions)  # type: ignore[method-assign]
    store._ctx.embed = after("embed", store._ctx.embed)  # type: ignore[method-assign]


def lifecycle(db: str, now: str) -> None:
    moment = parse_iso(now)
    with MemoryStore(db, settings=LIFECYCLE_SETTINGS, clock=lambda: moment) as store:
        _progress(store)
        print("READY", flush=True)
        store.run_lifecycle(apply=True)
        print("ACK done", flush=True)
        _wait()


def ump(db: str, path: str) -> None:
    from ingest.ump import import_ump

    with MemoryStore(db, embedder="hashing") as store:
        _progress(store)
        print("READY", flush=True)
        import_ump(store, path)
        print("ACK done", flush=True)
        _wait()


def compact(root: str, db: str, today: str) -> None:
    from ingest.compact import archive_in_store, sweep

    base = Path(root)
    with MemoryStore(db, embedder="hashing") as store:
        _progress(store)
        print("READY", flush=True)

        def written(plan: object) -> None:
            archive_in_store(store, plan, base)  # type: ignore[arg-type]
            print(f"ACK {plan.path.name}", flush=True)  # type: ignore[attr-defined]

        sweep(base, today=date.fromisoformat(today), apply=True, on_written=written,
              out=open("/dev/null", "w"))  # noqa: SIM115
        print("ACK done", flush=True)
        _wait()


#: The clock of the index trials: recalls score the same in the worker and the checks.
INDEX_NOW = "2026-03-01T12:00:00+00:00"
INDEX_WORDS = ["Caroline", "Melanie", "Nadia", "Orchard", "greenhouse", "pump", "lake", "Porto",
               "Lisbon", "Acme", "pottery", "hiking", "sunsets", "frontend", "release", "dusk",
               "dawn", "office", "winter"]


def index_write(store: MemoryStore, rng: Any) -> str:
    """One random write of the index trials (the worker's and the checks'): returns what
    it was. Ids grow with every memory, so that an index that follows the writes holds
    each memory where a build from the store puts it (in id order): equal scores are
    ranked by that place, and the checks compare with a build."""
    ids = [m.id for m in store.memories() if m.status.value == "active"]
    op = rng.choice(["add", "add", "update", "link", "forget", "recall", "bulk"]
                    if len(ids) > 4 else ["add"])
    count = store.stats().memories

    def text() -> str:
        return " ".join(rng.choice(INDEX_WORDS) for _ in range(rng.randint(4, 9)))

    if op == "add":
        store.add(text(), id=f"urn:trial:{count:08d}", owner=rng.choice([None, "ana"]))
    elif op == "bulk":  # more than one small write: a COPY
        store.add_many([{"id": f"urn:trial:{count + i:08d}", "text": text(), "owner": "ana"}
                        for i in range(70)])
    elif op == "update":
        store.update(rng.choice(ids), text=text())
    elif op == "link":
        from graphmem import Edge

        a, b = rng.sample(ids, 2)
        store.link_many([Edge(rng.choice(["references", "co_occurs"]), a, b)])
    elif op == "forget":
        store.forget(rng.choice(ids), confirm=True, purge=False)
    else:  # a recall that records its accesses: a write of its own
        store.recall(text(), k=3, record_access=True)
        store.flush()
    return op


def index(db: str, seed: str) -> None:
    """Open the store (its recall index read, caught up or built), write, close (the file
    written again, as often as possible), over and over."""
    import random

    from graphmem._store import _saved_index as _persist

    _persist.SAVE_AFTER_IDS = 1  # every close that follows a change writes the file
    moment = parse_iso(INDEX_NOW)
    rng = random.Random(int(seed))
    print("READY", flush=True)
    step = 0
    while True:
        with MemoryStore(db, embedder="hashing", clock=lambda: moment) as store:
            store.recall(" ".join(rng.sample(INDEX_WORDS, 3)), k=3)
            print(f"PROGRESS open {step}", flush=True)
            for _ in range(rng.randint(1, 3)):
                print(f"PROGRESS {index_write(store, rng)}", flush=True)
        print(f"PROGRESS closed {step}", flush=True)
        step += 1


#: Memories of the field-write trials, and the writes a worker makes before it is done.
FIELD_MEMORIES, FIELD_WRITES = 30, 300


def fields(db: str, seed: str) -> None:
    """Field writes, each one transaction with its version row, event and change-ring
    row: ``update(importance=...)``, useful ``feedback`` and ``tombstone`` on random memories,
    each of which bumps the memory's version by one (a feedback only below importance
    0.8, so that it boosts). Prints ``MARK <change mark>`` when the store is ready."""
    import random

    rng = random.Random(int(seed))
    with MemoryStore(db, embedder="hashing") as store:
        if not store.stats().memories:
            store.add_many([{"id": f"urn:f:{i:03d}", "text": f"field trial memory {i}",
                             "importance": 0.2} for i in range(FIELD_MEMORIES)])
        print(f"MARK {store._ctx.engine.change_mark()}", flush=True)
        print("READY", flush=True)
        for _ in range(FIELD_WRITES):
            memory_id = f"urn:f:{rng.randrange(FIELD_MEMORIES):03d}"
            current = store.get(memory_id)
            op = rng.choice(["update", "update", "feedback", "tombstone"])
            if op == "update" or current.status.value != "active" or current.importance > 0.8:
                memory = store.update(memory_id, importance=round(rng.uniform(0.1, 0.5), 6))
            elif op == "feedback":
                memory = store.feedback(memory_id, useful=True)
            else:
                memory = store.tombstone(memory_id, reason="trial")
            print(f"ACK {memory_id} {memory.version}", flush=True)
        print("ACK done", flush=True)
        _wait()


if __name__ == "__main__":
    modes = {"add_many": add_many, "lifecycle": lifecycle, "ump": ump, "compact": compact,
             "index": index, "fields": fields}
    modes[sys.argv[1]](*sys.argv[2:])
