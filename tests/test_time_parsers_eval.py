"""The time-parser comparison scores a reading right only inside its gold window."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from eval.time_parsers import SETS, Labelled, both, graphmem_reading, labelled, score
from tests.conftest import need_locomo

NOW = datetime(2023, 8, 9, 20, 6, tzinfo=UTC)  # a Wednesday
TEXT = "Last week was wild; it feels like just yesterday."


def test_a_reading_counts_only_inside_its_gold_window() -> None:
    week = Labelled(TEXT, NOW, 0, 9, (date(2023, 7, 31), date(2023, 8, 7)), "week-1")
    idiom = Labelled(TEXT, NOW, 41, 50, None, "none")
    assert score([week], graphmem_reading)["accuracy"] == 1.0
    shifted = Labelled(TEXT, NOW, 0, 9, (date(2023, 8, 2), date(2023, 8, 9)), "week-1")
    assert score([shifted], graphmem_reading)["accuracy"] == 0.0  # a window across two
    assert score([idiom], graphmem_reading)["accuracy"] == 0.0  # "yesterday" is read
    assert score([week, idiom], lambda text, now: [])["accuracy"] == 0.5
    point = score([week], lambda text, now: [(0, 9, date(2023, 8, 2), None)])
    late = score([week], lambda text, now: [(0, 9, date(2023, 8, 7), None)])
    assert (point["accuracy"], late["accuracy"]) == (1.0, 0.0)


def test_both_takes_the_second_reading_only_where_the_first_has_none() -> None:
    def first(text: str, now: datetime) -> list[tuple[int, int, date, date | None]]:
        return [(0, 9, date(2023, 7, 31), date(2023, 8, 6))]

    def second(text: str, now: datetime) -> list[tuple[int, int, date, date | None]]:
        return [(5, 9, date(2023, 8, 2), None), (41, 50, date(2023, 8, 8), None)]

    assert both(first, second)(TEXT, NOW) == [(0, 9, date(2023, 7, 31), date(2023, 8, 6)),
                                              (41, 50, date(2023, 8, 8), None)]


def _longmemeval_file(path: Path) -> Path:
    session = [{"role": "user", "content": "today I'm tired. I got the bike last week, today."}]
    data = [{"question_id": f"q{n}", "question": "?", "answer": "", "haystack_session_ids":
             ["s1"], "haystack_dates": [date_text], "haystack_sessions": [session],
             "answer_session_ids": ["s1"]}
            for n, date_text in enumerate(["2023/08/09 (Wed) 20:06", "2023/01/02 (Mon) 08:00"])]
    path.write_bytes(gzip.compress(json.dumps(data).encode()))
    return path


def test_a_longmemeval_label_reads_its_turn_at_its_offset_on_its_own_date(
        tmp_path: Path) -> None:
    """The labelled "today" is the second one of the turn (at ``char_offset``), and its
    session is dated as the label says (the file dates a session differently in
    different questions)."""
    source = _longmemeval_file(tmp_path / "lme.json.gz")
    item = {"session_id": "s1", "turn": 0, "session_date": "2023/08/09 (Wed) 20:06",
            "surface": "today", "char_offset": 43, "reading": "day0",
            "gold": ["2023-08-09", "2023-08-10"]}
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"about": "", "items": [item]}), encoding="utf-8")
    [read] = labelled(labels, longmemeval=source)
    assert (read.start, read.end, read.now) == (43, 48, NOW.replace(hour=20, minute=6))
    assert score([read], graphmem_reading)["accuracy"] == 1.0
    labels.write_text(json.dumps({"about": "", "items": [{**item, "char_offset": 40}]}),
                      encoding="utf-8")
    with pytest.raises(ValueError, match="'today' not found"):
        labelled(labels, longmemeval=source)


def test_every_labelled_locomo_expression_is_found_in_the_file() -> None:
    """The two LoCoMo sets, read from the file in place: a label that does not sit in
    its turn fails to load."""
    locomo = need_locomo()
    sizes = {name: len(labelled(path, locomo=locomo)) for name, (path, data) in SETS.items()
             if data == "locomo"}
    assert sizes == {"locomo-tune": 50, "locomo-test": 45}
