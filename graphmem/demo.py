"""``make demo``: import the sample corpus into ./graphmem.db and show what graphmem does with it.

Each step prints the command-line equivalent first, so the demo doubles as a tour.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from datetime import datetime

import networkx as nx

from ._facade import MemoryStore
from ._settings import Settings
from ._time import parse_iso

#: The sample corpus' "today" (its last day of activity), so ages and decay make sense.
SAMPLE_NOW = "2026-07-15T18:00:00Z"


def _step(title: str, command: str) -> None:
    print(f"\n== {title}\n$ {command}")


def show_counts(store: MemoryStore) -> None:
    stats = store.stats()
    print(f"memories {stats.memories} (superseded {stats.superseded}, owners {stats.owners})")
    print("  by kind:   " + ", ".join(f"{k} {v}" for k, v in sorted(stats.by_kind.items())))
    print("  by status: " + ", ".join(f"{k} {v}" for k, v in sorted(stats.by_status.items())))
    print("  edges:     " + ", ".join(f"{k} {v}" for k, v in stats.edges.items()))


def show_chain(store: MemoryStore) -> None:
    graph = store.to_networkx(edge_kinds=["supersedes"])
    chains = nx.DiGraph(graph.edges())
    longest = nx.dag_longest_path(chains) if chains.number_of_edges() else []
    # SUPERSEDES points new -> old: print oldest first.
    for depth, memory_id in enumerate(reversed(longest)):
        memory = store.get(memory_id)
        marker = "current " if memory.is_current else "replaced"
        print(f"  {'  ' * depth}{marker} {memory.created:%Y-%m-%d}  {memory.text}")


def show_memories(store: MemoryStore) -> None:
    rows = store.cypher(
        "MATCH (m:Memory) WHERE m.kind = $kind AND m.status = 'active' "
        "RETURN m.id AS id, m.subject AS subject, m.text AS text ORDER BY m.created LIMIT 4",
        {"kind": "procedural"},
    )
    for row in rows:
        print(f"  {row['id']}  {row['subject']}: {row['text'][:70]}")


DEMO_QUERIES = ["how do I deploy orchard?", "which database does orchard use?",
                "what does Nadia prefer for code?"]


def show_recalls(store: MemoryStore, db: str) -> None:
    from .cli._recall import explain_table

    for query in DEMO_QUERIES:
        _step("recall: full text + vectors + graph walk, fused by RRF, re-ranked by ACT-R",
              f"graphmem --db {db} --now {SAMPLE_NOW} recall \"{query}\" -k 4 --explain")
        print(explain_table(store.recall(query, k=4)))


def show_lifecycle(store: MemoryStore, db: str) -> None:
    """A week of agent use (recalls and useful-feedback), then the archivist's report."""
    _step("simulate use: the agent recalls its deploy procedure and marks it useful",
          f"graphmem --db {db} recall \"deploy orchard\" -k 1; graphmem --db {db} feedback ID "
          "--useful")
    for _ in range(12):
        top = store.recall("deploy orchard release", k=1, kinds=["episodic"])
        if top:
            store.feedback(top[0].memory.id, useful=True)
    print("12 recalls with useful feedback recorded")
    _step("the lifecycle report (a dry run: nothing changes until `lifecycle run --apply`)",
          f"graphmem --db {db} --now {SAMPLE_NOW} lifecycle report")
    print(store.run_lifecycle().to_markdown(limit=2))


def run(db: str, *, now: datetime, embedder: str | None = None,
        extra: list[Callable[[MemoryStore], None]] | None = None) -> None:
    from ingest.samples import build_sample
    from ingest.ump import import_ump

    sample = build_sample.OUT
    started = time.perf_counter()
    with MemoryStore(db, settings=Settings.from_env(), embedder=embedder,
                     clock=lambda: now) as store:
        _step("import the sample corpus (all or nothing; a second run changes nothing)",
              f"graphmem --db {db} import ump {sample.relative_to(sample.parents[2])}")
        result = import_ump(store, sample)
        print(f"created {len(result.created)}, updated {len(result.updated)}, unchanged "
              f"{len(result.unchanged)}, supersede edges {result.edges_created} "
              f"(embedder {store.embedder.name})")
        _step("what is there", f"graphmem --db {db} stats")
        show_counts(store)
        _step("a supersede chain: old versions are kept, recall sees the current one",
              f"graphmem --db {db} query \"MATCH (n)-[:SUPERSEDES*]->(o) RETURN n.text, o.text\"")
        show_chain(store)
        _step("a few procedural memories", f"graphmem --db {db} query \"MATCH (m:Memory) "
              "WHERE m.kind = $kind RETURN m.subject, m.text\" --param kind=procedural")
        show_memories(store)
        show_recalls(store, db)
        show_lifecycle(store, db)
        for part in extra or []:
            part(store)
    print(f"\ndone in {time.perf_counter() - started:.1f} s; explore with "
          f"`.venv/bin/graphmem --db {db} --now {SAMPLE_NOW} --help`")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", default="graphmem.db", help="database directory")
    parser.add_argument("--embedder", default=None, help="minilm (default), hashing, ...")
    parser.add_argument("--now", default=SAMPLE_NOW, help="the demo's current time")
    args = parser.parse_args(argv)
    run(args.db, now=parse_iso(args.now), embedder=args.embedder)


if __name__ == "__main__":
    main()
