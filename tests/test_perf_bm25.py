"""The compact BM25 index against the dictionary one it replaced (the oracle), through
adds, replacements, removals and re-sorts, with and without groups."""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from graphmem._recall._bm25 import CONTEXT_MARK, CONTEXT_WEIGHT, BM25Index
from graphmem._text import tokenize

WORDS = ["orchard", "deploy", "sensor", "moisture", "thesis", "chapter", "queue", "redis",
         "postgres", "nadia", "review", "release", "greenhouse", "alert", "backup", "network",
         "firmware", "v3.2", "2024", "caroline"]


class DictBM25:
    """BM25 the slow, obvious way: a dict of documents, statistics recomputed per query.
    A document's context (after ``CONTEXT_MARK``) is a second field whose terms count
    ``CONTEXT_WEIGHT`` each, in term frequency and length (BM25F)."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs: dict[int, tuple[dict[str, float], int]] = {}

    def set(self, pos: int, text: str, *, group: int = 0) -> None:
        own, _, context = text.partition(CONTEXT_MARK)
        weights: dict[str, float] = {}
        for tokens, weight in ((tokenize(own), 1.0), (tokenize(context), CONTEXT_WEIGHT)):
            for token in tokens:
                weights[token] = weights.get(token, 0.0) + weight
        self.docs[pos] = (weights, group)

    def remove(self, pos: int) -> None:
        self.docs.pop(pos, None)

    def scores(self, query: str, size: int, *, group: int | None = None) -> np.ndarray:
        out = np.zeros(size, dtype=np.float64)
        docs = {p: t for p, (t, g) in self.docs.items() if group is None or g == group}
        if not docs:
            return out
        avgdl = sum(sum(t.values()) for t in docs.values()) / len(docs)
        for token in set(tokenize(query)):
            df = sum(1 for t in docs.values() if token in t)
            if not df:
                continue
            idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
            for pos, tokens in docs.items():
                tf = tokens.get(token, 0.0)
                if tf and pos < size:
                    length = sum(tokens.values())
                    denom = tf + self.k1 * (1 - self.b + self.b * length / avgdl)
                    out[pos] += idf * tf * (self.k1 + 1) / denom
        return out


def _text(rng: random.Random) -> str:
    """Words, and in a third of the documents a context after them."""
    own = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 9)))
    if rng.random() < 1 / 3:
        own += "\n" + CONTEXT_MARK + " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))
    return own


@pytest.mark.parametrize(("seed", "tail"), [(0, 65_536), (1, 65_536), (2, 40), (3, 40),
                                            (4, 7), (5, 7)])
def test_compact_index_matches_the_oracle_through_changes(seed: int, tail: int,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setattr(BM25Index, "TAIL", tail)  # small tails: re-sorts between queries
    rng = random.Random(seed)
    fast, slow = BM25Index(), DictBM25()
    for step in range(1500):
        pos = rng.randrange(400)
        if rng.random() < 0.15:
            fast.remove(pos)
            slow.remove(pos)
        else:
            text, group = _text(rng), rng.randrange(3)
            fast.set(pos, text, group=group)
            slow.set(pos, text, group=group)
        if step % 100 == 99:
            for query in ("deploy orchard", "v3.2 release", "2024 caroline redis", "zebra"):
                for group in (None, 0, 2):
                    got = fast.scores(query, 400, group=group)
                    want = slow.scores(query, 400, group=group)
                    assert np.allclose(got, want, rtol=1e-5, atol=1e-6), (step, query, group)
    assert len(fast) == len(slow.docs)


def test_sorting_drops_dead_entries_and_keeps_every_live_one() -> None:
    index, oracle = BM25Index(), DictBM25()
    rng = random.Random(3)
    for pos in range(20_000):
        text = _text(rng)
        index.set(pos, text, group=pos % 2)
        oracle.set(pos, text, group=pos % 2)
    for pos in range(0, 20_000, 3):  # a third replaced, a few removed
        text = _text(rng)
        index.set(pos, text, group=pos % 2)
        oracle.set(pos, text, group=pos % 2)
    for pos in range(1, 20_000, 97):
        index.remove(pos)
        oracle.remove(pos)
    index._sort()
    assert index._dead == 0 and index._live.view().all()
    assert index._token.size == sum(len(set(t)) for t, _ in oracle.docs.values())
    for query in ("deploy redis", "moisture", "v3.2"):
        assert np.allclose(index.scores(query, 20_000, group=1),
                           oracle.scores(query, 20_000, group=1), rtol=1e-5, atol=1e-6)
    index.set(5, "a new deploy after the sort", group=1)  # positions stay right after it
    oracle.set(5, "a new deploy after the sort", group=1)
    assert np.allclose(index.scores("deploy", 20_000), oracle.scores("deploy", 20_000),
                       rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1])
def test_bulk_set_many_matches_the_oracle_and_one_by_one(seed: int) -> None:
    rng = random.Random(seed)
    bulk, single, slow = BM25Index(), BM25Index(), DictBM25()
    for pos in range(50):  # some documents exist before the bulk load replaces them
        text, group = _text(rng), rng.randrange(3)
        for index in (bulk, single, slow):
            index.set(pos, text, group=group)
    items = [(rng.randrange(300), _text(rng), rng.randrange(4)) for _ in range(600)]
    bulk.set_many(items, chunk=97)  # several chunks; repeated positions keep their last
    for pos, text, group in items:
        single.set(pos, text, group=group)
        slow.set(pos, text, group=group)
    assert len(bulk) == len(single) == len(slow.docs)
    for query in ("deploy orchard", "v3.2 release", "2024 caroline redis", "zebra"):
        for group in (None, 0, 3):
            want = slow.scores(query, 300, group=group)
            assert np.allclose(bulk.scores(query, 300, group=group), want,
                               rtol=1e-5, atol=1e-6), (query, group)
            assert np.allclose(single.scores(query, 300, group=group), want,
                               rtol=1e-5, atol=1e-6)
    # and it keeps working incrementally afterwards
    for pos in range(0, 300, 7):
        bulk.remove(pos)
        slow.remove(pos)
    bulk.set(5, "deploy deploy orchard", group=0)
    slow.set(5, "deploy deploy orchard", group=0)
    assert np.allclose(bulk.scores("deploy orchard", 300, group=0),
                       slow.scores("deploy orchard", 300, group=0), rtol=1e-5, atol=1e-6)


def test_posting_lists_each_document_holding_a_token_with_its_frequency() -> None:
    index = BM25Index()
    index.set(0, "orchard orchard deploy")
    index.set(1, "deploy sensor")
    index.set(2, "orchard")
    index.set(2, "sensor sensor sensor")  # replaced: orchard leaves document 2
    index.remove(1)
    assert dict(index.posting("orchard")) == {0: 2}
    assert dict(index.posting("sensor")) == {2: 3}
    assert dict(index.posting("deploy")) == {0: 1}
    assert dict(index.posting("missing")) == {}


_SCORES_IN_A_PROCESS = """
import random, sys
from graphmem._recall._bm25 import BM25Index
words = sys.argv[1].split()
rng = random.Random(7)
index = BM25Index()
for pos in range(400):
    index.set(pos, " ".join(rng.choice(words) for _ in range(rng.randint(3, 30))))
sys.stdout.write(index.scores(" ".join(words), 400).tobytes().hex())
"""


def test_scores_are_the_same_bytes_whatever_the_hash_seed() -> None:
    """A query's terms are summed in one order: in set order, which PYTHONHASHSEED picks,
    float32 sums differed in the last bit between processes and near-ties flipped."""
    outputs = set()
    for seed in ("0", "1", "2", "3", "4", "5"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", _SCORES_IN_A_PROCESS, " ".join(WORDS)],
                              env=env, capture_output=True, text=True, check=True)
        outputs.add(done.stdout)
    assert len(outputs) == 1
