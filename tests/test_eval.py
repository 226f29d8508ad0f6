"""The eval package: metrics by hand and against ranx, the runners, the CLI smoke run."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from eval.experiment import (
    AGENT_K,
    NO_ACTR,
    Reader,
    agent_use,
    reader_for,
    summarize,
    unique_wins,
)
from eval.locomo import QueryResult
from eval.metrics import (
    dedupe,
    mrr,
    ndcg_at_k,
    recall_all_at_k,
    recall_any_at_k,
    recall_at_k,
    score_run,
)
from tests.conftest import ROOT, SAMPLE

PNG = b"\x89PNG\r\n\x1a\n"


def test_metrics_by_hand() -> None:
    ranking = ["x", "a", "y", "b", "z"]
    gold = {"a", "b", "c"}
    assert recall_at_k(ranking, gold, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranking, gold, 5) == pytest.approx(2 / 3)
    assert recall_any_at_k(ranking, gold, 1) == 0.0
    assert recall_any_at_k(ranking, gold, 2) == 1.0
    assert recall_all_at_k(ranking, gold, 5) == 0.0
    assert recall_all_at_k(ranking, {"a", "b"}, 4) == 1.0
    assert mrr(ranking, gold) == 0.5
    assert mrr(ranking, {"nope"}) == 0.0
    dcg = 1 / 2 ** 0 * 0 + 1 / __import__("math").log2(3) + 1 / __import__("math").log2(5)
    ideal = 1 + 1 / __import__("math").log2(3) + 1 / __import__("math").log2(4)
    assert ndcg_at_k(ranking, gold, 5) == pytest.approx(dcg / ideal)
    assert dedupe(["s1", "s2", "s1", "s3"]) == ["s1", "s2", "s3"]
    with pytest.raises(ValueError):
        recall_at_k(ranking, gold, 0)
    with pytest.raises(ValueError):
        recall_at_k(ranking, set(), 5)


def test_metrics_do_not_mutate_inputs() -> None:
    ranking, gold = ["a", "b", "c"], ["c", "z"]
    before = (copy.copy(ranking), copy.copy(gold))
    score_run(ranking, gold)
    assert (ranking, gold) == before


#: ranx's names of our metrics, for the cross-check on random runs
RANX = {"recall@5": "recall@5", "recall@10": "recall@10", "mrr": "mrr",
        "ndcg@10": "ndcg@10", "recall_any@5": "hit_rate@5"}
#: ranx's score of each metric and query of ``_random_runs()`` (ranx 0.3.21); recorded
#: because importing ranx and compiling its numba kernels takes a minute of CPU; the slow
#: test below recomputes them with ranx itself
RANX_SCORES = ROOT / "tests" / "data" / "ranx_random_runs.json"


def _random_runs() -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    """60 queries over 40 documents: 1 to 4 relevant each, 25 ranked (seeded)."""
    rng = random.Random(11)
    docs = [f"d{i}" for i in range(40)]
    golds, rankings = {}, {}
    for q in range(60):
        golds[f"q{q}"] = set(rng.sample(docs, rng.randint(1, 4)))
        rankings[f"q{q}"] = rng.sample(docs, 25)
    return golds, rankings


def test_metrics_agree_with_ranx_on_random_runs() -> None:
    """Query by query, each metric is ranx's (its scores recorded in RANX_SCORES)."""
    golds, rankings = _random_runs()
    theirs = json.loads(RANX_SCORES.read_text(encoding="utf-8"))
    assert set(theirs) == set(RANX.values())
    for query, ranking in rankings.items():
        ours = score_run(ranking, golds[query])
        for mine, name in RANX.items():
            assert ours[mine] == pytest.approx(theirs[name][query]), (query, mine)


@pytest.mark.slow
def test_the_recorded_ranx_scores_are_ranxs() -> None:
    """RANX_SCORES is what ranx computes now, and our means are its means."""
    from ranx import Qrels, Run, evaluate

    golds, rankings = _random_runs()
    qrels = Qrels({q: {d: 1 for d in gold} for q, gold in golds.items()})
    run = Run({q: {d: 100.0 - i for i, d in enumerate(ranking)}
               for q, ranking in rankings.items()})
    means = evaluate(qrels, run, list(RANX.values()), make_comparable=True)
    recorded = json.loads(RANX_SCORES.read_text(encoding="utf-8"))
    assert {name: {q: pytest.approx(v) for q, v in run.scores[name].items()}
            for name in RANX.values()} == recorded
    for mine, name in RANX.items():
        ours = [score_run(rankings[q], golds[q])[mine] for q in rankings]
        assert sum(ours) / len(ours) == pytest.approx(means[name])


