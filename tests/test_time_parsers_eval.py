"""The time-parser comparison scores a reading right only inside its gold window."""

from __future__ import annotations

from datetime import UTC, date, datetime

from eval.time_parsers import Labelled, graphmem_reading, score

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
