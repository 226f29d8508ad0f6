"""Sentence vectors: a memory's sentences (speaker labels left out) searched with the question
without the names of people, beside the memory's own vector; with the real MiniLM model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphmem import MemoryStore
from graphmem._recall import PRESETS

TARGET = "Caroline: I went to the LGBTQ support group. It was powerful."
DISTRACTORS = [
    "Melanie: Caroline, I'm so proud of you, you're amazing!",
    "Caroline: Hey Melanie! How are you doing today, Melanie?",
    "Caroline: I told Melanie about my week and she listened.",
    "Melanie: Caroline said she had a good time with her friends.",
    "Caroline: My friends were so supportive when I came out.",
    "Caroline: It's so strong and meaningful to me, Melanie.",
]
#: its words match the second sentence of TARGET alone ("powerful"), and the name every
#: turn holds
QUESTION = "What made Caroline say something was powerful?"
#: the share of the vector score the sentences make (``RecallConfig.sentences``)
SHARE = 0.5
WITH = PRESETS["default"].with_(sentences=SHARE)


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> MemoryStore:
    store = MemoryStore(tmp_path_factory.mktemp("sentences") / "db", embedder="minilm")
    store.add_many([{"text": t} for t in [TARGET, *DISTRACTORS]])
    yield store
    store.close()


def _vector_ranking(store: MemoryStore, sentences: float) -> list[str]:
    hits = store.recall(QUESTION, k=7, preset=PRESETS["vector"].with_(sentences=sentences))
    return [h.memory.text for h in hits]


def test_a_question_about_one_sentence_finds_its_memory_first(chat: MemoryStore) -> None:
    with_sentences = _vector_ranking(chat, SHARE)
    assert with_sentences[0] == TARGET
    assert with_sentences.index(TARGET) < with_sentences.index(DISTRACTORS[-1])
    # the memory's own vector alone ranks two distractors above it
    assert _vector_ranking(chat, 0.0).index(TARGET) >= 2
    assert chat.recall(QUESTION, k=1, preset=WITH)[0].memory.text == TARGET


def test_sentence_vectors_are_made_once_and_leave_single_sentences_alone(
        chat: MemoryStore) -> None:
    index = chat._recall_index.ensure_index()
    counts = {index.ids[p]: int(index.sentence_count[p]) for p in range(index.size)}
    texts = {m.id: m.text for m in chat.memories()}
    by_text = {texts[i]: c for i, c in counts.items()}
    assert by_text[TARGET] == 2
    assert by_text[DISTRACTORS[-1]] == 1  # one sentence, but a speaker label
    assert int((index.sentence_of[:index.sentence_rows] >= 0).sum()) == sum(counts.values())


def test_the_saved_index_keeps_them_and_an_edit_replaces_them(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with MemoryStore(path, embedder="minilm") as store:
        kept = store.add(TARGET)
        plain = store.add("The gate code is 4512.")
        store.recall("gate", k=1)
        index = store._recall_index.current
        assert index is not None
        before = index.sentences[:index.sentence_rows].copy()
        assert int(index.sentence_count[index.pos[plain.id]]) == 0
    with MemoryStore(path, embedder="minilm") as store:
        store.recall("gate", k=1)
        index = store._recall_index.current
        assert index is not None
        assert np.array_equal(index.sentences[:index.sentence_rows], before)
        assert store.recall(QUESTION, k=1, preset=WITH)[0].memory.id == kept.id
        store.update(kept.id, text="Caroline: I adopted a puppy. He is called Oscar.")
        pos = index.pos[kept.id]
        assert int(index.sentence_count[pos]) == 2
        assert int((index.sentence_of[:index.sentence_rows] == pos).sum()) == 2
        assert store.recall("What is the name of the puppy?", k=1,
                            preset=WITH)[0].memory.id == kept.id


def test_each_memory_scores_its_best_live_sentence() -> None:
    from graphmem._recall._index import RecallIndex

    rng = np.random.default_rng(7)
    index = RecallIndex(8, capacity=16)
    index.ids = [f"m{n}" for n in range(12)]
    written: dict[int, np.ndarray] = {}
    for pos in [3, 0, 7, 3, 11, 0, 5]:  # 3 and 0 written twice: their first rows replaced
        rows = rng.normal(size=(int(rng.integers(1, 4)), 8)).astype(np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        index.set_sentences(pos, rows)
        written[pos] = rows
    index.set_sentences(7, None)  # 7 has none now
    del written[7]
    # a replaced row between two memories' rows, the best match of all, counts for none
    query = rng.normal(size=8).astype(np.float32)
    query /= np.linalg.norm(query)
    index.set_sentences(9, -query[None, :])
    index.set_sentences(10, query[None, :])
    index.set_sentences(2, -query[None, :])
    index.set_sentences(10, -query[None, :])
    written.update({9: -query[None, :], 2: -query[None, :], 10: -query[None, :]})
    best = index.sentence_scores(query)
    assert best[9] == pytest.approx(-1.0, abs=1e-5)
    query = rng.normal(size=8).astype(np.float32)
    query /= np.linalg.norm(query)
    best = index.sentence_scores(query)
    expected = np.full(12, -np.inf, dtype=np.float32)
    for pos, rows in written.items():
        expected[pos] = (rows @ query).max()
    np.testing.assert_allclose(best, expected, rtol=1e-5)
    # the candidates of a sign-bit search are scored the same way, in any order
    some = np.array([11, 7, 0, 2, 9, 3])
    np.testing.assert_allclose(index.sentence_cosines(some, query), expected[some], rtol=1e-5)


def test_vector_products_equal_numpys_matmul() -> None:
    """The recall index's products (numpy's own loop, not BLAS) equal ``@`` on float32
    and on bfloat16 rows, for every row and for gathered rows across block edges."""
    from graphmem._recall._vectors import as_float32, dot_all, dot_rows, to_bfloat16

    rng = np.random.default_rng(7)
    rows = rng.standard_normal((9000, 384)).astype(np.float32)
    query = rng.standard_normal(384).astype(np.float32)
    np.testing.assert_allclose(dot_all(rows, 8500, query), rows[:8500] @ query, rtol=1e-4,
                               atol=1e-3)
    half = to_bfloat16(rows)
    picked = rng.choice(9000, 5000, replace=False)
    np.testing.assert_allclose(dot_rows(half, picked, query),
                               as_float32(half[picked]) @ query, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(dot_all(half, 9000, query), as_float32(half) @ query,
                               rtol=1e-4, atol=1e-3)