def _result(index: int, preset: str, ranking: list[str], gold: list[str]) -> QueryResult:
    return QueryResult("c", index, "q", 4, gold, preset, ranking, score_run(ranking, gold), 1.0)


def test_summary_and_unique_wins() -> None:
    rows = [_result(0, "fulltext", ["a", "b"], ["a"]), _result(1, "fulltext", ["x"], ["b"]),
            _result(0, "vector", ["z"], ["a"]), _result(1, "vector", ["b"], ["b"])]
    wins = unique_wins(rows, ["fulltext", "vector"])
    assert wins == {"vector": {"wins": 1, "losses": 1, "against": "fulltext"}}
    summary = summarize(rows, ["fulltext", "vector"], {4: "single-hop"})
    assert summary["presets"]["fulltext"]["recall@10"] == 0.5
    assert summary["presets"]["vector"]["n"] == 2
    assert summary["per_category"]["vector"]["4 single-hop"]["recall@10"] == 0.5


def test_locomo_smoke_run_through_the_cli(tmp_path: Path, locomo: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "--embedder", "hashing", "eval", "run",
         "--corpus", "locomo", str(locomo), "--limit", "12", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    assert results["corpus"] == "locomo" and results["questions"] == 12
    assert set(results["presets"]) == {"fulltext", "vector", "hybrid", "graph_hybrid",
                                       "default"}
    for metrics in results["presets"].values():
        assert {"recall@5", "recall@10", "recall_any@5", "recall_all@5", "recall_all@10",
                "mrr", "ndcg@10", "p50_ms"} <= set(metrics)
        assert 0.0 <= metrics["recall@10"] <= 1.0
    assert set(results["actr"]) >= {"top1_change_rate", "top5_retention", "warm_actr"}
    assert "1 multi-hop" in results["per_category"]["default"]
    assert len((out / "queries.jsonl").read_text().splitlines()) == 12 * 5
    report = (out / "locomo.md").read_text()
    assert report.startswith("# graphmem on locomo")
    assert "| + sentences, lifts, ACT-R | `default` |" in report
    for png in ("locomo_recall_at_k.png", "locomo_per_category.png"):
        assert (out / png).read_bytes()[:8] == PNG


def test_ump_runner_with_qrels() -> None:
    from datetime import UTC, datetime

    from eval.runs import run_ump
    from graphmem import PRESETS, MemoryStore
    from ingest.ump import import_ump

    now = datetime(2026, 7, 15, 18, tzinfo=UTC)
    qrels = json.loads((ROOT / "eval" / "qrels" / "sample.json").read_text())
    results, rows = run_ump(SAMPLE, ROOT / "eval" / "qrels" / "sample.json",
                            embedder="hashing", progress=False, now=now)
    assert results["queries"] == 19 and len(rows) == 19 * 5
    assert results["actr"]["queries"] == 19
    # the slow, obvious way: each query recalled on a fresh store, scored, averaged
    with MemoryStore(":memory:", embedder="hashing", clock=lambda: now) as store:
        import_ump(store, SAMPLE)
        for name in ("fulltext", "vector", "hybrid", "graph_hybrid", "default"):
            scores = [score_run([h.memory.id for h in store.recall(
                query, k=50, preset=PRESETS[name], record_access=False)], relevant)
                for query, relevant in qrels.items()]
            for metric in ("recall@5", "recall@10", "mrr", "ndcg@10"):
                mean = sum(s[metric] for s in scores) / len(scores)
                assert results["presets"][name][metric] == pytest.approx(mean, abs=5e-5), (
                    name, metric)
    assert results["presets"]["fulltext"]["recall@10"] == pytest.approx(0.9211, abs=5e-5)


def test_longmemeval_runner(tmp_path: Path) -> None:
    from eval.runs import run_longmemeval

    def session(sid: str, text: str) -> tuple[str, list[dict]]:
        return sid, [{"role": "user", "content": text},
                     {"role": "assistant", "content": "Noted."}]

    questions = []
    for n, (city, other) in enumerate([("Ibadan", "pasta"), ("Accra", "bread")]):
        sessions = [session(f"s_{n}_a", f"I baked {other} yesterday."),
                    session(f"answer_{n}", f"I just moved to {city} for work."),
                    session(f"s_{n}_b", "The weather is nice.")]
        questions.append({
            "question_id": f"q{n}", "question_type": "single-session-user",
            "question": "Which city did I move to for work?", "answer": city,
            "question_date": "2023/06/01 (Thu) 10:00",
            "haystack_session_ids": [s for s, _ in sessions],
            "haystack_dates": [f"2023/05/0{i + 1} (Mon) 09:00" for i in range(3)],
            "haystack_sessions": [t for _, t in sessions],
            "answer_session_ids": [f"answer_{n}"]})
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(questions))
    results, rows = run_longmemeval(path, embedder="hashing", progress=False)
    assert results["questions"] == 2
    assert results["presets"]["fulltext"]["recall_all@5"] == 1.0
    assert rows[0].ranking[0] == "answer_0"
    assert set(results["by_split"]) == {"tune", "test"}
    assert results["by_split"]["tune"]["fulltext"]["n"] == 1  # q0 tunes, q1 tests
    test_half, _ = run_longmemeval(path, presets=["fulltext"], embedder="hashing",
                                   progress=False, split="test", ablations=True)
    assert test_half["questions"] == 1 and test_half["split"] == "test"
    walks = test_half["ablations"]["entity_walks"]
    assert set(walks) == {"entities=0.0", "entities=0.5", "entities=1.0"}
    # the store hears no label: neither the answer session's id nor has_answer
    from graphmem import MemoryStore
    from ingest.longmemeval import ingest_question, load_longmemeval

    first = load_longmemeval(path)[0]
    first.sessions[1].turns[0]["has_answer"] = True
    with MemoryStore(":memory:", embedder="hashing") as store:
        session_of = ingest_question(store, first)
        assert "answer_0" in session_of.values()
        stored = json.dumps([m.model_dump(mode="json") for m in store.memories()])
        assert "answer" not in stored and "has_answer" not in stored
    assert walks["entities=0.0"]["per_category"] == {"single-session-user": 1.0}
    from eval.report import markdown

    report = markdown(test_half)
    assert "the test split" in report and "| entity_walks | entities=0.5 |" in report
    assert "R_all@5" in report


