"""Extraction quality and cost on the hand-labelled set: ``python -m eval.kg_extraction``.

Prints precision, recall and F1 of the deterministic extraction (``graphmem.algorithms``) on
``tests/data/kg_labelled.jsonl``: entities (typed, untyped, per type), facts (strict and with
a lenient object match, per predicate) and time expressions (found, and found with the exact
window), for all rows and per source; then texts per second.

The set: 127 texts, 62 adapted from the sample corpus (``ingest/samples``; relative times and
first-person forms added to some) and 65 written as personal dialogue; none from a benchmark.
Each row has a reference time ``now``, an optional ``speaker``, and gold labels written by
hand from this guideline, not from the extractor's output:

- entities: names of people, places, organisations, products (software, devices, services,
  brands and named projects, with the version written next to them: "PostgreSQL 16"), events
  (occasions: wedding, conference, birthday party, a named race or holiday) and other proper
  names (languages, pets, titles); not pronouns, common nouns, generic acronyms (API, CI,
  NAS), units or dates. Compared by normal form (``normalize``), once per text.
- facts: what the text states, in the knowledge graph's predicates, whatever the
  wording ("formats Python with ruff": uses ruff); a first-person subject is the speaker;
  objects as written without determiners; nothing for questions, plans or negations.
- times: expressions naming calendar time (not clock times alone, durations or recurrences),
  resolved by hand to [start, end) against ``now``; ambiguous forms ("next Friday", "in May")
  follow the conventions documented in ``parse_times``. A prediction counts when its span
  overlaps the gold one and, for "resolved", its window is exactly the gold window.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphmem.algorithms import (
    RELATION_PREDICATES,
    Fact,
    Mention,
    TimeMention,
    extract_facts,
    extract_mentions,
    normalize,
    parse_times,
)

__all__ = ["DEFAULT", "Prediction", "Report", "Score", "evaluate", "load", "main", "predict",
           "split", "throughput"]

DEFAULT = Path(__file__).resolve().parents[1] / "tests" / "data" / "kg_labelled.jsonl"


@dataclass
class Score:
    """Counts of one comparison and the metrics they give."""

    tp: int = 0
    predicted: int = 0
    gold: int = 0

    def add(self, tp: int, predicted: int, gold: int) -> None:
        self.tp += tp
        self.predicted += predicted
        self.gold += gold

    @property
    def precision(self) -> float:
        """Share of predictions that are right (1.0 when nothing was predicted).

        >>> Score(3, 4, 6).precision, Score(0, 0, 2).precision
        (0.75, 1.0)
        """
        return self.tp / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        """Share of gold labels found (1.0 when there are none).

        >>> Score(3, 4, 6).recall
        0.5
        """
        return self.tp / self.gold if self.gold else 1.0

    @property
    def f1(self) -> float:
        """Harmonic mean of precision and recall.

        >>> Score(3, 4, 6).f1
        0.6
        """
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass
class Report:
    """Scores by part ("entities", "entities untyped", "facts", "facts lenient", "times
    found", "times resolved") and by part and detail (entity type, predicate, source)."""

    parts: dict[str, Score] = field(default_factory=dict)
    details: dict[tuple[str, str], Score] = field(default_factory=dict)

    def score(self, part: str, detail: str | None = None) -> Score:
        if detail is None:
            return self.parts.setdefault(part, Score())
        return self.details.setdefault((part, detail), Score())


@dataclass(frozen=True)
class Prediction:
    mentions: list[Mention]
    facts: list[Fact]
    times: list[TimeMention]


def load(path: Path = DEFAULT) -> list[dict[str, Any]]:
    """The labelled rows, one JSON object a line."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def split(rows: list[dict[str, Any]], part: str) -> list[dict[str, Any]]:
    """``dev`` (odd lines, 1st, 3rd ...: the rows whose errors were read while fixing rules),
    ``test`` (even lines: held out) or ``all``."""
    if part == "all":
        return rows
    return rows[0 if part == "dev" else 1::2]


def _time(text: str) -> datetime:
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def predict(row: dict[str, Any]) -> Prediction:
    """The rule extraction of one row, the way ingest would run it: times once, then
    mentions and facts reusing them."""
    text, now = row["text"], _time(row["now"])
    times = parse_times(text, now)
    mentions = extract_mentions(text, now=now, times=times)
    facts = extract_facts(text, speaker=row.get("speaker"), now=now, mentions=mentions,
                          times=times)
    return Prediction(mentions, facts, times)


def _group(predicate: str) -> str:
    return "relation (family, social)" if predicate in RELATION_PREDICATES else predicate


def _lenient(a: str, b: str) -> bool:
    """Objects that agree up to extra words ("camper van" and "van")."""
    x, y = set(a.split()), set(b.split())
    return bool(x and y) and (x <= y or y <= x)


def _count_times(report: Report, text: str, gold: Sequence[Sequence[str]],
                 found: Sequence[TimeMention], source: str) -> None:
    spans = []
    for surface, start, end in gold:
        at = text.find(surface)
        if at < 0:
            raise ValueError(f"gold time {surface!r} is not in {text!r}")
        spans.append((at, at + len(surface), _time(start), _time(end)))
    hit = [next((g for g in spans if t.start < g[1] and g[0] < t.end), None) for t in found]
    detected = sum(g is not None for g in hit)
    resolved = sum(g is not None and (t.window.start, t.window.end) == (g[2], g[3])
                   for t, g in zip(found, hit, strict=True))
    for detail in (None, source):
        report.score("times found", detail).add(detected, len(found), len(spans))
        report.score("times resolved", detail).add(resolved, len(found), len(spans))


def evaluate(rows: Iterable[dict[str, Any]]) -> Report:
    """Scores of the rule extraction on labelled rows.

    Examples
    --------
    >>> row = {"text": "Ada moved to Oslo yesterday.", "now": "2024-03-14T12:00:00Z",
    ...        "speaker": None, "source": "test", "entities": [["Ada", "person"],
    ...        ["Oslo", "place"]], "facts": [["ada", "lives_in", "oslo"]],
    ...        "times": [["yesterday", "2024-03-13", "2024-03-14"]]}
    >>> report = evaluate([row])
    >>> s = report.score("entities")
    >>> s.tp, s.predicted, s.gold
    (2, 2, 2)
    >>> s = report.score("facts")      # moved_to is predicted too, not labelled
    >>> s.tp, s.predicted, s.gold
    (1, 2, 1)
    >>> report.score("times resolved").precision
    1.0
    """
    report = Report()
    for row in rows:
        predicted = predict(row)
        source = row["source"]
        gold_entities = {(normalize(s), t) for s, t in row["entities"]}
        found_entities = {(m.normalized, m.type) for m in predicted.mentions
                          if m.type != "date"}
        for detail in (None, source):
            report.score("entities", detail).add(len(gold_entities & found_entities),
                                                 len(found_entities), len(gold_entities))
        untyped_gold, untyped_found = {n for n, _ in gold_entities}, {n for n, _ in
                                                                      found_entities}
        report.score("entities untyped").add(len(untyped_gold & untyped_found),
                                             len(untyped_found), len(untyped_gold))
        for kind in {t for _, t in gold_entities | found_entities}:
            g = {e for e in gold_entities if e[1] == kind}
            f = {e for e in found_entities if e[1] == kind}
            report.score("entities", kind).add(len(g & f), len(f), len(g))
        gold_facts = {(normalize(s), p, normalize(o)) for s, p, o in row["facts"]}
        found_facts = {(normalize(f.subject), f.predicate, normalize(f.object))
                       for f in predicted.facts}
        for detail in (None, source):
            report.score("facts", detail).add(len(gold_facts & found_facts), len(found_facts),
                                              len(gold_facts))
        lenient = sum(any(g[:2] == f[:2] and _lenient(g[2], f[2]) for g in gold_facts)
                      for f in found_facts)
        lenient_recall = sum(any(g[:2] == f[:2] and _lenient(g[2], f[2]) for f in found_facts)
                             for g in gold_facts)
        report.score("facts lenient").add(lenient, len(found_facts), len(gold_facts))
        report.score("facts lenient recall").add(lenient_recall, len(found_facts),
                                                 len(gold_facts))
        for group in {_group(p) for _, p, _ in gold_facts | found_facts}:
            gold_group = {x for x in gold_facts if _group(x[1]) == group}
            found_group = {x for x in found_facts if _group(x[1]) == group}
            report.score("facts", group).add(len(gold_group & found_group), len(found_group),
                                             len(gold_group))
        _count_times(report, row["text"], row["times"], predicted.times, source)
    return report


def throughput(texts: Sequence[str], *, now: datetime, repeat: int = 5) -> float:
    """Texts per second of the whole rule extraction (times, mentions, facts)."""
    start = time.perf_counter()
    for _ in range(repeat):
        for text in texts:
            times = parse_times(text, now)
            mentions = extract_mentions(text, now=now, times=times)
            extract_facts(text, now=now, mentions=mentions, times=times)
    return repeat * len(texts) / (time.perf_counter() - start)


def _line(name: str, s: Score) -> str:
    return (f"  {name:<28} {s.precision:6.3f} {s.recall:6.3f} {s.f1:6.3f}   "
            f"{s.tp:4d} {s.predicted:5d} {s.gold:5d}")


def _table(report: Report) -> list[str]:
    out = [f"  {'':<28} {'P':>6} {'R':>6} {'F1':>6}   {'tp':>4} {'pred':>5} {'gold':>5}"]
    for part in ("entities", "entities untyped", "facts", "facts lenient", "times found",
                 "times resolved"):
        out.append(_line(part, report.score(part)))
        for (p, detail), score in sorted(report.details.items()):
            if p == part:
                out.append(_line(f"  {detail}", score))
    recall = report.score("facts lenient recall").recall
    out.append(f"  (facts lenient: recall {recall:.3f} counts a gold fact found when a "
               "predicted object agrees up to extra words)")
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=5, help="timing passes over the texts")
    parser.add_argument("--split", choices=("all", "dev", "test"), default="all",
                        help="dev: odd lines (looked at while fixing rules); test: even lines "
                        "(held out)")
    args = parser.parse_args(argv)
    rows = split(load(args.file), args.split)
    print(f"{args.file.name} ({args.split}): {len(rows)} texts "
          f"({sum(r['source'] == 'sample' for r in rows)} from the sample corpus, "
          f"{sum(r['source'] == 'synthetic' for r in rows)} synthetic dialogue)")
    print("\n".join(_table(evaluate(rows))))
    texts = [r["text"] for r in rows]
    sample = Path(__file__).resolve().parents[1] / "ingest" / "samples" / \
        "agent_memories.ump.json"
    corpus = [r["body"]["text"] for r in json.loads(sample.read_text())]
    now = datetime(2026, 7, 15, tzinfo=UTC)
    throughput(texts[:20], now=now, repeat=1)  # warm up
    for name, batch in (("labelled texts", texts), ("sample corpus", corpus)):
        rate = throughput(batch, now=now, repeat=args.repeat)
        chars = sum(map(len, batch)) / len(batch)
        print(f"  speed, {name} ({len(batch)}, {chars:.0f} chars avg): {rate:7.0f} texts/s, "
              f"{1e6 / rate:6.0f} µs/text")


if __name__ == "__main__":
    main()
