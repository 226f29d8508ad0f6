"""Calendar arithmetic for the time parser: time windows (half-open intervals with a
granularity), days, ISO weeks, weekends, months, seasons, years, and the tense of a sentence."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Literal

from ._scan import search

__all__ = ["Granularity", "Tense", "TimeWindow", "day", "decade", "month", "month_shift",
           "season", "season_of", "tense", "week", "weekend", "year"]

Granularity = Literal["minute", "hour", "day", "week", "weekend", "month", "season", "year",
                      "decade"]
Tense = Literal["past", "present", "future"]

#: Meteorological seasons of the northern hemisphere: (first month, months long).
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A half-open interval of time ``[start, end)`` and how precise it is.

    ``start`` and ``end`` are timezone-aware, in the timezone of the reference time they were
    resolved against (UTC for absolute dates).

    Examples
    --------
    >>> w = month(2023, 5, UTC)
    >>> w.label, w.contains(datetime(2023, 5, 31, 23, 59, tzinfo=UTC)), w.granularity
    ('2023-05', True, 'month')
    >>> w.overlaps(day(date(2023, 6, 1), UTC))
    False
    """

    start: datetime
    end: datetime
    granularity: Granularity

    def contains(self, when: datetime) -> bool:
        """Whether ``when`` (aware; a naive time is taken as UTC) lies in the window."""
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return self.start <= when < self.end

    def overlaps(self, other: TimeWindow) -> bool:
        """Whether the two windows share any instant."""
        return self.start < other.end and other.start < self.end

    @property
    def label(self) -> str:
        """A short name: ``2023-05-08``, ``2023-W19``, ``2023-05``, ``2023``, or ``start/end``."""
        s = self.start
        if self.granularity == "day":
            return s.date().isoformat()
        if self.granularity == "month" and self.end == _month_start(*month_shift(s.year,
                                                                                 s.month, 1),
                                                                    s.tzinfo or UTC):
            return f"{s.year:04d}-{s.month:02d}"
        if self.granularity == "year" and self.end.year == s.year + 1 and s.month == 1:
            return f"{s.year:04d}"
        if self.granularity == "week" and self.end - s == timedelta(days=7):
            iso = s.isocalendar()
            return f"{iso.year:04d}-W{iso.week:02d}"
        return f"{s.isoformat()}/{self.end.isoformat()}"


def _at(d: date, tz: tzinfo) -> datetime:
    return datetime.combine(d, time(0), tzinfo=tz)


def _month_start(y: int, m: int, tz: tzinfo) -> datetime:
    return datetime(y, m, 1, tzinfo=tz)


def month_shift(y: int, m: int, k: int) -> tuple[int, int]:
    """The month ``k`` months after (before, when negative) ``y``-``m``.

    >>> month_shift(2023, 1, -1), month_shift(2023, 11, 3)
    ((2022, 12), (2024, 2))
    """
    index = y * 12 + (m - 1) + k
    return index // 12, index % 12 + 1


def day(d: date, tz: tzinfo) -> TimeWindow:
    """The calendar day ``d``."""
    return TimeWindow(_at(d, tz), _at(d + timedelta(days=1), tz), "day")


def week(d: date, tz: tzinfo) -> TimeWindow:
    """The ISO week (Monday to Sunday) that holds ``d``.

    >>> week(date(2023, 5, 10), UTC).label
    '2023-W19'
    """
    monday = d - timedelta(days=d.weekday())
    return TimeWindow(_at(monday, tz), _at(monday + timedelta(days=7), tz), "week")


def weekend(d: date, tz: tzinfo) -> TimeWindow:
    """Saturday and Sunday of the ISO week that holds ``d``.

    >>> w = weekend(date(2023, 5, 10), UTC)
    >>> w.start.date().isoformat(), w.end.date().isoformat()
    ('2023-05-13', '2023-05-15')
    """
    saturday = d - timedelta(days=d.weekday()) + timedelta(days=5)
    return TimeWindow(_at(saturday, tz), _at(saturday + timedelta(days=2), tz), "weekend")