def test_longmemeval_runs_the_official_protocol_beside_graphmems(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The official protocol indexes each user turn alone, counts as gold only the answer
    sessions with a user turn marked has_answer, and skips a question without one;
    graphmem's own ingest keeps it (its answer is in an assistant turn)."""
    import ingest.longmemeval
    from eval.report import markdown
    from eval.runs import run_longmemeval

    def turns(user: str, assistant: str, answer_in: str | None) -> list[dict]:
        return [{"role": "user", "content": user, "has_answer": answer_in == "user"},
                {"role": "assistant", "content": assistant,
                 "has_answer": answer_in == "assistant"}]

    def question(n: int, kind: str, sessions: list[tuple[str, list[dict]]]) -> dict:
        return {"question_id": f"q{n}", "question_type": kind,
                "question": "Which city did I move to?", "answer": "Ibadan",
                "question_date": "2023/06/01 (Thu) 10:00",
                "haystack_session_ids": [s for s, _ in sessions],
                "haystack_dates": ["2023/05/01 (Mon) 09:00"] * len(sessions),
                "haystack_sessions": [t for _, t in sessions],
                "answer_session_ids": [s for s, _ in sessions if "answer" in s]}

    filler = ("s_x", turns("The weather is nice.", "Indeed.", None))
    data = [question(0, "single-session-user", [
                filler, ("answer_a", turns("I moved to Ibadan.", "Nice.", "user"))]),
            question(1, "single-session-assistant", [
                filler, ("answer_b", turns("Where should I move?", "Try Ibadan.",
                                           "assistant"))]),
            question(2, "multi-session", [
                filler, ("answer_c", turns("I moved to Ibadan.", "Nice.", "user")),
                ("answer_d", turns("Tell me a joke.", "Ibadan is big.", None))])]
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data))
    windows: list[int] = []
    original = ingest.longmemeval.ingest_question

    def spy(store: object, q: object, **kwargs: Any) -> dict[str, str]:
        windows.append(kwargs.get("context_window", 1))
        return original(store, q, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ingest.longmemeval, "ingest_question", spy)
    results, rows = run_longmemeval(path, presets=["fulltext"], embedder="hashing",
                                    progress=False)
    assert windows == [1, 0, 1, 1, 0]  # q1 is not asked under the official protocol
    official = results["official"]
    assert official["questions"] == 2 and official["skipped"] == 1
    assert results["questions"] == 3 and [r.gold for r in rows][2] == ["answer_c", "answer_d"]
    # answer_d shares no term with the question: BM25 never finds it, and only the
    # official gold leaves it out
    assert official["presets"]["fulltext"]["per_category"] == {
        "multi-session": 1.0, "single-session-user": 1.0}
    assert results["per_category"]["fulltext"]["multi-session"]["recall_all@5"] == 0.0
    report = markdown(results)
    table = report[report.index("## Two protocols"):]
    assert table.index("| `fulltext` | official | 2 |") < table.index(
        "| `fulltext` | graphmem | 3 |")


