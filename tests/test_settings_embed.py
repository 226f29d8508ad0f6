"""Settings from the environment, and the embedders (one test runs the real MiniLM model)."""

from __future__ import annotations

import numpy as np
import pytest

from graphmem import (
    EmbedderMismatchError,
    HashingEmbedder,
    InvalidInputError,
    MemoryStore,
    MiniLMEmbedder,
    Settings,
)
from graphmem._embed import fingerprint


def test_settings_defaults_are_the_seeds() -> None:
    s = Settings.from_env({})
    assert (s.promotion_access_threshold, s.promotion_importance_threshold,
            s.archive_age_days, s.archive_importance_threshold, s.archive_access_threshold,
            s.auto_archive_enabled, s.archivist_enabled) == (10, 0.8, 30, 0.3, 0, False, True)


def test_settings_parse_and_name_bad_variables() -> None:
    s = Settings.from_env({"PROMOTION_ACCESS_THRESHOLD": "4", "AUTO_ARCHIVE_ENABLED": "yes",
                           "GRAPHMEM_DECAY_HALF_LIFE_DAYS": "episodic=10, working=1"})
    assert s.promotion_access_threshold == 4 and s.auto_archive_enabled
    assert s.half_life("episodic") == 10 and s.half_life("identity") == 3650
    assert Settings.from_env({}).lock_wait_s == 15.0
    assert Settings.from_env({"GRAPHMEM_LOCK_WAIT_S": "0"}).lock_wait_s == 0.0
    for env, name in [({"PROMOTION_ACCESS_THRESHOLD": "ten"}, "PROMOTION_ACCESS_THRESHOLD"),
                      ({"ARCHIVE_IMPORTANCE_THRESHOLD": "1.5"}, "ARCHIVE_IMPORTANCE_THRESHOLD"),
                      ({"AUTO_ARCHIVE_ENABLED": "maybe"}, "AUTO_ARCHIVE_ENABLED"),
                      ({"GRAPHMEM_DECAY_HALF_LIFE_DAYS": "dreams=3"},
                       "GRAPHMEM_DECAY_HALF_LIFE_DAYS"),
                      ({"ARCHIVE_AGE_DAYS": "nan"}, "ARCHIVE_AGE_DAYS"),
                      ({"GRAPHMEM_LOCK_WAIT_S": "-1"}, "GRAPHMEM_LOCK_WAIT_S"),
                      ({"GRAPHMEM_EMBEDDER": "minilm:fast"}, "GRAPHMEM_EMBEDDER"),
                      ({"GRAPHMEM_EMBEDDER": "bogus"}, "GRAPHMEM_EMBEDDER")]:
        with pytest.raises(InvalidInputError) as info:
            Settings.from_env(env)
        assert name in str(info.value)
    assert Settings.from_env({"GRAPHMEM_EMBEDDER": "hashing:64+pooled"}).embedder == \
        "hashing:64+pooled"


def test_a_bad_model_in_the_settings_makes_no_store(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The settings' model is checked before any file is made (the database was created,
    then the spec refused: a later open found a store of the default model)."""
    with pytest.raises(InvalidInputError, match="unknown embedder 'bogus'"):
        MemoryStore(tmp_path / "db", settings=Settings(embedder="bogus"))
    with pytest.raises(InvalidInputError, match=r"settings\.embedder must be a model spec"):
        MemoryStore(tmp_path / "db", settings=Settings(embedder=None))  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_hashing_embedder_is_deterministic_and_normalised() -> None:
    emb = HashingEmbedder(64)
    a = emb.embed(["the deploy failed", "the deploy failed", "soil moisture sensor"])
    assert a.shape == (3, 64) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0)
    assert np.array_equal(a[0], a[1])
    assert float(a[0] @ a[2]) < 0.5


@pytest.mark.model
def test_minilm_is_loaded_offline_and_means_something(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    emb = MiniLMEmbedder()
    vectors = emb.embed(["How do I deploy the web app?",
                         "To deploy orchard run make release then fly deploy",
                         "Biscuit the cat sleeps on the keyboard"])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2]) + 0.2


def test_store_refuses_another_embedder(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        store.add("embedded with hashing")
    with pytest.raises(EmbedderMismatchError, match="reembed"):
        MemoryStore(path, embedder="hashing:128")
    with MemoryStore(path) as store:
        assert store.embedder.name == "hashing-384"


def test_fingerprint_changes_with_the_model() -> None:
    assert fingerprint(HashingEmbedder(384)) == fingerprint(HashingEmbedder(384))
    assert fingerprint(HashingEmbedder(384)) != fingerprint(HashingEmbedder(128))


def test_the_default_buffer_pool_is_a_quarter_of_memory_up_to_1_gb(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """At 1M memories a 1 GB pool kept the process under 4 GB (``eval/bench_scale.py``);
    a small machine gets a quarter of its memory, never under 256 MB."""
    import os

    from graphmem._settings import _default_buffer_pool

    for gib, want in ((24, 1024), (2, 512), (0.5, 256)):
        pages = int(gib * 2**30 // 4096)
        monkeypatch.setattr(os, "sysconf", lambda name, pages=pages: {
            "SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": pages}[name])
        assert _default_buffer_pool() == want, gib
    assert Settings().buffer_pool_mb == 256  # read when settings are made


def test_the_variable_takes_the_specs_the_embedders_are_built_from() -> None:
    """``GRAPHMEM_EMBEDDER`` is checked by a pattern (the settings import no model code);
    it takes what ``embedder_from_spec`` builds, and refuses what it refuses."""
    from graphmem._embed import embedder_from_spec
    from graphmem._settings import EMBEDDER_SPEC

    for spec in ("minilm", "minilm:int8", "minilm:onnx", "minilm:torch", "e5", "hashing",
                 "hashing:64", "ollama:nomic-embed-text", "minilm+pooled",
                 "hashing:32+pooled", "bogus", "minilm:fast", "hashing:x", "ollama:",
                 "+pooled", "minilm+wide", "e5:big", "minilm pooled"):
        try:
            embedder_from_spec(spec)
            built = True
        except InvalidInputError:
            built = False
        assert bool(EMBEDDER_SPEC.fullmatch(spec)) is built, spec
