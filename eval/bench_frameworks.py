"""LangGraph's store API on graphmem, timed: ``python -m eval.bench_frameworks``.

One run puts ``--items`` items (one user's namespace), changes a tenth of them, then
times get, search with a query, search without one and list_namespaces on:

* ``InMemoryStore``: LangGraph's own store, indexing with the same hashing embedder (the
  baseline: a dict and a brute-force vector scan);
* ``GraphmemStore`` on an embedded store (an item is found by ids);
* ``GraphmemStore`` through the sidecar (``graphmem.connect``; an item is found by a scan
  of the owner's memories through the export).

Each operation prints its median milliseconds per call, and its ratio to the baseline.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from graphmem import HashingEmbedder, MemoryStore, Settings, connect
from graphmem.integrations.langgraph import GraphmemStore
from graphmem.sidecar import create_app, server_config

NS = ("memories", "alice")
TOPICS = ["tea", "cello", "hiking", "Lisbon", "peanuts", "TypeScript", "chess", "sourdough"]


def _value(i: int, version: int = 1) -> dict[str, Any]:
    topic = TOPICS[i % len(TOPICS)]
    return {"text": f"Alice mentioned {topic} in conversation {i} (version {version})",
            "topic": topic, "n": i}


def _median_ms(call: Callable[[int], Any], n: int) -> float:
    times = []
    for i in range(n):
        start = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure(store: BaseStore, items: int, reads: int) -> dict[str, float]:
    out = {"put (new)": _median_ms(lambda i: store.put(NS, f"k{i}", _value(i)), items)}
    step = 10
    out["put (changed)"] = _median_ms(
        lambda i: store.put(NS, f"k{i * step}", _value(i * step, 2)), items // step)
    out["get"] = _median_ms(lambda i: store.get(NS, f"k{(i * 7) % items}"), reads)
    out["search (query)"] = _median_ms(
        lambda i: store.search(NS, query=f"{TOPICS[i % len(TOPICS)]} conversation",
                               limit=5), reads)
    out["search (filter)"] = _median_ms(
        lambda i: store.search(NS, filter={"topic": TOPICS[i % len(TOPICS)]}, limit=5),
        reads)
    out["list_namespaces"] = _median_ms(lambda i: store.list_namespaces(prefix=NS[:1]),
                                        reads)
    return out


@contextmanager
def sidecar(store: MemoryStore) -> Iterator[str]:
    config = server_config(create_app(store), host="127.0.0.1", port=0,
                           settings=store.settings, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--reads", type=int, default=50)
    args = parser.parse_args()
    embedder = HashingEmbedder()
    baseline = InMemoryStore(index={"dims": embedder.dim,
                                    "embed": lambda texts: embedder.embed(texts).tolist(),
                                    "fields": ["text"]})
    rows = {"InMemoryStore": measure(baseline, args.items, args.reads)}
    with tempfile.TemporaryDirectory() as tmp:
        with MemoryStore(Path(tmp) / "a", embedder="hashing", settings=Settings()) as mem:
            rows["GraphmemStore"] = measure(GraphmemStore(mem, owner_label=1, fields=["text"]),
                                            args.items, args.reads)
        with MemoryStore(Path(tmp) / "b", embedder="hashing", settings=Settings()) as mem, \
                sidecar(mem) as url, connect(url) as client:
            rows["via sidecar"] = measure(GraphmemStore(client, owner_label=1,
                                                        fields=["text"]),
                                          args.items, args.reads)
    print(f"{args.items} items, {args.reads} reads each; median ms per call "
          "(ratio to InMemoryStore)")
    print(f"{'operation':<18}" + "".join(f"{name:>24}" for name in rows))
    for op in rows["InMemoryStore"]:
        base = rows["InMemoryStore"][op]
        cells = [f"{rows[name][op]:10.2f} ({rows[name][op] / base:7.0f}x)"
                 if name != "InMemoryStore" else f"{base:10.3f}" for name in rows]
        print(f"{op:<18}" + "".join(f"{cell:>24}" for cell in cells))


if __name__ == "__main__":
    main()
