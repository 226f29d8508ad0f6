"""graphmem's time parser beside ``dateparser`` on the dates of LoCoMo and LongMemEval.

Three hand-labelled sets of relative time expressions, their texts read from the data files
in place:

- ``eval/data/locomo_times.json``: 45 expressions sampled from the turns of LoCoMo
  conversations 1-5 (``random.seed(34)``, 45 of the 231 matches of a pattern of relative
  dates: "yesterday", "last week", "N years ago", "next month" ...) and the first session
  date of each conversation. graphmem's parser was developed with these in view.
- ``eval/data/locomo_test_times.json`` (conversations 6-10) and
  ``eval/data/longmemeval_times.json`` (the user turns of the LongMemEval development
  split): 45 and 43, sampled the same way (the files' ``about`` says how) and labelled by
  someone who had read neither parser and ran neither. Neither parser was changed after
  these were labelled.

Each expression's reading was chosen by hand ("the calendar week before the session's",
"the day before", "not a time": "feels like just yesterday"), and its gold window computed
from the reading and the session's date, with these conventions: weeks are Monday to Sunday,
"last weekend" is the Saturday and Sunday before the session, "last Friday" the latest Friday
before it, months, years and seasons (meteorological) are calendar ones (the files' ``about``
gives the rest).

An expression counts as read right when the parser finds something overlapping its
characters and what it resolves lies inside the gold window: graphmem's window is inside
it (so as precise or more), dateparser's point in time (it gives one) falls in it, which is
the more lenient test. An expression with no gold counts as right when nothing is found.
``both``: graphmem's reading where it finds one, else dateparser's.

Run: ``python -m eval.time_parsers [--set NAME] [--locomo FILE] [--longmemeval FILE]``
(``dateparser`` comes with the ``test`` extra; without it only graphmem's figure is
printed).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from graphmem.algorithms import parse_times
from ingest.locomo import load_locomo
from ingest.longmemeval import load_longmemeval, parse_date

__all__ = ["SETS", "Labelled", "both", "graphmem_reading", "labelled", "main", "score"]

DATA = Path(__file__).parent / "data"
#: name -> (labels file, the data it reads: "locomo" or "longmemeval")
SETS = {"locomo-tune": (DATA / "locomo_times.json", "locomo"),
        "locomo-test": (DATA / "locomo_test_times.json", "locomo"),
        "longmemeval": (DATA / "longmemeval_times.json", "longmemeval")}

#: What one parser makes of one text: (start, end) characters and the gold test's input,
#: a window (start day, end day) or a point (a day, ``end`` None).
Reading = list[tuple[int, int, date, date | None]]
Parser = Callable[[str, datetime], Reading]


@dataclass(frozen=True)
class Labelled:
    text: str
    now: datetime
    start: int
    end: int
    gold: tuple[date, date] | None
    reading: str


def _item(text: str, now: datetime | None, item: Mapping[str, Any], where: str) -> Labelled:
    """One labelled expression: at ``char_offset`` when the item gives it, else the first
    place its ``surface`` occurs."""
    start = item.get("char_offset", text.find(item["surface"]))
    if now is None or start < 0 or not text.startswith(item["surface"], start):
        raise ValueError(f"{where}: {item['surface']!r} not found in its text, or no date")
    gold = item["gold"]
    return Labelled(text, now, start, start + len(item["surface"]),
                    (date.fromisoformat(gold[0]), date.fromisoformat(gold[1]))
                    if gold else None, item["reading"])


def labelled(path: Path, *, locomo: str | Path | None = None,
             longmemeval: str | Path | None = None) -> list[Labelled]:
    """A set's labelled expressions, with their texts read from the data file they name."""
    items = json.loads(path.read_text(encoding="utf-8"))["items"]
    if items and "session_id" in items[0]:
        return list(_longmemeval_items(items, longmemeval, path.name))
    by_id = {c.sample_id: c for c in load_locomo(locomo)}
    out = []
    for item in items:
        conv = by_id[item["sample_id"]]
        if "dia_id" in item:
            session = next(s for s in conv.sessions
                           if any(t.dia_id == item["dia_id"] for t in s.turns))
            text = next(t.text for t in session.turns if t.dia_id == item["dia_id"])
        else:
            session = next(s for s in conv.sessions if s.index == item["session"])
            text = session.date_text
        out.append(_item(text, session.date, item,
                         f"{path.name}: {item['sample_id']} {item.get('dia_id', '')}"))
    return out


def _longmemeval_items(items: Sequence[Mapping[str, Any]], source: str | Path | None,
                       name: str) -> Iterable[Labelled]:
    wanted = {item["session_id"] for item in items}
    sessions = {s.session_id: s for q in load_longmemeval(source) for s in q.sessions
                if s.session_id in wanted}
    for item in items:
        # a session's date is the item's: the file dates one session differently in
        # different questions' haystacks
        text = str(sessions[item["session_id"]].turns[item["turn"]]["content"])
        yield _item(text, parse_date(item["session_date"]), item,
                    f"{name}: {item['session_id']} turn {item['turn']}")


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


def both(first: Parser, second: Parser) -> Parser:
    """``first``'s readings, and ``second``'s where none of ``first``'s overlaps them."""
    def parse(text: str, now: datetime) -> Reading:
        readings = first(text, now)
        return readings + [r for r in second(text, now)
                           if not any(r[0] < o[1] and o[0] < r[1] for o in readings)]
    return parse


def score(items: Sequence[Labelled], parse: Parser) -> dict[str, Any]:
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
    return {"accuracy": sum(right) / len(right), "right": sum(right), "n": len(right),
            "by_reading": {k: f"{sum(v)}/{len(v)}" for k, v in sorted(by_reading.items())}}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=[*SETS, "all"], default="all")
    parser.add_argument("--locomo", help="locomo10.json (default: $GRAPHMEM_LOCOMO or the "
                        "workspace's copy)")
    parser.add_argument("--longmemeval", help="longmemeval_s (default: $GRAPHMEM_LONGMEMEVAL "
                        "or the workspace's development split)")
    parser.add_argument("--by-reading", action="store_true",
                        help="also print each parser's figure per kind of reading")
    args = parser.parse_args(argv)
    parsers: dict[str, Parser] = {"graphmem": graphmem_reading}
    try:
        import dateparser  # noqa: F401
    except ImportError:
        print("dateparser is not installed: graphmem's parser alone")
    else:
        parsers["dateparser"] = dateparser_reading
        parsers["both"] = both(graphmem_reading, dateparser_reading)
    names = list(SETS) if args.set == "all" else [args.set]
    print(f"{'set':<12} {'n':>3} " + " ".join(f"{p:>10}" for p in parsers))
    details = []
    for name in names:
        items = labelled(SETS[name][0], locomo=args.locomo, longmemeval=args.longmemeval)
        results = {p: score(items, parse) for p, parse in parsers.items()}
        print(f"{name:<12} {len(items):>3} "
              + " ".join(f"{r['accuracy']:>10.3f}" for r in results.values()))
        details += [f"{name:<12} {p:<10} {r['right']}/{r['n']}  {r['by_reading']}"
                    for p, r in results.items()]
    if args.by_reading:
        print("\n" + "\n".join(details))
    return 0


if __name__ == "__main__":
    sys.exit(main())
