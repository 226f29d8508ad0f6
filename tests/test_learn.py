"""Learning from use against real Kuzu stores: feedback that carries what recall saw, the
learned ranker (trained, validated, stored as data, applied, explained), the forecast of
need (strict time split, labels under a bounded history) and the lifecycle beside it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from eval.experiment import Reader
from graphmem import ConflictError, InvalidInputError, MemoryStore, Settings, embedder_from_spec
from graphmem._learn import (
    FEATURES,
    FORECAST_FEATURES,
    History,
    LinearModel,
    RankerModel,
    examples_at,
    fit_logistic,
    rank_metrics,
    ranking_samples,
)
from graphmem._learn._forecast import ForecastModel
from graphmem._learn._ranker import CS
from graphmem._store._learning import FORECAST_KEY, RANKER_KEY
from graphmem.cli import cli
from tests.conftest import Clock

TOPICS = 8
PER_TOPIC = 12


def _topical(store: MemoryStore) -> dict[int, list[str]]:
    """Memories about TOPICS topics; the odd ones of each topic are semantic (the ones
    the agent will find useful), the others episodic, all alike to the text channels."""
    records = []
    for topic in range(TOPICS):
        for i in range(PER_TOPIC):
            records.append({"text": f"zeta{topic} note number {i} about the project",
                            "kind": "semantic" if i % 2 else "episodic",
                            "id": f"urn:t:{topic}:{i}"})
    store.add_many(records)
    return {t: [f"urn:t:{t}:{i}" for i in range(PER_TOPIC)] for t in range(TOPICS)}


def _use(store: MemoryStore, clock: Clock, topics: range, rounds: int) -> None:
    """An agent asks about each topic, marks the semantic memories useful (wherever
    recall ranked them) and the episodic hits it was shown not useful."""
    for _ in range(rounds):
        for topic in topics:
            clock.advance(minutes=5)
            query = f"zeta{topic} project note"
            hits = store.recall(query, k=5)
            for i in range(1, PER_TOPIC, 2):
                store.feedback(f"urn:t:{topic}:{i}", useful=True, query=query)
            for hit in hits:
                if hit.memory.kind.value == "episodic":
                    store.feedback(hit.memory.id, useful=False, query=query)


def test_feedback_events_carry_what_the_recall_saw(mem_store: MemoryStore) -> None:
    _topical(mem_store)
    hits = mem_store.recall("zeta3 project note", k=5)
    mem_store.feedback(hits[1].memory.id, useful=True, query="zeta3 project note")
    mem_store.feedback(hits[0].memory.id, useful=False, query="zeta3 project note")
    mem_store.feedback("urn:t:5:1", useful=True, query="never asked")
    first, second, third = mem_store.events(event_type="feedback")
    rows = first.metadata["features"]["rows"]
    assert first.memory_id == hits[1].memory.id and first.reason == "useful"
    assert first.metadata["row"] == 1 and first.metadata["preset"] == "default"
    assert len(rows) >= 5 and len(rows[0]) == len(FEATURES)
    assert rows[1][FEATURES.index("fused_rr")] == 0.5  # the second of recall's order
    # a later feedback on the same recall names it and its row, without the matrix
    assert second.metadata["recall"] == first.metadata["recall"]
    assert second.metadata["row"] == 0 and "features" not in second.metadata
    assert second.metadata["useful"] is False and second.reason == "not useful"
    # feedback on a memory no recent recall had: the event, with no features
    assert third.metadata == {"useful": True, "query": "never asked"}
    [sample] = ranking_samples(mem_store.events(event_type="feedback"))
    assert sample.useful.tolist()[:2] == [False, True] and sample.ignored == {0}
    assert mem_store.get("urn:t:5:1").useful_count == 1


def test_learn_without_feedback_says_so_and_writes_nothing(store: MemoryStore) -> None:
    store.add("a lonely memory")
    with pytest.raises(ConflictError, match=r"nothing learned: ranker not trained.*needs at "
                                            r"least 20.*feedback\(memory_id, useful=True"):
        store.learn(forecast=False)
    with pytest.raises(ConflictError, match="forecast not trained: the forecast needs"):
        store.learn()
    with pytest.raises(InvalidInputError, match="horizon_days"):
        store.learn(horizon_days=0)
    assert RANKER_KEY not in store._ctx.engine.meta()
    assert FORECAST_KEY not in store._ctx.engine.meta()
    status = store.learned()
    assert status.ranker is None and status.forecast is None
    assert any("no learned ranker" in n for n in status.notes)


def test_the_learned_ranker_learns_what_feedback_says(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing", clock=clock, settings=Settings()) as store:
        _topical(store)
        _use(store, clock, range(TOPICS - 1), rounds=4)
        report = store.learn(forecast=False)
        ranker = report.ranker
        assert ranker is not None and ranker.recalls == 4 * (TOPICS - 1)
        assert ranker.validated
        held = ranker.validation
        assert held["learned"]["recall@10"] > held["default"]["recall@10"]
        assert held["c"] in CS  # the L2 strength that ranked the held-back feedback best
        assert "kind_semantic" in dict(ranker.top_features)
    with MemoryStore(path, clock=clock, settings=Settings()) as store:  # kept in the store
        query = f"zeta{TOPICS - 1} project note"  # a topic no feedback was given on
        learned = store.recall(query, k=6, preset="learned", record_access=False)
        default = store.recall(query, k=6, preset="default", record_access=False)
        assert all(h.memory.kind.value == "semantic" for h in learned)
        assert sum(h.memory.kind.value == "semantic" for h in default) < 6
        top = learned[0].explanation
        assert top.preset == "learned" and top.learned is not None
        assert top.learned.rank == 1 and 0 < top.learned.probability <= 1
        assert top.final == pytest.approx(top.learned.probability, abs=1e-6)
        assert [h.score for h in learned] == sorted((h.score for h in learned), reverse=True)
        assert any(name == "kind_semantic" for name, _ in top.learned.contributions)
        assert any(line.startswith("  learned  rank") for line in top.lines())
        assert default[0].explanation.learned is None


def _ranker(validated: bool, coef: dict[str, float]) -> RankerModel:
    weights = np.array([coef.get(f, 0.0) for f in FEATURES])
    model = LinearModel(FEATURES, np.zeros(len(FEATURES)), np.ones(len(FEATURES)), weights,
                        0.0)
    return RankerModel(model, datetime(2026, 7, 1, tzinfo=UTC), 30, 900, 40,
                       ("fulltext", "graph", "vector"), {}, validated)


def test_a_ranker_that_did_not_validate_changes_nothing(mem_store: MemoryStore) -> None:
    _topical(mem_store)
    # a model that would put episodic memories first, had it validated
    mem_store.use_ranker(_ranker(False, {"kind_episodic": 5.0}).to_dict())
    default = mem_store.recall("zeta2 note", k=8, record_access=False)
    learned = mem_store.recall("zeta2 note", k=8, preset="learned", record_access=False)
    assert [h.memory.id for h in learned] == [h.memory.id for h in default]
    assert all(h.explanation.learned is None for h in learned)
    info = mem_store.use_ranker(_ranker(True, {"kind_episodic": 5.0}).to_dict())
    assert info.validated
    learned = mem_store.recall("zeta2 note", k=6, preset="learned", record_access=False)
    assert all(h.memory.kind.value == "episodic" for h in learned)


def test_a_stored_model_is_data_never_code(store: MemoryStore) -> None:
    _topical(store)
    for bad in ({"format": "pickle", "payload": "gASVAAAA"}, [1, 2],
                {**_ranker(True, {}).to_dict(), "coef": ["os.system('x')"] * len(FEATURES)},
                {**_ranker(True, {}).to_dict(), "features": ["other"] * len(FEATURES)},
                {**_ranker(True, {}).to_dict(), "feature_set": "f0"}):
        with pytest.raises(InvalidInputError, match=r"ranker|model|feature"):
            store.use_ranker(bad)  # type: ignore[arg-type]
    # a store file whose property holds something else: never used, recall goes on
    store._ctx.engine.set_meta({RANKER_KEY: json.dumps({"format": "joblib"}),
                                FORECAST_KEY: "not json"})
    store._learning._reload()
    hits = store.recall("zeta1 note", k=3, preset="learned")
    assert len(hits) == 3 and hits[0].explanation.learned is None
    notes = " ".join(store.learned().notes)
    assert "stored ranker is not used" in notes and "'joblib'" in notes
    assert "stored forecast is not used" in notes


def test_the_linear_model_is_sklearns_logistic_regression() -> None:
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(7)
    x = rng.normal(size=(400, 3)) * [1.0, 5.0, 0.1] + [0.0, 3.0, 1.0]
    y = (x @ [1.0, -0.3, 4.0] + rng.normal(size=400) > 1.0).astype(int)
    ours = fit_logistic(x, y, ("a", "b", "c"), balanced=False)
    theirs = LogisticRegression(max_iter=2000).fit((x - x.mean(0)) / x.std(0), y)
    assert np.allclose(ours.probabilities(x),
                       theirs.predict_proba((x - x.mean(0)) / x.std(0))[:, 1], atol=1e-6)
    again = LinearModel.from_dict(json.loads(json.dumps(ours.to_dict())), ("a", "b", "c"))
    assert np.allclose(again.logits(x), ours.logits(x))


def test_rank_metrics_by_hand() -> None:
    from graphmem._learn import RankingSample

    sample = RankingSample("r", datetime(2026, 1, 1, tzinfo=UTC), np.zeros((12, 2)),
                           np.array([False] * 10 + [True, True]), ())
    assert rank_metrics([sample], None) == {"ndcg@10": 0.0, "recall@10": 0.0,
                                            "mrr": round(1 / 11, 4), "recalls": 1}
    first = np.array([0.0] * 10 + [2.0, 1.0])
    assert rank_metrics([sample], [first]) == {"ndcg@10": 1.0, "recall@10": 1.0, "mrr": 1.0,
                                               "recalls": 1}


# -- the forecast of need -----------------------------------------------------------------
T0 = datetime(2026, 1, 1, tzinfo=UTC)
DAY = 86400.0


def _row(memory_id: str, *, created: datetime, access: tuple[datetime, ...] = (),
         count: int | None = None, **fields: object) -> dict[str, object]:
    return {"id": memory_id, "status": "active", "kind": "episodic", "importance": 0.5,
            "confidence": 1.0, "created": created, "access_times": access,
            "access_count": len(access) if count is None else count, "useful_count": 0,
            "ignored_count": 0, "tags": (), "session": None, "text": "a memory", **fields}


def test_forecast_features_come_from_before_the_cut_only() -> None:
    settings = Settings()
    t = (T0 + timedelta(days=40)).timestamp()
    early = (T0 + timedelta(days=10), T0 + timedelta(days=35))
    later = (T0 + timedelta(days=45), T0 + timedelta(days=50))
    a = History.build([_row("a", created=T0, access=early),
                       _row("b", created=T0 + timedelta(days=5))])
    b = History.build([_row("a", created=T0, access=early + later),
                       _row("b", created=T0 + timedelta(days=5), access=later)])
    past = examples_at(a, t, horizon_days=30, settings=settings, label="use")
    known = examples_at(b, t, horizon_days=30, settings=settings, label="use")
    assert np.array_equal(past.features, known.features)  # what came after t is unseen
    for name in ("actr", "recency", "frequency", "rule"):
        assert np.array_equal(past.baselines[name], known.baselines[name])
    assert known.used is not None and known.used.tolist() == [True, True]
    col = FORECAST_FEATURES.index
    assert known.features[0, col("log_accesses")] == pytest.approx(np.log1p(2))
    assert known.features[0, col("log_idle_days")] == pytest.approx(np.log1p(5))
    assert known.features[1, col("never_used")] == 1.0
    assert known.baselines["frequency"].tolist() == [2.0, 0.0]
    assert known.baselines["recency"].tolist() == pytest.approx([-5.0, -35.0])


def test_the_forecasts_trivial_baselines_are_length_and_useful_before_the_cut() -> None:
    """``length`` scores a memory by its words, ``useful_so_far`` by the times it was
    marked useful before the cut (a mark after it is the label, never a score)."""
    from graphmem import EventType, LifecycleEvent
    from graphmem._models import TriggeredBy

    def useful(memory_id: str, days: int) -> LifecycleEvent:
        return LifecycleEvent(event_id=f"e{memory_id}{days}", memory_id=memory_id,
                              event_type=EventType.FEEDBACK, from_state="active",
                              to_state="active", reason="", triggered_by=TriggeredBy.MANUAL,
                              agent_id="", timestamp=T0 + timedelta(days=days),
                              metadata={"useful": True, "query": "q"})

    h = History.build([_row("a", created=T0, text="one two three four"),
                       _row("b", created=T0, text="one")],
                      [useful("a", 5), useful("a", 10), useful("b", 45)])
    got = examples_at(h, (T0 + timedelta(days=40)).timestamp(), horizon_days=30,
                      settings=Settings())
    assert got.baselines["length"].tolist() == pytest.approx(np.log1p([4.0, 1.0]).tolist())
    assert got.baselines["useful_so_far"].tolist() == [2.0, 0.0]
    assert got.used is not None and got.used.tolist() == [False, True]


def test_forecast_labels_under_a_bounded_access_history() -> None:
    settings = Settings()
    t = (T0 + timedelta(days=40)).timestamp()
    rows = [
        # 50 accesses, only the last two kept, both after the window: unknown
        _row("lost", created=T0, access=(T0 + timedelta(days=80), T0 + timedelta(days=81)),
             count=50),
        # truncated too, but a kept access falls inside the window: used
        _row("seen", created=T0, access=(T0 + timedelta(days=50),), count=9),
        # a complete history with nothing in the window: not used
        _row("idle", created=T0, access=(T0 + timedelta(days=90),)),
        # created after the cut: not an example yet
        _row("new", created=T0 + timedelta(days=41)),
        # archived before the cut (its version rows say so): not an example
        _row("gone", created=T0, status="archived"),
    ]
    from graphmem._models import ChangeType, Status, Version

    versions = [Version(id="gone#v1", memory_id="gone", seq=1, change_type=ChangeType.CREATED,
                        at=T0, text_sha256="", status=Status.ACTIVE, importance=0.5),
                Version(id="gone#v2", memory_id="gone", seq=2, change_type=ChangeType.ARCHIVED,
                        at=T0 + timedelta(days=20), text_sha256="", status=Status.ARCHIVED)]
    history = History.build(rows, versions=versions)
    e = examples_at(history, t, horizon_days=30, settings=settings, label="use")
    h_ids = ["lost", "seen", "idle", "new", "gone"]
    assert [h_ids[int(p)] for p in e.positions] == ["seen", "idle"]
    assert e.used is not None and e.used.tolist() == [True, False]
    # need (marked useful): every feedback event is kept, so every label is known
    history.useful_t = np.array([t + 10 * DAY, t + 40 * DAY])
    history.useful_of = np.array([0, 2])
    need = examples_at(history, t, horizon_days=30, settings=settings)
    assert [h_ids[int(p)] for p in need.positions] == ["lost", "seen", "idle"]
    assert need.used is not None and need.used.tolist() == [True, False, False]


def _forecast_model(coef: dict[str, float], intercept: float, validated: bool = True
                    ) -> ForecastModel:
    weights = np.array([coef.get(f, 0.0) for f in FORECAST_FEATURES])
    n = len(FORECAST_FEATURES)
    return ForecastModel(LinearModel(FORECAST_FEATURES, np.zeros(n), np.ones(n), weights,
                                     intercept), T0, 30.0, 500, 100, {}, validated)


def test_the_lifecycle_sends_strongly_contradicted_decisions_to_review(
        tmp_path: Path, clock: Clock) -> None:
    settings = Settings(auto_archive_enabled=True, archive_age_days=30)
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=clock,
                     settings=settings) as store:
        wordy = store.add("an old note " + "with many many words " * 20, importance=0.1)
        terse = store.add("an old note", importance=0.1)
        keen = store.add("a short critical note", tags=["critical"])  # the rule promotes it
        clock.advance(days=60)
        assert store.evaluate(wordy.id).recommended_action == "archive"
        # long texts likely to be used, short ones not: a forecast built by hand
        model = _forecast_model({"log_words": 8.0}, -24.0)
        store._ctx.engine.set_meta({FORECAST_KEY: json.dumps(model.to_dict())})
        store._learning._reload()
        forecast = store.forecast()
        assert forecast is not None and forecast[wordy.id] > 0.99 > 0.01 > forecast[terse.id]
        evaluation = store.evaluate(wordy.id)
        assert evaluation.recommended_action == "review"
        assert evaluation.forecast == pytest.approx(forecast[wordy.id], abs=1e-4)
        assert evaluation.reasons[0].startswith("forecast: 100% likely to be needed within 30 "
                                                "days; the rule's archive goes to review")
        assert store.evaluate(terse.id).recommended_action == "archive"
        assert store.evaluate(keen.id).recommended_action == "review"  # promote, p ~ 0
        report = store.run_lifecycle(apply=True)
        assert report.forecast_reviews == 2 and report.forecast_horizon_days == 30
        assert report.count("archive") == 1 and report.count("promote") == 0
        assert store.get(wordy.id).status.value == "active"
        assert store.get(terse.id).status.value == "archived"
        assert store.get(keen.id).kind.value == "episodic"
        text = report.to_markdown()
        assert "contradicts strongly went to review" in text and "- Forecast: 100% likely to be " \
        "needed within 30 days" in text
        # a forecast that did not validate is shown nowhere and changes nothing
        store._ctx.engine.set_meta({FORECAST_KEY: json.dumps(
            _forecast_model({"log_words": 8.0}, -24.0, validated=False).to_dict())})
        store._learning._reload()
        assert store.forecast() is None
        assert store.evaluate(wordy.id).forecast is None
        assert store.evaluate(wordy.id).recommended_action == "archive"
        store._ctx.engine.set_meta({FORECAST_KEY: json.dumps(model.to_dict())})
    # the command line shows the forecast beside the rule
    shown = CliRunner().invoke(cli, ["--db", str(tmp_path / "db"), "--embedder", "hashing",
                                     "--now", clock.now.isoformat(), "lifecycle", "evaluate",
                                     wordy.id, terse.id])
    assert shown.exit_code == 0, shown.output
    header, *rows = [line for line in shown.output.splitlines() if "urn" in line
                     or "need" in line]
    assert "need" in header.split() and len(rows) == 2
    assert rows[0].split()[0] == "review" and "100%" in rows[0].split()
    assert rows[1].split()[0] == "archive" and "-" in rows[1].split()  # archived: no forecast


def test_learn_trains_a_forecast_from_a_history_of_use(mem_store: MemoryStore,
                                                       clock: Clock) -> None:
    """Two topics, one asked about every week, the other rarely, each time the first
    hit marked useful: after four months the forecast is trained, validated against
    every baseline, and stored."""
    ids = {t: [mem_store.add(f"topic{t} fact {i}", session=f"s{t}").id for i in range(30)]
           for t in ("hot", "cold")}
    quiet = [mem_store.add(f"unrelated thing {i}").id for i in range(30)]
    assert quiet
    for week in range(18):
        clock.advance(days=7)
        asked = ["topichot fact"] + (["topiccold fact"] if week % 6 == 0 else [])
        for query in asked:
            hits = mem_store.recall(query, k=12)
            for hit in hits[(4 * week) % 12: (4 * week) % 12 + 4]:
                mem_store.feedback(hit.memory.id, useful=True, query=query)
    report = mem_store.learn(ranker=False)
    forecast = report.forecast
    assert forecast is not None and forecast.horizon_days == 30
    assert forecast.examples > 100 and 0 < forecast.positives < forecast.examples
    auc = forecast.validation["auc"]
    assert set(auc) == {"forecast", "actr", "recency", "frequency", "rule", "length",
                        "useful_so_far"}
    assert all(0 <= v <= 1 for v in auc.values())
    assert forecast.validated == all(auc["forecast"] > auc[b] for b in auc
                                     if b != "forecast")
    assert mem_store.learned().forecast == forecast
    probabilities = mem_store.forecast(validated_only=False)
    assert probabilities is not None and set(probabilities) == {
        m.id for m in mem_store.memories()}
    hot = np.mean([probabilities[i] for i in ids["hot"]])
    cold = np.mean([probabilities[i] for i in ids["cold"]])
    assert hot > cold


def test_learn_command(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "db")
    assert runner.invoke(cli, ["--db", db, "--embedder", "hashing", "init"]).exit_code == 0
    empty = runner.invoke(cli, ["--db", db, "learn"])
    assert empty.exit_code == 1 and "Traceback" not in empty.output
    assert "nothing learned: ranker not trained: 0 recalls" in empty.output
    status = runner.invoke(cli, ["--db", db, "learn", "--status"])
    assert status.exit_code == 0 and "no learned ranker" in status.output
    usage = runner.invoke(cli, ["--db", db, "learn", "--no-ranker", "--no-forecast"])
    assert usage.exit_code == 2
    clock = Clock(datetime(2026, 7, 15, tzinfo=UTC))
    with MemoryStore(db, clock=clock, settings=Settings()) as store:
        _topical(store)
        _use(store, clock, range(TOPICS), rounds=3)
    trained = runner.invoke(cli, ["--db", db, "--now", "2026-07-16T00:00:00Z", "learn",
                                  "--no-forecast"])
    assert trained.exit_code == 0, trained.output
    assert "ranker: trained 2026-07-16T00:00:00Z on 24 recalls" in trained.output
    shown = runner.invoke(cli, ["--db", db, "--json", "learn", "--status"])
    assert json.loads(shown.output)["ranker"]["recalls"] == 24


def test_the_replays_learned_ranking_is_the_presets(mem_store: MemoryStore) -> None:
    """``eval.learning`` ranks each question as the ``learned`` preset would, from the
    candidates ``default`` had at that moment: the same order, on the same store."""
    from eval.learning import Asked, _measure

    _topical(mem_store)
    model = _ranker(True, {"kind_episodic": 2.0, "fulltext_rel": 1.0, "log_age_days": -0.5})
    mem_store.use_ranker(model)
    for query in ("zeta2 note", "zeta5 project", "number 7 about the project"):
        row = Asked("fold", 0, query, "c", [])
        _measure(mem_store, row, query, 60, str)
        assert row.features is not None and len(row.features) == 50 < len(row.keys)
        row.rank_with(model)
        live = mem_store.recall(query, k=60, preset="learned", record_access=False)
        assert row.rankings["learned"] == [h.memory.id for h in live]
        assert row.rankings["learned"] != row.rankings["default"]
        row.rank_with(_ranker(False, {"kind_episodic": 2.0}))  # did not validate
        assert row.rankings["learned"] == row.rankings["default"]


def test_session_features_describe_the_candidates_session_as_a_whole() -> None:
    from graphmem._learn._features import _session_features

    col = FEATURES.index
    x = np.zeros((6, len(FEATURES)))
    x[:, col("fused_rel")] = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5]
    _session_features(x, ["a", "b", "a", None, "b", "a"])
    assert x[:, col("session_first")].tolist() == [1, 1, 0, 1, 0, 0]
    assert np.allclose(x[:, col("session_size")], [0.4, 0.2, 0.4, 0.0, 0.2, 0.4])
    assert x[:, col("session_best")].tolist() == [1.0, 0.9, 1.0, 0.7, 0.9, 1.0]
    assert np.allclose(x[:, col("session_share")], np.array([2, 1, 2, 0, 1, 2]) / 9)


def test_rank_metrics_score_the_useful_candidates_by_ndcg_recall_and_mrr() -> None:
    """The gate's metrics on two recalls of 12 candidates, checked by hand: useful at
    places 2 and 11 (one outside the top 10), and at place 1 alone."""
    from graphmem._learn import RankingSample, rank_metrics

    def sample(useful: list[int]) -> RankingSample:
        flags = np.zeros(12, dtype=bool)
        flags[useful] = True
        return RankingSample("r", T0, np.zeros((12, len(FEATURES))), flags, ("vector",))

    samples = [sample([1, 10]), sample([0])]
    got = rank_metrics(samples, None)
    first = (1 / np.log2(3)) / (1 + 1 / np.log2(3))  # ideal: both in the top two
    assert got["ndcg@10"] == round((first + 1.0) / 2, 4)
    assert got["recall@10"] == 0.75 and got["mrr"] == 0.75 and got["recalls"] == 2
    # scores that put the second recall's useful candidate last, the first's both first
    scores = [np.array([0, 5, *[0] * 8, 4, 0], dtype=float), np.arange(12, 0, -1) * -1.0]
    moved = rank_metrics(samples, scores)
    assert moved["recall@10"] == 0.5 and moved["mrr"] == round((1 + 1 / 12) / 2, 4)
    assert moved["ndcg@10"] == 0.5


def test_a_saved_replay_gives_the_same_results_without_replaying(tmp_path: Path) -> None:
    """``eval.learning --replay FILE``: the first run replays and writes FILE, the next
    reads it (no store is opened) and cross-validates to the same figures; a file of
    another replay is refused naming what differs."""
    from eval import learning

    saved = tmp_path / "replay.pkl"
    first = learning.run_locomo(None, "hashing", limit=2, sessions=3, asked=20, progress=False,
                                replay=saved)
    assert saved.exists() and first["validated_folds"] == 2
    opened: list[object] = []
    original = learning.MemoryStore.__init__

    def spy(self: MemoryStore, *args: object, **kwargs: object) -> None:
        opened.append(args)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    learning.MemoryStore.__init__ = spy  # type: ignore[method-assign]
    try:
        again = learning.run_locomo(None, "hashing", limit=2, sessions=3, asked=20, progress=False,
                                    replay=saved)
    finally:
        learning.MemoryStore.__init__ = original  # type: ignore[method-assign]
    assert opened == []
    for part in ("presets", "per_category", "fold_validation", "forecast", "samples"):
        assert again[part] == first[part], part
    with pytest.raises(SystemExit, match=r"sessions 3 \(asked: 2\)"):
        learning.run_locomo(None, "hashing", limit=2, sessions=2, asked=20, progress=False,
                            replay=saved)
    from ingest.locomo import default_path

    other = tmp_path / "locomo-copy.json"  # the same conversations in another file
    other.write_bytes(default_path().read_bytes())
    with pytest.raises(SystemExit, match=r"file .*locomo10\.json.*\(asked: .*locomo-copy"):
        learning.run_locomo(str(other), "hashing", limit=2, sessions=3, asked=20, progress=False,
                            replay=saved)
    garbage = tmp_path / "garbage.pkl"
    garbage.write_bytes(b"\xa4 not a pickle")
    with pytest.raises(SystemExit, match="not a replay"):
        learning.run_locomo(None, "hashing", limit=2, sessions=3, asked=20, progress=False,
                            replay=garbage)
    (tmp_path / "a-file").write_text("x")  # refused before replaying, not after
    with pytest.raises(SystemExit, match="cannot write the replay"):
        learning.run_locomo(None, "hashing", limit=2, sessions=3, asked=20, progress=False,
                            replay=tmp_path / "a-file" / "replay.pkl")


def _conversation(questions: list[tuple[str, tuple[str, ...]]]) -> object:
    """A small LoCoMo conversation: three dated sessions (a harbour, a garden, a kitchen),
    then ``questions`` (text, evidence)."""
    from ingest.locomo import Conversation, Question, Session, Turn

    topics = (("harbour", "the red lighthouse by the harbour wall"),
              ("garden", "the tomato plants in the back garden"),
              ("kitchen", "the copper pans in the kitchen"))
    sessions = []
    for s, (name, thing) in enumerate(topics, start=1):
        turns = [Turn(f"D{s}:{t}", ("Ana", "Ben")[t % 2], f"{thing} again, note {t}")
                 for t in range(1, 26)]
        turns.append(Turn(f"D{s}:26", "Ana", f"I paid the {name} bill on Friday"))
        sessions.append(Session(s, f"{s} May 2023", datetime(2023, 5, s * 7, tzinfo=UTC),
                                tuple(turns)))
    return Conversation("conv-t", ("Ana", "Ben"), tuple(sessions), tuple(
        Question(text, "", 4, evidence) for text, evidence in questions))


@pytest.mark.parametrize("sessions", [None, 2])
def test_the_replays_schedule_reads_no_label(sessions: int | None) -> None:
    """``eval.learning`` asks LoCoMo's questions after every session, in an order and at
    times that the evidence does not change: the same questions with their evidence
    swapped around, one of them without any, are asked alike (every one, in the same
    order at the same times, also when only the first sessions are replayed), and the
    agent marks the same hits useful. Only what is scored differs."""
    from dataclasses import replace

    from eval.learning import replay_locomo

    questions = [("what is by the harbour wall", ("D1:3",)),
                 ("which plants are in the garden", ("D2:4",)),
                 ("what hangs in the kitchen", ("D3:5",)),
                 ("what is red", ("D1:7", "D3:2")),
                 ("what grows", ("D2:9",))]
    original = _conversation(questions)
    evidence = [e for _, e in questions]
    swapped = replace(original, questions=tuple(  # type: ignore[type-var]
        replace(q, evidence=() if n == 1 else evidence[(n + 2) % len(evidence)])
        for n, q in enumerate(original.questions)))  # type: ignore[attr-defined]
    reader = Reader(embedder_from_spec("hashing"))
    seen: list[list[tuple[str, str, bool, datetime]]] = [[], []]
    scored = [[row.index for row in replay_locomo(
        c, "hashing", reader, sessions=sessions, at_end=lambda store, out=out: out.extend(
            (e.metadata["query"], e.memory_id, e.metadata["useful"], e.timestamp)
            for e in store.events(event_type="feedback")))]
        for c, out in zip((original, swapped), seen, strict=True)]
    assert seen[0] == seen[1]
    asked = list(dict.fromkeys((q, at) for q, _, _, at in seen[0]))
    assert sorted(q for q, _ in asked) == sorted(q for q, _ in questions)
    assert sum(useful for _, _, useful, _ in seen[0]) == len(questions)
    last_session = datetime(2023, 5, 7 * (sessions or 3), tzinfo=UTC)
    assert all(at > last_session for _, at in asked)
    # what is scored: the questions whose evidence the replayed sessions hold
    assert scored[0] == [n for n in scored[0] if sessions is None or n not in (2, 3)]
    assert 1 not in scored[1] and len(scored[0]) == (5 if sessions is None else 3)


def test_a_replay_of_no_session_is_refused() -> None:
    from eval.learning import replay_locomo

    with pytest.raises(SystemExit, match="no dated session"):
        replay_locomo(_conversation([("what grows", ("D2:9",))]), "hashing",
                      Reader(embedder_from_spec("hashing")), sessions=0)


def test_the_replays_agent_gives_feedback_only_on_the_hits_it_was_shown() -> None:
    """Of the hits shown for a question, the one the reader picks is marked useful and the
    others not useful; an evidence turn the agent was not shown gets no feedback. A
    later question counts as "evidence used before" exactly when one of its evidence
    turns was marked useful for an earlier one."""
    from eval.learning import AGENT_K, replay_locomo
    from ingest.locomo import memory_id

    question = "where is the red lighthouse by the harbour wall"
    conversation = _conversation([(question, ("D1:3", "D2:26")), (question, ("D1:3",)),
                                  ("who paid the garden bill", ("D2:26",))])
    events: list[object] = []
    rows = replay_locomo(conversation, "hashing", Reader(embedder_from_spec("hashing")),
                         at_end=lambda store: events.extend(
                             store.events(event_type="feedback")))
    unseen = memory_id(conversation, "D2:26")
    useful_before: set[str] = set()
    for row in sorted(rows, key=lambda r: r.at):
        shown = [memory_id(conversation, d) for d in row.rankings["default"][:AGENT_K]]
        marks = [(e.memory_id, e.metadata["useful"]) for e in events  # type: ignore[attr-defined]
                 if e.metadata.get("query") == row.question  # type: ignore[attr-defined]
                 and e.timestamp == datetime.fromisoformat(row.at)]  # type: ignore[attr-defined]
        assert sorted(m for m, _ in marks) == sorted(shown)
        assert sum(useful for _, useful in marks) == 1
        if row.index == 0:
            assert unseen not in shown
        gold = {memory_id(conversation, d) for d in row.gold}
        assert row.used_before == bool(gold & useful_before)
        useful_before |= {m for m, useful in marks if useful}


def test_a_long_history_without_enough_use_says_what_it_lacks(tmp_path: Path) -> None:
    """Memories spread over 300 days that nobody used: the history is long enough, and
    the message says so and what a window lacks instead of asking for more days."""
    now = datetime(2026, 6, 1, tzinfo=UTC)
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=lambda: now) as store:
        for n in range(60):
            store.add(f"note {n} about the orchard", created=now - timedelta(days=5 * n + 1))
        with pytest.raises(ConflictError) as caught:
            store.learn()
    message = str(caught.value)
    assert "; forecast not trained: the forecast needs 75 days of use" in message
    assert "(this store's history spans 296 days): long enough, but of its " in message
    assert "training examples (a memory at a cut) 0 were used in the 30 days after" in message
    assert message.endswith("40 are needed, 8 of each)")


def test_the_learning_report_shows_no_result_of_an_older_protocol(tmp_path: Path) -> None:
    """``learning.md`` is made from the results on file: one made under another replay
    protocol (its agent once judged hits by the answer key) is named, not shown as
    this protocol's."""
    from eval.learning import PROTOCOL
    from eval.learning_report import write_report

    (tmp_path / "learning_longmemeval.json").write_text(json.dumps(
        {"protocol": "seeded order, feedback on shown hits/2", "corpus": "longmemeval"}))
    text = write_report(tmp_path, PROTOCOL)
    assert "Not shown: the longmemeval result on file was made under an older replay " \
           "protocol ('seeded order, feedback on shown hits/2')" in text
    assert "## The learned ranker" not in text


