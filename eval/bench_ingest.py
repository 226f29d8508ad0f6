"""LoCoMo ingest throughput: ``python -m eval.bench_ingest [FILE]``.

Ingests every conversation of the LoCoMo file into one store (one memory per turn,
session co-occurrence edges, entity links), end to end with the bundled MiniLM model, and
prints turns/s next to the model's own encoding rate (the baselines, measured in the same
run) on the turns alone and on what ingest embeds: each turn with the turn before and after
it (its context), about three times the tokens.

``--embedders`` ingests once per embedder spec, the first being the baseline the others
are compared with (default: ``minilm:torch``, what ingest ran on before, then ``minilm``,
fp32 on ONNX Runtime, the same vectors, ``minilm:int8``, another model, and each of the
two with ``+pooled`` (each turn encoded once, its context's vector added: other vectors);
``eval.bench_embed --quality`` measures what each does to recall).

``--chats FILE`` times the everyday path instead: every sitting of an everyday chat set
(``eval/data/everyday_dev.json``) through ``add_conversation``, as the README says (the
quality gate, corrections, context, extraction), in a fresh store each of ``--repeats``
times, against MiniLM's own encoding of the same messages in the same run.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graphmem import MemoryStore, MiniLMEmbedder, embedding_text, session_contexts
from ingest.locomo import ingest_conversation, load_locomo, turn_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", default=None, help="locomo10.json")
    parser.add_argument("--embedders",
                        default="minilm:torch,minilm,minilm+pooled,minilm:int8,minilm:int8+pooled",
                        help="embedder specs, comma-separated; the first is the baseline")
    parser.add_argument("--chats", type=Path, default=None,
                        help="time add_conversation over this everyday chat set instead")
    parser.add_argument("--repeats", type=int, default=3, help="with --chats: fresh stores")
    args = parser.parse_args()
    if args.chats is not None:
        chats(args.chats, args.embedders.split(",")[0], args.repeats)
        return
    conversations = load_locomo(args.file)
    texts = [turn_text(t) for c in conversations for t in c.turns]
    indexed = [embedding_text(None, text, context)
               for c in conversations for s in c.sessions
               for text, context in _with_context([turn_text(t) for t in s.turns])]
    model = MiniLMEmbedder()
    model.embed(["warm up"])
    start = time.perf_counter()
    model.embed(texts)
    raw = time.perf_counter() - start
    start = time.perf_counter()
    model.embed(indexed)
    raw_indexed = time.perf_counter() - start
    print(f"LoCoMo: {len(conversations)} conversations, {len(texts)} turns")
    print(f"  MiniLM encode (torch), turns alone:        {len(texts) / raw:6.0f} turns/s  "
          f"({raw:.1f} s)")
    print(f"  MiniLM encode (torch), turns with context: {len(texts) / raw_indexed:6.0f} "
          f"turns/s  ({raw_indexed:.1f} s)  (what ingest embeds)")
    baseline = None
    for spec in args.embedders.split(","):
        total, stats = _ingest(conversations, spec)
        rate = len(texts) / total
        baseline = baseline or rate
        print(f"  ingest end to end, {spec:<13} {rate:6.0f} turns/s  ({total:.1f} s, "
              f"{total / raw_indexed:.2f}x the torch encoding of what it embeds; "
              f"{rate / baseline:.2f}x the first)")
    print(f"  edges: co_occurs {stats.edges['co_occurs']}, references "
          f"{stats.edges['references']}")


def _ingest(conversations: list, spec: str) -> tuple[float, Any]:
    def feed(store: MemoryStore) -> None:
        for conversation in conversations:
            ingest_conversation(store, conversation, owner=conversation.sample_id)

    return _timed(spec, feed)


def _timed(spec: str, feed: Callable[[MemoryStore], object]) -> tuple[float, Any]:
    """Seconds ``feed`` takes to fill a fresh store (the model loaded first), and the
    store's stats after it."""
    work = Path(tempfile.mkdtemp(prefix="graphmem-ingest-"))
    try:
        with MemoryStore(work / "db", embedder=spec) as store:
            store.embed(["warm up"])
            start = time.perf_counter()
            feed(store)
            total = time.perf_counter() - start
            return total, store.stats()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def chats(path: Path, spec: str, repeats: int) -> None:
    """Messages per second through ``add_conversation`` (median of ``repeats`` fresh
    stores), beside the model's encoding of the same messages."""
    from ingest.chats import ingest_chat, load_chats

    loaded = load_chats(path)
    texts = [str(m.get("content", m) if isinstance(m, dict) else m)
             for chat in loaded for sitting in chat.sittings for m in sitting.messages]
    model = MiniLMEmbedder()
    model.embed(["warm up"])
    start = time.perf_counter()
    model.embed(texts)
    encode = time.perf_counter() - start
    runs = [_timed(spec, lambda store: [ingest_chat(store, chat) for chat in loaded])
            for _ in range(repeats)]
    memories = runs[-1][1].memories
    total = statistics.median(seconds for seconds, _ in runs)
    print(f"{path.name}: {len(loaded)} chats, {len(texts)} messages, {memories} memories kept")
    print(f"  MiniLM encode of the messages:       {len(texts) / encode:6.1f} messages/s "
          f"({encode:.1f} s)")
    print(f"  add_conversation, {spec:<16} {len(texts) / total:6.1f} messages/s "
          f"({total:.1f} s, median of {repeats}; {total / encode:.2f}x the encoding)")


def _with_context(texts: list[str]) -> list[tuple[str, str | None]]:
    return list(zip(texts, session_contexts(texts, 1), strict=True))


if __name__ == "__main__":
    main()