def month(y: int, m: int, tz: tzinfo) -> TimeWindow:
    """The calendar month ``m`` of year ``y``."""
    ny, nm = month_shift(y, m, 1)
    return TimeWindow(_month_start(y, m, tz), _month_start(ny, nm, tz), "month")


def year(y: int, tz: tzinfo) -> TimeWindow:
    """The calendar year ``y``."""
    return TimeWindow(datetime(y, 1, 1, tzinfo=tz), datetime(y + 1, 1, 1, tzinfo=tz), "year")


def decade(first: int, tz: tzinfo) -> TimeWindow:
    """The ten years from ``first`` (1990 for "the 90s")."""
    return TimeWindow(datetime(first, 1, 1, tzinfo=tz), datetime(first + 10, 1, 1, tzinfo=tz),
                      "decade")


def season(name: str, y: int, tz: tzinfo) -> TimeWindow:
    """A meteorological season of the northern hemisphere; winter ``y`` starts in December
    of ``y``.

    >>> w = season("winter", 2022, UTC)
    >>> w.start.date().isoformat(), w.end.date().isoformat()
    ('2022-12-01', '2023-03-01')
    """
    first = _SEASONS[name]
    ey, em = month_shift(y, first, 3)
    return TimeWindow(_month_start(y, first, tz), _month_start(ey, em, tz), "season")


def season_of(name: str, now: datetime, which: str) -> TimeWindow:
    """The instance of a season relative to ``now``: ``last`` (the latest one over),
    ``next`` (the first not begun), ``this`` (the one under way, else the coming one),
    ``past`` (the latest begun) or ``future`` (the first not over)."""
    tz = now.tzinfo or UTC
    candidates = [season(name, y, tz) for y in range(now.year - 2, now.year + 2)]
    if which == "last":
        return [w for w in candidates if w.end <= now][-1]
    if which == "next":
        return next(w for w in candidates if w.start > now)
    if which == "this":
        current = [w for w in candidates if w.contains(now)]
        return current[0] if current else next(w for w in candidates if w.start > now)
    if which == "past":
        return [w for w in candidates if w.start <= now][-1]
    return next(w for w in candidates if w.end > now)


_FUTURE = re.compile(
    r"\b(?:will|won't|shall|gonna|going\s+to|plan(?:s|ning)?\s+to|planning|intend(?:s)?\s+to|"
    r"hope\s+to|hoping\s+to|want(?:s)?\s+to|can't\s+wait|looking\s+forward|upcoming|"
    r"tomorrow|next|coming\s+up|soon|is\s+due|are\s+due|scheduled|about\s+to)\b|'ll\b",
    re.IGNORECASE)
_PAST = re.compile(
    r"\b(?:was|were|did|didn't|had|wasn't|weren't|ago|yesterday|last|went|got|saw|took|made|"
    r"met|bought|came|gave|told|said|found|left|felt|thought|ran|began|won|lost|ate|drove|"
    r"flew|wrote|spent|sent|kept|brought|held|heard|paid|sat|stood|taught|caught|became|knew|"
    r"grew|threw|rode|sang|swam|wore|fell|broke|chose|forgot|hung|led|lit|slept|spoke|stole|"
    r"understood|woke|(?!(?:excited|interested|tired|bored|scared|worried|supposed|used|based|"
    r"located|called|named|related|married|engaged|retired|inspired|amazed|pleased|thrilled|"
    r"obsessed|stressed|overwhelmed|prepared|focused|involved|dedicated|need|feed|seed|speed|"
    r"bed|red|shed|wed|ted|bled|fed|led|sled|bred|ed)\b)[a-z]{2,}ed)\b",
    re.IGNORECASE)


def tense(sentence: str) -> Tense:
    """Past, present or future, from auxiliaries, past forms and time words.

    A past marker ("went", "-ed", "ago", "last") wins; else a future marker ("will", "going
    to", "next"); else present. One tense for the whole sentence.

    Examples
    --------
    >>> tense("I went hiking in May"), tense("I'm going to Paris in May"), tense("I love May")
    ('past', 'future', 'present')
    >>> tense("I'm excited for the conference")
    'present'
    """
    if search(_PAST, sentence):
        return "past"
    if search(_FUTURE, sentence):
        return "future"
    return "present"
