"""Runs of the experiment on each corpus: LoCoMo, LongMemEval, and any UMP file with qrels."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from graphmem import (
    PRESETS,
    Embedder,
    InvalidInputError,
    MemoryStore,
    RecallConfig,
    RecordError,
    Settings,
    embedder_from_spec,
)
from ingest.locomo import CATEGORIES, Conversation, Question, load_locomo

from .experiment import (
    NO_ACTR,
    ROWS,
    CachedEmbedder,
    actr_summary,
    configs,
    reader_for,
    replay,
    summarize,
)
from .locomo import DEPTH, QueryResult, build_store, run_conversation
from .metrics import dedupe, score_run

__all__ = ["LME_PROTOCOLS", "SPLITS", "ablation_groups", "knowledge_graph_off", "official_gold",
           "run_locomo", "run_longmemeval", "run_ump"]

#: Which part of a corpus a run uses: everything, or one of two halves: configurations are
#: tuned on "tune" and reported on "test" (LoCoMo: conversations 1-5 / 6-10; LongMemEval:
#: the answerable questions at even / odd positions).
SPLITS = ("all", "tune", "test")


def _embedder(spec: str | Embedder) -> CachedEmbedder:
    inner = embedder_from_spec(spec) if isinstance(spec, str) else spec
    return CachedEmbedder(inner)


def _split(items: Sequence[Any], split: str, *, alternate: bool) -> list[Any]:
    """One part of ``items`` (see ``SPLITS``): halves in order, or alternate positions."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; splits are {', '.join(SPLITS)}")
    if split == "all":
        return list(items)
    if alternate:
        return list(items[0::2] if split == "tune" else items[1::2])
    middle = (len(items) + 1) // 2
    return list(items[:middle] if split == "tune" else items[middle:])


def _limit(conversations: Sequence[Conversation], limit: int | None
           ) -> list[tuple[Conversation, list[tuple[int, Question]]]]:
    """The conversations and the questions taken from each: the file's questions in order,
    ``limit`` of them in all (None: every one). A question without evidence is taken too
    (the ACT-R protocol's agent asks it) and never scored (``run_conversation``)."""
    out, left = [], limit
    for conversation in conversations:
        taken = list(enumerate(conversation.questions))
        if left is not None:
            taken = taken[:left]
            left -= len(taken)
        if taken:
            out.append((conversation, taken))
        if left is not None and left <= 0:
            break
    return out


def run_locomo(
    path: str | Path | None = None,
    *,
    presets: Sequence[str] = ROWS,
    limit: int | None = None,
    embedder: str | Embedder = "minilm",
    ablations: bool | Sequence[str] = False,
    progress: bool = True,
    ingest: Mapping[str, Any] | None = None,
    split: str = "all",
) -> tuple[dict[str, Any], list[QueryResult]]:
    """The experiment on LoCoMo: the table, per category, the ACT-R protocol, ablations,
    on the conversations of ``split``. ``ablations`` is True (every group) or the names
    of the groups to run (``ablation_groups()``).

    Returns the results (``results.json``'s content) and the per-query results.
    """
    started = time.perf_counter()
    groups = _ablation_groups(ablations)
    plan = _limit(_split(load_locomo(path), split, alternate=False), limit)
    emb = _embedder(embedder)
    options = dict(ingest or {})
    variations = {g: v for g, v in _recall_ablations().items() if g in groups}
    flat = {f"{group}/{name}": cfg for group, cfgs in variations.items()
            for name, cfg in cfgs.items()}
    total = _scored(plan)
    bar = tqdm(total=total * (len(presets) + len(flat)), desc="locomo", unit="q",
               disable=not progress)
    rows: list[QueryResult] = []
    extra: list[QueryResult] = []
    for conversation, asked in plan:
        store = build_store(conversation, emb, **options)
        emb.warm(q.question for _, q in asked)
        rows += run_conversation(store, conversation, configs(presets), questions=asked,
                                 on_query=lambda: bar.update(1), embed_ms=emb.ms)
        # the recall-time ablations ask the same store
        extra += run_conversation(store, conversation, flat, questions=asked,
                                  on_query=lambda: bar.update(1))
        store.close()
    bar.close()
    results: dict[str, Any] = {
        "corpus": "locomo", "source": str(path or "default"), "split": split,
        "conversations": len(plan), "sample_ids": [c.sample_id for c, _ in plan],
        "questions": total,
        **summarize(rows, list(presets), CATEGORIES),
    }
    if split == "all":
        halves = {part: {c.sample_id for c in _split([c for c, _ in plan], part,
                                                     alternate=False)}
                  for part in ("tune", "test")}
        results["by_split"] = {
            part: {name: _brief([r for r in rows if r.preset == name and r.sample_id in ids],
                                _category) for name in presets}
            for part, ids in halves.items()}
    if "default" in presets:
        results["actr"] = locomo_actr(plan, emb, options, progress=progress)
    if groups:
        results["ablations"] = {
            group: {name: _brief([r for r in extra if r.preset == f"{group}/{name}"],
                                 _category) for name in cfgs}
            for group, cfgs in variations.items()}
        results["ablations"].update(locomo_ingest_ablations(
            plan, emb, options, groups=groups, progress=progress))
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["embedder"] = emb.spec
    return results, rows


