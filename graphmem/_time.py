"""Time and identifier helpers: UTC everywhere, ISO 8601 in and out, sortable URNs."""

from __future__ import annotations

import os
import re
import threading
import time
from datetime import UTC, datetime

__all__ = ["format_iso", "new_event_id", "new_memory_id", "parse_iso", "still_id", "to_utc",
           "utcnow"]

#: ISO 8601 in its extended form (2026-04-01T12:00:00Z) or its basic one
#: (20260401T120000Z), each whole: the two are not mixed within a date or a time.
_ISO = re.compile(
    r"^(?:\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?"
    r"|\d{8}(?:T\d{4}(?:\d{2}(?:\.\d{1,9})?)?)?)(?:Z|[+-]\d{2}:?\d{2})?$"
)
_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def utcnow() -> datetime:
    """The current time, timezone-aware UTC, truncated to microseconds."""
    return datetime.now(UTC)


def to_utc(value: datetime) -> datetime:
    """An aware UTC datetime; a naive one is taken to be UTC already. ValueError when
    the time in UTC is outside the years 1-9999.

    >>> from datetime import timedelta, timezone
    >>> to_utc(datetime(2026, 7, 1, 9, 30, tzinfo=timezone(timedelta(hours=1)))).isoformat()
    '2026-07-01T08:30:00+00:00'
    >>> to_utc(datetime(2026, 7, 1, 9, 30)).isoformat()
    '2026-07-01T09:30:00+00:00'
    """
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:00-05:00 is in the year 10000 in UTC
        raise ValueError(f"{value.isoformat()} falls outside the years 1-9999 in UTC") from None


def parse_iso(text: str) -> datetime:
    """Parse an ISO 8601 timestamp (``Z`` or offset; a bare date is midnight UTC).

    Raises ``ValueError`` with the offending text when it is not a timestamp.

    >>> parse_iso("2026-06-06T21:49:57.806123456+01:00").isoformat()
    '2026-06-06T20:49:57.806123+00:00'
    >>> parse_iso("2026-06-06").isoformat()
    '2026-06-06T00:00:00+00:00'
    >>> parse_iso("20260401T120000Z").isoformat(), parse_iso("20260401").isoformat()
    ('2026-04-01T12:00:00+00:00', '2026-04-01T00:00:00+00:00')
    >>> parse_iso("yesterday")
    Traceback (most recent call last):
    ...
    ValueError: not an ISO 8601 timestamp: 'yesterday'
    """
    if not isinstance(text, str) or not _ISO.match(text.strip()):
        raise ValueError(f"not an ISO 8601 timestamp: {text!r}")
    s = text.strip().replace("Z", "+00:00")
    # Python accepts at most 6 fractional digits: trim nanoseconds.
    s = re.sub(r"(\.\d{6})\d+", r"\1", s)
    try:
        value = datetime.fromisoformat(s)
    except ValueError as exc:
        raise ValueError(f"not an ISO 8601 timestamp: {text!r}") from exc
    return to_utc(value)


def format_iso(value: datetime) -> str:
    """``2026-06-06T21:49:57.806Z``: UTC, milliseconds when present, ``Z`` suffix.

    >>> format_iso(datetime(2026, 6, 6, 21, 49, 57, 806000, tzinfo=UTC))
    '2026-06-06T21:49:57.806Z'
    >>> format_iso(datetime(2026, 6, 6, 21, 49, 57, 806001)), format_iso(parse_iso("2026-06-06"))
    ('2026-06-06T21:49:57.806001Z', '2026-06-06T00:00:00Z')

    The year has four digits, as ISO 8601 wants (``strftime`` writes year 1 as ``1``):

    >>> format_iso(parse_iso("0001-01-01T00:00:00Z"))
    '0001-01-01T00:00:00Z'
    """
    value = to_utc(value)
    stamp = (f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:"
             f"{value.minute:02d}:{value.second:02d}")
    if value.microsecond:
        if value.microsecond % 1000 == 0:
            return f"{stamp}.{value.microsecond // 1000:03d}Z"
        return f"{stamp}.{value.microsecond:06d}Z"
    return f"{stamp}Z"


_SHIFTS = tuple(range(125, -1, -5))


_last_token = [0]
_token_lock = threading.Lock()


def _sortable_token() -> str:
    """26 characters: 48 bits of milliseconds then 80 random bits (ULID layout), each
    token of a process above the one before (ULID's monotonic rule: within one
    millisecond the random part counts up), so a write that makes two events in a row
    lists them in that order."""
    number = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    with _token_lock:
        if number <= _last_token[0]:
            number = _last_token[0] + 1
        _last_token[0] = number
    return "".join([_CROCKFORD[(number >> s) & 31] for s in _SHIFTS])


def new_memory_id() -> str:
    """A fresh memory id, ``urn:graphmem:<ulid>``; ids sort by creation time.

    >>> first = new_memory_id()
    >>> time.sleep(0.002)
    >>> second = new_memory_id()
    >>> first.startswith("urn:graphmem:"), len(first), first < second
    (True, 39, True)
    """
    return "urn:graphmem:" + _sortable_token()


def still_id(memory_id: str) -> str:
    """The id of the memory of what a correction left true of the statement
    ``memory_id`` (``still_true``): one a statement, found from it (forget takes it
    along, and recall does not put the correction before it).

    >>> still_id("urn:graphmem:01j")
    'urn:graphmem:01j/still'
    """
    return f"{memory_id}/still"


def new_event_id(at: datetime) -> str:
    """A lifecycle event id in the archivist's style: ``evt-2026-04-04-<token>``.

    >>> new_event_id(datetime(2026, 4, 4, 23, 30, tzinfo=UTC))[:15]
    'evt-2026-04-04-'
    """
    return f"evt-{to_utc(at):%Y-%m-%d}-{_sortable_token()}"


def new_event_ids(at: datetime, n: int) -> list[str]:
    """``n`` event ids of one day at once (a lifecycle run stamps thousands).

    >>> ids = new_event_ids(datetime(2026, 4, 4, tzinfo=UTC), 3)
    >>> len(set(ids)), ids[0][:15]
    (3, 'evt-2026-04-04-')
    """
    day = f"evt-{to_utc(at):%Y-%m-%d}-"
    return [day + _sortable_token() for _ in range(n)]
