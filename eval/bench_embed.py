"""The bundled MiniLM on each runtime, speed and quality: ``python -m eval.bench_embed``.

Runtimes (embedder specs): ``minilm:torch`` (fp32, the baseline), ``minilm:onnx`` (fp32 on
ONNX Runtime) and ``minilm:int8`` (int8 weights on ONNX Runtime). In one run:

* start: a fresh process importing the runtime, loading the model and embedding one
  query (the cost every one-shot command pays);
* speed (``--speed-specs``, e.g. ``minilm,e5`` for another model beside the default):
  single-query latency (1 thread; p50 / p95 over LoCoMo questions) and batch
  throughput on what LoCoMo ingest embeds (turns with their context), the runtimes
  interleaved round by round so a disturbed minute hits them all;
* agreement: cosine of each runtime's vectors to torch fp32 on the same texts;
* quality: R@10 (and MRR) of the ``vector`` and ``default`` presets on LoCoMo and on the
  LongMemEval_S dev split, each next to fp32 in the same run. Allowed: 0.5 pp R@10 loss.

``--quality`` / ``--speed`` run one half; ``--lme-every N`` keeps every Nth LongMemEval
question (90k user turns to embed per runtime for all 368 take hours on 2 shared cores).
LoCoMo's fp32 row is torch's, LongMemEval's is ``minilm:onnx`` (its vectors are torch's
within 1e-6, as the agreement column shows).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from graphmem import embedder_from_spec, embedding_text, query_vectors, session_contexts
from ingest.locomo import load_locomo, turn_text

RUNTIMES = ("minilm:torch", "minilm:onnx", "minilm:int8")
LOCOMO = Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo10.json"
LME = Path(__file__).resolve().parents[2] / "shared/data/longmemeval/longmemeval_s_dev.json.gz"
PRESETS = ("vector", "default")


def start_seconds(spec: str) -> float:
    """Wall time of a fresh process that builds ``spec`` and embeds one query."""
    code = ("import time; t = time.perf_counter(); from graphmem import "
            f"embedder_from_spec; embedder_from_spec({spec!r}).embed(['warm']); "
            "print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def speed(locomo: Path, rounds: int, n_batch: int,
          specs: Sequence[str] = RUNTIMES) -> None:
    conversations = load_locomo(locomo)
    questions = [q.question for c in conversations for q in c.questions][:200]
    indexed = []
    for c in conversations:
        for session in c.sessions:
            texts = [turn_text(t) for t in session.turns]
            indexed += [embedding_text(None, text, context) for text, context
                        in zip(texts, session_contexts(texts, 1), strict=True)]
    indexed = indexed[:n_batch]
    embedders = {spec: embedder_from_spec(spec, batch_threads=2) for spec in specs}
    for embedder in embedders.values():
        embedder.embed(["warm up"])
        embedder.embed(indexed[:32])
    single: dict[str, list[float]] = {s: [] for s in specs}
    batch: dict[str, float] = dict.fromkeys(specs, 0.0)
    chunk = max(1, len(questions) // rounds)
    part = max(1, len(indexed) // rounds)
    for r in range(rounds):  # interleaved: each runtime sees the same minute of the VM
        for spec, embedder in embedders.items():
            for q in questions[r * chunk:(r + 1) * chunk]:
                start = time.perf_counter()
                query_vectors(embedder, [q])
                single[spec].append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            embedder.embed(indexed[r * part:(r + 1) * part])
            batch[spec] += time.perf_counter() - start
    starts = {spec: sorted(start_seconds(spec) for _ in range(3))[1] for spec in specs}
    first = embedders[specs[0]]
    reference = first.embed(indexed[:500])
    base_single = float(np.percentile(single[specs[0]], 50))
    base_batch = len(indexed) / batch[specs[0]]
    print(f"speed: {len(questions)} single queries (1 thread), {len(indexed)} LoCoMo turns "
          f"with context in batches of 64 (2 threads), {rounds} interleaved rounds; start: "
          "median of 3 fresh processes (import, load, one query); e5 runs every call on "
          "2 OpenMP threads")
    print(f"  {'runtime':<14} {'start s':>8} {'query p50':>10} {'p95':>6} {'x fp32':>7} "
          f"{'batch/s':>8} {'x fp32':>7} {'cos to fp32':>12}")
    for spec, embedder in embedders.items():
        p50, p95 = (float(np.percentile(single[spec], q)) for q in (50, 95))
        rate = len(indexed) / batch[spec]
        agreement = "  (another model)"
        if embedder.name.split("@")[0] == first.name.split("@")[0]:  # a runtime of one model
            cos = (embedder.embed(indexed[:500]) * reference).sum(axis=1)
            agreement = f"  {cos.mean():.4f} (min {cos.min():.3f})"
        print(f"  {spec:<14} {starts[spec]:8.2f} {p50:8.1f}ms {p95:6.1f} "
              f"{base_single / p50:6.2f}x {rate:8.0f} {rate / base_batch:6.2f}x "
              + agreement)


def cosines(locomo: Path, specs: Sequence[str], n: int) -> None:
    """How each model's cosines spread: every pair of ``n`` random LoCoMo turns, and the
    share of pairs at or above the similarity thresholds the conversation gate uses (a
    correction's replaced statement, a duplicate), which were chosen with MiniLM."""
    import random

    from graphmem.algorithms import DUPLICATE, NOW_SIMILAR

    turns = [turn_text(t) for c in load_locomo(locomo) for s in c.sessions for t in s.turns]
    sample = random.Random(1).sample(turns, min(n, len(turns)))
    upper = np.triu_indices(len(sample), 1)
    print(f"cosines: every pair of {len(sample)} random LoCoMo turns")
    for spec in specs:
        vectors = embedder_from_spec(spec).embed(sample)
        pairs = (vectors @ vectors.T)[upper]
        print(f"  {spec:<14} median {np.median(pairs):.3f}  p95 {np.percentile(pairs, 95):.3f}"
              f"  p99 {np.percentile(pairs, 99):.3f}  >= {NOW_SIMILAR} (correction) "
              f"{(pairs >= NOW_SIMILAR).mean():.1%}  >= {DUPLICATE} (duplicate) "
              f"{(pairs >= DUPLICATE).mean():.2%}")


def lme_sample(path: Path, every: int) -> Path:
    """Every ``every``-th question of the file (all six types stay; the file is ordered
    by type), written to a scratch file the runner reads."""
    import gzip
    import tempfile

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        questions = json.load(handle)
    kept = [q for q in questions if not str(q["question_id"]).endswith("_abs")][::every]
    out = Path(tempfile.mkdtemp(prefix="graphmem-lme-")) / "sample.json"
    out.write_text(json.dumps(kept))
    return out


def quality(locomo: Path, lme: Path, lme_every: int, out: Path | None,
            specs: Sequence[str] = (RUNTIMES[2],)) -> None:
    from eval.runs import run_locomo, run_longmemeval

    results: dict[str, dict[str, Any]] = {"locomo": {}, "longmemeval": {}}
    if lme_every > 1:
        lme = lme_sample(lme, lme_every)
    # torch and ONNX fp32 agree to 1e-6 (the speed half's cosine): LoCoMo's fp32 row is
    # torch's, LongMemEval's ONNX's, which halves the time LongMemEval takes.
    for spec in (RUNTIMES[0], *specs):
        started = time.perf_counter()
        summary, _ = run_locomo(locomo, presets=PRESETS, embedder=spec, progress=False)
        results["locomo"][spec] = summary["presets"]
        print(f"  locomo {spec}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    for spec in (RUNTIMES[1], *specs) if lme_every > 0 else ():
        started = time.perf_counter()
        summary, _ = run_longmemeval(lme, presets=PRESETS, embedder=spec, progress=False)
        results["longmemeval"][spec] = summary["presets"]
        print(f"  longmemeval {spec}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    if out is not None:
        out.write_text(json.dumps(results, indent=1))
    print_quality(results)


def print_quality(results: dict[str, dict[str, Any]]) -> None:
    print("quality: R@10 per preset, next to fp32 (pp = percentage points; allowed loss 0.5)")
    for corpus, metric in (("locomo", "recall@10"), ("longmemeval", "recall_all@10"),
                           ("longmemeval", "recall@10")):
        rows = results[corpus]
        if not rows:
            continue
        base_spec = next(iter(rows))
        for preset in PRESETS:
            base = rows[base_spec][preset]
            line = f"  {corpus:<11} {metric:<13} {preset:<8} {base_spec} {base[metric]:.4f}"
            for spec, presets in list(rows.items())[1:]:
                value = presets[preset][metric]
                line += (f" | {spec} {value:.4f} ({(value - base[metric]) * 100:+.2f} pp, "
                         f"MRR {presets[preset]['mrr'] - base['mrr']:+.4f})")
            print(line + f"  (n={base['n']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, default=LOCOMO)
    parser.add_argument("--longmemeval", type=Path, default=LME)
    parser.add_argument("--lme-every", type=int, default=1,
                        help="LongMemEval: every Nth answerable question (all types); 0: "
                        "LoCoMo only")
    parser.add_argument("--speed", action="store_true", help="only the speed half")
    parser.add_argument("--quality", action="store_true", help="only the quality half")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-texts", type=int, default=2000)
    parser.add_argument("--json", type=Path, default=None, help="write quality results here")
    parser.add_argument("--speed-specs", default=",".join(RUNTIMES),
                        help="speed: the embedder specs timed, the first the baseline "
                        "(default: %(default)s; e.g. minilm,e5)")
    parser.add_argument("--cosines", type=int, default=0, metavar="N",
                        help="only the spread of cosines over pairs of N random LoCoMo "
                        "turns, for each of --speed-specs")
    parser.add_argument("--specs", default=RUNTIMES[2],
                        help="quality: the embedder specs compared with fp32, comma-separated "
                        "(default: %(default)s; e.g. minilm+pooled,minilm:int8+pooled)")
    args = parser.parse_args()
    if args.cosines:
        cosines(args.locomo, args.speed_specs.split(","), args.cosines)
        return
    if not args.quality:
        speed(args.locomo, args.rounds, args.batch_texts, args.speed_specs.split(","))
    if not args.speed:
        quality(args.locomo, args.longmemeval, args.lme_every, args.json,
                args.specs.split(","))


if __name__ == "__main__":
    main()