def locomo_actr(plan: Sequence[tuple[Conversation, list[tuple[int, Question]]]],
                emb: Embedder, options: Mapping[str, Any], *, progress: bool
                ) -> dict[str, Any]:
    """The ACT-R protocol (``eval.experiment``): for each half of each conversation's
    questions (alternate ones of all it asks, evidence or not), a fresh store measured
    with ``default`` and with ``default`` without ACT-R (cold: nobody used it), then the
    other half replayed on it as an agent's use and the half measured again (warm)."""
    pairs: list[tuple[QueryResult, QueryResult]] = []
    cold: list[tuple[QueryResult, QueryResult]] = []
    bar = tqdm(total=_scored(plan) * 4 + sum(len(q) for _, q in plan), desc="act-r protocol",
               unit="q", disable=not progress)
    both = {NO_ACTR.name: NO_ACTR, "default": PRESETS["default"]}
    reader = reader_for(emb)

    def measure(store: MemoryStore, conversation: Conversation,
                measured: Sequence[tuple[int, Question]]
                ) -> list[tuple[QueryResult, QueryResult]]:
        by = {(r.index, r.preset): r for r in run_conversation(
            store, conversation, both, questions=measured, on_query=lambda: bar.update(1))}
        return [(by[(i, NO_ACTR.name)], by[(i, "default")]) for i, q in measured
                if q.evidence]

    for conversation, asked in plan:
        halves = (asked[0::2], asked[1::2])
        for history, measured in ((halves[0], halves[1]), (halves[1], halves[0])):
            if not measured:
                continue
            store = build_store(conversation, emb, **options)
            cold += measure(store, conversation, measured)
            replay(store, [q.question for _, q in history], reader)
            bar.update(len(history))
            pairs += measure(store, conversation, measured)
            store.close()
    bar.close()
    summary = actr_summary(pairs, cold)
    summary["protocol"] = (reader.protocol(emb.spec, "each conversation's questions (with "
                                           "evidence or not)")
                           + ". Cold: the same two on a store nobody used")
    summary["reader"] = reader.spec
    return summary


def knowledge_graph_off(config: RecallConfig) -> RecallConfig:
    """``config`` without the knowledge graph: no walks through entities, no query
    entity links, no time, facts or entities channels (the memory graph stays)."""
    weights = {k: v for k, v in config.weights.items()
               if k not in ("time", "facts", "entities")}
    return config.with_(weights=weights, graph={"entities": 0.0, "query_entities": 0.0})


