"""Every hit carries when it was said (a conversation turn: its session's time) and the
times its text names, resolved against that time: in the library, the CLI, the HTTP
sidecar and the MCP tools. The window a query names reaches the memories dated just after
it when asked (``time_after``)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import httpx
import numpy as np
import pytest
from click.testing import CliRunner

from graphmem import HashingEmbedder, InvalidInputError, MemoryStore, RecallConfig
from graphmem.cli import cli
from graphmem.mcpserver._backends import EmbeddedBackend

from ._servers import running_sidecar

SESSION = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday
YESTERDAY = ["2023-05-07T00:00:00Z", "2023-05-08T00:00:00Z"]


def _conversation(store: MemoryStore) -> str:
    """A turn of a session held on 8 May 2023, remembered (created) later."""
    turn = store.add("Caroline: I went to a LGBTQ support group yesterday.",
                     observed=SESSION, session="conv:S1")
    store.add("Caroline: the support group meets every month.",
              created=datetime(2023, 6, 1, tzinfo=UTC), session="conv:S2")
    return turn.id


def _iso(value: str) -> str:
    return value.replace("+00:00", "Z")


def test_a_hit_is_dated_by_its_session_and_reads_yesterday_against_it(
        store: MemoryStore) -> None:
    turn = _conversation(store)
    hits = store.recall("when did Caroline go to the LGBTQ support group yesterday", k=2)
    by_id = {h.memory.id: h for h in hits}
    assert by_id[turn].when == SESSION
    assert [(a.isoformat(), b.isoformat()) for a, b in by_id[turn].speaks_of] == [
        ("2023-05-07T00:00:00+00:00", "2023-05-08T00:00:00+00:00")]
    other = next(h for h in hits if h.memory.id != turn)
    assert other.when == datetime(2023, 6, 1, tzinfo=UTC) and other.speaks_of == ()


def test_every_face_shows_the_date_of_a_hit(tmp_path: Path) -> None:
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        turn = _conversation(store)
        with running_sidecar(store) as url:
            body = httpx.post(f"{url}/v1/memories/retrieve", timeout=60,
                              json={"query": "LGBTQ support group yesterday", "k": 1,
                                    "explain": False}).json()
    [served] = body["hits"]
    assert served["memory"]["id"] == turn and "explanation" not in served
    assert _iso(served["when"]) == "2023-05-08T13:56:00Z"
    assert [[_iso(t) for t in span] for span in served["speaks_of"]] == [YESTERDAY]

    runner = CliRunner()
    listed = runner.invoke(cli, ["--db", str(db), "--json", "recall",
                                 "LGBTQ support group yesterday", "-k", "1"])
    [printed] = json.loads(listed.output)
    assert _iso(printed["when"]) == "2023-05-08T13:56:00Z"
    table = runner.invoke(cli, ["--db", str(db), "recall", "LGBTQ support group yesterday",
                                "-k", "1"]).output
    assert "when" in table.splitlines()[0] and "2023-05-08" in table

    tools = EmbeddedBackend(db, embedder="hashing")
    try:
        [answered] = tools.recall("LGBTQ support group yesterday", 1, "default", False, False, {})
    finally:
        tools.close()
    assert answered["id"] == turn and _iso(answered["when"]) == "2023-05-08T13:56:00Z"
    assert [[_iso(t) for t in span] for span in answered["speaks_of"]] == [YESTERDAY]


def _in_time_channel(store: MemoryStore, query: str, config: RecallConfig) -> set[str]:
    return {h.memory.text.split(":")[0] for h in store.recall(query, k=10, preset=config)
            if "time" in h.explanation.channels}


@pytest.fixture
def autumn_store(tmp_path: Path) -> Iterator[MemoryStore]:
    """A store whose clock reads 1 December 2023."""
    now = datetime(2023, 12, 1, tzinfo=UTC)
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=lambda: now) as store:
        yield store


def test_a_window_reaches_the_memories_dated_just_after_it(autumn_store: MemoryStore
                                                          ) -> None:
    store = autumn_store
    for label, day in (("inside", 12), ("after", 17)):
        store.add(f"{label}: John met his teammates again after the trip.",
                  observed=datetime(2023, 8, day, 19, tzinfo=UTC),
                  created=datetime(2023, 8, day, 19, tzinfo=UTC))
    store.add("late: John met his teammates again after the trip.",
              created=datetime(2023, 9, 30, tzinfo=UTC))
    query = "Where was John between August 11 and August 15 2023?"
    plain = RecallConfig(name="t", weights={"fulltext": 1.0, "time": 1.0})
    assert _in_time_channel(store, query, plain) == {"inside"}
    # a window of five days reaches five days past its end (17 August, not 30 September)
    assert _in_time_channel(store, query, plain.with_(time_after=1.0)) == {"inside", "after"}
    hits = store.recall(query, k=3, preset=plain.with_(time_after=1.0))
    assert [h.memory.text.split(":")[0] for h in hits][:2] == ["inside", "after"]
    # an open window ("before") reaches a month past its end at most
    before = "What did John do before August 11 2023?"
    assert _in_time_channel(store, before, plain.with_(time_after=1.0)) == {"inside", "after"}
    with pytest.raises(InvalidInputError, match="time_after"):
        plain.with_(time_after=-1.0)


def test_a_question_asking_when_favours_dated_hits_from_its_own_floor(
        autumn_store: MemoryStore) -> None:
    store = autumn_store
    for n in range(5):
        store.add(f"undated{n}: Caroline told the support group about the support group {n}.")
    store.add("dated: Caroline was out yesterday.", created=datetime(2023, 7, 12, tzinfo=UTC))
    config = RecallConfig(name="t", weights={"fulltext": 1.0, "time": 1.0}, time_floor=0.8,
                          rrf_k=1.0)
    when = "When did Caroline go to the support group?"
    order = "Did Caroline go out after the support group?"
    # sixth by text: under 0.8 of the best fused score, so no dated favour by default
    assert _in_time_channel(store, when, config) == set()
    lowered = config.with_(time_floor_when=0.0)
    assert _in_time_channel(store, when, lowered) == {"dated"}
    assert _in_time_channel(store, order, lowered) == set()  # not a "when": 0.8 holds
    assert _in_time_channel(store, order, config.with_(time_floor=0.0)) == {"dated"}
    with pytest.raises(InvalidInputError, match="time_floor_when"):
        config.with_(time_floor_when=1.5)


class _Looks(HashingEmbedder):
    """Texts about how someone looks ("look", "dyed") point one way, all others another:
    a vector channel that knows what the full-text one cannot."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row, 0 if {"look", "dyed"} & set(text.lower().split()) else 1] = 1.0
        return out


