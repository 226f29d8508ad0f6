"""The recall index: what ranking needs, in process memory, kept in sync with the store.

Vectors (a float32 matrix searched exactly; from ``SIGN_BITS_FROM`` memories on, bfloat16
rows searched by sign bits, see ``_vectors.py``; ``eval/bench_recall.py`` for HNSW),
the fields filters and ACT-R read, the BM25 postings, and the REFERENCES / CO_OCCURS
adjacency. Built from one scan on first use; after that every commit of this process
updates it, so a query never scans the database.
"""

from __future__ import annotations

import hashlib
import math
import sys
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from .._arrow import RowReader, blank_rows, column_values, numbers, strings, to_pylist
from .._models import KIND_CODE, STATUS_CODE
from ._bm25 import CONTEXT_MARK, BM25Index
from ._entities import EntityIndex
from ._query import only_asks
from ._vectors import SignCodes, as_float32, dot_all, dot_rows, to_bfloat16, top_scores
from ._walk import neighbour_arrays

__all__ = ["ASSISTANT_TAG", "INDEX_FIELDS", "OVERLAID", "RecallIndex"]

#: The fields of a memory the index keeps (besides its vector).
INDEX_FIELDS = (
    "id", "status", "kind", "owner", "hot", "created", "valid_from", "valid_to",
    "access_count", "access_times", "last_accessed", "confidence", "importance",
    "superseded_by", "subject", "text", "session", "context", "times_from", "times_to",
    "useful_count", "ignored_count", "tags", "payload_hash", "centrality", "xref_count",
)  # fmt: skip
#: Fields a hit takes from the index, not from the row it was read with: a commit that
#: sets only these leaves the row as it was (the lifecycle's graph signals, every run).
OVERLAID = frozenset({"centrality", "xref_count"})
#: The tag of what the assistant said (``add_conversation``), not its user.
ASSISTANT_TAG = "assistant"
#: The fields a recall changes (``RecallIndex.set_access``).
ACCESS_FIELDS = ("id", "access_count", "access_times", "last_accessed")
_FORGOTTEN = STATUS_CODE["forgotten"]
_NO_TIMES = np.zeros(0)
#: rows of a scan turned into Python values at a time while the index is built
BLOCK_ROWS = 65_536
_NO_NEIGHBOURS = (np.zeros(0, dtype=np.int64), np.zeros(0))
_T = TypeVar("_T")


def message_code(payload_hash: str | None) -> int:
    """The code of the message a memory was said in, from its ``payload_hash`` (the
    statements ``add_conversation`` keeps of one message share it; 0: none).

    >>> message_code(None), message_code("ab") == message_code("ab") != message_code("ac")
    (0, True)
    """
    if not payload_hash:
        return 0
    digest = hashlib.blake2b(payload_hash.encode("utf-8"), digest_size=8).digest()
    return (int.from_bytes(digest, "big") >> 1) or 1


def replaced_map(pairs: Iterable[tuple[int, Sequence[str]]]) -> dict[str, set[int]]:
    """Id of a memory that superseded others -> their positions, from (position, its
    ``superseded_by``) pairs (``RecallIndex.replaced``)."""
    found: dict[str, set[int]] = {}
    for pos, newer in pairs:
        for other in newer:
            found.setdefault(other, set()).add(pos)
    return found


def _set_superseded_by(index: RecallIndex, pos: int, value: Any) -> None:
    newer = tuple(value or ())
    index.note_replaced(pos, index.superseded_by[pos], newer)
    index.superseded_by[pos] = newer


def _set_status(index: RecallIndex, pos: int, value: Any) -> None:
    index.status[pos] = STATUS_CODE[getattr(value, "value", value)]


def _set_kind(index: RecallIndex, pos: int, value: Any) -> None:
    index.kind[pos] = KIND_CODE[getattr(value, "value", value)]


def _set_access_times(index: RecallIndex, pos: int, value: Any) -> None:
    index.access_times[pos] = times = tuple(_aware(t) for t in value or ())
    index.access_seconds[pos] = np.array([t.timestamp() for t in times])


def _setter(name: str, convert: Callable[[Any], Any]) -> Callable[..., None]:
    """Sets ``index.<name>[pos]`` (an array or a list) to ``convert(value)``."""
    def setter(index: RecallIndex, pos: int, value: Any) -> None:
        getattr(index, name)[pos] = convert(value)
    return setter


#: memory field -> how the index keeps it at a position: every field of ``INDEX_FIELDS``
#: but the ones that ask for more (the id, its owner group, its text, its time windows)
_SETTERS: dict[str, Callable[[RecallIndex, int, Any], None]] = {
    "status": _set_status, "kind": _set_kind,
    "hot": _setter("hot", bool),
    "tags": _setter("assistant", lambda tags: ASSISTANT_TAG in (tags or ())),
    "created": _setter("created", lambda t: _seconds(t)),
    "valid_from": _setter("valid_from", lambda t: _seconds(t)),
    "valid_to": _setter("valid_to", lambda t: _seconds(t)),
    "access_count": _setter("access_count", lambda v: int(v or 0)),
    "useful_count": _setter("useful", lambda v: int(v or 0)),
    "ignored_count": _setter("ignored", lambda v: int(v or 0)),
    "access_times": _set_access_times,
    "last_accessed": _setter("last_accessed", lambda t: _aware(t)),
    "confidence": _setter("confidence", lambda v: float(v or 0.0)),
    "importance": _setter("importance", lambda v: float(v or 0.0)),
    "superseded_by": _set_superseded_by,
    "session": _setter("session", lambda v: v),
    "payload_hash": _setter("message", message_code),
    "centrality": _setter("centrality", lambda v: math.nan if v is None else float(v)),
    "xref_count": _setter("xrefs", lambda v: int(v or 0)),
}
#: the fields ``RecallIndex.patch`` takes from a commit as they are
PATCHABLE = frozenset(_SETTERS)


def _seconds(value: Any) -> float:
    if value is None:
        return math.nan
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return float(value.timestamp())


def _seconds_column(column: pa.ChunkedArray) -> np.ndarray:
    """Seconds since the epoch of a timestamp column (naive ones are UTC), NaN for none."""
    micros = numbers(column.cast(pa.timestamp("us", tz=column.type.tz), safe=False)
                     .cast(pa.int64()), np.int64)
    seconds = micros / 1e6
    seconds[numbers(column.is_null(), np.int8).astype(bool)] = math.nan
    return seconds