def test_the_longmemeval_replay_asks_abstention_questions_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every sampled question is replayed (its feedback trains the other folds), the
    abstention one too; only the answerable one is scored."""
    from eval.learning import run_longmemeval

    def item(qid: str, answer: list[str]) -> dict[str, object]:
        sessions = {"s_a": "I baked bread yesterday.", "answer_1": "I moved to Accra.",
                    "s_b": "The weather is nice."}
        return {"question_id": qid, "question_type": "single-session-user",
                "question": "Which city did I move to?", "answer": "Accra",
                "question_date": "2023/06/01 (Thu) 10:00",
                "haystack_session_ids": list(sessions),
                "haystack_dates": [f"2023/05/0{i + 1} (Mon) 09:00" for i in range(3)],
                "haystack_sessions": [[{"role": "user", "content": t},
                                       {"role": "assistant", "content": "Noted."}]
                                      for t in sessions.values()],
                "answer_session_ids": answer}
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([item("q1", ["answer_1"]), item("q2_abs", [])]))
    asked: list[str] = []
    import eval.learning as learning

    real = learning.agent_use

    def counting(store: MemoryStore, question: str, reader: Reader, **kw: object) -> object:
        asked.append(question)
        return real(store, question, reader, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(learning, "agent_use", counting)
    result = run_longmemeval(str(path), "hashing", folds=2, progress=False)
    assert len(asked) == 2 and result["questions"] == 1
