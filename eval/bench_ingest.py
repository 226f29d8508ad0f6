"""LoCoMo ingest throughput: ``python -m eval.bench_ingest [FILE]``.

Ingests every conversation of the LoCoMo file into one store (one memory per turn,
session co-occurrence edges, entity links), end to end with the bundled MiniLM model, and
prints turns/s next to the model's own encoding rate on the same texts (the baseline,
measured in the same run).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from graphmem import MemoryStore, MiniLMEmbedder
from ingest.locomo import ingest_conversation, load_locomo, turn_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", default=None, help="locomo10.json")
    args = parser.parse_args()
    conversations = load_locomo(args.file)
    texts = [turn_text(t) for c in conversations for t in c.turns]
    model = MiniLMEmbedder()
    model.embed(["warm up"])
    start = time.perf_counter()
    model.embed(texts)
    raw = time.perf_counter() - start
    work = Path(tempfile.mkdtemp(prefix="graphmem-ingest-"))
    try:
        with MemoryStore(work / "db", embedder="minilm") as store:
            store.embed(["warm up"])
            start = time.perf_counter()
            for conversation in conversations:
                ingest_conversation(store, conversation, owner=conversation.sample_id)
            total = time.perf_counter() - start
            stats = store.stats()
        print(f"LoCoMo: {len(conversations)} conversations, {len(texts)} turns")
        print(f"  MiniLM encode alone (baseline): {len(texts) / raw:6.0f} turns/s  ({raw:.1f} s)")
        print(f"  ingest end to end:              {len(texts) / total:6.0f} turns/s  "
              f"({total:.1f} s, {total / raw:.2f}x the encoding time)")
        print(f"  edges: co_occurs {stats.edges['co_occurs']}, references "
              f"{stats.edges['references']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