#: One-at-a-time variations of the default configuration (recall time only).
def _recall_ablations() -> dict[str, dict[str, RecallConfig]]:
    base = PRESETS["default"]
    weights = base.weights

    def weight(channel: str, values: Sequence[float]) -> dict[str, RecallConfig]:
        return {f"{channel}={w}": base.with_(weights={**weights, channel: w}) for w in values}

    out: dict[str, dict[str, RecallConfig]] = {
        "knowledge_graph": {"off": knowledge_graph_off(base), "on (default)": base},
        "graph_channel": {"off": base.with_(weights={**weights, "graph": 0.0}),
                          "on (default)": base},
        # what the graph adds in all: two channels and ACT-R, no walk and no knowledge graph
        "graph_share": {"two channels + ACT-R": knowledge_graph_off(base).with_(
            weights={"fulltext": weights["fulltext"], "vector": weights["vector"]}),
                        "default": base},
        "entity_walks": {f"entities={w}": base.with_(graph={"entities": w})
                         for w in (0.0, 0.5, 1.0)},
        "query_entity_links": {f"query_entities={w}": base.with_(graph={"query_entities": w})
                               for w in (0.0, 1.0, 2.0)},
        "hub_damping": {f"min_informativeness={w}": base.with_(
            graph={"min_informativeness": w}) for w in (0.0, 0.05, 0.15)},
        "time_weight": weight("time", (0.0, 0.3, 0.5)),
        # the time channel's weight when the question names a window
        "time_window": {f"time_window={w}": base.with_(time_window=w)
                        for w in (None, 1.5, 2.0, 3.0, 5.0)},
        # the window a query names: also the memories dated just after it
        "time_after": {f"time_after={a}": base.with_(time_after=a) for a in (0.0, 0.5, 1.0)},
        # questions of when, order and duration: which fused hits that name a time count
        "time_floor": {f"time_floor={f}": base.with_(time_floor=f) for f in (0.0, 0.5, 0.8)},
        # the floor of questions that ask for a time itself (when, how long) alone
        "time_floor_when": {f"time_floor_when={f}": base.with_(time_floor_when=f)
                            for f in (None, 0.5, 0.0)},
        "facts_weight": weight("facts", (0.0, 0.3, 0.5)),
        # what a person a question names said, lifted (adversarial questions name the
        # other person of the conversation)
        "speaker": {f"speaker={s}": base.with_(speaker=s) for s in (0.0, 0.1, 0.2, 0.4)},
        "answer": {f"answer={a}": base.with_(answer=a) for a in (0.0, 0.1, 0.2, 0.4)},
        "entities_channel": weight("entities", (0.0, 0.3)),
        "graph_weight": weight("graph", (0.0, 0.2, 0.4, 0.6, 1.0)),
        "rrf_k": {f"k={k}": base.with_(rrf_k=float(k)) for k in (10, 30, 60, 100)},
        "vector_weight": weight("vector", (0.0, 0.15, 0.3, 0.5, 1.0)),
        # the grid the vector weight and rrf_k are chosen on, jointly (run it on the tune
        # half: --split tune)
        "vector_x_rrf_k": {f"vector={w},k={k}": base.with_(
            weights={**weights, "vector": w}, rrf_k=float(k))
            for w in (0.15, 0.3, 0.5) for k in (10, 30, 60)},
        "asking": {f"asking={a}": base.with_(asking=a) for a in (1.0, 0.8, 0.6, 0.4)},
        "graph_depth": {f"depth={d}": base.with_(graph={"depth": d}) for d in (1, 2, 3)},
        "graph_method": {m: base.with_(graph={"method": m}) for m in ("ppr", "hops")},
        "actr_weight": {f"actr={w}": base.with_(actr={"weight": w})
                        for w in (0.0, 0.3, 0.6, 1.0, 2.0)},
        "actr_d": {f"d={d}": base.with_(actr={"d": d}) for d in (0.3, 0.5, 0.7)},
    }
    return out


_INGEST_ABLATIONS: dict[str, dict[str, dict[str, Any]]] = {
    "context_window": {f"context={w}": {"context_window": w} for w in (0, 1, 2)},
    "cooccur_window": {f"cooccur={w}": {"cooccur_window": w} for w in (0, 1, 2)},
    "entity_links": {f"entities={b}": {"entity_links": b} for b in (False, True)},
}


def ablation_groups() -> list[str]:
    """The names of the ablation groups (recall-time ones, then LoCoMo's ingest-time ones).

    >>> groups = ablation_groups()
    >>> "knowledge_graph" in groups and "context_window" in groups
    True
    """
    return [*_recall_ablations(), *_INGEST_ABLATIONS]


