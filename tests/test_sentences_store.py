"""Sentence vectors are the store's: made when a text is written, kept by the engine,
read (not made again) when the recall index is built, carried by backups and restores,
made again by ``reembed``, and absent from memories written before the store kept them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphmem import MemoryStore
from graphmem._records import sentences_matrix

TURN = "Caroline: I went to the LGBTQ support group. It was powerful."
NOTE = "The gate code is 4512."


def _stored(store: MemoryStore) -> dict[str, np.ndarray | None]:
    table = store._ctx.engine.scan(["id", "sentences"]).table
    dim = store._ctx.vector_dim()
    return {i: sentences_matrix(t, dim) for i, t in zip(
        table.column("id").to_pylist(), table.column("sentences").to_pylist(), strict=True)}


def _counts(store: MemoryStore) -> dict[str, int]:
    index = store._recall_index.ensure_index()
    return {index.ids[p]: int(index.sentence_count[p]) for p in range(index.size)}


def _listed(backup: Path, data: Path, *, tables: int | None = None) -> None:
    """The manifest lists ``data`` as it is now (and the tables' layout ``tables``)."""
    manifest = backup / "graphmem-backup.json"
    info = json.loads(manifest.read_text())
    info["files"][data.name] = hashlib.sha256(data.read_bytes()).hexdigest()
    if tables is not None:
        info["schema_version"] = tables
    manifest.write_text(json.dumps(info))


def test_made_at_write_and_read_back_when_the_index_is_built(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        turn, note = store.add(TURN), store.add(NOTE)
        stored = _stored(store)
        assert stored[turn.id] is not None and stored[turn.id].shape == (2, 384)
        assert stored[note.id] is None  # one sentence, no speaker: its own vector says it
        made = stored[turn.id].copy()
    with MemoryStore(path, embedder="hashing") as store:
        def refuse(*args: object, **kwargs: object) -> np.ndarray:
            raise AssertionError("the index build embedded a text")

        monkeypatch.setattr(store._ctx, "embed", refuse)
        monkeypatch.setattr(store._ctx, "embed_memories", refuse)
        store._recall_index._index = None  # built again from the store, not from a file
        index = store._recall_index.ensure_index()
        pos = index.pos[turn.id]
        start, count = int(index.sentence_start[pos]), int(index.sentence_count[pos])
        np.testing.assert_array_equal(index.sentences[start:start + count], made)
        assert _counts(store)[note.id] == 0


def test_a_memory_of_many_lines_gets_vectors_for_its_first_sentences(tmp_path: Path
                                                                     ) -> None:
    """50,000 bullet lines made 50,000 vectors (1.1 GB with the hashing embedder, minutes
    of MiniLM); the first ``MAX_SENTENCES`` say what a sentence can add."""
    from graphmem._embed import MAX_SENTENCES

    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        long = store.add("".join(f"- item {i}\n" for i in range(5_000)))
        stored = _stored(store)[long.id]
        assert stored is not None and stored.shape == (MAX_SENTENCES, 384)
        assert _counts(store)[long.id] == MAX_SENTENCES


def test_an_edit_replaces_them_and_the_index_follows(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        turn = store.add(TURN)
        assert _counts(store)[turn.id] == 2
        store.update(turn.id, text="Caroline: I adopted a puppy. He is Oscar. He barks.")
        assert _stored(store)[turn.id].shape == (3, 384)
        assert _counts(store)[turn.id] == 3
        store.update(turn.id, text=NOTE)
        assert _stored(store)[turn.id] is None and _counts(store)[turn.id] == 0


def test_backup_and_restore_carry_them(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        turn = store.add(TURN)
        before = _stored(store)
        store.backup(tmp_path / "backup")
    restored = tmp_path / "restored"
    MemoryStore.restore_backup(tmp_path / "backup", restored)
    with MemoryStore(restored, embedder="hashing") as store:
        np.testing.assert_array_equal(_stored(store)[turn.id], before[turn.id])
        assert _counts(store)[turn.id] == 2


def test_a_backup_of_the_layout_before_them_restores_without(tmp_path: Path) -> None:
    """A format-2 backup of tables v1 (no ``sentences`` column) restores; its memories are
    searched by their own vectors until ``reembed`` makes their sentence vectors."""
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        turn = store.add(TURN)
        store.backup(tmp_path / "backup")
    data = next(p for p in (tmp_path / "backup").rglob("memories.parquet"))
    table = pq.read_table(data)
    pq.write_table(table.drop_columns(["sentences"]), data, use_dictionary=False)
    _listed(tmp_path / "backup", data, tables=1)
    MemoryStore.restore_backup(tmp_path / "backup", tmp_path / "restored")
    with MemoryStore(tmp_path / "restored", embedder="hashing") as store:
        assert _stored(store)[turn.id] is None
        assert store.recall("support group", k=1)[0].memory.id == turn.id
        assert store.reembed("hashing") == 1
        assert _stored(store)[turn.id].shape == (2, 384)
        assert _counts(store)[turn.id] == 2


def test_a_backup_with_bad_sentence_vectors_is_refused(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add(TURN)
        store.backup(tmp_path / "backup")
    data = next(p for p in (tmp_path / "backup").rglob("memories.parquet"))
    table = pq.read_table(data)
    column = table.schema.get_field_index("sentences")
    table = table.set_column(column, "sentences", pa.array(["AAAA"], pa.string()))
    pq.write_table(table, data, use_dictionary=False)
    _listed(tmp_path / "backup", data)
    with pytest.raises(Exception, match="sentences"):
        MemoryStore.restore_backup(tmp_path / "backup", tmp_path / "restored")
    assert not (tmp_path / "restored").exists() or not any((tmp_path / "restored").iterdir())


PLOT = ("My allotment plot is number 14 at Meanwood. Tuesdays and Thursdays I water it, "
        "the hose is by the blue shed.")


def _statements(store: MemoryStore, owner: str = "ruth") -> dict[str, str]:
    return {m.text: m.id for m in store.memories(owner=owner)}


def test_a_conversation_statement_is_searched_with_its_message(tmp_path: Path) -> None:
    """A statement split from the user's message keeps the message among its sentence
    vectors (last, at ``MESSAGE_WEIGHT``), so a question in the message's words finds
    it; a memory added on its own (its payload its own) has no such row."""
    from graphmem._derive import MESSAGE_WEIGHT

    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add_conversation([{"role": "user", "content": PLOT}], owner="ruth",
                               session_id="s1")
        said = _statements(store)
        water = next(i for t, i in said.items() if t.startswith("Tuesdays"))
        rows = _stored(store)[water]
        assert rows is not None and rows.shape == (1, 384)  # one sentence: its message
        message = store._ctx.embed([PLOT])[0]
        np.testing.assert_allclose(rows[0], MESSAGE_WEIGHT * message, atol=1e-6)
        # what the assistant said keeps no message: its replies are its own
        store.add_conversation([{"role": "user", "content": "Any tips for slugs?"},
                                {"role": "assistant", "content": "Try copper tape round "
                                 "the beds. Beer traps work as well, set them at dusk."}],
                               owner="ruth", session_id="s2")
        tips = [m.id for m in store.memories(owner="ruth") if "assistant" in m.tags]
        assert tips and all(_stored(store)[i] is None for i in tips)
        others = [store.add(text, owner="ruth").id for text in (
            "Rainy days all week at the station.", "Days out with the kids.")]
        alone = store.add("Tuesdays and Thursdays I water it.", owner="ruth",
                          payload=PLOT)
        assert _stored(store)[alone.id] is None  # no conversation's statement
        # by its own words alone (0.16) it came after these (0.29, 0.30), which share
        # "days" with the question; the message's "Meanwood allotment" puts it before
        hits = store.recall("Which days at the Meanwood allotment?", owner="ruth", k=10,
                            record_access=False)
        vector = {h.memory.id: h.explanation.channels["vector"].score for h in hits
                  if "vector" in h.explanation.channels}
        assert all(vector[water] > vector[o] for o in others), vector


def test_forget_makes_the_message_row_again_without_the_forgotten_words(tmp_path: Path
                                                                        ) -> None:
    """The message row is made of the message: when a sentence of it is forgotten, the
    other statements' message rows are made again of what is left (a vector of the
    forgotten words would be a trace of them)."""
    from graphmem._derive import MESSAGE_WEIGHT

    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        three = f"{PLOT} My neighbour Gwen shares the compost bin with me."
        store.add_conversation([{"role": "user", "content": three}], owner="ruth",
                               session_id="s1")
        said = _statements(store)
        plot = next(i for t, i in said.items() if t.startswith("My allotment"))
        water = next(i for t, i in said.items() if t.startswith("Tuesdays"))
        store.forget(plot, owner="ruth", confirm=True)
        left = store.get(water)
        assert left.payload is not None and "Meanwood" not in left.payload
        assert "compost" in left.payload
        rows = _stored(store)[water]
        assert rows is not None
        np.testing.assert_allclose(rows[-1], MESSAGE_WEIGHT * store._ctx.embed(
            [left.payload])[0], atol=1e-6)
        index = store._recall_index.ensure_index()
        pos = index.pos[water]
        start, count = int(index.sentence_start[pos]), int(index.sentence_count[pos])
        np.testing.assert_allclose(index.sentences[start:start + count].astype(np.float32),
                                   rows, atol=1e-2)


def test_reembed_keeps_the_message_row(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add_conversation([{"role": "user", "content": PLOT}], owner="ruth",
                               session_id="s1")
        water = next(i for t, i in _statements(store).items() if t.startswith("Tuesdays"))
        before = _stored(store)[water]
        store.reembed("hashing")
        after = _stored(store)[water]
        assert before is not None and after is not None and after.shape == (1, 384)
        np.testing.assert_allclose(after, before, atol=1e-6)


DIG = [{"role": "user", "content": "Big news, we got the allotment at Meanwood! First dig is "
        "on the 9th of March."},
       {"role": "assistant", "content": "Congratulations! Do you want a reminder?"},
       {"role": "user", "content": "yes please. oh sorry, I meant the 16th, not the 9th"}]


def test_a_correction_is_searched_with_what_it_corrects(tmp_path: Path) -> None:
    """A correction's message row is its message and then what it corrects (its context:
    the corrected statement in its message), which the stale statement is found by; a
    forget of the corrected statement's message makes it again without those words."""
    from graphmem._derive import MESSAGE_WEIGHT

    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add_conversation(DIG, owner="ruth", session_id="s1")
        said = _statements(store)
        fix = next(i for t, i in said.items() if "I meant" in t)
        corrected = store.get(fix)
        assert corrected.provenance.get("corrects") and corrected.context
        rows = _stored(store)[fix]
        assert rows is not None and rows.shape == (1, 384)
        np.testing.assert_allclose(rows[0], MESSAGE_WEIGHT * store._ctx.embed(
            [f"{corrected.payload}\n{corrected.context}"])[0], atol=1e-6)
        store.forget(next(i for t, i in said.items() if t.startswith("Big news")),
                     owner="ruth", confirm=True)
        left = store.get(fix)
        assert "Meanwood" not in (left.context or "")
        rows = _stored(store)[fix]
        assert rows is not None
        np.testing.assert_allclose(rows[-1], MESSAGE_WEIGHT * store._ctx.embed(
            [f"{left.payload}\n{left.context}" if left.context else left.payload])[0],
            atol=1e-6)


def test_forget_makes_the_row_again_after_the_provenance_was_edited(tmp_path: Path
                                                                   ) -> None:
    """A row made while the memory was a conversation's statement is made again when a
    forget scrubs its payload, though its provenance says otherwise since: the old row
    held the forgotten words (found from outside, with a PIN)."""
    message = "My PIN is 4071 at the Halifax. My cat Zorbo hates the vet."
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add_conversation([{"role": "user", "content": message}], owner="u",
                               session_id="s1")
        said = _statements(store, "u")
        cat = next(i for t, i in said.items() if "Zorbo" in t)
        store.update(cat, provenance={"source": "manual"})
        store.forget(next(i for t, i in said.items() if "4071" in t), owner="u",
                     confirm=True)
        assert "4071" not in (store.get(cat).payload or "")
        old = store._ctx.embed([message])[0]
        rows = _stored(store)[cat]
        assert rows is None or not any(np.allclose(r, 0.9 * old, atol=1e-6) for r in rows)


def test_a_message_that_is_its_one_statement_has_no_row(tmp_path: Path) -> None:
    """A message kept whole as one statement has no message row, whatever its spaces
    (the statement's text is kept with its spaces folded, the payload as said)."""
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add_conversation([{"role": "user", "content": "My  horse   Bramble is grey."}],
                               owner="u", session_id="s1")
        (memory,) = store.memories(owner="u")
        assert _stored(store)[memory.id] is None
