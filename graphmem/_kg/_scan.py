"""How the extraction rules run regular expressions so that their work grows in proportion to
the text, however it is written: over a named span, or within ``CONTEXT`` of a position."""

# A memory may hold 200,000 characters. A pass over a text or a sentence names its span
# (``finditer``, ``search``); a rule that reads what stands just before or after a position
# sees at most ``CONTEXT`` characters (``ending_at``, ``starting_at``), never the whole prefix
# of a long sentence; every call is charged to the active ``Meter``, which tests use to bound
# the characters handed to the engine. The patterns are written so that one pass costs time in
# proportion to its span: a repeat after which the attempt can still fail starts where its run
# starts, and no repeat gives back characters to a later repeat over the same characters
# (tests/_linear.py checks every pattern of the extraction modules for both).

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TypeVar

__all__ = ["CONTEXT", "Meter", "disjoint", "ending_at", "finditer", "metered", "search",
           "starting_at"]

_T = TypeVar("_T")

#: How many characters a rule reads before or after a position (the words before a verb,
#: a cue before a name, the connector after it). Over LoCoMo's turns and whole sessions the
#: longest stretch any of these rules matched was 18 characters.
CONTEXT = 100


@dataclass(slots=True)
class Meter:
    """What the regex engine was handed while the meter was active: the calls, the
    characters of their spans, and per pattern and way of use (``True``: scanning a span;
    ``False``: one position or window) the characters and the sum of their squares (what a
    pattern that reads to the end of the span from every position would cost)."""

    calls: int = 0
    chars: int = 0
    spans: dict[tuple[re.Pattern[str], bool], tuple[int, int]] = field(default_factory=dict)


_METER: ContextVar[Meter | None] = ContextVar("graphmem_scan_meter", default=None)


@contextmanager
def metered() -> Iterator[Meter]:
    """Count the regex work of the extraction calls made inside the block (this thread)."""
    meter = Meter()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


def _charge(pattern: re.Pattern[str], chars: int, scanning: bool) -> None:
    meter = _METER.get()
    if meter is not None:
        chars = max(chars, 0)
        meter.calls += 1
        meter.chars += chars
        total, squares = meter.spans.get((pattern, scanning), (0, 0))
        meter.spans[pattern, scanning] = (total + chars, squares + chars * chars)


def finditer(pattern: re.Pattern[str], text: str, start: int = 0,
         end: int | None = None) -> Iterator[re.Match[str]]:
    """The matches of ``pattern`` in ``text[start:end]``, left to right (``finditer``; what
    stands before ``start`` is seen by lookbehinds and ``\\b``)."""
    end = len(text) if end is None else end
    _charge(pattern, end - start, True)
    return pattern.finditer(text, start, end)


def search(pattern: re.Pattern[str], text: str, start: int = 0,
           end: int | None = None) -> re.Match[str] | None:
    """The first match of ``pattern`` in ``text[start:end]``."""
    end = len(text) if end is None else end
    _charge(pattern, end - start, True)
    return pattern.search(text, start, end)


def ending_at(pattern: re.Pattern[str], text: str, position: int,
           start: int = 0) -> re.Match[str] | None:
    """The first match of ``pattern`` among the ``CONTEXT`` characters before ``position``
    (none before ``start``): a pattern anchored with ``$`` finds what ends at ``position``.

    >>> ending_at(re.compile(r"\\bnot\\s*$"), "I do not " + "x" * 500 + " like", 9)
    <re.Match object; span=(5, 9), match='not '>
    """
    low = max(start, position - CONTEXT)
    _charge(pattern, position - low, False)
    return pattern.search(text, low, position)


def starting_at(pattern: re.Pattern[str], text: str, position: int,
          end: int | None = None) -> re.Match[str] | None:
    """``pattern`` matched at ``position``, seeing at most ``CONTEXT`` characters (none at or
    after ``end``)."""
    high = min(len(text) if end is None else end, position + CONTEXT)
    _charge(pattern, high - position, False)
    return pattern.match(text, position, high)


def disjoint(items: Iterable[_T], span: Callable[[_T], tuple[int, int]],
             size: int) -> list[_T]:
    """The items kept when each, in the order given, is kept unless its span overlaps the
    span of one kept before (spans are ``[start, end)`` within ``[0, size)``).

    Kept characters are marked, so the work is the total length of the spans: comparing
    each span with every kept one took 4.7 s for the 10,000 years of a 50,000-character
    text (and four times as long for twice as many).

    >>> disjoint([(2, 5), (0, 3), (5, 6), (4, 9)], lambda s: s, 10)
    [(2, 5), (5, 6)]
    """
    taken = bytearray(size + 1)
    kept = []
    for item in items:
        start, end = span(item)
        if taken.find(1, start, end) < 0:
            taken[start:end] = b"\x01" * (end - start)
            kept.append(item)
    return kept