def _ablation_groups(ablations: bool | Sequence[str]) -> list[str]:
    if ablations is True:
        return ablation_groups()
    if not ablations:
        return []
    known = ablation_groups()
    unknown = [g for g in ablations if g not in known]
    if unknown:
        raise InvalidInputError(f"unknown ablation group(s) {', '.join(unknown)}; groups are "
                                f"{', '.join(known)}", field="ablations")
    return list(ablations)


def _scored(plan: Sequence[tuple[Conversation, list[tuple[int, Question]]]]) -> int:
    """How many of the questions ``plan`` takes are scored (those with evidence)."""
    return sum(1 for _, taken in plan for _, q in taken if q.evidence)


def locomo_ingest_ablations(plan: Sequence[tuple[Conversation, list[tuple[int, Question]]]],
                            emb: Embedder, options: Mapping[str, Any], *,
                            groups: Sequence[str], progress: bool) -> dict[str, Any]:
    """R@10 and MRR of ``default`` on stores rebuilt with each ingest-time variation
    (context window, co-occurrence window, entity links) among ``groups``."""
    chosen = {g: v for g, v in _INGEST_ABLATIONS.items() if g in groups}
    results: dict[str, Any] = {}
    bar = tqdm(total=sum(len(v) for v in chosen.values()) * len(plan),
               desc="ablations (ingest)", unit="store", disable=not progress)
    for group, variants in chosen.items():
        results[group] = {}
        for name, change in variants.items():
            found: list[QueryResult] = []
            for conversation, asked in plan:
                store = build_store(conversation, emb, **{**options, **change})
                found += run_conversation(store, conversation, configs(["default"]),
                                          questions=asked)
                store.close()
                bar.update(1)
            results[group][name] = _brief(found, _category)
    bar.close()
    return results


def _brief(rows: Sequence[QueryResult], group: Callable[[QueryResult], str] | None = None,
           metric: str = "recall@10") -> dict[str, Any]:
    """Averaged R@5, R@10, MRR (and R_all@5, R_all@10 where measured); with ``group``
    also ``metric`` per group (a category, a question type)."""
    if not rows:
        return {}
    keys = ["recall@5", "recall@10", "mrr", "recall_all@5", "recall_all@10"]
    out: dict[str, Any] = {k: round(statistics.mean(r.metrics[k] for r in rows), 4)
                           for k in keys if k in rows[0].metrics}
    out["n"] = len(rows)
    if group is not None:
        groups: dict[str, list[float]] = {}
        for r in rows:
            groups.setdefault(group(r), []).append(r.metrics[metric])
        out["per_category"] = {g: round(statistics.mean(v), 4)
                               for g, v in sorted(groups.items())}
    return out


def _category(row: QueryResult) -> str:
    return f"{row.category} {CATEGORIES.get(row.category, '')}".strip()


#: LongMemEval's two protocols, as a run's report labels them
LME_PROTOCOLS = {
    "official": "the official protocol (src/retrieval of the LongMemEval repository): "
                "each user turn alone is a key; the gold is the answer sessions with a user "
                "turn marked has_answer (the others are renamed noans); abstention questions "
                "and questions with no such turn are skipped",
    "graphmem": "graphmem's own ingest: each user turn a memory with the turns around it "
                "(any role) as its context; the gold is every answer session; abstention "
                "questions are skipped",
}


def official_gold(question: Any) -> tuple[str, ...]:
    """The answer sessions LongMemEval's official retrieval code counts as gold: those
    with a user turn marked ``has_answer`` (it renames the others' turns ``noans``).

    >>> from ingest.longmemeval import LMEQuestion, LMESession
    >>> q = LMEQuestion("q", "t", "?", "", None, (
    ...     LMESession("answer_a", None, ({"role": "user", "content": "x",
    ...                                    "has_answer": True},)),
    ...     LMESession("answer_b", None, ({"role": "user", "content": "y"},
    ...                                   {"role": "assistant", "content": "z",
    ...                                    "has_answer": True}))), ("answer_a", "answer_b"))
    >>> official_gold(q)
    ('answer_a',)
    """
    return tuple(s.session_id for s in question.sessions if "answer" in s.session_id
                 and any(t.get("has_answer") for t in s.turns if t.get("role") == "user"))