def test_a_window_orders_its_memories_by_what_the_other_channels_matched(
        tmp_path: Path) -> None:
    """A window holds many memories that match none of a question's words (a goodbye
    among them): what the channels before the window matched comes first, not the
    memory that happens to be stored first."""
    now = datetime(2023, 12, 1, tzinfo=UTC)
    at = datetime(2023, 4, 20, 19, tzinfo=UTC)
    with MemoryStore(tmp_path / "db", embedder=_Looks(), clock=lambda: now) as store:
        store.add("goodbye: Totally! Bye for today!", observed=at, created=at)
        store.add("hair: Guess what? I dyed it blue last week, come and see!",
                  observed=at, created=at)
        query = "How did Nate change his look in April 2023?"
        config = RecallConfig(name="t", weights={"fulltext": 1.0, "vector": 1.0, "time": 1.0})
        hits = store.recall(query, k=5, preset=config)
        by_time = sorted((h.explanation.channels["time"].rank, h.memory.text.split(":")[0])
                         for h in hits if "time" in h.explanation.channels)
        assert by_time == [(1, "hair"), (2, "goodbye")]
        assert hits[0].memory.text.startswith("hair")


def test_a_question_naming_its_time_weighs_the_time_channel_by_time_window(
        autumn_store: MemoryStore) -> None:
    store = autumn_store
    # many memories name the trip; one of the window's days matches no word of it
    for n in range(6):
        store.add(f"word{n}: John told Tim about the team trip plans again.",
                  created=datetime(2023, 10, 2 + n, tzinfo=UTC))
    store.add("dated: Took a trip to a new place, it was amazing.",
              observed=datetime(2023, 8, 12, 19, tzinfo=UTC),
              created=datetime(2023, 8, 12, 19, tzinfo=UTC))
    config = RecallConfig(name="t", weights={"fulltext": 1.0, "time": 0.2}, rrf_k=1.0)
    named = "Where was John on the team trip between August 11 and August 15 2023?"
    unnamed = "Where was John on the team trip?"

    def first(query: str, preset: RecallConfig) -> str:
        return store.recall(query, k=1, preset=preset)[0].memory.text.split(":")[0]

    assert first(named, config) != "dated"
    assert first(named, config.with_(time_window=2.0)) == "dated"
    # no window named: the channel's own weight, whatever time_window says
    assert first(unnamed, config.with_(time_window=2.0)) == first(unnamed, config)
    for bad in (-1.0, float("nan")):
        with pytest.raises(InvalidInputError, match="time_window"):
            config.with_(time_window=bad)
