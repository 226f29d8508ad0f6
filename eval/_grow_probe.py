"""One process's figures for ``eval.bench_grow``: the seconds each batch of records takes
through ``add_many`` on the store at ``DB``, in order.

It imports graphmem alone, so that ``bench_grow --baseline DIR`` runs it as a script with
another checkout's graphmem: ``python eval/_grow_probe.py DB RECORDS_JSON``, the records a
JSON list of batches.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from graphmem import MemoryStore


def probe(db: Path, batches: list[list[dict[str, Any]]]) -> list[float]:
    """Seconds of each ``add_many`` of ``batches``, in one process (the store opened once,
    as an import or a sidecar would)."""
    seconds = []
    with MemoryStore(db, embedder="hashing") as store:
        for batch in batches:
            started = time.perf_counter()
            store.add_many(batch)
            seconds.append(time.perf_counter() - started)
    return seconds


if __name__ == "__main__":
    records = json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))
    print(json.dumps(probe(Path(sys.argv[1]), records)))
