"""An incremental in-process BM25 index with a tokeniser that keeps digits.

Kuzu's FTS strips digits and punctuation ("2024", "v3.2" cannot be found), drops terms
that occur in more than half the documents (negative IDF), and scans whole posting lists
(a common term cost ~110 ms at 100k memories here). This index uses the Lucene IDF
``ln(1 + (N - df + 0.5) / (df + 0.5))`` (always positive), keeps numbers and dotted
versions as tokens, stems English words (Snowball), and scores with numpy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

import numpy as np
import snowballstemmer

__all__ = ["BM25Index", "tokenize"]

STOPWORDS = frozenset((
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
    "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for",
    "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself",
    "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
    "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on",
    "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same",
    "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them",
    "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too",
    "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which",
    "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself",
    "yourselves",
))

_TOKEN = re.compile(r"[^\W_]+(?:[.'][^\W_]+)*", re.UNICODE)
_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens, stopwords out, stemmed; ``v3.2`` and ``2024`` survive.

    A dotted or apostrophed token also yields its parts (``fly.io`` -> fly.io, fly, io).

    >>> tokenize("Deployed orchard v3.2 to fly.io in 2024")
    ['deploy', 'orchard', 'v3.2', 'v3', '2', 'fly.io', 'fli', 'io', '2024']
    """
    out: list[str] = []
    for match in _TOKEN.finditer(text.lower()):
        token = match.group(0)
        if token.endswith("'s"):  # possessive: Caroline's -> caroline
            token = token[:-2]
        if "." in token or "'" in token:
            out.append(token)
            parts = [p for p in re.split(r"[.']", token)
                     if p and p not in STOPWORDS and (len(p) > 1 or p.isdigit())]
            out.extend(_stem(p) for p in parts)
        elif token not in STOPWORDS:
            out.append(_stem(token))
    return out


class BM25Index:
    """Documents are integer positions; ``set(pos, text, group=g)`` adds or replaces one.

    Each document belongs to a group (an owner): ``scores(..., group=g)`` uses the
    statistics of group ``g`` alone (document count, average length, document
    frequencies), so a group's scores are exactly those of an index holding only its
    documents, and nothing in them depends on another group's texts. Without a group the
    statistics are those of every document.
    """

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[int, int]] = {}
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._doc_terms: dict[int, list[str]] = {}
        self._lengths = np.zeros(1024, dtype=np.float32)
        self._groups = np.full(1024, -1, dtype=np.int64)
        self._total_length = 0.0
        #: per group: document count, total length; per token and group: document frequency
        self._group_docs: dict[int, int] = {}
        self._group_length: dict[int, float] = {}
        self._group_df: dict[str, dict[int, int]] = {}

    def __len__(self) -> int:
        return len(self._doc_terms)

    def set(self, pos: int, text: str, *, group: int = 0) -> None:
        """Index (or re-index) document ``pos`` as a member of ``group``."""
        self.remove(pos)
        tokens = tokenize(text)
        counts: dict[str, int] = {}
        for token in tokens:
            counts[token] = counts.get(token, 0) + 1
        for token, tf in counts.items():
            self._postings.setdefault(token, {})[pos] = tf
            self._arrays.pop(token, None)
            df = self._group_df.setdefault(token, {})
            df[group] = df.get(group, 0) + 1
        self._doc_terms[pos] = list(counts)
        if pos >= len(self._lengths):
            size = max(pos + 1, 2 * len(self._lengths))
            lengths = np.zeros(size, dtype=np.float32)
            lengths[: len(self._lengths)] = self._lengths
            groups = np.full(size, -1, dtype=np.int64)
            groups[: len(self._groups)] = self._groups
            self._lengths, self._groups = lengths, groups
        self._lengths[pos] = len(tokens)
        self._groups[pos] = group
        self._total_length += len(tokens)
        self._group_docs[group] = self._group_docs.get(group, 0) + 1
        self._group_length[group] = self._group_length.get(group, 0.0) + len(tokens)

    def posting(self, token: str) -> Mapping[int, int]:
        """The documents that hold ``token``: position -> term frequency."""
        return self._postings.get(token, {})

    def set_many(self, items: Iterable[tuple[int, str]]) -> None:
        for pos, text in items:
            self.set(pos, text)

    def remove(self, pos: int) -> None:
        terms = self._doc_terms.pop(pos, None)
        if terms is None:
            return
        group = int(self._groups[pos])
        for token in terms:
            posting = self._postings.get(token)
            if posting is not None:
                posting.pop(pos, None)
                if not posting:
                    del self._postings[token]
                self._arrays.pop(token, None)
            df = self._group_df.get(token)
            if df is not None:
                df[group] -= 1
                if not df[group]:
                    del df[group]
                if not df:
                    del self._group_df[token]
        self._total_length -= float(self._lengths[pos])
        self._group_docs[group] -= 1
        self._group_length[group] -= float(self._lengths[pos])
        self._lengths[pos] = 0.0
        self._groups[pos] = -1

    def _posting(self, token: str) -> tuple[np.ndarray, np.ndarray] | None:
        cached = self._arrays.get(token)
        if cached is None:
            posting = self._postings.get(token)
            if not posting:
                return None
            docs = np.fromiter(posting.keys(), dtype=np.int64, count=len(posting))
            tfs = np.fromiter(posting.values(), dtype=np.float32, count=len(posting))
            cached = (docs, tfs)
            self._arrays[token] = cached
        return cached

    def idf(self, token: str, *, group: int | None = None) -> float:
        if group is None:
            n, df = len(self._doc_terms), len(self._postings.get(token, ()))
        else:
            n = self._group_docs.get(group, 0)
            df = self._group_df.get(token, {}).get(group, 0)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query: str, size: int, *, group: int | None = None) -> np.ndarray:
        """BM25 score of every document position below ``size`` for ``query``; with a
        ``group``, computed with that group's statistics and zero outside it."""
        out = np.zeros(size, dtype=np.float32)
        if group is None:
            n, total = len(self._doc_terms), self._total_length
        else:
            n, total = self._group_docs.get(group, 0), self._group_length.get(group, 0.0)
        if n == 0:
            return out
        avgdl = max(total / n, 1e-9)
        for token in set(tokenize(query)):
            posting = self._posting(token)
            if posting is None:
                continue
            docs, tfs = posting
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
