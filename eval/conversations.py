"""Everyday chats: graphmem as documented (one ``add_conversation`` per sitting, recall by
owner) beside plain BM25, MiniLM and their RRF over the user's own turns, in one run.

A question is answered by its gold turn(s); a hit is a memory whose provenance names a gold
turn. Metrics per arm and per category: hit@1/@3/@5, MRR (top 10), "gold not stored" (no
active memory came from any gold turn: the gate dropped it or kept it as a candidate), and
for corrections "stale first" (the corrected turn ranks above the correction, or the
correction is missing while the stale turn is returned).

``python -m eval.conversations eval/data/everyday_dev.json`` prints the table.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from graphmem import (
    PRESETS,
    Embedder,
    InvalidInputError,
    MemoryStore,
    RecallConfig,
    Settings,
    embedder_from_spec,
    query_vectors,
)
from ingest.chats import (
    CATEGORIES,
    Chat,
    ChatQuestion,
    Turn,
    ingest_chat,
    load_chats,
    turn_of,
    user_turns,
)

__all__ = ["BASELINES", "ChatRun", "plain_bm25", "run_chats"]

K = 10
#: The plain baselines over the user's turns, in the order they are reported.
BASELINES = ("bm25", "minilm", "rrf")
_TOKEN = re.compile(r"[a-z0-9]+")
#: A short English stopword list for the plain BM25 baseline (rank_bm25-style Okapi).
_STOP = frozenset({
    "a", "an", "the", "and", "or", "but", "if", "of", "at", "by", "for", "with", "about", "to",
    "from", "in", "on", "is", "are", "was", "were", "be", "been", "being", "am", "i", "me",
    "my", "we", "our", "you", "your", "he", "she", "it", "its", "they", "them", "their",
    "this", "that", "these", "those", "what", "which", "who", "whom", "when", "where", "why",
    "how", "do", "does", "did", "has", "have", "had", "not", "no", "so", "than", "too", "very",
    "can", "will", "just", "should", "would", "could",
})


@dataclass
class ChatRun:
    """Per arm, per question: the rank (1-based) of the first gold hit, or None; the rank
    of the first stale hit; whether a gold turn was stored as an active memory."""

    arms: dict[str, dict[str, int | None]] = field(default_factory=dict)
    stale: dict[str, dict[str, int | None]] = field(default_factory=dict)
    stored: dict[str, bool] = field(default_factory=dict)
    questions: dict[str, ChatQuestion] = field(default_factory=dict)
    top1: dict[str, Counter[str]] = field(default_factory=dict)

    def table(self, arm: str, category: str | None = None) -> dict[str, float]:
        ids = [q for q, question in self.questions.items()
               if category is None or question.category == category]
        ranks = [self.arms[arm].get(q) for q in ids]
        out: dict[str, float] = {"n": len(ids)}
        for k in (1, 3, 5):
            out[f"hit@{k}"] = _mean([1.0 if r is not None and r <= k else 0.0 for r in ranks])
        out["mrr"] = _mean([1.0 / r if r is not None else 0.0 for r in ranks])
        if arm in self.stale:
            out["gold not stored"] = sum(1 for q in ids if not self.stored.get(q, True))
            corrections = [q for q in ids if self.questions[q].category == "correction"]
            out["stale first"] = sum(1 for q in corrections
                                     if _before(self.stale[arm].get(q), self.arms[arm].get(q)))
            # how many questions the single most frequent first hit answers
            out["one turn first"] = max(self.top1[arm].values(), default=0)
        return out


def _before(stale: int | None, gold: int | None) -> bool:
    return stale is not None and (gold is None or stale < gold)


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def _first(ranking: Sequence[Turn | None], wanted: Sequence[Turn]) -> int | None:
    targets = set(wanted)
    return next((r for r, turn in enumerate(ranking[:K], start=1) if turn in targets), None)


# -- the plain baselines ---------------------------------------------------------------------
def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOP]


def plain_bm25(docs: Sequence[str], query: str, *, k1: float = 1.5, b: float = 0.75
               ) -> np.ndarray:
    """Okapi BM25 scores of ``query`` against ``docs`` (lowercase alphanumeric tokens,
    a short stopword list, rank_bm25's idf): the baseline anyone would write."""
    tokenized = [_tokens(d) for d in docs]
    n = len(docs)
    lengths = np.array([len(t) for t in tokenized], dtype=float)
    avg = float(lengths.mean()) if n else 0.0
    df: Counter[str] = Counter(t for doc in tokenized for t in set(doc))
    scores = np.zeros(n)
    for term in set(_tokens(query)):
        if term not in df:
            continue
        idf = math.log((n - df[term] + 0.5) / (df[term] + 0.5) + 1)
        tf = np.array([doc.count(term) for doc in tokenized], dtype=float)
        scores += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths / max(avg, 1e-9)))
    return scores


