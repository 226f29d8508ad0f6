"""An incremental in-process BM25 index with a tokeniser that keeps digits.

Kuzu's FTS strips digits and punctuation ("2024", "v3.2" cannot be found), drops terms
that occur in more than half the documents (negative IDF), and scans whole posting lists
(a common term cost ~110 ms at 100k memories here). This index uses the Lucene IDF
``ln(1 + (N - df + 0.5) / (df + 0.5))`` (always positive), keeps numbers and dotted
versions as tokens, stems English words (Snowball: ``graphmem._text.tokenize``), and
scores with numpy.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import islice

import numpy as np

from .._text import tokenize

__all__ = ["CONTEXT_MARK", "BM25Index", "tokenize"]

#: Marks where a document's context begins (``RecallIndex`` puts a memory's context, its
#: neighbours' words, after it): the terms after it count ``BM25Index.context_weight``
#: of a term of the text, in term frequency and in document length alike (BM25F's
#: field weight), so a neighbour's words lift a memory that needs them without letting
#: it outrank one that says the thing itself.
CONTEXT_MARK = "\x1f"


def _weighted(text: str, context_weight: float) -> tuple[list[str], list[float]]:
    """The tokens of a document and each one's weight (1, or ``context_weight`` after
    ``CONTEXT_MARK``)."""
    own, mark, context = text.partition(CONTEXT_MARK)
    tokens = tokenize(own)
    weights = [1.0] * len(tokens)
    if mark:
        extra = tokenize(context)
        tokens += extra
        weights += [context_weight] * len(extra)
    return tokens, weights


class _Column:
    """A growable numpy column (amortised doubling)."""

    def __init__(self, dtype: type, capacity: int = 4096) -> None:
        self.data: np.ndarray = np.zeros(capacity, dtype=dtype)
        self.size = 0

    def extend(self, values: Sequence[float] | np.ndarray) -> None:
        end = self.size + len(values)
        if end > len(self.data):
            grown = np.zeros(max(end, 2 * len(self.data)), dtype=self.data.dtype)
            grown[: self.size] = self.data[: self.size]
            self.data = grown
        self.data[self.size:end] = values
        self.size = end

    def view(self) -> np.ndarray:
        return self.data[: self.size]


#: what a term of a document's context counts against one of its own text (measured on
#: the everyday chats' development set: ``eval/results/conversations.md``)
CONTEXT_WEIGHT = 0.5


class BM25Index:
    """Documents are integer positions; ``set(pos, text, group=g)`` adds or replaces one.

    Each document belongs to a group (an owner): ``scores(..., group=g)`` uses the
    statistics of group ``g`` alone (document count, average length, document
    frequencies), so a group's scores are exactly those of an index holding only its
    documents, and nothing in them depends on another group's texts. Without a group the
    statistics are those of every document.

    Postings live in flat numpy columns, one entry per (document, distinct term) in the
    order documents were set (12 bytes an entry), with a token-sorted permutation over
    them; entries set since the last sort are scanned directly until they are a quarter
    of the sorted ones. Replaced or removed documents' entries are dropped at the next
    sort. At 1M memories this held the postings in ~0.3 GB where dicts of dicts took
    several GB (``eval/bench_scale.py``).
    """

    #: entries set since the last sort that queries scan directly, at least
    TAIL = 65_536

    def __init__(self, *, k1: float = 1.2, b: float = 0.75,
                 context_weight: float | None = None) -> None:
        self.k1 = k1
        self.b = b
        self.context_weight = CONTEXT_WEIGHT if context_weight is None else context_weight
        self._vocab: dict[str, int] = {}
        self._token = _Column(np.int32)
        self._doc = _Column(np.int32)
        self._tf = _Column(np.float32)
        self._live = _Column(np.bool_)
        #: per document position: its entries are [start, end) of the columns
        self._start = np.full(1024, -1, dtype=np.int64)
        self._end = np.full(1024, -1, dtype=np.int64)
        self._lengths = np.zeros(1024, dtype=np.float32)
        self._groups = np.full(1024, -1, dtype=np.int64)
        self._docs = 0
        self._dead = 0
        self._total_length = 0.0
        #: entries [0, _sorted) are in the permutation; offsets per token id into it
        self._sorted = 0
        self._perm = np.zeros(0, dtype=np.int32)
        self._offsets = np.zeros(1, dtype=np.int64)
        #: per group: document count, total length; per token id: document frequency,
        #: overall and per group
        self._group_docs: dict[int, int] = {}
        self._group_length: dict[int, float] = {}
        self._df: list[int] = []
        self._group_df: list[dict[int, int]] = []
        #: entries set since the last flush, as Python lists (appending to them is ~5x
        #: cheaper per document than growing numpy columns)
        self._pending: tuple[list[int], list[int], list[float]] = ([], [], [])
        #: per kind of term (``holding``): whether each token id is one, for the ids seen
        self._term_masks: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return self._docs

    def _grow(self, pos: int) -> None:
        if pos < len(self._lengths):
            return
        size = max(pos + 1, 2 * len(self._lengths))
        for name, fill in (("_start", -1), ("_end", -1), ("_lengths", 0), ("_groups", -1)):
            old = getattr(self, name)
            grown = np.full(size, fill, dtype=old.dtype)
            grown[: len(old)] = old
            setattr(self, name, grown)

    def set(self, pos: int, text: str, *, group: int = 0) -> None:
        """Index (or re-index) document ``pos`` as a member of ``group``."""
        self.remove(pos)
        tokens, weights = _weighted(text, self.context_weight)
        counts: dict[str, float] = {}
        for token, weight in zip(tokens, weights, strict=True):
            counts[token] = counts.get(token, 0.0) + weight
        length = sum(weights)
        vocab, df, group_df = self._vocab, self._df, self._group_df
        p_token, p_doc, p_tf = self._pending
        first = self._token.size + len(p_token)
        for token, tf in counts.items():
            tid = vocab.get(token)
            if tid is None:
                tid = vocab[token] = len(df)
                df.append(0)
                group_df.append({})
            df[tid] += 1
            by_group = group_df[tid]
            by_group[group] = by_group.get(group, 0) + 1
            p_token.append(tid)
            p_tf.append(tf)
        p_doc.extend([pos] * len(counts))
        self._grow(pos)
        self._start[pos], self._end[pos] = first, first + len(counts)
        self._lengths[pos] = length
        self._groups[pos] = group
        self._docs += 1
        self._total_length += length
        self._group_docs[group] = self._group_docs.get(group, 0) + 1
        self._group_length[group] = self._group_length.get(group, 0.0) + length

    def _flush(self) -> None:
        p_token, p_doc, p_tf = self._pending
        if p_token:
            self._token.extend(np.array(p_token, dtype=np.int32))
            self._doc.extend(np.array(p_doc, dtype=np.int32))
            self._tf.extend(np.array(p_tf, dtype=np.float32))
            self._live.extend(np.ones(len(p_token), dtype=np.bool_))
            self._pending = ([], [], [])

    def set_many(self, items: Iterable[tuple[int, str, int]], *, chunk: int = 100_000
                 ) -> None:
        """``set`` each (position, text, group), the counting done by numpy a chunk at a
        time (the index of a whole store is built this way: ~3x faster than ``set``). A
        position given twice keeps its last text. ``items`` is read a chunk at a time:
        the texts of a whole store never exist at once."""
        iterator = iter(items)
        while chunk_items := list(islice(iterator, chunk)):
            latest = {pos: (text, group) for pos, text, group in chunk_items}
            del chunk_items
            for pos in latest:
                self.remove(pos)
            self._flush()
            self._add_fresh(list(latest.items()))

    def _add_fresh(self, batch: Sequence[tuple[int, tuple[str, int]]]) -> None:
        """Index documents that hold no entries, with nothing pending."""
        if not batch:
            return
        positions = np.array([pos for pos, _ in batch], dtype=np.int64)
        groups = np.array([group for _, (_, group) in batch], dtype=np.int64)
        vocab = self._vocab
        tids: list[int] = []
        weights: list[float] = []
        counts = np.zeros(len(batch), dtype=np.int64)
        for row, (_, (text, _)) in enumerate(batch):
            tokens, token_weights = _weighted(text, self.context_weight)
            counts[row] = len(tokens)
            tids.extend([vocab.setdefault(t, len(vocab)) for t in tokens])
            weights.extend(token_weights)
        grown = len(vocab) - len(self._df)
        self._df.extend([0] * grown)
        self._group_df.extend({} for _ in range(grown))
        # one entry per (document, distinct token): documents in order, tokens ascending
        rows = np.repeat(np.arange(len(batch), dtype=np.int64), counts)
        token_weight = np.array(weights, dtype=np.float64)
        lengths = np.bincount(rows, weights=token_weight, minlength=len(batch))
        keys, inverse = np.unique(rows * len(vocab) + np.array(tids, dtype=np.int64),
                                  return_inverse=True)
        tf = np.bincount(inverse, weights=token_weight, minlength=len(keys))
        entry_row, entry_tid = np.divmod(keys, len(vocab))
        tid_codes, df = np.unique(entry_tid, return_counts=True)
        for tid, count in zip(tid_codes.tolist(), df.tolist(), strict=True):
            self._df[tid] += count
        pairs, counts = np.unique(np.stack([entry_tid, groups[entry_row]]), axis=1,
                                  return_counts=True)
        for tid, group, count in zip(*pairs.tolist(), counts.tolist(), strict=True):
            by_group = self._group_df[tid]
            by_group[group] = by_group.get(group, 0) + count
        first = self._token.size
        self._token.extend(entry_tid.astype(np.int32))
        self._doc.extend(positions[entry_row].astype(np.int32))
        self._tf.extend(tf.astype(np.float32))
        self._live.extend(np.ones(len(keys), dtype=np.bool_))
        self._grow(int(positions.max()))
        per_doc = np.bincount(entry_row, minlength=len(batch))
        ends = first + np.cumsum(per_doc)
        self._start[positions], self._end[positions] = ends - per_doc, ends
        self._lengths[positions] = lengths
        self._groups[positions] = groups
        self._docs += len(batch)
        self._total_length += float(lengths.sum())
        codes, inverse = np.unique(groups, return_inverse=True)
        for group, docs, total in zip(codes.tolist(), np.bincount(inverse).tolist(),
                                      np.bincount(inverse, weights=lengths).tolist(),
                                      strict=True):
            self._group_docs[group] = self._group_docs.get(group, 0) + docs
            self._group_length[group] = self._group_length.get(group, 0.0) + total

    def drop_dead_terms(self) -> None:
        """Rename every term no document holds any more to a placeholder no text
        tokenizes to (its id is kept: postings refer to it): what a forgotten memory
        said leaves no word behind in a saved copy of the index."""
        df = self._df
        if all(df):
            return
        self._vocab = {(token if df[tid] else f"\0{tid}"): tid
                       for token, tid in self._vocab.items()}

    def remove(self, pos: int) -> None:
        if pos >= len(self._start) or self._start[pos] < 0:
            return
        start, end = int(self._start[pos]), int(self._end[pos])
        if end > self._token.size:
            self._flush()
        group = int(self._groups[pos])
        for tid in self._token.data[start:end].tolist():
            by_group = self._group_df[tid]
            by_group[group] -= 1
            if not by_group[group]:
                del by_group[group]
            self._df[tid] -= 1
        self._live.data[start:end] = False
        self._dead += end - start
        self._start[pos] = self._end[pos] = -1
        self._docs -= 1
        self._total_length -= float(self._lengths[pos])
        self._group_docs[group] -= 1
        self._group_length[group] -= float(self._lengths[pos])
        self._lengths[pos] = 0.0
        self._groups[pos] = -1

    def _sort(self) -> None:
        """Drop dead entries, then sort every entry by token (stable: by document)."""
        self._flush()
        if self._dead:
            live = self._live.view()
            before = np.zeros(len(live) + 1, dtype=np.int64)  # live entries before each
            np.cumsum(live, out=before[1:])
            docs = np.flatnonzero(self._start >= 0)
            self._start[docs] = before[self._start[docs]]
            self._end[docs] = before[self._end[docs]]
            for column in (self._token, self._doc, self._tf):
                kept = column.view()[live]
                column.data[: len(kept)] = kept
                column.size = len(kept)
            self._live.size = len(kept)
            self._live.data[: len(kept)] = True
            self._dead = 0
        tokens = self._token.view()
        self._perm = np.argsort(tokens, kind="stable").astype(np.int32)
        self._offsets = np.zeros(len(self._vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(tokens, minlength=len(self._vocab)), out=self._offsets[1:])
        self._sorted = len(tokens)

    def _entries(self, tid: int) -> np.ndarray:
        """Column positions of the live entries of token ``tid``."""
        self._flush()
        if self._token.size - self._sorted > max(self.TAIL, self._sorted // 4):
            self._sort()
        parts = []
        if tid + 1 < len(self._offsets):
            parts.append(self._perm[self._offsets[tid]:self._offsets[tid + 1]])
        if self._token.size > self._sorted:
            tail = self._token.data[self._sorted:self._token.size]
            parts.append((np.flatnonzero(tail == tid) + self._sorted).astype(np.int32))
        found = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
        return found[self._live.data[found]] if self._dead else found

    def posting(self, token: str) -> Mapping[int, int]:
        """The documents that hold ``token``: position -> term frequency."""
        tid = self._vocab.get(token)
        if tid is None:
            return {}
        entries = self._entries(tid)
        return dict(zip(self._doc.data[entries].tolist(),
                        self._tf.data[entries].astype(np.int64).tolist(), strict=True))

    def holding(self, key: str, term: Callable[[str], bool], among: Iterable[int]
                ) -> builtins.set[int]:
        """The documents of ``among`` whose own text (not their context) holds a term for
        which ``term`` is true. Which terms are such is kept under ``key`` and found only
        for terms new since the last call (token ids are given in order, never reused).

        >>> index = BM25Index()
        >>> index.set(0, "we meet at 9pm"); index.set(1, "at noon\x1fthe 9pm one")
        >>> index.holding("pm", lambda t: t.endswith("pm"), [0, 1])
        {0}
        """
        mask = self._term_masks.get(key)
        if mask is None or len(mask) < len(self._df):
            seen = 0 if mask is None else len(mask)
            new = np.fromiter((term(t) for t in islice(self._vocab, seen, None)),
                              dtype=np.bool_, count=len(self._df) - seen)
            mask = self._term_masks[key] = new if mask is None else np.concatenate([mask, new])
        self._flush()
        tokens, tf = self._token.data, self._tf.data
        out: builtins.set[int] = builtins.set()
        for pos in among:
            if pos >= len(self._start) or self._start[pos] < 0:
                continue
            start, end = int(self._start[pos]), int(self._end[pos])
            if (mask[tokens[start:end]] & (tf[start:end] >= 1.0)).any():
                out.add(pos)
        return out

    def idf(self, token: str, *, group: int | None = None) -> float:
        tid = self._vocab.get(token)
        if group is None:
            n, df = self._docs, 0 if tid is None else self._df[tid]
        else:
            n = self._group_docs.get(group, 0)
            df = 0 if tid is None else self._group_df[tid].get(group, 0)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def coverage(self, query: str, pos: int, *, group: int | None = None) -> float:
        """The share of ``query``'s informative weight (the idf of its terms, a term no
        document holds counting as the rarest) that document ``pos`` holds: 1.0 when it
        holds every term, 0.0 when it holds none."""
        terms = sorted(set(tokenize(query)))
        if not terms or pos >= len(self._start) or self._start[pos] < 0:
            return 0.0
        start, end = int(self._start[pos]), int(self._end[pos])
        if end > self._token.size:
            self._flush()
        held = set(self._token.data[start:end].tolist())
        total = covered = 0.0
        for token in terms:
            weight = self.idf(token, group=group)
            total += weight
            tid = self._vocab.get(token)
            if tid is not None and tid in held:
                covered += weight
        return covered / total if total else 0.0

    def scores(self, query: str, size: int, *, group: int | None = None) -> np.ndarray:
        """BM25 score of every document position below ``size`` for ``query``; with a
        ``group``, computed with that group's statistics and zero outside it."""
        out = np.zeros(size, dtype=np.float32)
        if group is None:
            n, total = self._docs, self._total_length
        else:
            n, total = self._group_docs.get(group, 0), self._group_length.get(group, 0.0)
        if n == 0:
            return out
        avgdl = max(total / n, 1e-9)
        # In a fixed order: float32 sums in set order (which PYTHONHASHSEED picks) differ
        # in the last bit from one process to the next and flip near-ties.
        for token in sorted(set(tokenize(query))):
            tid = self._vocab.get(token)
            if tid is None or not self._df[tid]:
                continue
            entries = self._entries(tid)
            docs, tfs = self._doc.data[entries], self._tf.data[entries]
            keep = docs < size
            if group is not None:
                keep &= self._groups[docs] == group
            docs, tfs = docs[keep], tfs[keep]
            if docs.size == 0:
                continue
            lengths = self._lengths[docs]
            denom = tfs + self.k1 * (1.0 - self.b + self.b * lengths / avgdl)
            out[docs] += self.idf(token, group=group) * tfs * (self.k1 + 1.0) / denom
        return out