def test_ablation_groups_choose_what_runs(tmp_path: Path, locomo: Path) -> None:
    out = tmp_path / "out"
    base = [sys.executable, "-m", "graphmem", "--embedder", "hashing", "eval", "run",
            "--corpus", "locomo", str(locomo), "--limit", "6", "--presets", "default",
            "--no-plots", "--out", str(out)]
    done = subprocess.run([*base, "--ablation-groups", "graph_share,entity_links"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    ablations = json.loads((out / "results.json").read_text())["ablations"]
    assert set(ablations) == {"graph_share", "entity_links"}
    assert set(ablations["graph_share"]) == {"two channels + ACT-R", "default"}
    assert ablations["graph_share"]["default"]["n"] == 6
    assert set(ablations["entity_links"]) == {"entities=False", "entities=True"}
    wrong = subprocess.run([*base, "--ablation-groups", "graph_share,colour"],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert wrong.returncode == 2 and "unknown ablation group(s) colour" in wrong.stderr
    assert "Traceback" not in wrong.stderr


def test_the_tuning_grid_varies_the_vector_weight_and_rrf_k_together() -> None:
    """``vector_x_rrf_k``: every pair of vector weight and rrf_k, the rest of
    ``default`` unchanged (the grid the README's tuning claim is read from)."""
    from eval.runs import _recall_ablations
    from graphmem import PRESETS

    grid = _recall_ablations()["vector_x_rrf_k"]
    pairs = {(c.weights["vector"], c.rrf_k) for c in grid.values()}
    assert pairs == {(w, float(k)) for w in (0.15, 0.3, 0.5) for k in (10, 30, 60)}
    base = PRESETS["default"]
    for name, config in grid.items():
        assert name == f"vector={config.weights['vector']},k={int(config.rrf_k)}"
        assert {c: w for c, w in config.weights.items() if c != "vector"} == {
            c: w for c, w in base.weights.items() if c != "vector"}
        assert config.graph == base.graph and config.actr == base.actr


def test_the_replayed_agent_reads_without_the_answer_key() -> None:
    """The ACT-R protocol's and the learning replay's agent: its own recall records the
    accesses; of the hits it was shown, the one its reader finds closest to the question
    is marked useful and the others not useful, and nothing else is marked. It is given
    no gold label to judge by."""
    import inspect

    from graphmem import PRESETS, MemoryStore, embedder_from_spec

    assert list(inspect.signature(agent_use).parameters) == [
        "store", "question", "reader", "preset"]
    with MemoryStore(":memory:", embedder="hashing") as store:
        ids = [store.add(f"note {n}: the garden shed needs a new roof").id
               for n in range(AGENT_K + 5)]
        closest = store.add("garden shed roof").id
        hidden = store.add("Tariq's violin lesson moved to Thursday").id
        marked = agent_use(store, "garden shed roof", Reader(embedder_from_spec("hashing")))
        seen = {i for i in [*ids, closest] if store.get(i).access_count}
        assert len(seen) == AGENT_K and marked == closest and closest in seen
        for memory_id in seen:
            memory = store.get(memory_id)
            assert (memory.useful_count, memory.ignored_count) == (
                (1, 0) if memory_id == closest else (0, 1))
        unseen = store.get(hidden)
        assert (unseen.useful_count, unseen.ignored_count, unseen.access_count) == (0, 0, 0)
    # the reader is a second model beside the retriever's, when one is installed
    assert reader_for(embedder_from_spec("hashing")).spec == "e5"
    assert Reader(embedder_from_spec("hashing")).pick("a question", []) is None
    assert NO_ACTR.actr is None and NO_ACTR.weights == PRESETS["default"].weights
