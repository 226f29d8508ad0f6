"""graphmem's time parser beside ``dateparser`` on the dates of LoCoMo.

``eval/data/locomo_times.json`` holds 45 time expressions sampled from the turns of LoCoMo
conversations 1-5 (``random.seed(34)``, 45 of the 231 matches of a pattern of relative dates:
"yesterday", "last week", "N years ago", "next month" ...) and the first session date of each
conversation. Each expression's reading was chosen by hand ("the calendar week before the
session's", "the day before", "not a time": "feels like just yesterday"), and its gold window
computed from the reading and the session's date, with these conventions: weeks are Monday
to Sunday, "last weekend" is the Saturday and Sunday before the session, "last Friday" the
latest Friday before it, months, years and seasons (meteorological) are calendar ones.

An expression counts as read right when the parser finds something overlapping its
characters and what it resolves lies inside the gold window: graphmem's window is inside
it (so as precise or more), dateparser's point in time (it gives one) falls in it, which is
the more lenient test. An expression with no gold counts as right when nothing is found.

Run: ``python -m eval.time_parsers [locomo10.json]`` (needs ``dateparser``; without it only
graphmem's figure is printed).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from graphmem.algorithms import parse_times
from ingest.locomo import Conversation, load_locomo

__all__ = ["Labelled", "graphmem_reading", "labelled", "main", "score"]

LABELS = Path(__file__).parent / "data" / "locomo_times.json"

#: What one parser makes of one text: (start, end) characters and the gold test's input,
#: a window (start day, end day) or a point (a day, ``end`` None).
Reading = list[tuple[int, int, date, date | None]]


@dataclass(frozen=True)
class Labelled:
    text: str
    now: datetime
    start: int
    end: int
    gold: tuple[date, date] | None
    reading: str


def labelled(conversations: Sequence[Conversation], path: Path = LABELS) -> list[Labelled]:
    """The labelled expressions, with their texts read from the conversations."""
    by_id = {c.sample_id: c for c in conversations}
    out = []
    for item in json.loads(path.read_text(encoding="utf-8"))["items"]:
        conv = by_id[item["sample_id"]]
        if "dia_id" in item:
            session = next(s for s in conv.sessions
                           if any(t.dia_id == item["dia_id"] for t in s.turns))
            text = next(t.text for t in session.turns if t.dia_id == item["dia_id"])
        else:
            session = next(s for s in conv.sessions if s.index == item["session"])
            text = session.date_text
        assert session.date is not None
        start = text.find(item["surface"])
        gold = item["gold"]
        out.append(Labelled(text, session.date, start, start + len(item["surface"]),
                            (date.fromisoformat(gold[0]), date.fromisoformat(gold[1]))
                            if gold else None, item["reading"]))
    return out


def graphmem_reading(text: str, now: datetime) -> Reading:
    return [(t.start, t.end, t.window.start.date(),
             (t.window.end - _EPSILON).date()) for t in parse_times(text, now)]


_EPSILON = datetime(2000, 1, 2) - datetime(2000, 1, 1, 23, 59, 59)  # one second


def dateparser_reading(text: str, now: datetime) -> Reading:
    from dateparser.search import search_dates

    found = search_dates(text, languages=["en"],
                         settings={"RELATIVE_BASE": now.replace(tzinfo=None),
                                   "PREFER_DATES_FROM": "past"}) or []
    out: Reading = []
    cursor = 0
    for surface, when in found:
        start = text.find(surface, cursor)
        if start < 0:
            continue
        cursor = start + len(surface)
        out.append((start, cursor, when.date(), None))
    return out


def score(items: Sequence[Labelled], parse: Callable[[str, datetime], Reading]
          ) -> dict[str, Any]:
    """Share of expressions read right (see the module docstring), and per reading."""
    right: list[bool] = []
    by_reading: dict[str, list[bool]] = {}
    for item in items:
        overlapping = [r for r in parse(item.text, item.now)
                       if r[0] < item.end and item.start < r[1]]
        if item.gold is None:
            ok = not overlapping
        else:
            low, high = item.gold  # [low, high)
            ok = any(low <= first < high and (last is None or last < high)
                     for _, _, first, last in overlapping)
        right.append(ok)
        by_reading.setdefault(item.reading.rstrip("+-0123456789"), []).append(ok)
    return {"accuracy": sum(right) / len(right), "n": len(right),
            "by_reading": {k: f"{sum(v)}/{len(v)}" for k, v in sorted(by_reading.items())}}


def main(argv: Sequence[str] = ()) -> int:
    items = labelled(load_locomo(argv[0] if argv else None))
    parsers: dict[str, Callable[[str, datetime], Reading]] = {"graphmem": graphmem_reading}
    try:
        import dateparser  # noqa: F401
        parsers["dateparser"] = dateparser_reading
    except ImportError:
        print("dateparser is not installed: graphmem's parser alone")
    for name, parse in parsers.items():
        result = score(items, parse)
        print(f"{name:<10} {result['accuracy']:.3f} of {result['n']}  {result['by_reading']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
