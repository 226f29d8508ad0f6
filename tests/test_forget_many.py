"""``forget_many``: several memories forgotten together leave what forgetting them one at a
time leaves, cut their words from the neighbours in one pass (forgetting each sentence of
a long message alone rewrote the message in every other sentence's payload each time), and
check every id before anything is deleted. On both engines."""

from __future__ import annotations

from typing import Any

import pytest

from graphmem import (
    ConfirmationRequiredError,
    InvalidInputError,
    MemoryStore,
    NotFoundError,
    Status,
)

SENTENCES = [f"My {thing} is called {name}." for thing, name in [
    ("cat", "Zorbo"), ("dog", "Quill"), ("boat", "Marlinspike"), ("bike", "Tessaract"),
    ("plant", "Fernando"), ("car", "Rustbucket"), ("laptop", "Orbweaver"),
    ("guitar", "Lapwing"), ("kettle", "Brassneck"), ("drone", "Kestrelia")]]


def _sitting(store: MemoryStore, owner: str = "ann") -> list[str]:
    result = store.add_conversation([
        {"speaker": "Ann", "text": " ".join(SENTENCES)},
        {"speaker": "Ann", "text": "I also said My cat is called Zorbo. to my sister."}],
        session_id=f"s-{owner}", owner=owner)
    ids = result.created_ids + result.candidate_ids
    assert len(ids) >= len(SENTENCES)
    return ids


def _left(store: MemoryStore, ids: list[str]) -> dict[str, Any]:
    return {m.text: (m.payload, m.context, m.status.value) for m in store.get_many(ids)
            if m.status is not Status.FORGOTTEN}


def _of(store: MemoryStore, ids: list[str], words: tuple[str, ...]) -> list[str]:
    return [m.id for m in store.get_many(ids) if any(w in m.text for w in words)]


GONE = ("Zorbo", "Quill", "Marlinspike", "Fernando", "Orbweaver", "Brassneck")


def test_forgetting_together_leaves_what_forgetting_one_by_one_leaves(
        store_location: str) -> None:
    with MemoryStore(store_location, embedder="hashing") as store:
        alone, together = _sitting(store, "ann"), _sitting(store, "bea")
        for memory_id in _of(store, alone, GONE):
            store.forget(memory_id, confirm=True, purge=False)
        gone = _of(store, together, GONE)
        assert store.forget_many(gone, confirm=True) == len(gone) == 7
        kept, expected = _left(store, together), _left(store, alone)
        assert kept.keys() == expected.keys()
        for text, (payload, context, status) in kept.items():
            assert (payload, status) == (expected[text][0], expected[text][2])
            # together, a forgotten statement that holds another ("I also said My cat is
            # called Zorbo.") leaves whole; one at a time, what the first cut left stays
            assert set((context or "").split()) <= set((expected[text][1] or "").split())
        left = " ".join(f"{p} {c}" for p, c, _ in _left(store, together).values())
        assert not any(word in left for word in GONE), left
        assert "Tessaract" in left


def test_the_neighbours_are_rewritten_once(store_location: str) -> None:
    with MemoryStore(store_location, embedder="hashing") as store:
        ids = _sitting(store)
        gone = _of(store, ids, GONE)
        engine = store._ctx.engine
        patched: list[str] = []
        real = engine.commit

        def counted(batch):  # type: ignore[no-untyped-def]
            patched.extend(p.memory_id for p in batch.patches)
            return real(batch)

        engine.commit = counted
        store.forget_many(gone, confirm=True, purge=False)
        neighbours = [i for i in patched if i not in gone]
        # each neighbour once (one at a time: once per memory forgotten, 6 times each)
        assert neighbours and len(neighbours) == len(set(neighbours)), patched
        for memory in store.get_many(gone):
            assert memory.status is Status.FORGOTTEN and memory.text == ""
        # a sitting imported again does not bring them back
        again = store.add_conversation([{"speaker": "Ann", "text": " ".join(SENTENCES)}],
                                       session_id="s-ann", owner="ann")
        assert not any(w in m.text for m in store.get_many(again.created_ids
                                                           + again.candidate_ids)
                       for w in GONE)


def test_every_id_is_checked_before_anything_is_deleted(store_location: str) -> None:
    with MemoryStore(store_location, embedder="hashing") as store:
        ids = _sitting(store)
        before = _left(store, ids)
        with pytest.raises(NotFoundError):
            store.forget_many([ids[0], "urn:graphmem:nope"], confirm=True)
        with pytest.raises(NotFoundError):
            store.forget_many([ids[0]], confirm=True, owner="bea")
        with pytest.raises(ConfirmationRequiredError):
            store.forget_many(ids[:2])
        with pytest.raises(InvalidInputError, match="memory_ids"):
            store.forget_many(ids[0], confirm=True)
        assert _left(store, ids) == before
        assert store.forget_many([ids[0], ids[0]], confirm=True) == 1
        assert store.forget_many([ids[0]], confirm=True) == 0  # erased already


def test_odd_lists_of_ids_get_a_clear_error(store_location: str) -> None:
    with MemoryStore(store_location, embedder="hashing") as store:
        ids = _sitting(store)
        # a generator is read once: its ids are forgotten (the check read it up before)
        assert store.forget_many((i for i in ids[:1]), confirm=True) == 1
        for odd in (None, 5, b"urn:x", [ids[1], 7]):
            with pytest.raises(InvalidInputError, match="memory_ids"):
                store.forget_many(odd, confirm=True)  # type: ignore[arg-type]
        with pytest.raises(ConfirmationRequiredError):
            store.forget_many(i for i in ids)
        assert store.forget_many([], confirm=True) == 0
        with pytest.raises(InvalidInputError, match="reason"):
            store.forget_many(ids[1:2], confirm=True, reason=None)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="reason"):
            store.forget(ids[1], confirm=True, reason=None)  # type: ignore[arg-type]
        assert store.get(ids[1]).status is not Status.FORGOTTEN
