"""Extraction time on hostile texts, next to plain text of the same length:
``python -m eval.bench_extract``.

Each family repeats a short unit that once made one pass of the extraction rules quadratic
(or worse): a run of "!" (the sentence splitter), "was at " (the words before each verb),
"Aa-" (product version names), "a1", 30 digits and "_" (codes), and others. For each family
and for plain prose, the table gives the time to extract 10k, 50k and 200k characters (every
pass a write or a question runs: times, mentions, facts, the rule extractor's sentences and
entities, the question's window) and its ratio to plain text of the same length.

``--forget`` adds a second table: forget's matcher (``Mentions``, which finds a forgotten
text in what its neighbours keep and in a sitting imported again) seeking half of each text
with one word changed at its end, as a sentence (``anywhere``) and as whole words, in the
whole text: the near miss a regular expression tried again at every sentence start.

Times are CPU seconds of this process (other processes' load moves them little), the best of
``--repeat`` runs. A run stopped at ``--timeout`` seconds shows as ``>T`` and the family's
larger sizes are skipped (``-``): the rules this replaced took minutes on 50k characters.
"""

from __future__ import annotations

import argparse
import signal
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from types import FrameType

from graphmem.algorithms import (
    Mentions,
    RuleExtractor,
    Statement,
    assistant_statements,
    correction_target,
    extract,
    extract_entities,
    is_correction,
    is_temporal_question,
    query_window,
    redoes,
)

NOW = datetime(2023, 5, 10, 12, 0, tzinfo=UTC)
PLAIN = ("Caroline moved to Lisbon in March 2022 and works at Acme Inc. Her sister Anna "
         "visited last week; they went to a jazz concert on Friday. Mel said she bought a new "
         "iPhone 15 and started pottery classes two weeks ago!\n")
#: name -> (the repeated unit, the pass it attacked)
FAMILIES: dict[str, tuple[str, str]] = {
    "run of '!'": ("!", "sentence splitter"),
    "was at": ("was at ", "words before each verb"),
    "Aa-": ("Aa-", "product version names"),
    "near-miss code": ("a1" + "1" * 30 + "_ ", "codes (exponential)"),
    "dates between verbs": ("Anna married Bob 2020 ", "times joined to verbs"),
    "years": ("2020 ", "overlapping time expressions"),
    "event nouns": ("party ", "event modifiers"),
    "relation nouns": ("my sister ", "owner before a relation"),
    "job cues": ("job at Acme ", "words before a job"),
    "pronouns": ("She was at Paris. ", "whom 'she' means"),
    "sentences": ("A. ", "speaker and times of each sentence"),
    "wiki links": ("[wiki/", "wiki page names"),
    "month days": ("sept 1 ", "numbers beside dates in a correction"),
    "capitalised words": ("A ", "a name's leading words"),
}
SIZES = (10_000, 50_000, 200_000)


def repeat(unit: str, size: int) -> str:
    """``unit`` repeated to exactly ``size`` characters."""
    return (unit * (size // len(unit) + 1))[:size]


def extract_all(text: str) -> None:
    """Every extraction pass a write or a question runs over a text."""
    extract(text, at=NOW, speaker="Caroline")
    extract_entities(text)
    RuleExtractor().extract(text)
    query_window(text, NOW)
    is_temporal_question(text)
    # the conversation gate: what an assistant's answer keeps, and a correction's target
    assistant_statements(text, asked="what should we do?")
    is_correction(text)
    redoes(text)
    correction_target(text, [Statement("earlier", text)], redo=True)


def match_forgotten(text: str) -> None:
    """Forget's matcher seeking a near miss of the first half of ``text`` in all of it, as a
    sentence and as whole words."""
    sought = text[:len(text) // 2].rstrip() + " zq."
    for anywhere in (True, False):
        Mentions([sought], anywhere=anywhere).scrub(text)


class _Stopped(Exception):
    pass


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stopped


def cpu_seconds(text: str, timeout: float, work: Callable[[str], None] = extract_all
                ) -> float | None:
    """CPU seconds of ``work`` (extraction) on ``text``; None when it took more than
    ``timeout`` (the regex engine checks for signals, so even one long match is stopped)."""
    previous = signal.signal(signal.SIGPROF, _stop)
    signal.setitimer(signal.ITIMER_PROF, timeout)
    start = time.process_time()
    try:
        work(text)
        return time.process_time() - start
    except _Stopped:
        return None
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def measure(unit: str, sizes: Sequence[int], repeats: int, timeout: float,
            work: Callable[[str], None] = extract_all) -> list[float | str | None]:
    """Best CPU seconds per size; None past the timeout, "-" for sizes skipped after it."""
    out: list[float | str | None] = []
    for size in sizes:
        if out and out[-1] in (None, "-"):
            out.append("-")
            continue
        runs = [cpu_seconds(repeat(unit, size), timeout, work) for _ in range(repeats)]
        out.append(None if None in runs else min(r for r in runs if r is not None))
    return out


def _cell(value: float | str | None, timeout: float) -> str:
    if value is None:
        return f">{timeout:.0f}"
    return value if isinstance(value, str) else f"{value:.2f}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES),
                        help="text lengths in characters, comma-separated")
    parser.add_argument("--families", default=",".join(FAMILIES),
                        help="families to run, comma-separated (plain text always runs)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell (the best)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="CPU seconds after which a run is stopped")
    parser.add_argument("--forget", action="store_true",
                        help="also time forget's matcher on each family (a second table)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    chosen = [f for f in args.families.split(",") if f]
    unknown = set(chosen) - set(FAMILIES)
    if unknown:
        parser.error(f"unknown families {sorted(unknown)}; known: {', '.join(FAMILIES)}")
    header = "".join(f"{f'{s // 1000}k s':>10}{'x plain':>9}" for s in sizes)
    tables = [("extraction", extract_all)]
    if args.forget:
        tables.append(("forget's matcher", match_forgotten))
    for title, work in tables:
        print(f"{title} CPU seconds (best of {args.repeat}) and the ratio to plain text of "
              "the same length")
        print(f"{'family':<22}{'attacks':<36}{header}")
        plain = measure(PLAIN, sizes, args.repeat, args.timeout, work)
        print(_row("plain text", "", plain, plain, args.timeout), flush=True)
        for name in chosen:
            unit, attacks = FAMILIES[name]
            values = measure(unit, sizes, args.repeat, args.timeout, work)
            print(_row(name, attacks, values, plain, args.timeout), flush=True)


def _row(name: str, attacks: str, values: Sequence[float | str | None],
         plain: Sequence[float | str | None], timeout: float) -> str:
    cells = ""
    for value, base in zip(values, plain, strict=True):
        ratio = f"{value / base:.1f}" if isinstance(value, float) and \
            isinstance(base, float) and base > 0 else "-"
        cells += f"{_cell(value, timeout):>10}{ratio:>9}"
    return f"{name:<22}{attacks:<36}{cells}"


if __name__ == "__main__":
    main()
