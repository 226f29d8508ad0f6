"""Context-pooled memory vectors (``+pooled`` embedder specs): each text and each context
line encoded once, the context's mean added to the text's vector."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from graphmem import (
    ContextPooled,
    EmbedderMismatchError,
    InvalidInputError,
    MemoryInput,
    MemoryStore,
    session_contexts,
)
from graphmem._embed import CONTEXT_WEIGHT, HashingEmbedder, embed_memories, embedder_from_spec

TURNS = ["Caroline: I went to the support group yesterday.",
         "Melanie: How did it go? Was it the one downtown?",
         "Caroline: Yes, the one near the library. It was powerful.",
         "Melanie: I am painting a sunrise for the lake house.",
         "Caroline: Send me a photo when the painting is done!"]


class Counting(HashingEmbedder):
    """A hashing embedder that keeps every batch it was asked to encode."""

    def __init__(self) -> None:
        super().__init__(64)
        self.batches: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        return super().embed(texts)


def vectors_of(store: MemoryStore) -> dict[str, np.ndarray]:
    scan = store._ctx.engine.scan(["id", "vector"])
    assert scan.vectors is not None
    return dict(zip(scan.table.column("id").to_pylist(), scan.vectors, strict=True))


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def test_a_pooled_vector_is_the_text_plus_the_weighted_mean_of_its_context_lines() -> None:
    inner = HashingEmbedder(64)
    pooled = ContextPooled(inner)
    heads = ["the text", "a text alone"]
    got = pooled.embed_in_context(heads, ["line one\nline two\n\n", None])
    e = {t: inner.embed([t])[0] for t in ["the text", "line one", "line two", "a text alone"]}
    want0 = unit(e["the text"] + CONTEXT_WEIGHT * (e["line one"] + e["line two"]) / 2)
    assert np.allclose(got[0], want0, atol=1e-6)
    assert np.allclose(got[1], e["a text alone"], atol=1e-6)  # no context: the text's own
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    # queries are embedded as the inner model does; the joint default differs
    assert np.array_equal(pooled.embed(["q"]), inner.embed(["q"]))
    joint = embed_memories(inner, heads, ["line one\nline two", None])
    assert np.allclose(joint[0], inner.embed(["the text\nline one\nline two"])[0])
    assert not np.allclose(joint[0], got[0], atol=1e-3)


def test_a_session_is_encoded_once_per_turn() -> None:
    inner = Counting()
    pooled = ContextPooled(inner)
    contexts = session_contexts(TURNS, 1)
    vectors = pooled.embed_in_context(TURNS, contexts)
    assert vectors.shape == (5, 64)
    assert len(inner.batches) == 1 and sorted(inner.batches[0]) == sorted(TURNS)
    # the joint embedding encodes each turn with its neighbours: three times the text
    joint = Counting()
    embed_memories(joint, TURNS, contexts)
    assert sum(map(len, joint.batches[0])) > 2.5 * sum(map(len, TURNS))


def test_specs_name_the_pooled_model_and_refuse_unknown_options() -> None:
    pooled = embedder_from_spec("hashing:32+pooled")
    assert isinstance(pooled, ContextPooled)
    assert (pooled.spec, pooled.name, pooled.dim) == ("hashing:32+pooled", "hashing-32+pooled",
                                                      32)
    with pytest.raises(InvalidInputError, match=r"\+fast") as caught:
        embedder_from_spec("hashing:32+fast")
    assert caught.value.field == "embedder"
    with pytest.raises(InvalidInputError, match="unknown embedder"):
        embedder_from_spec("nothing+pooled")
    # a hashing dimension is bounded: 100M floats a memory filled a disk
    assert embedder_from_spec("hashing:4096").dim == 4096
    for spec, said in (("hashing:4097", "dimension is 8 to 4096, got 4097"),
                       ("hashing:4", "dimension is 8 to 4096, got 4"),
                       ("hashing:x", "bad hashing embedder spec 'hashing:x'")):
        with pytest.raises(InvalidInputError, match=said) as caught:
            embedder_from_spec(spec)
        assert caught.value.field == "embedder"


def test_a_store_keeps_pooled_vectors_and_reembeds_between_the_kinds(tmp_path: Path) -> None:
    path = tmp_path / "db"
    contexts = session_contexts(TURNS, 1)
    records = [MemoryInput(id=f"t{n}", text=t, context=c)
               for n, (t, c) in enumerate(zip(TURNS, contexts, strict=True))]
    with MemoryStore(path, embedder="hashing:64+pooled") as store:
        store.merge(records)
        want = ContextPooled(HashingEmbedder(64)).embed_in_context(TURNS, contexts)
        got = vectors_of(store)
        assert np.allclose(np.stack([got[f"t{n}"] for n in range(5)]), want, atol=1e-6)
        hit = store.recall("photo of the painting", k=1, preset="vector")[0]
        assert hit.memory.id == "t4"
    with pytest.raises(EmbedderMismatchError, match="reembed"):
        MemoryStore(path, embedder="hashing:64")
    with MemoryStore(path) as store:  # reopened with the model it records
        assert store.embedder.spec == "hashing:64+pooled"
        assert store.reembed("hashing:64") == 5
        joint = vectors_of(store)
        assert np.allclose(joint["t0"], embed_memories(HashingEmbedder(64), [TURNS[0]],
                                                        [contexts[0]])[0], atol=1e-6)
        assert store.reembed("hashing:64+pooled") == 5
        again = vectors_of(store)
        assert np.allclose(again["t2"], want[2], atol=1e-6)


@pytest.mark.model
def test_pooled_minilm_finds_a_turn_by_what_its_neighbours_said(tmp_path: Path) -> None:
    contexts = session_contexts(TURNS, 1)
    with MemoryStore(tmp_path / "db", embedder="minilm+pooled") as store:
        store.merge([MemoryInput(id=f"t{n}", text=t, context=c)
                     for n, (t, c) in enumerate(zip(TURNS, contexts, strict=True))])
        assert store.embedder.name == "sentence-transformers/all-MiniLM-L6-v2+pooled"
        vectors = np.stack(list(vectors_of(store).values()))
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        hits = store.recall("Was the support group downtown?", k=2, preset="vector")
        assert {h.memory.id for h in hits} <= {"t0", "t1", "t2"}


def test_the_evaluations_caches_keep_the_pooling() -> None:
    """The eval harness wraps embedders in caches; a wrapper that hid ``embed_in_context``
    would silently measure the joint vectors under the pooled model's name."""
    from eval.experiment import CachedEmbedder
    from eval.learning import cached

    pooled = ContextPooled(HashingEmbedder(64))
    contexts = session_contexts(TURNS, 1)
    want = embed_memories(pooled, TURNS, contexts)
    for wrapper in (CachedEmbedder(pooled), cached(pooled, ["a question"])):
        assert wrapper.name == pooled.name
        assert np.allclose(embed_memories(wrapper, TURNS, contexts), want, atol=1e-6)