def run_longmemeval(path: str | Path | None = None, *, presets: Sequence[str] = ROWS,
                    limit: int | None = None, embedder: str | Embedder = "minilm",
                    progress: bool = True, split: str = "all",
                    ablations: bool | Sequence[str] = False, official: bool = True
                    ) -> tuple[dict[str, Any], list[QueryResult]]:
    """LongMemEval: each question its own haystack (user turns indexed); session-level
    gold (answer sessions); abstention questions skipped. ``recall_all@k`` is the paper's
    Recall@k. ``split`` takes one half of the answerable questions (``SPLITS``); with
    ``ablations`` every recall-time variation of ``default`` is asked of the same stores.
    With ``official`` the same questions are also asked under the official protocol
    (``LME_PROTOCOLS``), as ``results["official"]``; the rest of the results are
    graphmem's own ingest.

    Examples
    --------
    One question over a haystack of two sessions:

    >>> import json, tempfile
    >>> question = {
    ...     "question_id": "q1", "question_type": "single-session-user",
    ...     "question": "Which city did I move to?", "answer": "Ibadan",
    ...     "question_date": "2023/05/30 (Tue) 23:40",
    ...     "haystack_session_ids": ["sharegpt_a_0", "answer_b_1"],
    ...     "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00"],
    ...     "haystack_sessions": [
    ...         [{"role": "user", "content": "Tell me a joke about cats."}],
    ...         [{"role": "user", "content": "I just moved to Ibadan for a new job."}]],
    ...     "answer_session_ids": ["answer_b_1"]}
    >>> path = Path(tempfile.mkdtemp()) / "lme.json"
    >>> _ = path.write_text(json.dumps([question]))
    >>> results, rows = run_longmemeval(path, presets=["fulltext"], embedder="hashing",
    ...                                 progress=False)
    >>> results["questions"], rows[0].ranking, rows[0].metrics["recall_all@5"]
    (1, ['answer_b_1'], 1.0)
    """
    from ingest.longmemeval import load_longmemeval

    started = time.perf_counter()
    questions = [q for q in load_longmemeval(path) if not q.abstention and q.gold_sessions]
    questions = _split(questions, split, alternate=True)
    if limit is not None and limit < len(questions):
        # evenly spaced: the file is ordered by question type, so a prefix would hold one
        # or two types only
        step = len(questions) / limit
        questions = [questions[int(i * step)] for i in range(limit)]
    emb = _embedder(embedder)
    asked = configs(presets)
    groups = _ablation_groups(ablations)
    variations = {g: v for g, v in _recall_ablations().items() if g in groups}
    flat = {f"{group}/{name}": cfg for group, cfgs in variations.items()
            for name, cfg in cfgs.items()}
    rows: list[QueryResult] = []
    extra: list[QueryResult] = []
    strict: list[QueryResult] = []
    for q in tqdm(questions, desc="longmemeval", unit="q", disable=not progress):
        found = _ask_lme(q, emb, {**asked, **flat}, q.gold_sessions, len(rows) + len(extra))
        rows += [r for r in found if r.preset in asked]
        extra += [r for r in found if r.preset not in asked]
        gold = official_gold(q)
        if official and gold:
            strict += _ask_lme(q, emb, asked, gold, len(strict), context_window=0)
    summary = summarize(rows, list(presets))
    by_type: dict[str, dict[str, Any]] = {}
    for name in presets:
        types: dict[str, list[QueryResult]] = {}
        for r in rows:
            if r.preset == name:
                types.setdefault(r.extra["question_type"], []).append(r)
        by_type[name] = {t: {"recall_all@5": round(statistics.mean(
            x.metrics["recall_all@5"] for x in rs), 4), "recall_all@10": round(statistics.mean(
                x.metrics["recall_all@10"] for x in rs), 4), "n": len(rs)}
            for t, rs in sorted(types.items())}
    summary["per_category"] = by_type
    results: dict[str, Any] = {"corpus": "longmemeval", "source": str(path or "default"),
                               "split": split, "questions": len(questions), **summary}
    if split == "all":
        position = {q.question_id: i for i, q in enumerate(questions)}
        results["by_split"] = {
            part: {name: _brief([r for r in rows if r.preset == name and
                                 position[r.extra["question_id"]] % 2 == parity],
                                lambda r: str(r.extra["question_type"]), "recall_all@5")
                   for name in presets}
            for part, parity in (("tune", 0), ("test", 1))}
    if variations:
        results["ablations"] = {
            group: {name: _brief([r for r in extra if r.preset == f"{group}/{name}"],
                                 lambda r: str(r.extra["question_type"]), "recall_all@5")
                    for name in cfgs} for group, cfgs in variations.items()}
    if official:
        results["official"] = {
            "protocol": LME_PROTOCOLS["official"], "questions": len(strict) // len(presets),
            "skipped": len(questions) - len(strict) // len(presets),
            "presets": {name: _brief([r for r in strict if r.preset == name],
                                     lambda r: str(r.extra["question_type"]),
                                     "recall_all@5") for name in presets}}
        results["protocol"] = LME_PROTOCOLS["graphmem"]
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["embedder"] = emb.spec
    return results, rows


