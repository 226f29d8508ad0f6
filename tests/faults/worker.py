"""A process for the fault tests to kill: it does one kind of work and says what it committed.

    python -m tests.faults.worker add_many DB     prints "ACK <batch>" after each batch commits
"""

from __future__ import annotations

import sys

from graphmem import MemoryStore

BATCH = 200


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


if __name__ == "__main__":
    {"add_many": add_many}[sys.argv[1]](sys.argv[2])