def _order(scores: np.ndarray) -> list[int]:
    return [int(i) for i in np.argsort(-scores, kind="stable") if scores[i] > -np.inf]


def _rrf(*rankings: Sequence[int], k: float = 60.0) -> list[int]:
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(fused, key=lambda i: -fused[i])


def _baselines(chat: Chat, embedder: Embedder, run: ChatRun) -> None:
    turns = user_turns(chat)
    texts = [text for _, text in turns]
    vectors = embedder.embed(texts)
    for question in chat.questions:
        lexical = plain_bm25(texts, question.question)
        bm25 = [i for i in _order(lexical) if lexical[i] > 0]
        query = query_vectors(embedder, [question.question])[0]
        dense = _order(vectors @ query)
        for arm, order in (("bm25", bm25), ("minilm", dense), ("rrf", _rrf(bm25, dense))):
            run.arms.setdefault(arm, {})[question.id] = _first(
                [turns[i][0] for i in order], question.gold)


# -- graphmem ----------------------------------------------------------------------------------
def _now(chats: Sequence[Chat]) -> datetime:
    return max(s.timestamp for chat in chats for s in chat.sittings) + timedelta(days=1)


def _stored_turns(store: MemoryStore, owner: str) -> set[Turn]:
    """Turns that some recallable (active or hot, current) memory of ``owner`` came from."""
    out = set()
    for memory in store.memories(owner=owner):
        turn = turn_of(memory.provenance)
        if turn is not None and memory.status.value == "active" and not memory.superseded_by:
            out.add(turn)
    return out