def _ask_lme(q: Any, emb: Embedder, configs_: Mapping[str, RecallConfig],
             gold: Sequence[str], first: int, *, context_window: int = 1
             ) -> list[QueryResult]:
    """``q`` asked of its own haystack with each configuration, scored against ``gold``
    sessions; ``context_window`` 0 indexes each user turn alone."""
    from ingest.longmemeval import ingest_question

    out: list[QueryResult] = []
    with MemoryStore(":memory:", embedder=emb, settings=Settings(),
                     clock=_fixed(q.question_date or datetime.now(UTC))) as store:
        session_of = ingest_question(store, q, context_window=context_window)
        for name, config in configs_.items():
            start = time.perf_counter()
            hits = store.recall(q.question, k=DEPTH * 4, preset=config, record_access=False)
            ms = (time.perf_counter() - start) * 1000
            ranking = dedupe([session_of[h.memory.id] for h in hits])
            out.append(QueryResult("lme", first + len(out), q.question, 0, list(gold), name,
                                   ranking, score_run(ranking, gold), ms,
                                   {"question_id": q.question_id,
                                    "question_type": q.question_type}))
    return out


def _fixed(moment: datetime) -> Callable[[], datetime]:
    return lambda: moment


def read_qrels(path: str | Path) -> dict[str, list[str]]:
    """A qrels file: a JSON object, each query (a non-empty string) -> a non-empty list of
    the ids (non-empty strings) of the memories that answer it. ``RecordError`` names
    the file and the query of what is wrong.

    >>> import tempfile
    >>> bad = Path(tempfile.mkdtemp()) / "qrels.json"
    >>> _ = bad.write_text('{"where is the key?": "urn:a"}', encoding="utf-8")
    >>> read_qrels(bad)
    Traceback (most recent call last):
    ...
    graphmem._errors.RecordError: ...qrels.json: query 'where is the key?': ... not a string
    """
    from ingest.ump import json_type

    source = str(path)
    try:
        judged = json.loads(Path(path).read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise RecordError(f"not UTF-8 (byte {exc.start})", source=source) from None
    except json.JSONDecodeError as exc:
        raise RecordError(f"not valid JSON: {exc.msg} at line {exc.lineno} column "
                          f"{exc.colno}", source=source) from None
    except RecursionError:
        raise RecordError("JSON nested too deeply to be qrels", source=source) from None
    if not isinstance(judged, dict) or not judged:
        raise RecordError("qrels are a JSON object of at least one query -> [relevant "
                          f"ids]; this file holds a JSON {json_type(judged)}"
                          + (" with no query" if judged == {} else ""), source=source)
    for query, relevant in judged.items():
        if not query.strip():
            raise RecordError("a query is empty", source=source)
        if not isinstance(relevant, list) or not relevant:
            raise RecordError(f"query {query!r}: the relevant ids are a non-empty JSON "
                              f"array of memory ids, not {_a(json_type(relevant))}",
                              source=source)
        if not all(isinstance(i, str) and i.strip() for i in relevant):
            raise RecordError(f"query {query!r}: a relevant id is not a non-empty string",
                              source=source)
    return judged


def _a(kind: str) -> str:
    return ("an " if kind[:1] in "aeiou" else "a ") + kind


def run_ump(path: str | Path, qrels: str | Path, *, presets: Sequence[str] = ROWS,
            limit: int | None = None, embedder: str | Embedder = "minilm",
            now: datetime | None = None, progress: bool = True
            ) -> tuple[dict[str, Any], list[QueryResult]]:
    """Any UMP file with a qrels file (JSON: query -> relevant ids): the retrieval
    experiment, runnable on a private corpus. ACT-R: the same half/half protocol.

    Examples
    --------
    The sample corpus, two judged queries, the full-text preset alone:

    >>> import json, tempfile
    >>> from ingest.ump import SAMPLE_PATH
    >>> qrels = Path(tempfile.mkdtemp()) / "qrels.json"
    >>> _ = qrels.write_text(json.dumps({
    ...     "which database does orchard use": ["urn:ump:i6w37fnazwrl44eqfackyr4icd"],
    ...     "how do I deploy orchard to production": ["urn:ump:n7n3gtdlokocq3bacmiea2grx7",
    ...                                               "urn:ump:rjtnws3hw3lcjhe76y54byfidx"]}))
    >>> results, rows = run_ump(SAMPLE_PATH, qrels, presets=["fulltext"], embedder="hashing",
    ...                         progress=False)
    >>> results["queries"], [(r.preset, r.metrics["recall@10"]) for r in rows]
    (2, [('fulltext', 1.0), ('fulltext', 1.0)])
    """
    from ingest.ump import import_ump

    started = time.perf_counter()
    judged = read_qrels(qrels)
    queries = list(judged.items())[:limit] if limit is not None else list(judged.items())
    emb = _embedder(embedder)
    clock = now or datetime.now(UTC)

    def fresh() -> MemoryStore:
        store = MemoryStore(":memory:", embedder=emb, settings=Settings(),
                            clock=lambda: clock)
        import_ump(store, path)
        return store

    rows: list[QueryResult] = []
    store = fresh()
    for name, config in configs(presets).items():
        for index, (query, relevant) in enumerate(tqdm(queries, desc=name, disable=not progress)):
            rows.append(_ask(store, "ump", index, query, relevant, name, config))
    store.close()
    results: dict[str, Any] = {"corpus": "ump", "source": str(path), "queries": len(queries),
                               **summarize(rows, list(presets))}
    if "default" in presets:
        pairs = []
        reader = reader_for(emb)
        halves = (list(enumerate(queries))[0::2], list(enumerate(queries))[1::2])
        for history, measured in ((halves[0], halves[1]), (halves[1], halves[0])):
            store = fresh()
            replay(store, [q for _, (q, _rel) in history], reader)
            for index, (query, relevant) in measured:
                pairs.append((_ask(store, "ump", index, query, relevant, NO_ACTR.name,
                                   NO_ACTR),
                              _ask(store, "ump", index, query, relevant, "default",
                                   PRESETS["default"])))
            store.close()
        results["actr"] = {
            **actr_summary(pairs),
            "protocol": reader.protocol(emb.spec, "the queries"),
            "reader": reader.spec}
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["embedder"] = emb.spec
    return results, rows


def _ask(store: MemoryStore, corpus: str, index: int, query: str, relevant: Sequence[str],
         name: str, config: RecallConfig) -> QueryResult:
    start = time.perf_counter()
    hits = store.recall(query, k=DEPTH, preset=config, record_access=False)
    ms = (time.perf_counter() - start) * 1000
    ranking = [h.memory.id for h in hits]
    return QueryResult(corpus, index, query, 0, list(relevant), name, ranking,
                       score_run(ranking, relevant), ms)

