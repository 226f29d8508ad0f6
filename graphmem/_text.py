"""Text primitives every floor shares: the word tokeniser (BM25's terms, the learned
features' query terms, the corrections' overlap) and the English stopwords.

Imports nothing of graphmem's.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import chain

import snowballstemmer

__all__ = ["CLAUSE_LEADS", "CLAUSE_MARKS", "STOPWORDS", "tokenize"]

#: Words before which a chat sentence's next clause starts: the extractor cuts a hedged
#: clause off there ("my PIN is 4071 but maybe I'll change it"), and forget finds the
#: first clause's end there
CLAUSE_LEADS = ("so", "but", "tho", "though")
#: The marks a clause cut out of its sentence may start or end with
CLAUSE_MARKS = " ,;:-–—"

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


@lru_cache(maxsize=500_000)
def _terms(token: str) -> tuple[str, ...]:
    """The index terms of one lowercase token (cached: words repeat, and each one's
    stopword test and stem are then a dictionary lookup)."""
    if token.endswith("'s"):  # possessive: Caroline's -> caroline
        token = token[:-2]
    if "." in token or "'" in token:
        parts = [p for p in re.split(r"[.']", token)
                 if p and p not in STOPWORDS and (len(p) > 1 or p.isdigit())]
        return (token, *(_stem(p) for p in parts))
    if token in STOPWORDS:
        return ()
    return (_stem(token),)


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens, stopwords out, stemmed; ``v3.2`` and ``2024`` survive.

    A dotted or apostrophed token also yields its parts (``fly.io`` -> fly.io, fly, io).

    >>> tokenize("Deployed orchard v3.2 to fly.io in 2024")
    ['deploy', 'orchard', 'v3.2', 'v3', '2', 'fly.io', 'fli', 'io', '2024']
    """
    return list(chain.from_iterable(map(_terms, _TOKEN.findall(text.lower()))))