def run_chats(
    path: str | Path,
    *,
    presets: Sequence[str | RecallConfig] = ("default",),
    embedder: str | Embedder = "minilm",
    baselines: bool = True,
    timestamps: bool = True,
    repeat: int = 0,
    record_access: bool = False,
    ingest: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> ChatRun:
    """Ingest every chat of ``path`` into one store and ask every question.

    ``repeat``: ask all questions this many times before the measured pass (with
    ``record_access``, what a store that records access learns from being asked);
    ``timestamps``: pass each sitting's time to ``add_conversation`` (else the clock's).
    """
    chats = load_chats(path)
    model = embedder_from_spec(embedder) if isinstance(embedder, str) else embedder
    run = ChatRun()
    for chat in chats:
        for question in chat.questions:
            run.questions[question.id] = question
    now = _now(chats)
    with tempfile.TemporaryDirectory(prefix="graphmem-chats-") as tmp:
        store = MemoryStore(Path(tmp) / "chats.db", embedder=model, settings=Settings(),
                            clock=lambda: now)
        with store:
            for chat in chats:
                if progress:
                    progress(f"ingest {chat.id}")
                ingest_chat(store, chat, **dict(ingest or {}),
                            **({} if timestamps else {"timestamp": now}))
                stored = _stored_turns(store, chat.owner)
                for question in chat.questions:
                    run.stored[question.id] = any(t in stored for t in question.gold)
            for preset in presets:
                arm = f"graphmem {preset if isinstance(preset, str) else preset.name}"
                run.top1[arm] = Counter()
                for _ in range(repeat):
                    for chat in chats:
                        for question in chat.questions:
                            store.recall(question.question, owner=chat.owner, k=K,
                                         preset=preset, record_access=record_access)
                for chat in chats:
                    for question in chat.questions:
                        hits = store.recall(question.question, owner=chat.owner, k=K,
                                            preset=preset, record_access=record_access)
                        ranking = [turn_of(h.memory.provenance) for h in hits]
                        run.arms.setdefault(arm, {})[question.id] = _first(ranking,
                                                                           question.gold)
                        run.stale.setdefault(arm, {})[question.id] = _first(ranking,
                                                                            question.stale)
                        if hits:
                            run.top1[arm][hits[0].memory.id] += 1
    if baselines:
        for chat in chats:
            _baselines(chat, model, run)
    return run


def format_table(run: ChatRun) -> str:
    """The overall table, then one row per arm and category (hit@1 / hit@3 / MRR)."""
    arms = list(run.arms)
    lines = [f"{'arm':<22} {'n':>4} {'hit@1':>6} {'hit@3':>6} {'hit@5':>6} {'MRR':>6} "
             f"{'not stored':>10} {'stale first':>11} {'one first':>9}"]
    for arm in arms:
        t = run.table(arm)
        extra = (f"{int(t['gold not stored']):>10} {int(t['stale first']):>11} "
                 f"{int(t['one turn first']):>9}" if "gold not stored" in t else "")
        lines.append(f"{arm:<22} {int(t['n']):>4} {t['hit@1']:>6.3f} {t['hit@3']:>6.3f} "
                     f"{t['hit@5']:>6.3f} {t['mrr']:>6.3f} {extra}".rstrip())
    lines.append("")
    lines.append(f"{'category':<12} " + " ".join(f"{a:>22}" for a in arms))
    for category in CATEGORIES:
        cells = []
        for arm in arms:
            t = run.table(arm, category)
            cells.append(f"{t['hit@1']:.2f}/{t['hit@3']:.2f}/{t['mrr']:.2f}")
        n = int(run.table(arms[0], category)["n"]) if arms else 0
        lines.append(f"{category + f' ({n})':<12} " + " ".join(f"{c:>22}" for c in cells))
    lines.append("(cells: hit@1/hit@3/MRR)")
    return "\n".join(lines)


def write_outputs(run: ChatRun, out: Path, *, source: str | Path, embedder: str,
                  command: str) -> list[Path]:
    """``results.json`` (per arm: the table overall and per category, and each
    question's ranks) and ``report.md`` (the tables, and what this run was)."""
    out.mkdir(parents=True, exist_ok=True)
    results = {
        "corpus": "conversations", "source": str(source), "embedder": embedder,
        "command": command, "k": K,
        "arms": {arm: {"all": run.table(arm),
                       **{c: run.table(arm, c) for c in CATEGORIES}} for arm in run.arms},
        "questions": {q: {"category": question.category, "question": question.question,
                          "stored": run.stored.get(q),
                          "ranks": {arm: run.arms[arm].get(q) for arm in run.arms},
                          "stale": {arm: run.stale[arm].get(q) for arm in run.stale}}
                      for q, question in run.questions.items()},
    }
    json_path = out / "results.json"
    json_path.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    report = out / "report.md"
    report.write_text(
        f"# Everyday conversations: {Path(source).name}\n\n"
        f"Command: `{command}`\n\n"
        f"Each sitting of each conversation was remembered with one `add_conversation` call "
        f"(owner: the conversation's), then every question was recalled by its owner "
        f"(k={K}, no access recorded). Embedder: `{embedder}`. The plain arms rank the "
        f"user's own turns of the same conversation (BM25; {embedder} cosine; their RRF, "
        f"k=60).\n\n```\n{format_table(run)}\n```\n", encoding="utf-8")
    return [json_path, report]


def configs_from(path: str | Path) -> list[RecallConfig]:
    """Named variants of the presets: ``{"name": {"base": "default", "actr": {...},
    "weights": {...}, ...}}``, each ``PRESETS[base].with_(name=name, **changes)``."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SystemExit(f"{path}: cannot read the configurations: {error}") from None
    if not isinstance(raw, dict):
        raise SystemExit(f"{path}: must be a JSON object of name -> configuration")
    out = []
    for name, spec in raw.items():
        if not isinstance(spec, dict):
            raise SystemExit(f"{path}: {name}: must be an object")
        changes = dict(spec)
        name_of_base = changes.pop("base", "default")
        if name_of_base not in PRESETS:
            raise SystemExit(f"{path}: {name}: no preset {name_of_base!r}")
        base = PRESETS[name_of_base]
        if isinstance(changes.get("weights"), dict):
            changes["weights"] = {**base.weights, **changes["weights"]}
        try:
            out.append(base.with_(name=name, **changes))
        except (TypeError, InvalidInputError) as error:
            raise SystemExit(f"{path}: {name}: {error}") from None
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m eval.conversations", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", help="a chat file (eval/data/everyday_*.json)")
    parser.add_argument("--presets", default="default",
                        help="comma-separated recall presets (default: default)")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--repeat", type=int, default=0,
                        help="ask every question this many times before the measured pass")
    parser.add_argument("--record-access", action="store_true",
                        help="recalls record access (what a store learns from being asked)")
    parser.add_argument("--no-timestamps", action="store_true",
                        help="ingest without the sittings' times (every turn dated now)")
    parser.add_argument("--no-baselines", action="store_true")
    parser.add_argument("--configs", metavar="JSON",
                        help="also score these configurations: a JSON file of name -> "
                             "{\"base\": preset, and RecallConfig.with_ changes}")
    args = parser.parse_args(argv)
    presets: list[str | RecallConfig] = [p for p in args.presets.split(",") if p]
    if args.configs:
        presets += configs_from(args.configs)
    run = run_chats(args.file, presets=presets,
                    embedder=args.embedder, baselines=not args.no_baselines,
                    timestamps=not args.no_timestamps, repeat=args.repeat,
                    record_access=args.record_access)
    print(format_table(run))


if __name__ == "__main__":
    main()