def _aware(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def _later_id_first(ids: Sequence[str], positions: np.ndarray) -> np.ndarray:
    """A key for each of ``positions`` that sorts their memories' ids from the last to
    the first.

    >>> _later_id_first(["m:b", "m:a", "m:c"], np.array([0, 1, 2, 0])).tolist()
    [1, 2, 0, 1]
    """
    unique, inverse = np.unique(positions, return_inverse=True)
    names = np.array([ids[p] for p in unique.tolist()], dtype=object)
    rank = np.empty(unique.size, dtype=np.int64)
    rank[np.argsort(names, kind="stable")[::-1]] = np.arange(unique.size)
    result: np.ndarray = rank[inverse]
    return result


def _first_order(a: np.ndarray, b: np.ndarray, w: np.ndarray, rank: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pairs ``(a, b)`` made unique: weights added up in ``rank`` order, each pair at the
    rank of its first occurrence (what a dict of dicts filled in that order holds)."""
    order = np.lexsort((rank, b, a))
    a, b, w, rank = a[order], b[order], w[order], rank[order]
    if a.size == 0:
        return a, b, w, rank
    first = np.ones(a.size, dtype=bool)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    starts = np.flatnonzero(first)
    return a[starts], b[starts], np.add.reduceat(w, starts), rank[starts]


def _compressed_rows(size: int, merge: Callable[[int, int], tuple[
        np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Compressed rows (indptr, neighbours, weights) of ``size`` rows, made
    ``Adjacency.BLOCK`` rows at a time: ``merge(lo, hi)`` gives the rows ``lo`` to ``hi``
    as (row, neighbour, weight) arrays, by row."""
    counts = np.zeros(size, dtype=np.int64)
    neighbours: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    weights: list[np.ndarray] = [np.zeros(0)]
    for lo in range(0, size, Adjacency.BLOCK):
        hi = min(size, lo + Adjacency.BLOCK)
        a, b, w = merge(lo, hi)
        counts[lo:hi] = np.bincount(a - lo, minlength=hi - lo)
        neighbours.append(b)
        weights.append(w)
    return (np.concatenate([[0], np.cumsum(counts)]), np.concatenate(neighbours),
            np.concatenate(weights))


class EdgeTable:
    """Undirected weighted edges between positions, as compressed rows (two numpy
    arrays, ~12 bytes an edge and direction; a dict of dicts took ~100) built in bulk;
    rows changed since live in ``overlay``. A row's neighbours keep the order in which
    their edges came, as a dict filled edge by edge would."""

    def __init__(self, size: int = 0, src: np.ndarray | None = None,
                 dst: np.ndarray | None = None, weight: np.ndarray | None = None) -> None:
        self.overlay: dict[int, dict[int, float]] = {}
        if src is None or dst is None or weight is None or len(src) == 0:
            self.indptr = np.zeros(size + 1, dtype=np.int64)
            self.indices = np.zeros(0, dtype=np.int32)
            self.weights = np.zeros(0)
            return
        m = len(src)
        # both directions of each edge, in the order the edges came (positions fit int32)
        a = np.empty(2 * m, dtype=np.int32)
        b = np.empty(2 * m, dtype=np.int32)
        a[0::2], a[1::2] = src, dst
        b[0::2], b[1::2] = dst, src
        w = np.repeat(np.asarray(weight, dtype=np.float64), 2)
        valid = (a >= 0) & (b >= 0) & (a != b)
        a, b, w = a[valid], b[valid], w[valid]
        size = max(size, int(a.max()) + 1) if a.size else size
        # entries by row, each row in arrival order, then merged a block of rows at a
        # time: at 3M edges, merging all at once took ~0.4 GB of temporaries
        by_row = np.argsort(a, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(a, minlength=size))])

        def merge(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            chosen = by_row[bounds[lo]:bounds[hi]]
            ra, rb, rw, rank = _first_order(a[chosen].astype(np.int64), b[chosen], w[chosen],
                                            chosen)
            order = np.lexsort((rank, ra))
            return ra[order], rb[order], rw[order]

        self.indptr, indices, self.weights = _compressed_rows(size, merge)
        self.indices = indices.astype(np.int32)

    def row(self, pos: int) -> tuple[np.ndarray, np.ndarray]:
        """The neighbours of ``pos`` and the weights, as arrays."""
        found = self.overlay.get(pos)
        if found is not None:
            return neighbour_arrays(found)
        if pos + 1 >= len(self.indptr):
            return _NO_NEIGHBOURS
        start, end = self.indptr[pos], self.indptr[pos + 1]
        return self.indices[start:end].astype(np.int64), self.weights[start:end]

    def get(self, pos: int) -> dict[int, float]:
        """The neighbours of ``pos`` and the weights, as a new dict."""
        found = self.overlay.get(pos)
        if found is not None:
            return dict(found)
        others, weights = self.row(pos)
        return dict(zip(others.tolist(), weights.tolist(), strict=True))

    def set(self, pos: int, neighbours: dict[int, float]) -> None:
        self.overlay[pos] = neighbours

    def bulk(self, lo: int = 0, hi: int | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The edges of compressed rows ``lo`` to ``hi`` (row, neighbour, weight, place
        in its row), overlay rows left out."""
        last = len(self.indptr) - 1
        lo, hi = min(lo, last), min(last if hi is None else hi, last)
        start, end = int(self.indptr[lo]), int(self.indptr[hi])
        rows = np.repeat(np.arange(lo, hi, dtype=np.int64), np.diff(self.indptr[lo:hi + 1]))
        place = np.arange(start, end) - self.indptr[rows]
        others = self.indices[start:end].astype(np.int64)
        weights = self.weights[start:end]
        inside = [p for p in self.overlay if lo <= p < hi]
        if not inside:
            return rows, others, weights, place
        keep = ~np.isin(rows, np.array(inside, dtype=np.int64))
        return rows[keep], others[keep], weights[keep], place[keep]


class Adjacency:
    """REFERENCES and CO_OCCURS combined with fixed weights, as compressed rows (the
    ``limit`` strongest neighbours of each memory). Built once, in bulk; the rows of
    memories whose edges change later live in ``overlay``."""

    #: rows merged at a time while building
    BLOCK = 65_536

    def __init__(self, index: RecallIndex, references: float, co_occurs: float,
                 limit: int) -> None:
        self._index = index
        self.key = (references, co_occurs, limit)
        # a block of rows at a time: at 1M memories and 3M edges, all rows at once took
        # ~0.85 GB of temporaries for a result of 0.1 GB
        self.indptr, self.indices, self.weights = _compressed_rows(
            index.size, lambda lo, hi: self._merged(index, lo, hi))
        self.overlay: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.refresh({*index.references.overlay, *index.co_occurs.overlay})

    def _merged(self, index: RecallIndex, lo: int, hi: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows ``lo`` to ``hi`` (compressed rows only): row, neighbour and weight
        of each kept edge, by row, each row in its order."""
        references, co_occurs, limit = self.key
        parts = []
        for table_no, (scale, table) in enumerate(((references, index.references),
                                                   (co_occurs, index.co_occurs))):
            if scale <= 0:
                continue
            rows, others, weights, place = table.bulk(lo, hi)
            # insertion rank: a reference neighbour before any co-occurrence one
            parts.append((rows, others, scale * weights, table_no * (1 << 32) + place))
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0)
        a, b, w, rank = _first_order(*(np.concatenate(p) for p in zip(*parts,
                                                                     strict=True)))
        counts = np.bincount(a - lo, minlength=hi - lo)
        # rows over the limit keep their strongest (ties: the later id, which neither the
        # order edges came in nor positions decide, so a live index keeps what a fresh
        # build does), in that order; the others keep insertion order
        big = counts[a - lo] > limit
        tie = np.zeros(a.size, dtype=np.int64)
        if big.any():
            tie[big] = _later_id_first(index.ids, b[big])
        order = np.lexsort((rank, tie, np.where(big, -w, 0.0), a))
        a, b, w = a[order], b[order], w[order]
        starts = np.concatenate([[0], np.cumsum(counts)])[:-1]
        keep = (np.arange(a.size) - starts[a - lo]) < limit
        return a[keep], b[keep], w[keep]

    def refresh(self, positions: Iterable[int]) -> None:
        references, co_occurs, limit = self.key
        for pos in positions:
            merged = self._index.merged_neighbours(pos, references, co_occurs, limit)
            self.overlay[pos] = neighbour_arrays(merged)

    def row(self, pos: int) -> tuple[np.ndarray, np.ndarray]:
        found = self.overlay.get(pos)
        if found is not None:
            return found
        if pos + 1 >= len(self.indptr):
            return _NO_NEIGHBOURS
        start, end = self.indptr[pos], self.indptr[pos + 1]
        return self.indices[start:end], self.weights[start:end]


def _blocks(table: pa.Table) -> Iterator[tuple[int, pa.Table]]:
    """``table`` ``BLOCK_ROWS`` rows at a time: (first row, the block)."""
    for start in range(0, table.num_rows, BLOCK_ROWS):
        yield start, table.slice(start, BLOCK_ROWS)


def _indexed_text(subject: str | None, text: str | None, context: str | None) -> str:
    """What BM25 indexes of a memory: its subject and text, one per line, then its
    context, weighed less (after ``CONTEXT_MARK``)."""
    indexed = f"{subject}\n{text or ''}" if subject else (text or "")
    indexed = indexed.replace(CONTEXT_MARK, " ")
    return f"{indexed}\n{CONTEXT_MARK}{context}" if context else indexed


def _sha256(text: str | None) -> str:
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()


def _slim(table: pa.Table) -> pa.Table:
    """The snapshot as the index keeps it, the same values in less memory (65 MB less at
    1M memories): each ``text_sha256`` that is the SHA-256 of its text is left empty
    (``rows_at`` recomputes it; a keyed one, of a forgotten memory, stays). Dictionary
    encoding the columns of few values would save ~40 MB more, but pyarrow's dictionary
    arrays import pandas, which a one-shot recall must not pay for."""
    i = table.schema.get_field_index("text_sha256")
    if i < 0 or "text" not in table.column_names:
        return table
    chunks = []
    for _, part in _blocks(table):  # a block's strings at a time
        chunks.append(strings([
            "" if s is not None and s == _sha256(t) else s
            for t, s in zip(column_values(part.column("text")),
                            column_values(part.column(i)), strict=True)]))
    return table.set_column(i, "text_sha256", pa.chunked_array(chunks, pa.string()))


class RecallIndex:
    """Positions are stable for the life of the index; ``pos[id]`` finds one."""

    #: From this many memories on, vector search reads the sign bits of every vector and
    #: re-scores the nearest ``candidates`` exactly, instead of reading every float32
    #: vector (``nearest``). ``Settings.sign_bits_from`` (``GRAPHMEM_SIGN_BITS_FROM``)
    #: moves it for one store; 0 means always exact.
    SIGN_BITS_FROM = 100_000
    #: candidates re-scored exactly (the best by ``SignCodes.estimate`` of four times as
    #: many nearest in Hamming distance): at least this many, and at least ``n / 100``.
    #: On ``eval/bench_scale.py``'s vectors and queries that finds 0.987 of the exact top
    #: 10 at 100k (2,000; 0.998 with 4,000 at 1 ms more) and 0.998 at 1M (10,000), where
    #: plain signs and Hamming alone found 0.866 at 100k with 4,000 and 0.960 at 1M with
    #: ``n / 25`` (40,000)
    SIGN_CANDIDATES = 2_000

    def __init__(self, dim: int, capacity: int = 1024, *, half: bool = False) -> None:
        self.dim = dim
        self.ids: list[str] = []
        self.pos: dict[str, int] = {}
        #: float32 rows, or bfloat16 bit patterns (``uint16``) when the index was built
        #: ``half`` (``half_vectors``: where sign bits choose the candidates)
        self.vectors = np.zeros((capacity, dim), dtype=np.uint16 if half else np.float32)
        self.has_vector = np.zeros(capacity, dtype=bool)
        self.status = np.full(capacity, _FORGOTTEN, dtype=np.int8)
        self.kind = np.zeros(capacity, dtype=np.int8)
        self.owner = np.full(capacity, -1, dtype=np.int32)
        self.hot = np.zeros(capacity, dtype=bool)
        #: said by the assistant of a conversation (tagged ``assistant``)
        self.assistant = np.zeros(capacity, dtype=bool)
        #: its text only asks (``only_asks``): a question that holds no answer
        self.asks = np.zeros(capacity, dtype=bool)
        #: the message each memory was said in (``message_code``; 0: none)
        self.message = np.zeros(capacity, dtype=np.int64)
        self.created = np.full(capacity, math.nan)
        self.valid_from = np.full(capacity, math.nan)
        self.valid_to = np.full(capacity, math.nan)
        self.access_count = np.zeros(capacity, dtype=np.int64)
        #: retrieval feedback: times marked useful, and not useful (the learned ranker)
        self.useful = np.zeros(capacity, dtype=np.int64)
        self.ignored = np.zeros(capacity, dtype=np.int64)
        self.confidence = np.zeros(capacity, dtype=np.float32)
        self.importance = np.zeros(capacity, dtype=np.float32)
        #: the lifecycle's graph signals as stored: PageRank centrality (NaN: none yet),
        #: cross-references
        self.centrality = np.full(capacity, math.nan)
        self.xrefs = np.zeros(capacity, dtype=np.int64)
        self.access_times: list[tuple[datetime, ...]] = []
        self.access_seconds: list[np.ndarray] = []
        self.last_accessed: list[datetime | None] = []
        self.superseded_by: list[tuple[str, ...]] = []
        #: id of a memory that superseded others -> their positions (``replaced``): made
        #: with ``superseded_by`` when the index is built or read, then kept by every change
        self._replaced: dict[str, set[int]] = {}
        self.owner_codes: dict[str | None, int] = {}
        self.bm25 = BM25Index()
        self.references = EdgeTable()
        self.co_occurs = EdgeTable()
        # A columnar snapshot of the memories' rows as of the build (~42 MB at 100k):
        # a hit is materialised from it in ~0.2 ms instead of a ~1 ms database lookup.
        # Rows changed since are ``stale`` and come from the store instead.
        self.rows: pa.Table | None = None
        self._row_batches: list[pa.RecordBatch] = []
        self._row_starts = np.zeros(1, dtype=np.int64)
        self._readers: dict[int, RowReader] = {}  # a batch's, made when first read
        self.stale: set[int] = set()
        self._adjacency: dict[tuple[float, float, int], Adjacency] = {}
        self.session: list[str | None] = []
        #: the knowledge graph beside the memories (entities, mentions, facts, times)
        self.entities = EntityIndex()
        #: the vectors of memories' sentences (``sentence_texts``), kept as ``vectors``
        #: are: ``sentence_count[pos]`` rows from ``sentence_start[pos]`` are memory
        #: ``pos``'s; ``sentence_of`` the memory of each row (-1: replaced since), of the
        #: first ``sentence_rows``. They come from the store (``Memory`` internal field
        #: ``sentences``), made when the memory's text was written.
        self.sentences = np.zeros((0, dim), dtype=self.vectors.dtype)
        self.sentence_of = np.zeros(0, dtype=np.int64)
        self.sentence_rows = 0
        self.sentence_start = np.zeros(capacity, dtype=np.int64)
        self.sentence_count = np.zeros(capacity, dtype=np.int64)
        #: the vectors' sign bits, built on the first search that uses them, then kept
        self._signs: SignCodes | None = None
        #: ``Settings.sign_bits_from`` of the store (None: ``SIGN_BITS_FROM``)
        self.sign_bits_from: int | None = None
        #: counts the changes of what the memories are, say and link (not their accesses)
        self.changes = 0
        #: what recall reads alike for every query (``derived``), and the changes of the
        #: index and of its entities it was made at
        self._derived: dict[Hashable, Any] = {}
        self._derived_at: tuple[int, EntityIndex, int] | None = None

    @property
    def size(self) -> int:
        return len(self.ids)

    # -- building and updating --------------------------------------------------------
    def _grow(self, needed: int) -> None:
        capacity = len(self.status)
        if needed <= capacity:
            return
        new = max(needed, 2 * capacity)
        for name, fill in (("has_vector", False), ("status", _FORGOTTEN), ("kind", 0),
                           ("owner", -1), ("hot", False), ("assistant", False),
                           ("asks", False), ("message", 0), ("created", math.nan),
                           ("valid_from", math.nan), ("valid_to", math.nan),
                           ("access_count", 0), ("useful", 0), ("ignored", 0),
                           ("confidence", 0.0), ("importance", 0.0),
                           ("centrality", math.nan), ("xrefs", 0),
                           ("sentence_start", 0), ("sentence_count", 0)):
            old = getattr(self, name)
            grown = np.full(new, fill, dtype=old.dtype)
            grown[:capacity] = old
            setattr(self, name, grown)
        vectors = np.zeros((new, self.dim), dtype=self.vectors.dtype)
        vectors[:capacity] = self.vectors
        self.vectors = vectors

    def owner_group(self, owner: str | None) -> int:
        """The group code of ``owner`` for owner-scoped statistics (-1: no memories)."""
        return self.owner_codes.get(owner, -1)

    def _owner_code(self, owner: str | None) -> int:
        code = self.owner_codes.get(owner)
        if code is None:
            code = self.owner_codes[owner] = len(self.owner_codes)
        return code

    def upsert(self, rows: Iterable[Mapping[str, Any]],
               vectors: Sequence[np.ndarray | None] | np.ndarray | None = None,
               has_vector: Sequence[bool] | np.ndarray | None = None,
               sentences: Sequence[np.ndarray | None] | None = None) -> None:
        """Add or refresh memories from rows (dicts with ``INDEX_FIELDS``) and their
        vectors (a vector of another width than the index's counts as none), and the
        sentence vectors of each row (``sentences``: a matrix, or None for none; the index's
        are kept where not given)."""
        self.changes += 1
        texts: dict[int, tuple[str, int]] = {}  # what BM25 indexes, all at once at the end
        for n, row in enumerate(rows):
            memory_id = row["id"]
            pos = self.pos.get(memory_id)
            if pos is not None:
                self.stale.add(pos)
            else:
                pos = len(self.ids)
                self._grow(pos + 1)
                self.ids.append(memory_id)
                self.pos[memory_id] = pos
                self.access_times.append(())
                self.access_seconds.append(_NO_TIMES)
                self.last_accessed.append(None)
                self.superseded_by.append(())
                self.session.append(None)
            self.owner[pos] = self._owner_code(row.get("owner"))
            for name, setter in _SETTERS.items():
                setter(self, pos, row.get(name))
            vector = vectors[n] if vectors is not None else None
            if vector is not None and (len(vector) != self.dim
                                       or (has_vector is not None and not has_vector[n])):
                vector = None
            self.has_vector[pos] = vector is not None
            self.vectors[pos] = 0 if vector is None else self._stored(vector)
            if self._signs is not None:  # the signs of what is kept, as a build takes them
                self._signs.set(pos, None if vector is None else as_float32(self.vectors[pos]))
            if sentences is not None:
                self.set_sentences(pos, sentences[n])
            self.entities.set_times(pos, row.get("times_from") or (), row.get("times_to") or ())
            if self.status[pos] == _FORGOTTEN:
                self.set_sentences(pos, None)
                texts.pop(pos, None)
                self.message[pos] = 0  # nothing of a forgotten message stays
                self.bm25.remove(pos)
                self.has_vector[pos] = False
                self.vectors[pos] = 0
                if self._signs is not None:
                    self._signs.set(pos, None)
            else:
                texts[pos] = (_indexed_text(row.get("subject"), row.get("text"),
                                            row.get("context")), int(self.owner[pos]))
            self.asks[pos] = pos in texts and only_asks(row.get("text") or "")
        self.bm25.set_many((pos, text, group) for pos, (text, group) in texts.items())

    def load(self, table: pa.Table, vectors: np.ndarray | None = None,
             has_vector: np.ndarray | None = None) -> None:
        """``upsert`` the rows of ``table`` (a scan with ``INDEX_FIELDS``) column by
        column: into an empty index, without a Python dict per memory (at 1M memories
        those dicts alone were several GB)."""
        self.changes += 1
        if self.size:
            self.upsert(to_pylist(table), vectors, has_vector)
            return
        n = table.num_rows
        if n == 0:
            return

        def values(name: str) -> list[Any]:
            return column_values(table.column(name))

        self._grow(n)
        self.ids = [str(i) for i in values("id")]
        self.pos = {memory_id: pos for pos, memory_id in enumerate(self.ids)}
        if len(self.pos) != n:  # the same id twice: leave it to the row-by-row path
            self.ids, self.pos = [], {}
            self.upsert(to_pylist(table), vectors, has_vector)
            return
        self.status[:n] = [STATUS_CODE[s] for s in values("status")]
        self.kind[:n] = [KIND_CODE[k] for k in values("kind")]
        self.owner[:n] = [self._owner_code(o) for o in values("owner")]
        self.hot[:n] = [bool(h) for h in values("hot")]
        self.assistant[:n] = [bool(t) and ASSISTANT_TAG in t for t in values("tags")]
        for name in ("created", "valid_from", "valid_to"):
            getattr(self, name)[:n] = _seconds_column(table.column(name))
        self.access_count[:n] = numbers(table.column("access_count"), np.int64)
        self.confidence[:n] = numbers(table.column("confidence"), np.float32)
        self.importance[:n] = numbers(table.column("importance"), np.float32)
        self.useful[:n] = numbers(table.column("useful_count"), np.int64)
        self.ignored[:n] = numbers(table.column("ignored_count"), np.int64)
        self.centrality[:n] = [math.nan if c is None else c for c in values("centrality")]
        self.xrefs[:n] = numbers(table.column("xref_count"), np.int64)
        self.access_times = [tuple(_aware(t) for t in times) if times else ()
                             for times in values("access_times")]
        self.access_seconds = [np.array([t.timestamp() for t in times]) if times else _NO_TIMES
                               for times in self.access_times]
        self.last_accessed = [_aware(t) for t in values("last_accessed")]
        self.superseded_by = [tuple(s) if s else () for s in values("superseded_by")]
        self._replaced = replaced_map((p, s) for p, s in enumerate(self.superseded_by) if s)
        self.message[:n] = [message_code(h) for h in values("payload_hash")]
        self.session = values("session")
        for pos, (starts, ends) in enumerate(zip(values("times_from"), values("times_to"),
                                                 strict=True)):
            if starts:
                self.entities.set_times(pos, starts, ends or ())
        forgotten = self.status[:n] == _FORGOTTEN
        if vectors is not None and vectors.shape == (n, self.dim):
            present = np.ones(n, dtype=bool) if has_vector is None else np.asarray(has_vector)
            self.has_vector[:n] = present & ~forgotten
            adopt = len(self.vectors) == n and vectors.flags.c_contiguous \
                and vectors.flags.writeable
            if adopt and vectors.dtype == self.vectors.dtype:
                self.vectors = vectors  # the scan's matrix itself: no second copy
            else:
                # a block at a time into the index's matrix, or, float16 into a half
                # index, into the scan's matrix itself (both two bytes a value): 1M
                # vectors never exist twice
                target = vectors.view(np.uint16) if (
                    adopt and self.half and vectors.dtype == np.float16) else self.vectors
                for start in range(0, n, 65_536):
                    end = min(n, start + 65_536)
                    target[start:end] = self._stored(vectors[start:end])
                self.vectors = target
            self.vectors[:n][~self.has_vector[:n]] = 0
        self.bm25.set_many(self._documents(table, forgotten))

    def _documents(self, table: pa.Table, forgotten: np.ndarray
                   ) -> Iterator[tuple[int, str, int]]:
        """What BM25 indexes of each memory of ``table`` that is not ``forgotten``
        (position, subject, text and context, owner group), converted a block of rows at
        a time (at 1M memories every text at once was ~0.2 GB more while building)."""
        for start, part in _blocks(table):
            for pos, (subject, text, context) in enumerate(zip(
                    column_values(part.column("subject")), column_values(part.column("text")),
                    column_values(part.column("context")), strict=True), start):
                if not forgotten[pos]:
                    self.asks[pos] = only_asks(text or "")
                    yield pos, _indexed_text(subject, text, context), int(self.owner[pos])

    @property
    def half(self) -> bool:
        """Whether the index keeps its vectors as bfloat16 (built where sign bits serve)."""
        return bool(self.vectors.dtype == np.uint16)

    def _stored(self, vectors: np.ndarray) -> np.ndarray:
        """Vectors (float32 or float16) in the form this index keeps them: in a half
        index, rounded to float16 first, as a build reads them from the store (rounded
        once from float32, a vector scored up to 1e-3 apart from the same one built)."""
        if self.half:
            return to_bfloat16(np.asarray(vectors).astype(np.float16, copy=False))
        return np.asarray(vectors, dtype=np.float32)

    def set_sentences(self, pos: int, vectors: np.ndarray | None) -> None:
        """Memory ``pos``'s sentence vectors are now ``vectors`` (None, no rows or another
        width than the index's: it has none)."""
        count = int(self.sentence_count[pos])
        if count:
            start = int(self.sentence_start[pos])
            self.sentence_of[start:start + count] = -1
            self.sentences[start:start + count] = 0  # nothing of a forgotten text stays
        if vectors is None or len(vectors) == 0 or vectors.shape[1] != self.dim:
            self.sentence_start[pos] = self.sentence_count[pos] = 0
            return
        start, end = self.sentence_rows, self.sentence_rows + len(vectors)
        if end > len(self.sentences):
            capacity = max(end, 2 * len(self.sentences), 1024)
            grown = np.zeros((capacity, self.dim), dtype=self.sentences.dtype)
            grown[:start] = self.sentences[:start]
            owners = np.full(capacity, -1, dtype=np.int64)
            owners[:start] = self.sentence_of[:start]
            self.sentences, self.sentence_of = grown, owners
        self.sentences[start:end] = self._stored(vectors)
        self.sentence_of[start:end] = pos
        self.sentence_start[pos], self.sentence_count[pos] = start, len(vectors)
        self.sentence_rows = end

    def sentence_scores(self, query: np.ndarray) -> np.ndarray:
        """Per memory, the best cosine of ``query`` with one of its sentences (-inf for
        a memory without sentence vectors)."""
        best = np.full(self.size, -np.inf, dtype=np.float32)
        used = self.sentence_rows
        if used:
            scores = dot_all(self.sentences, used, query)
            scores[self.sentence_of[:used] < 0] = -np.inf  # rows of replaced sentences
            # a memory's sentences are rows start..start+count: the best of each run
            # (up to the next memory's start; the rows between are replaced ones)
            count = self.sentence_count[:self.size]
            memories = np.flatnonzero(count)
            if memories.size:
                starts = self.sentence_start[memories]
                order = np.argsort(starts, kind="stable")
                best[memories[order]] = np.maximum.reduceat(scores, starts[order])
        return best

    def sentence_cosines(self, positions: np.ndarray, query: np.ndarray) -> np.ndarray:
        """``sentence_scores`` of these positions alone: their rows gathered one memory
        after another, the best of each run."""
        counts = self.sentence_count[positions]
        best = np.full(len(positions), -np.inf, dtype=np.float32)
        having = np.flatnonzero(counts)
        if not having.size:
            return best
        rows = np.concatenate([np.arange(s, s + c) for s, c in
                               zip(self.sentence_start[positions[having]].tolist(),
                                   counts[having].tolist(), strict=True)])
        runs = np.concatenate(([0], np.cumsum(counts[having])[:-1]))
        best[having] = np.maximum.reduceat(dot_rows(self.sentences, rows, query), runs)
        return best

    def has_row(self, pos: int) -> bool:
        return self.rows is not None and pos < self.rows.num_rows and pos not in self.stale

    def row(self, pos: int) -> dict[str, Any] | None:
        """The snapshot row of ``pos`` when it is still current."""
        return self.rows_at([pos]).get(pos)

    def rows_at(self, positions: Sequence[int]) -> dict[int, dict[str, Any]]:
        """The snapshot rows of those ``positions`` that are still current, gathered
        from each record batch they lie in and converted together (``take`` over the
        whole multi-chunk table concatenated every column first: ~10 ms at 100k)."""
        current = np.array(list(dict.fromkeys(p for p in positions if self.has_row(p))),
                           dtype=np.int64)
        out: dict[int, dict[str, Any]] = {}
        if current.size == 0:
            return out
        which = np.searchsorted(self._row_starts, current, side="right") - 1
        for batch in np.unique(which).tolist():
            chosen = current[which == batch]
            source = self._row_batches[batch]
            # slices, not ``take``: that loads pyarrow.compute (0.2 s of a one-shot recall);
            # joined into one batch (a table of them combined each column: 1.2 ms for
            # ten hits against 0.8)
            offsets = (chosen - self._row_starts[batch]).tolist()
            if len(offsets) == 1:  # a write's row, one hit's
                out[int(chosen[0])] = self._reader(batch).row(offsets[0])
                continue
            rows = pa.concat_batches([source.slice(int(offset), 1) for offset in offsets])
            out.update(zip(chosen.tolist(), to_pylist(rows), strict=True))
        for row in out.values():
            if row.get("text_sha256") == "":  # left out of the snapshot: the text's own
                row["text_sha256"] = _sha256(row.get("text"))
        return out

    def set_rows(self, table: pa.Table) -> None:
        """Keep ``table`` (every memory's row, in position order) as the snapshot, slimmed
        (``_slim``) in a half index: below the sign-bits threshold the saving is small
        (0.6 MB at 10k) and hashing every text cost each one-shot recall ~10 ms."""
        if self.half:
            table = _slim(table)
        self.keep_rows(table)
        self.stale.clear()

    def keep_rows(self, table: pa.Table) -> None:
        """``table`` as the snapshot's rows, as they are (a saved index's)."""
        self.rows = table
        self._row_batches = table.to_batches()
        self._row_starts = np.cumsum([0, *(b.num_rows for b in self._row_batches)])
        self._readers = {}

    def _reader(self, batch: int) -> RowReader:
        reader = self._readers.get(batch)
        if reader is None:
            reader = self._readers[batch] = RowReader(self._row_batches[batch])
        return reader

    def patch(self, memory_id: str, fields: Mapping[str, Any]) -> bool:
        """Take the fields a commit set on one memory as they are, when none of them
        needs its text indexed again, its graph or its vector (``PATCHABLE`` fields, and
        fields the index does not keep); False (nothing done): read it again instead."""
        pos = self.pos.get(memory_id)
        kept = [name for name in fields if name in INDEX_FIELDS]
        if pos is None or not set(kept) <= PATCHABLE or "sentences" in fields:
            return False
        status = fields.get("status")
        if status is not None and STATUS_CODE[getattr(status, "value", status)] == _FORGOTTEN:
            return False
        self.changes += 1
        for name in kept:
            _SETTERS[name](self, pos, fields[name])
        if not set(fields) <= OVERLAID:
            self.stale.add(pos)  # the snapshot row is old now
        return True

    def blank_stale_rows(self) -> None:
        """Empty the snapshot rows that are no longer current (``stale``; never read
        again): a saved copy of the index keeps nothing of what a forgotten memory said."""
        if self.rows is None or not self.stale:
            return
        n = self.rows.num_rows
        gone = np.zeros(n, dtype=bool)
        gone[[p for p in self.stale if p < n]] = True
        self.keep_rows(blank_rows(self.rows, gone, keep=["id"]))

    def set_edges(self, kind: str, src: Sequence[str], dst: Sequence[str],
                  weight: np.ndarray) -> None:
        """Replace every edge of ``kind`` (both directions are walked): ids of the
        sources and targets, and the weights."""
        where = self.pos.get
        a = np.fromiter((where(i, -1) for i in src), dtype=np.int64, count=len(src))
        b = np.fromiter((where(i, -1) for i in dst), dtype=np.int64, count=len(dst))
        setattr(self, kind, EdgeTable(self.size, a, b, np.asarray(weight, dtype=np.float64)))
        self._adjacency.clear()
        self.changes += 1

    def replace_edges_of(self, kind: str, memory_id: str,
                         edges: Iterable[tuple[str, float]]) -> None:
        """Refresh the ``kind`` edges touching one memory: (other id, weight) pairs."""
        table: EdgeTable = getattr(self, kind)
        a = self.pos.get(memory_id)
        if a is None:
            return
        self.changes += 1
        old = table.get(a)
        for b in old:
            row = table.get(b)
            row.pop(a, None)
            table.set(b, row)
        mine: dict[int, float] = {}
        touched = {a, *old}
        for other, weight in edges:
            b = self.pos.get(other, -1)
            if b < 0 or b == a:
                continue
            touched.add(b)
            mine[b] = mine.get(b, 0.0) + weight
            row = table.get(b)
            row[a] = row.get(a, 0.0) + weight
            table.set(b, row)
        table.set(a, mine)
        for adjacency in self._adjacency.values():
            adjacency.refresh(touched)

    def add_edges(self, edges: Iterable[tuple[str, str, str, float]]) -> None:
        """New edges: (kind, one end's id, the other's, weight), each added to both ends'
        rows as ``replace_edges_of`` would find it (an end not indexed is skipped)."""
        touched: set[int] = set()
        for kind, src, dst, weight in edges:
            a, b = self.pos.get(src, -1), self.pos.get(dst, -1)
            if a < 0 or b < 0 or a == b:
                continue
            table: EdgeTable = getattr(self, kind)
            for one, other in ((a, b), (b, a)):
                row = table.get(one)
                row[other] = row.get(other, 0.0) + weight
                table.set(one, row)
            touched |= {a, b}
        if touched:
            self.changes += 1
            for adjacency in self._adjacency.values():
                adjacency.refresh(touched)

    def set_access(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Refresh the access counters of memories from rows (``ACCESS_FIELDS``), as
        another process's recall left them; nothing else of theirs changed."""
        for row in rows:
            pos = self.pos.get(row["id"])
            if pos is None:
                continue
            self.stale.add(pos)
            self.access_count[pos] = int(row.get("access_count") or 0)
            self.access_times[pos] = tuple(_aware(t) for t in row.get("access_times") or ())
            self.access_seconds[pos] = np.array([t.timestamp() for t in self.access_times[pos]])
            self.last_accessed[pos] = _aware(row.get("last_accessed"))

    def access(self, pos: int) -> dict[str, Any]:
        """The access counters of ``pos`` as a row's fields (``ACCESS_FIELDS``)."""
        return {"access_count": int(self.access_count[pos]),
                "last_accessed": self.last_accessed[pos],
                "access_times": self.access_times[pos]}

    def record_access(self, positions: Sequence[int], at: datetime, history: int) -> None:
        for pos in positions:
            self.access_count[pos] += 1
            self.access_times[pos] = (*self.access_times[pos], at)[-history:]
            self.access_seconds[pos] = np.array([t.timestamp() for t in self.access_times[pos]])
            self.last_accessed[pos] = at

    # -- queries ------------------------------------------------------------------------
    def mask(
        self,
        *,
        owner: str | None = None,
        kinds: Sequence[str] | None = None,
        statuses: Sequence[str] = ("active",),
        as_of: datetime | None = None,
        now: datetime | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> np.ndarray:
        """Which positions a query may return (before supersede redirection): valid at
        ``as_of`` (and created by then) when given, else valid at ``now``; created at or
        after ``since`` and before ``until`` when given.

        The array may be shared by other queries (read-only): what status, owner and
        kinds allow is made once per change of the index (``_MASKS`` of them kept), and
        a time changes it only where a memory is out of its validity then (the few with
        bounds) or with ``as_of``, ``since`` or ``until`` (a copy then). At 1M memories
        the copy per query cost 2.6 ms a recall."""
        n = self.size
        statuses = tuple(statuses)
        kept = tuple(sorted(set(kinds))) if kinds is not None else None
        keep = self._allowed(statuses, owner, kept)
        at = as_of or now
        with np.errstate(invalid="ignore"):
            if at is not None:
                t = at.timestamp()
                if as_of is not None:
                    keep = keep & (self.created[:n] <= t)
                # only the memories with a validity bound can be out of it
                bounded = self.derived("bounded", self._bounded)
                starts, ends = self.valid_from[bounded], self.valid_to[bounded]
                valid = (np.isnan(starts) | (starts <= t)) & (np.isnan(ends) | (ends > t))
                outside = bounded[~valid]
                if len(outside) and keep[outside].any():
                    keep = keep.copy() if not keep.flags.writeable else keep
                    keep[outside] = False
            if since is not None:
                keep = keep & (self.created[:n] >= since.timestamp())
            if until is not None:
                keep = keep & (self.created[:n] < until.timestamp())
        return keep

    #: how many masks of status, owner and kinds ``mask`` keeps between changes
    _MASKS = 8

    def _allowed(self, statuses: tuple[str, ...], owner: str | None,
                 kinds: tuple[str, ...] | None) -> np.ndarray:
        """Which positions hold a memory of one of ``statuses``, of ``owner`` and of one
        of ``kinds`` when given (read-only; up to ``_MASKS`` kept, then made again)."""
        masks: dict[tuple[Any, ...], np.ndarray] = self.derived("masks", dict)
        key = (statuses, owner, kinds)
        found = masks.get(key)
        if found is None:
            n = self.size
            found = self._of_status(statuses)
            if owner is not None:
                code = self.owner_codes.get(owner)
                found &= self.owner[:n] == code if code is not None else False
            if kinds is not None:
                wanted = np.zeros(len(KIND_CODE), dtype=bool)
                wanted[[KIND_CODE[k] for k in kinds]] = True
                found &= wanted[self.kind[:n]]
            found.flags.writeable = False
            if len(masks) >= self._MASKS:
                masks.clear()
            masks[key] = found
        return found

    def _of_status(self, statuses: Sequence[str]) -> np.ndarray:
        """Which positions hold a memory of one of ``statuses`` (a lookup table, not
        np.isin: isin cost ~7 ms on 100k rows, a table ~0.2 ms)."""
        allowed = np.zeros(len(STATUS_CODE), dtype=bool)
        allowed[[STATUS_CODE[s] for s in statuses]] = True
        return allowed[self.status[:self.size]]

    def _bounded(self) -> np.ndarray:
        """The positions of the memories valid from or until a time (few of them: the
        others are valid at every time, and ``mask`` reads them alone: at 1M memories
        the whole columns took ~5 ms a recall)."""
        n = self.size
        return np.flatnonzero(~(np.isnan(self.valid_from[:n]) & np.isnan(self.valid_to[:n])))

    def nearest(self, query: np.ndarray, mask: np.ndarray, k: int,
                sentence_query: np.ndarray | None = None, sentence_weight: float = 0.0
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The ``k`` masked memories with a vector nearest to ``query`` (positions and
        scores, best first), and the score of every memory when the search computed
        them all (exact search, below ``SIGN_BITS_FROM`` memories), else None.

        A memory's score is its cosine with ``query``; with ``sentence_weight`` and a
        ``sentence_query``, that of a memory with sentence vectors is ``(1 - w) * cosine
        + w * its best sentence's cosine with sentence_query``. Where sign bits choose
        the candidates they choose them by the memory's own vector."""
        n = self.size
        blend = sentence_weight > 0 and sentence_query is not None and self.sentence_rows > 0
        if not self.uses_sign_bits(n):
            similarity = dot_all(self.vectors, n, query)
            if blend:
                assert sentence_query is not None
                best = self.sentence_scores(sentence_query)
                has = np.isfinite(best)
                similarity[has] = ((1 - sentence_weight) * similarity[has]
                                   + sentence_weight * best[has])
            similarity[~self.has_vector[:n]] = -np.inf
            positions, scores = top_scores(similarity, k, mask)
            return positions, scores, similarity
        signs = self._signs
        if signs is None or len(signs) < n:
            signs = self._signs = SignCodes.from_vectors(self.vectors[:n])
        candidates = self.sign_candidates(n, k)
        positions, scores = signs.search(query, self.vectors[:n],
                                         k=candidates if blend else k, candidates=candidates,
                                         mask=mask & self.has_vector[:n])
        if blend:
            assert sentence_query is not None
            best = self.sentence_cosines(positions, sentence_query)
            has = np.isfinite(best)
            scores[has] = (1 - sentence_weight) * scores[has] + sentence_weight * best[has]
            order, scores = top_scores(scores, k)
            positions = positions[order]
        return positions, scores, None

    def uses_sign_bits(self, n: int) -> bool:
        """Whether vector search over ``n`` memories picks its candidates by sign bits."""
        return self.uses_sign_bits_at(n, self.sign_bits_from)

    @classmethod
    def uses_sign_bits_at(cls, n: int, sign_bits_from: int | None) -> bool:
        """``uses_sign_bits`` for a store whose ``Settings.sign_bits_from`` is given (None:
        ``SIGN_BITS_FROM``; 0: never)."""
        if sign_bits_from is None:
            return n >= cls.SIGN_BITS_FROM
        return n >= (sign_bits_from or sys.maxsize)

    def cosines(self, positions: np.ndarray, query: np.ndarray) -> np.ndarray:
        """The cosines of ``query`` with the vectors at ``positions``."""
        return dot_rows(self.vectors, positions, query)

    @classmethod
    def sign_candidates(cls, n: int, k: int) -> int:
        """How many sign-bit candidates a search for ``k`` among ``n`` re-scores exactly."""
        return max(cls.SIGN_CANDIDATES, n // 100, k)

    def replaced(self, memory_id: str) -> set[int]:
        """The positions of the memories ``memory_id`` superseded (what a correction
        replaced)."""
        return self._replaced.get(memory_id, set())

    def note_replaced(self, pos: int, before: tuple[str, ...], after: tuple[str, ...]) -> None:
        """``superseded_by[pos]`` changes from ``before`` to ``after``: ``replaced`` follows."""
        if before == after:
            return
        for other in before:
            self._replaced.get(other, set()).discard(pos)
        for other in after:
            self._replaced.setdefault(other, set()).add(pos)

    def head(self, pos: int, eligible: np.ndarray, as_of: datetime | None = None) -> int:
        """The current version of ``pos``: follow superseded-by to the newest memory that
        is ``eligible`` (may be shown; so an unconfirmed candidate does not hide the
        active memory it would replace) and created by ``as_of`` when given."""
        limit = as_of.timestamp() if as_of is not None else math.inf
        seen = {pos}
        while True:
            newer = [p for s in self.superseded_by[pos]
                     if (p := self.pos.get(s)) is not None and self.created[p] <= limit
                     and eligible[p] and p not in seen]
            if not newer:
                return pos
            pos = max(newer, key=lambda p: self.created[p])
            seen.add(pos)

    def merged_neighbours(self, pos: int, references: float, co_occurs: float,
                          limit: int = 50) -> dict[int, float]:
        """Weighted neighbours of ``pos`` over both edge kinds (the ``limit`` strongest)."""
        out: dict[int, float] = {}
        for weight, table in ((references, self.references), (co_occurs, self.co_occurs)):
            if weight <= 0:
                continue
            for other, w in table.get(pos).items():
                out[other] = out.get(other, 0.0) + weight * w
        if len(out) > limit:  # the strongest; ties: the later id (as ``Adjacency``)
            by_id = sorted(out.items(), key=lambda kv: self.ids[kv[0]], reverse=True)
            out = dict(sorted(by_id, key=lambda kv: -kv[1])[:limit])
        return out

    def derived(self, key: Hashable, build: Callable[[], _T]) -> _T:
        """``build()``, made once and kept under ``key`` until the index or its entities
        change: what recall reads of the index alike for every query (the graph walk's
        rows, the owners' sizes). Changes come in holding the gate exclusively, so readers
        never see one half made."""
        at = self._derived_at
        if at is None or at[0] != self.changes or at[1] is not self.entities \
                or at[2] != self.entities.changes:
            self._derived = {}
            self._derived_at = (self.changes, self.entities, self.entities.changes)
        found = self._derived.get(key)
        if found is None:
            found = self._derived[key] = build()
        return found

    def adjacency(self, references: float, co_occurs: float, limit: int = 50) -> Adjacency:
        """The combined adjacency for these weights (built on first use, then kept)."""
        key = (references, co_occurs, limit)
        found = self._adjacency.get(key)
        if found is None:
            found = self._adjacency[key] = Adjacency(self, references, co_occurs, limit)
        return found
