"""Vector search that holds at a million memories: sign bits pick candidates, the vectors
re-score them.

Exact search reads every float32 vector (1.5 GB at 1M x 384: ~40x the 100k cost). One bit a
dimension (the sign, taken about the vectors' mean) is 48 bytes a vector; the Hamming
distance to the query's signs, computed with XOR and popcount over 64-bit words, ranks every
vector in a fraction of that time; a shortlist of the nearest is ranked again by the query's
own values summed over each row's set bits (a table lookup a byte), and the best
``candidates`` are scored from the vectors themselves, so only the choice of candidates is
approximate (``eval/bench_scale.py`` measures recall@10 against exact search).

Where sign bits serve, the vectors can be kept as bfloat16 (``to_bfloat16``: the upper half of
each float32, rounded; half the memory, a cosine within ~1e-3 of the float32 one). Widening
them back is an integer shift, so re-scoring them costs what float32 rows cost; numpy's own
float16 took twice as long to widen (measured: 40,000 rows of 384, 10 ms against 20 ms).

Re-scoring multiplies rows by the query with ``np.einsum`` in the calling thread, not with
``@``: numpy hands a matrix-vector product to its BLAS, whose threads on a busy 2-core
machine made 40,000 rows take 21-76 ms instead of 12-13 ms, and kept spinning after each
product, slowing the rest of the recall too (``default`` p50 at 1M: 48.9-124.1 ms with
BLAS threads, 40.4-44.0 ms with one; measured by ``eval/bench_scale.py``'s queries). The
same holds at a conversation's size (LoCoMo's first, 1,445 sentence rows, ``default``, 120
questions, runs alternating in one process): p50 16.5-23.9 ms with BLAS against 7.0-8.7 ms
on a busy machine, 6.2-6.6 against 6.5-6.6 ms on an idle one.
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["SignCodes", "as_float32", "dot_all", "dot_rows", "exact_top", "matvec",
           "nearest_codes", "to_bfloat16", "top_scores"]

#: rows re-scored at a time: the gathered block stays in cache (all 40,000 candidates at
#: once took 15.7 ms against 9.6 ms in blocks of 4,096, float32, measured at 1M)
_BLOCK = 4096


def to_bfloat16(vectors: np.ndarray) -> np.ndarray:
    """float32 values as bfloat16 bit patterns (``uint16``), rounded to nearest even.

    >>> as_float32(to_bfloat16(np.array([1.0, -0.5, 0.1], dtype=np.float32))).tolist()
    [1.0, -0.5, 0.10009765625]
    """
    bits = np.ascontiguousarray(vectors, dtype=np.float32).view(np.uint32)
    rounded = bits + (np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1)))
    return (rounded >> np.uint32(16)).astype(np.uint16)


def as_float32(rows: np.ndarray) -> np.ndarray:
    """Rows of vectors as float32: bfloat16 bit patterns (``uint16``) widened, float32 as
    they are."""
    if rows.dtype != np.uint16:
        return np.asarray(rows, dtype=np.float32)
    wide = rows.astype(np.uint32)
    wide <<= np.uint32(16)
    return wide.view(np.float32)


def matvec(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``rows @ query`` in this thread (see the module's note on BLAS)."""
    return np.einsum("ij,j->i", rows, query)


#: where the bfloat16 bits lie in the two uint16 halves of a float32 (its upper half)
_UPPER = 1 if sys.byteorder == "little" else 0


