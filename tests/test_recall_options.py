"""recall()'s time range (since / until), its "nothing relevant" cut (min_similarity) and
its relative cut (min_relative), on real Kuzu stores; the cut measured on the everyday
chats' development set with the real model."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from graphmem import InvalidInputError, MemoryStore, Settings, embedder_from_spec

from .conftest import Clock

MAY = datetime(2026, 5, 1, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, tzinfo=UTC)
JULY = datetime(2026, 7, 1, tzinfo=UTC)


@pytest.fixture
def dated(store: MemoryStore) -> dict[str, str]:
    """One memory about the garden on the first of May, June and July."""
    return {when.strftime("%B"): store.add(f"watered the garden beds ({when:%B})",
                                           created=when).id
            for when in (MAY, JUNE, JULY)}


def _ids(store: MemoryStore, query: str, **options: object) -> set[str]:
    return {h.memory.id for h in store.recall(query, k=10, **options)}  # type: ignore[arg-type]


def test_since_is_inclusive_and_until_exclusive(store: MemoryStore,
                                                dated: dict[str, str]) -> None:
    assert _ids(store, "garden beds") == set(dated.values())
    assert _ids(store, "garden beds", since=JUNE) == {dated["June"], dated["July"]}
    assert _ids(store, "garden beds", until=JUNE) == {dated["May"]}
    assert _ids(store, "garden beds", since=JUNE, until=JULY) == {dated["June"]}
    # ISO strings (the formats --now takes), offsets converted to UTC
    assert _ids(store, "garden beds", since="2026-05-02", until="2026-06-01T02:00+02:00") \
        == set()
    assert _ids(store, "garden beds", since="2026-05-31T23:00:00Z") == {dated["June"],
                                                                        dated["July"]}


def test_a_superseded_memory_leads_to_its_newest_version_in_the_range(
        store: MemoryStore) -> None:
    old = store.add("Orchard stores data in PostgreSQL 14", created=MAY)
    new = store.add("Orchard database is PostgreSQL 16", created=JULY)
    store.supersede(old.id, new.id)
    assert [h.memory.id for h in store.recall("PostgreSQL 14")] == [new.id]
    assert [h.memory.id for h in store.recall("PostgreSQL 14", until=JUNE)] == [old.id]
    [hit] = store.recall("PostgreSQL 14", since=JUNE)
    assert hit.memory.id == new.id and hit.explanation.redirected_from == (old.id,)


def test_a_time_range_holds_on_every_channel(store: MemoryStore,
                                             dated: dict[str, str]) -> None:
    for preset in ("fulltext", "vector", "hybrid", "default"):
        assert _ids(store, "garden beds", preset=preset, since=JULY) == {dated["July"]}


@pytest.mark.parametrize(("options", "field", "message"), [
    ({"since": JULY, "until": MAY}, "until", "must be after since"),
    ({"since": JUNE, "until": JUNE}, "until", "must be after since"),
    ({"since": "last tuesday"}, "since", "not an ISO 8601 timestamp"),
    ({"until": "2026-13-01"}, "until", "not an ISO 8601 timestamp"),
    ({"since": 1714521600}, "since", "datetime or an ISO 8601 string"),
    ({"min_similarity": 1.5}, "min_similarity", "in \\[0, 1\\]"),
    ({"min_similarity": float("nan")}, "min_similarity", "in \\[0, 1\\]"),
    ({"min_relative": -0.1}, "min_relative", "in \\[0, 1\\]"),
    ({"min_relative": True}, "min_relative", "in \\[0, 1\\]"),
    ({"min_similarity": 0.3, "preset": "fulltext"}, "min_similarity", "vector channel"),
])
def test_bad_options_name_their_field(store: MemoryStore, options: dict[str, object],
                                      field: str, message: str) -> None:
    store.add("watered the garden beds")
    with pytest.raises(InvalidInputError, match=message) as caught:
        store.recall("garden", **options)  # type: ignore[arg-type]
    assert caught.value.field == field
    # refused before anything was looked at, even for a blank query
    with pytest.raises(InvalidInputError):
        store.recall("  ", **options)  # type: ignore[arg-type]


def test_min_similarity_answers_nothing_relevant(store: MemoryStore) -> None:
    store.add_many([{"text": "watered the garden beds after work"},
                    {"text": "the tomato seedlings need repotting"}])
    # without the cut the nearest vectors always answer, however far
    assert store.recall("submarine ballast tanks", k=5)
    assert store.recall("submarine ballast tanks", k=5, min_similarity=0.3) == []
    kept = store.recall("garden beds", k=5, min_similarity=0.3)
    assert kept[0].memory.text == "watered the garden beds after work"
    assert [h.memory.id for h in kept] == [h.memory.id for h in store.recall("garden beds",
                                                                             k=5)]


def test_min_relative_keeps_hits_within_a_share_of_the_best(store: MemoryStore) -> None:
    store.add_many([{"text": f"garden note {i}: " + "garden beds " * (i % 3 + 1)}
                    for i in range(8)] + [{"text": "tomato seedlings"}])
    every = store.recall("garden beds", k=10)
    best = every[0].score
    for share in (0.0, 0.8, 0.95, 1.0):
        cut = store.recall("garden beds", k=10, min_relative=share)
        expected = [h.memory.id for h in every if h.score >= share * best]
        assert [h.memory.id for h in cut] == expected
    assert len(store.recall("garden beds", k=10, min_relative=0.95)) < len(every)


# -- measured on the everyday chats' development set ------------------------------------------
DEV = Path(__file__).resolve().parents[1] / "eval" / "data" / "everyday_dev.json"
#: Questions no conversation of the set is about, asked of every owner.
OFF_TOPIC = [
    "How do I change the oil in a motorcycle?",
    "What is the capital of Mongolia?",
    "Explain quantum entanglement in simple terms",
    "Who won the 1998 football world cup?",
    "What's the best way to tune a violin?",
    "How many moons does Jupiter have?",
    "Recommend a good sci-fi novel about space pirates",
    "What is the boiling point of mercury?",
    "How do submarines dive and surface?",
    "Translate 'good morning' into Japanese",
]
#: The cut the README suggests.
SUGGESTED = 0.25


@pytest.mark.model
def test_min_similarity_on_the_everyday_chats(tmp_path: Path) -> None:
    """With MiniLM, min_similarity=0.25 empties (nearly) every off-topic recall and keeps
    (nearly) every gold turn found without it; off by default, it changes nothing."""
    from eval.conversations import _now
    from ingest.chats import ingest_chat, load_chats, turn_of

    chats = load_chats(DEV)[::2]  # half the chats: as many kinds of turn, half the time
    now = _now(chats)
    with MemoryStore(tmp_path / "chats", embedder=embedder_from_spec("minilm"),
                     settings=Settings(), clock=lambda: now) as store:
        for chat in chats:
            ingest_chat(store, chat)
        found = kept = 0
        for chat in chats:
            for question in chat.questions:
                gold = set(question.gold)
                plain = store.recall(question.question, owner=chat.owner)
                cut = store.recall(question.question, owner=chat.owner,
                                   min_similarity=SUGGESTED)
                assert cut == [] or [h.memory.id for h in cut] == [h.memory.id for h in plain]
                found += any(turn_of(h.memory.provenance) in gold for h in plain)
                kept += any(turn_of(h.memory.provenance) in gold for h in cut)
        answered = empty = 0
        for chat in chats:
            for query in OFF_TOPIC:
                answered += bool(store.recall(query, owner=chat.owner))
                empty += not store.recall(query, owner=chat.owner, min_similarity=SUGGESTED)
    print(f"gold kept {kept}/{found}; off-topic empty {empty}/{len(chats) * len(OFF_TOPIC)} "
          f"(answered without the cut: {answered})")
    assert answered == len(chats) * len(OFF_TOPIC)  # off by default
    assert kept >= found - 2
    assert empty >= 0.85 * len(chats) * len(OFF_TOPIC)


def test_the_options_on_both_engines(store_location: str, clock: Clock) -> None:
    with MemoryStore(store_location, embedder="hashing", clock=clock) as store:
        june = store.add("watered the garden beds in June", created=JUNE)
        store.add("watered the garden beds in May", created=MAY)
        assert [h.memory.id for h in store.recall("garden beds", since=JUNE)] == [june.id]
        assert store.recall("garden beds", until=MAY) == []
        assert store.recall("submarine ballast tanks")
        assert store.recall("submarine ballast tanks", min_similarity=0.3) == []
