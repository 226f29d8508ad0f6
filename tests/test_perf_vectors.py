"""Sign-bit candidates with exact re-scoring against exact search (the oracle)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from graphmem import InvalidInputError, MemoryStore, Settings
from graphmem._kuzu._rows import decode_vector, decode_vectors, encode_vector
from graphmem._recall._index import RecallIndex
from graphmem._recall._vectors import (
    SignCodes,
    as_float32,
    dot_all,
    dot_rows,
    exact_top,
    nearest_codes,
    to_bfloat16,
)


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((50, 384)).astype(np.float32)
    x = centres[rng.integers(0, 50, n)] + 0.3 * rng.standard_normal((n, 384)).astype(np.float32)
    q = x[rng.integers(0, n, 20)] + 0.1 * rng.standard_normal((20, 384)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True),
            q / np.linalg.norm(q, axis=1, keepdims=True))


def test_hamming_distances_are_the_count_of_differing_signs_about_the_mean() -> None:
    x, q = _data(3000)
    codes = SignCodes.from_vectors(x)
    mean = x.mean(axis=0)
    assert np.allclose(codes.center, mean, atol=1e-6)
    want = ((x > codes.center) != (q[0] > codes.center)).sum(axis=1)
    assert np.array_equal(codes.hamming(q[0], len(x)), want)
    assert np.array_equal(codes.hamming(q[0], 100, chunk=7), want[:100])
    plain = SignCodes.from_vectors(x, center=np.zeros(384))
    assert np.array_equal(plain.hamming(q[0], len(x)), ((x > 0) != (q[0] > 0)).sum(axis=1))


def test_the_center_is_the_mean_of_the_rows_holding_a_vector() -> None:
    x, _ = _data(1000)
    held = np.zeros((1500, 384), dtype=np.float32)
    held[::3][:500] = x[:500]
    held[1::3][:500] = x[500:]
    codes = SignCodes.from_vectors(to_bfloat16(held), chunk=64)
    assert np.allclose(codes.center, as_float32(to_bfloat16(x)).mean(axis=0), atol=1e-6)
    assert not SignCodes.from_vectors(np.zeros((5, 384), dtype=np.float32)).center.any()


def test_every_candidate_gives_exactly_the_exact_answer_and_scores() -> None:
    x, q = _data(2000)
    codes = SignCodes.from_vectors(x)
    mask = np.arange(len(x)) % 3 != 0
    for query in q:
        got = codes.search(query, x, k=10, candidates=len(x), mask=mask)
        want = exact_top(x, query, 10, mask=mask)
        assert np.array_equal(got[0], want[0]) and np.allclose(got[1], want[1])
        assert mask[got[0]].all()


def test_a_few_candidates_find_most_of_the_exact_top_ten() -> None:
    x, q = _data(20_000)
    codes = SignCodes.from_vectors(x)
    found = 0
    for query in q:
        got, scores = codes.search(query, x, k=10, candidates=500)
        found += len(set(got) & set(exact_top(x, query, 10)[0]))
        assert np.allclose(scores, x[got] @ query)  # re-scored exactly
    assert found / (10 * len(q)) > 0.9


def test_the_estimate_is_the_query_summed_over_the_set_bits() -> None:
    x, q = _data(3000, seed=2)
    codes = SignCodes.from_vectors(x)
    positions = np.arange(5, 3000, 11)
    bits = (x[positions] > codes.center).astype(np.float32)
    for query in q[:5]:
        assert np.allclose(codes.estimate(query, positions), bits @ query, atol=1e-4)
    assert codes.estimate(q[0], np.zeros(0, dtype=np.int64)).shape == (0,)


def test_the_shortlist_ranked_by_estimate_keeps_what_hamming_alone_loses() -> None:
    """The best ``candidates`` of ``SHORTLIST`` times as many nearest in Hamming distance,
    ranked by the query's values over their signs, hold more of the exact top ten than
    the ``candidates`` nearest in Hamming distance."""
    x, q = _data(20_000, seed=5)
    codes = SignCodes.from_vectors(x)
    found = nearest = 0
    for query in q:
        exact = set(exact_top(x, query, 10)[0].tolist())
        found += len(exact & set(codes.search(query, x, k=10, candidates=200)[0].tolist()))
        near = nearest_codes(codes.hamming(query, len(x)), 200)
        nearest += len(exact & set(near[np.argsort(-(x[near] @ query))[:10]].tolist()))
    assert found > nearest


def test_set_keeps_codes_in_step_with_rows() -> None:
    x, q = _data(100)
    built = SignCodes.from_vectors(x)
    codes = SignCodes(384, capacity=4, center=built.center)
    for pos, row in enumerate(x):
        codes.set(pos, row)
    assert len(codes) >= 100
    assert np.array_equal(codes.codes[:, :100], built.codes)
    codes.set(7, None)
    assert codes.hamming(q[0], 100)[7] == int((q[0] > built.center).sum())


def test_bfloat16_keeps_eight_bits_of_every_value_and_its_sign() -> None:
    x, _ = _data(500)
    half = to_bfloat16(x)
    assert half.dtype == np.uint16 and half.shape == x.shape
    back = as_float32(half)
    assert np.all(np.abs(back - x) <= np.abs(x) * 2.0**-8)  # rounded: half a unit of 2^-7
    assert np.array_equal(back > 0, x > 0)
    plain = np.zeros(384)
    assert np.array_equal(SignCodes.from_vectors(half, center=plain).codes,
                          SignCodes.from_vectors(x, center=plain).codes)
    assert as_float32(to_bfloat16(np.zeros(3, dtype=np.float32))).tolist() == [0.0] * 3


def test_bfloat16_rows_are_scored_as_their_widened_values() -> None:
    """Re-scoring from bfloat16 rows: every candidate gives the exact answer over the
    widened rows, and scores within 2e-3 of the float32 cosines (the products summed in
    another order than numpy's matmul sums them: within float32 rounding of it)."""
    x, q = _data(3000, seed=4)
    half = to_bfloat16(x)
    codes = SignCodes.from_vectors(half)
    mask = np.arange(len(x)) % 4 != 1
    for query in q:
        got = codes.search(query, half, k=10, candidates=len(x), mask=mask)
        want = exact_top(as_float32(half), query, 10, mask=mask)
        assert np.array_equal(got[0], want[0]) and np.allclose(got[1], want[1])
        assert np.abs(got[1] - x[got[0]] @ query).max() < 2e-3
        positions = np.flatnonzero(mask)
        assert np.allclose(dot_rows(half, positions, query), as_float32(half[positions]) @ query,
                           atol=1e-6)
        assert np.allclose(dot_all(half, 777, query), as_float32(half[:777]) @ query, atol=1e-6)


def _recalls(store: MemoryStore, queries: list[str], k: int = 10
             ) -> list[list[tuple[str, float]]]:
    out = []
    for query in queries:
        hits = store.recall(query, k=k, preset="vector", record_access=False)
        out.append([(h.memory.id, float(h.explanation.channels["vector"].score or 0.0))
                    for h in hits])
    return out


def test_recall_over_sign_bits_with_every_candidate_is_exact_recall(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From the threshold on, the index keeps bfloat16 vectors: with every memory a
    candidate, recall returns exact recall's top 10 up to near-ties (cosines within the
    rounding), each with its float32 cosine to within 3e-3 (read from the store as
    float16, kept as bfloat16: a relative 2^-11 + 2^-9 per value)."""
    rng = random.Random(3)
    words = ["orchard", "deploy", "sensor", "moisture", "thesis", "queue", "redis", "nadia",
             "review", "release", "greenhouse", "alert", "backup", "network", "firmware"]
    queries = [" ".join(rng.sample(words, 3)) for _ in range(15)]
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add_many([" ".join(rng.choices(words, k=rng.randint(3, 9)))
                        for _ in range(400)])
        exact = _recalls(store, queries, k=400)
        assert store._recall_index.ensure_index().vectors.dtype == np.float32
    monkeypatch.setattr(RecallIndex, "SIGN_BITS_FROM", 0)
    monkeypatch.setattr(RecallIndex, "SIGN_CANDIDATES", 10_000)
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        for want, got in zip(exact, _recalls(store, queries), strict=True):
            score = dict(want)
            tenth = want[9][1]
            assert all(abs(s - score[i]) < 3e-3 for i, s in got)
            assert all(score[i] >= tenth - 5e-3 for i, _ in got)
            assert {i for i, s in want if s > tenth + 5e-3} <= {i for i, _ in got}
        assert store._recall_index.ensure_index().vectors.dtype == np.uint16
        # the codes follow changes: a new memory is found, a forgotten one is not
        added = store.add("zebra quagga okapi")
        assert store.recall("zebra quagga okapi", k=1, preset="vector")[0].memory.id == added.id
        store.forget(added.id, confirm=True)
        assert added.id not in [h.memory.id for h in
                                store.recall("zebra quagga okapi", k=10, preset="vector")]


def test_the_sign_bits_threshold_is_a_setting(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """``GRAPHMEM_SIGN_BITS_FROM``: a size from which the vector channel searches sign bits
    (then it no longer scores every memory), 0 for exact search always, and a bad value
    is an error naming the variable."""
    assert Settings.from_env({"GRAPHMEM_SIGN_BITS_FROM": "5"}).sign_bits_from == 5
    for bad in ("-1", "many"):
        with pytest.raises(InvalidInputError, match="GRAPHMEM_SIGN_BITS_FROM"):
            Settings.from_env({"GRAPHMEM_SIGN_BITS_FROM": bad})
    searched: list[bool] = []
    real = SignCodes.search

    def spy(self: SignCodes, *args: object, **kwargs: object) -> object:
        searched.append(True)
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SignCodes, "search", spy)
    for threshold, expected in ((5, [True]), (0, []), (None, [])):
        searched.clear()
        with MemoryStore(tmp_path / f"db-{threshold}", embedder="hashing",
                         settings=Settings(sign_bits_from=threshold)) as store:
            store.add_many([f"memory number {i} about orchards" for i in range(10)])
            assert store.recall("orchards", k=3, preset="vector")
        assert searched == expected, threshold


@pytest.mark.parametrize("dim", [384, 5, 6, 1])
def test_vectors_decoded_together_equal_one_by_one(dim: int) -> None:
    """The bulk base64 decoding of a scan against decoding each vector alone: missing
    ones, and another width (absent)."""
    rng = np.random.default_rng(dim)
    texts: list[str | None] = [encode_vector(rng.standard_normal(dim)) for _ in range(30)]
    texts[3] = None
    texts[7] = encode_vector(rng.standard_normal(dim + 3))
    texts[11] = ""
    matrix, present = decode_vectors(texts)
    for i, text in enumerate(texts):
        one = decode_vector(text)
        if one is None or len(one) != dim:
            assert not present[i] and not matrix[i].any(), i
        else:
            assert present[i] and np.array_equal(matrix[i], one), i
    assert decode_vectors([None, None])[0].shape == (2, 0)
    assert decode_vectors(texts, dim + 3)[1].tolist() == [i == 7 for i in range(30)]


@pytest.mark.parametrize("seed", range(6))
def test_the_histogram_cut_picks_the_smallest_distances(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    distances = rng.integers(0, 40, n).astype(np.uint16)
    distances[rng.random(n) < 0.2] = np.iinfo(np.uint16).max  # masked rows
    pool = int(rng.integers(1, n + 1))
    chosen = nearest_codes(distances, pool)
    assert len(chosen) == pool and np.all(np.diff(chosen) > 0)
    rest = np.setdiff1d(np.arange(n), chosen)
    if rest.size:
        assert distances[chosen].max() <= distances[rest].min()
        cut = distances[chosen].max()  # ties at the cut go to the lowest positions
        assert not np.any(rest[distances[rest] == cut] < chosen[distances[chosen] == cut].max())