def dot_rows(vectors: np.ndarray, positions: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The dot products of ``query`` with the rows ``positions`` of ``vectors`` (float32 or
    bfloat16), gathered a block at a time (bfloat16 rows into the upper halves of a
    float32 block whose lower halves stay zero: one copy, no shift; 11.9 ms against
    13.8 ms for 40,000 rows at 1M)."""
    out = np.empty(len(positions), dtype=np.float32)
    query = np.asarray(query, dtype=np.float32)
    if vectors.dtype != np.uint16:
        for start in range(0, len(positions), _BLOCK):
            part = positions[start:start + _BLOCK]
            out[start:start + len(part)] = matvec(vectors[part], query)
        return out
    halves = np.zeros((min(_BLOCK, len(positions)), vectors.shape[1], 2), dtype=np.uint16)
    wide = halves.reshape(len(halves), -1).view(np.float32)
    for start in range(0, len(positions), _BLOCK):
        part = positions[start:start + _BLOCK]
        halves[:len(part), :, _UPPER] = vectors[part]
        out[start:start + len(part)] = matvec(wide[:len(part)], query)
    return out


def dot_all(vectors: np.ndarray, n: int, query: np.ndarray) -> np.ndarray:
    """The dot products of ``query`` with the first ``n`` rows of ``vectors`` (float32 or
    bfloat16)."""
    if vectors.dtype != np.uint16:
        return matvec(vectors[:n], np.asarray(query, dtype=vectors.dtype))
    out = np.empty(n, dtype=np.float32)
    query = np.asarray(query, dtype=np.float32)
    for start in range(0, n, _BLOCK):
        end = min(n, start + _BLOCK)
        out[start:end] = matvec(as_float32(vectors[start:end]), query)
    return out


def exact_top(vectors: np.ndarray, query: np.ndarray, k: int,
              mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best rows by dot product, best first (ties by position): the oracle."""
    return top_scores(vectors @ query, k, mask)


def top_scores(scores: np.ndarray, k: int, mask: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """The positions of the ``k`` best finite ``scores`` (masked ones only), best first,
    ties by position, and their scores."""
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    best = np.argpartition(-scores, k - 1)[:k]
    best = best[np.isfinite(scores[best])]
    best = best[np.lexsort((best, -scores[best]))]
    return best.astype(np.int64), scores[best].astype(np.float32)


class SignCodes:
    """The sign bits of each row of a vector matrix, kept in step with it by position.

    ``set`` one row or ``from_vectors`` a whole matrix; ``search`` returns the exact top
    ``k`` among the ``candidates`` best by ``estimate`` of the ``SHORTLIST * candidates``
    nearest in Hamming distance.
    """

    #: rows nearest in Hamming distance ranked by ``estimate``, per row re-scored: on
    #: ``eval/bench_scale.py``'s 1M vectors the best 10,000 of 40,000 by estimate find
    #: 0.998 of the exact top 10 (0.969 of the top 100), the 10,000 nearest in Hamming
    #: distance 0.986 (0.912); on real MiniLM vectors (LoCoMo's 5,882 turns and 300 of
    #: its questions) the best 1% of 4% find 0.992, the nearest 1% 0.942 (0.959 with
    #: plain signs, 0.997 with plain signs and 4%)
    SHORTLIST = 4

    def __init__(self, dim: int, capacity: int = 1024,
                 center: np.ndarray | None = None) -> None:
        self.dim = dim
        self.words = (dim + 63) // 64
        #: one row of 64-bit words per 64 dimensions, one column per vector: each step of
        #: the scan is then one contiguous pass (row-major was ~3x slower, measured)
        self.codes = np.zeros((self.words, capacity), dtype=np.uint64)
        #: the point the signs are taken about (vectors and queries alike): the mean of
        #: the vectors the codes were built from (``from_vectors``), zero by default
        self.center = (np.zeros(dim, dtype=np.float32) if center is None
                       else np.asarray(center, dtype=np.float32).reshape(dim))

    @classmethod
    def from_vectors(cls, vectors: np.ndarray, *, chunk: int = 65_536,
                     center: np.ndarray | None = None) -> SignCodes:
        """The codes of ``vectors`` (float32 or bfloat16 rows), their signs taken about
        ``center`` (None: the mean of the rows holding a vector, all-zero rows being
        none; zeros: the plain signs).

        Sentence embeddings share a large common direction (the mean of the 1M benchmark
        vectors has norm 0.92): plain signs then mostly tell that direction, and their
        Hamming order is a poor guess of the dot product's. Taken about the mean, 10,000
        candidates of 1M find 0.986 of the exact top 10 (0.912 of the top 100), where
        plain signs found 0.965 (0.882) with 40,000 (``eval/bench_scale.py``'s vectors
        and queries)."""
        if center is None:
            center = _mean_of_rows(vectors, chunk)
        codes = cls(vectors.shape[1], capacity=max(1, len(vectors)), center=center)
        for start in range(0, len(vectors), chunk):
            codes.codes[:, start:start + chunk] = codes.encode(vectors[start:start + chunk]).T
        return codes

    @property
    def nbytes(self) -> int:
        return int(self.codes.nbytes)

    def __len__(self) -> int:
        return int(self.codes.shape[1])

    def encode(self, vectors: np.ndarray) -> np.ndarray:
        """Sign bits of ``vectors`` (rows, float32 or bfloat16) less ``center``, packed
        into 64-bit words."""
        vectors = as_float32(np.atleast_2d(vectors))
        bits = np.zeros((len(vectors), self.words * 64), dtype=bool)
        bits[:, : self.dim] = vectors > self.center
        return np.packbits(bits, axis=1).view(np.uint64)

    def set(self, pos: int, vector: np.ndarray | None) -> None:
        """Row ``pos`` now holds ``vector`` (None: no vector, all bits clear)."""
        capacity = self.codes.shape[1]
        if pos >= capacity:
            grown = np.zeros((self.words, max(pos + 1, 2 * capacity)), dtype=np.uint64)
            grown[:, :capacity] = self.codes
            self.codes = grown
        self.codes[:, pos] = 0 if vector is None else self.encode(vector)[0]

    def hamming(self, query: np.ndarray, n: int, *, chunk: int = 65_536) -> np.ndarray:
        """Hamming distance of the query's signs to each of the first ``n`` rows (in
        chunks whose temporaries stay in cache)."""
        code = self.encode(query)[0]
        out = np.zeros(n, dtype=np.uint16)
        scratch = np.empty(min(n, chunk), dtype=np.uint64)
        counts = np.empty(min(n, chunk), dtype=np.uint8)
        for start in range(0, n, chunk):
            end = min(n, start + chunk)
            x, c, acc = scratch[: end - start], counts[: end - start], out[start:end]
            for word in range(self.words):
                np.bitwise_xor(self.codes[word, start:end], code[word], out=x)
                np.bitwise_count(x, out=c)
                np.add(acc, c, out=acc)
        return out

    def estimate(self, query: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """For each row at ``positions``, the sum of the query's values over the
        dimensions whose bit is set: the dot product of the query with the row's signs
        (as +-1) up to a constant, read from a table of each byte's 256 sums (one lookup
        per byte of the code, not 384 products)."""
        values = np.zeros(self.words * 64, dtype=np.float32)
        values[: self.dim] = np.asarray(query, dtype=np.float32).reshape(-1)[: self.dim]
        table = np.einsum("jb,vb->jv", values.reshape(-1, 8), _BYTE_BITS)
        # byte b of word w of every row at positions: dimensions 64w + 8b .. + 7
        codes = self.codes.take(positions, axis=1).view(np.uint8).reshape(
            self.words, len(positions), 8)
        out = np.zeros(len(positions), dtype=np.float32)
        part = np.empty(len(positions), dtype=np.float32)
        for word in range(self.words):
            for byte in range(8):
                np.take(table[8 * word + byte], codes[word, :, byte], out=part)
                out += part
        return out

    def search(self, query: np.ndarray, vectors: np.ndarray, *, k: int, candidates: int,
               mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The top ``k`` (positions, scores; best first) of ``vectors`` (float32 or
        bfloat16), ``mask`` rows only: the ``SHORTLIST * candidates`` rows nearest to
        ``query`` in sign bits are ranked by ``estimate`` (the query's own values over
        their signs), and its best ``candidates`` scored from the vectors."""
        n = len(vectors)
        distances = self.hamming(query, n)
        if mask is not None:
            # masked rows to the largest distance: OR with 0 or 0xFFFF (np.where took
            # 1.1 ms at 1M, this 0.3 ms)
            np.bitwise_or(distances, (~mask[:n]).view(np.uint8) * np.uint16(0xFFFF),
                          out=distances)
        pool = min(max(candidates, k), n)
        if pool <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        listed = min(n, self.SHORTLIST * pool)
        chosen = nearest_codes(distances, listed) if listed < n else np.arange(n)
        if mask is not None:
            chosen = chosen[mask[chosen]]
        if len(chosen) > pool:
            best = np.argpartition(-self.estimate(query, chosen), pool - 1)[:pool]
            chosen = chosen[np.sort(best)]  # in memory order, for re-scoring
        positions, scores = top_scores(dot_rows(vectors, chosen, query), k)
        return chosen[positions].astype(np.int64), scores


#: the bits of each byte value, most significant first (as ``np.packbits`` packs them)
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(7, -1, -1)) & 1).astype(np.float32)


def _mean_of_rows(vectors: np.ndarray, chunk: int) -> np.ndarray:
    """The mean of the rows of ``vectors`` that are not all zero (zeros if none is)."""
    total = np.zeros(vectors.shape[1], dtype=np.float64)
    count = 0
    for start in range(0, len(vectors), chunk):
        rows = as_float32(vectors[start:start + chunk])
        held = rows[rows.any(axis=1)]
        total += held.sum(axis=0, dtype=np.float64)
        count += len(held)
    return (total / max(count, 1)).astype(np.float32)


def nearest_codes(distances: np.ndarray, pool: int) -> np.ndarray:
    """The positions of the ``pool`` smallest ``distances`` (small integers), ascending
    by position, ties at the cut to the lowest positions: a histogram finds the cut
    (~4x faster than ``argpartition`` at 1M), and the rows then re-scored lie in memory
    order.

    >>> nearest_codes(np.array([5, 1, 3, 1, 2], dtype=np.uint16), 3).tolist()
    [1, 3, 4]
    """
    cumulative = np.cumsum(np.bincount(distances))
    cut = int(np.searchsorted(cumulative, pool))  # the distance holding the pool-th
    # one pass over the distances, then the rows at the cut past the pool dropped
    chosen = np.flatnonzero(distances <= cut)
    if len(chosen) > pool:
        at_cut = np.flatnonzero(distances[chosen] == cut)
        chosen = np.delete(chosen, at_cut[len(at_cut) - (len(chosen) - pool):])
    return chosen
