"""Time expressions: absolute and relative forms resolved against a reference time, the
pragmatic rules (tense, ISO weeks, weekends, anchors), query windows and when-questions."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem._kg import TimeWindow, is_temporal_question, parse_times, query_window

#: Wednesday 10 May 2023, noon UTC.
NOW = datetime(2023, 5, 10, 12, 0, tzinfo=UTC)


def _spans(text: str, now: datetime | None = NOW) -> list[tuple[str, str, str, str]]:
    return [(t.surface, t.window.start.isoformat()[:16], t.window.end.isoformat()[:16],
             t.window.granularity) for t in parse_times(text, now)]


@pytest.mark.parametrize(("text", "surface", "start", "end", "granularity"), [
    ("I went there yesterday.", "yesterday", "2023-05-09", "2023-05-10", "day"),
    ("We met last Saturday.", "last Saturday", "2023-05-06", "2023-05-07", "day"),
    ("I moved two weeks ago.", "two weeks ago", "2023-04-24", "2023-05-01", "week"),
    ("I did it 3 days ago.", "3 days ago", "2023-05-07", "2023-05-08", "day"),
    ("I'll start next month.", "next month", "2023-06-01", "2023-07-01", "month"),
    ("Last year I was in Rome.", "Last year", "2022-01-01", "2023-01-01", "year"),
    ("I moved in 2022.", "2022", "2022-01-01", "2023-01-01", "year"),
    ("It was May 2023.", "May 2023", "2023-05-01", "2023-06-01", "month"),
    ("On 8 May, 2023 we met.", "8 May, 2023", "2023-05-08", "2023-05-09", "day"),
    ("On May 8th, 2023 we met.", "May 8th, 2023", "2023-05-08", "2023-05-09", "day"),
    ("Date: 2023-05-08.", "2023-05-08", "2023-05-08", "2023-05-09", "day"),
    ("Due 2023-07.", "2023-07", "2023-07-01", "2023-08-01", "month"),
    ("We went in the summer of 2021.", "summer of 2021", "2021-06-01", "2021-09-01", "season"),
    ("Back in the '90s.", "the '90s", "1990-01-01", "2000-01-01", "decade"),
    ("Last Christmas I gave you my heart.", "Last Christmas", "2022-12-25", "2022-12-26",
     "day"),
    ("We had a party last night.", "last night", "2023-05-09", "2023-05-10", "day"),
    ("I have lived here since March.", "since March", "2023-03-01", "2023-05-10", "month"),
    ("I went camping the week before.", "the week before", "2023-05-01", "2023-05-08",
     "week"),
    ("The week before 8 May, 2023 I camped.", "The week before 8 May, 2023", "2023-05-01",
     "2023-05-08", "week"),
    ("The day after 1 March 2021 it snowed.", "The day after 1 March 2021", "2021-03-02",
     "2021-03-03", "day"),
    ("It happened in early May 2023.", "early May 2023", "2023-05-01", "2023-05-11", "month"),
    ("I saw her on Friday.", "on Friday", "2023-05-05", "2023-05-06", "day"),
    ("See you on Friday!", "on Friday", "2023-05-12", "2023-05-13", "day"),
    ("See you next Tuesday.", "next Tuesday", "2023-05-16", "2023-05-17", "day"),
    ("This Friday is free.", "This Friday", "2023-05-12", "2023-05-13", "day"),
    # a day something was moved to is ahead, though the moving is told in the past
    ("Nadia moved standup to Monday", "Monday", "2023-05-15", "2023-05-16", "day"),
    ("we pushed the call back to friday", "friday", "2023-05-12", "2023-05-13", "day"),
    ("I moved to Lisbon on Monday.", "on Monday", "2023-05-08", "2023-05-09", "day"),
    # chat text writes weekdays in lower case
    ("the party is saturday", "saturday", "2023-05-13", "2023-05-14", "day"),
    ("thursday!! so excited", "thursday", "2023-05-11", "2023-05-12", "day"),
    # a day of the month alone, in this month or the next one to it
    ("the plumber comes on the 14th", "on the 14th", "2023-05-14", "2023-05-15", "day"),
    ("we flew back on the 28th.", "on the 28th", "2023-04-28", "2023-04-29", "day"),
    ("I'll have it done by 3rd at the latest", "by 3rd", "2023-06-03", "2023-06-04", "day"),
    ("I'll be back in two weeks.", "in two weeks", "2023-05-22", "2023-05-29", "week"),
    ("It was 5 hours ago.", "5 hours ago", "2023-05-10T07:00", "2023-05-10T08:00", "hour"),
    ("Thanksgiving 2023 is late.", "Thanksgiving 2023", "2023-11-23", "2023-11-24", "day"),
    ("Born 12/03/1990.", "12/03/1990", "1990-12-03", "1990-12-04", "day"),
])
def test_expressions_resolve_to_their_window(text: str, surface: str, start: str, end: str,
                                             granularity: str) -> None:
    [(got_surface, got_start, got_end, got_granularity)] = _spans(text)
    assert got_surface == surface
    assert got_start.startswith(start) and got_end.startswith(end)
    assert got_granularity == granularity


def test_locomo_session_time_is_minute_precise() -> None:
    [t] = parse_times("1:56 pm on 8 May, 2023")
    assert t.window.start == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert t.window.end - t.window.start == timedelta(minutes=1)
    assert t.surface == "1:56 pm on 8 May, 2023" and not t.relative


@pytest.mark.parametrize(("text", "month"), [
    ("I went hiking in May.", "2023-05"),          # past, May has begun: this May
    ("I went hiking in June.", "2022-06"),         # past, June is to come: last year's
    ("I'm going to Paris in June.", "2023-06"),    # future: the coming June
    ("I'm going to Paris in April.", "2024-04"),   # future, April is over: next year's
    ("My birthday is in June.", "2023-06"),        # present: the coming one
    ("We met last May.", "2022-05"),               # "last May" is before this month
    ("We meet next May.", "2024-05"),
])
def test_a_month_without_a_year_follows_the_tense(text: str, month: str) -> None:
    [t] = parse_times(text, NOW)
    assert t.window.label == month and t.relative


def test_this_weekend_is_the_one_just_gone_in_past_text_on_a_weekday() -> None:
    monday = datetime(2023, 5, 15, 9, tzinfo=UTC)
    [past] = parse_times("This weekend I went hiking.", monday)
    [future] = parse_times("This weekend I will go hiking.", monday)
    assert past.window.start.date() == date(2023, 5, 13)
    assert future.window.start.date() == date(2023, 5, 20)
    [sunday] = parse_times("I went hiking this weekend.", datetime(2023, 5, 14, tzinfo=UTC))
    assert sunday.window.start.date() == date(2023, 5, 13)


@pytest.mark.parametrize("text", ["May I ask?", "I may go.", "Every Friday we run.",
                                  "we live on the 4th floor", "she came 2nd in the race",
                                  "On Fridays we run.", "We run every second Friday.",
                                  "It costs 2023 USD.", "The meeting is at 10:00.",
                                  "March to the beat.", "I fall asleep early."])
def test_words_that_are_not_times_and_recurrences_are_left_out(text: str) -> None:
    assert parse_times(text, NOW) == []


def test_relative_expressions_need_a_reference_time() -> None:
    text = "Yesterday, two weeks ago, in May and on 8 May, 2023."
    assert [t.surface for t in parse_times(text)] == ["8 May, 2023"]
    assert [t.surface for t in parse_times(text, NOW)] == ["Yesterday", "two weeks ago", "May",
                                                            "8 May, 2023"]


def test_windows_are_in_the_reference_timezone() -> None:
    lagos = timezone(timedelta(hours=1))
    now = datetime(2023, 5, 10, 0, 30, tzinfo=lagos)  # 9 May 23:30 UTC, 10 May in Lagos
    [t] = parse_times("I saw her yesterday.", now)
    assert t.window.start == datetime(2023, 5, 9, tzinfo=lagos)
    [naive] = parse_times("I saw her yesterday.", datetime(2023, 5, 10, 12))
    assert naive.window.start == datetime(2023, 5, 9, tzinfo=UTC)


def test_anchored_expressions_follow_the_previous_date() -> None:
    found = parse_times("On 5 May 2023 we arrived. The next day she left.", NOW)
    assert [(t.surface, t.window.label) for t in found] == [
        ("5 May 2023", "2023-05-05"), ("The next day", "2023-05-06")]


def test_a_month_range_takes_the_year_of_its_end() -> None:
    found = parse_times("from November to February 2023", NOW)
    assert [t.window.label for t in found] == ["2022-11", "2023-02"]


# An oracle: day arithmetic done the slow, obvious way.
@pytest.mark.parametrize("n", [1, 2, 3, 6, 7, 10, 30, 45, 365])
def test_days_ago_against_date_arithmetic(n: int) -> None:
    for offset in range(7):  # every weekday as "now"
        now = NOW + timedelta(days=offset)
        [t] = parse_times(f"I did it {n} days ago.", now)
        assert t.window.start.date() == now.date() - timedelta(days=n)
        [w] = parse_times(f"I did it {n} weeks ago.", now)
        back = now.date() - timedelta(days=7 * n)
        assert w.window.start.date() == back - timedelta(days=back.weekday())


def test_last_weekday_is_strictly_before_today_for_every_today() -> None:
    for offset in range(14):
        now = NOW + timedelta(days=offset)
        for name, index in (("Monday", 0), ("Wednesday", 2), ("Sunday", 6)):
            [t] = parse_times(f"I went out last {name}.", now)
            day = t.window.start.date()
            assert day.weekday() == index
            assert 1 <= (now.date() - day).days <= 7


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789 -/:,.aMayJunelstwkdgoyrTh'")),
               max_size=60),
       st.datetimes(min_value=datetime(1950, 1, 1), max_value=datetime(2090, 1, 1)))
def test_any_text_gives_well_formed_mentions(text: str, now: datetime) -> None:
    for t in parse_times(text, now):
        assert text[t.start:t.end] == t.surface
        assert t.window.start < t.window.end


def test_query_window() -> None:
    w = query_window("What did I do last weekend?", NOW)
    assert w == TimeWindow(datetime(2023, 5, 6, tzinfo=UTC), datetime(2023, 5, 8, tzinfo=UTC),
                           "weekend")
    assert query_window("What happened in May 2023?", NOW).label == "2023-05"  # type: ignore
    assert query_window("When did Caroline move to Lisbon?", NOW) is None
    before = query_window("What did I buy before March 2023?", NOW)
    assert before is not None and before.end == datetime(2023, 3, 1, tzinfo=UTC)
    after = query_window("What did I do after March 2023?", NOW)
    assert after is not None and (after.start, after.end) == (
        datetime(2023, 4, 1, tzinfo=UTC), NOW)
    both = query_window("What did we do between March and April 2023?", NOW)
    assert both is not None and (both.start.date(), both.end.date()) == (
        date(2023, 3, 1), date(2023, 5, 1))
    days = query_window("Where was John between August 11 and August 15 2023?", NOW)
    assert days is not None and (days.start.date(), days.end.date()) == (
        date(2023, 8, 11), date(2023, 8, 16))
    turn = query_window("Where was I from December 30 to January 2 2023?", NOW)
    assert turn is not None and (turn.start.date(), turn.end.date()) == (
        date(2022, 12, 30), date(2023, 1, 3))


@pytest.mark.parametrize(("question", "temporal"), [
    ("When did Melanie paint a sunrise?", True),
    ("How long has Caroline lived in Lisbon?", True),
    ("Did I go to Paris before Rome?", True),
    ("Did Caroline paint before the parade?", True),
    ("Which did Nadia adopt first, the cat or the dog?", True),
    ("When was the last time I called my mom?", True),
    ("How many days between the wedding and the party?", True),
    ("What year did Tomás move to Madrid?", True),
    ("What does Melanie like to paint?", False),
    ("Where does Caroline work?", False),
    ("What did I do last weekend?", False),
    # an event that places what is asked does not make it a question of time
    ("What did Caroline do after the parade?", False),
    ("What did Jon study before he moved to Oslo?", False),
    ("What day trips could we take with the kids?", False),
    ("What day is the party?", True),
    # "when" asks when it opens the question or joins another question word ...
    ("where and when is the party?", True),
    ("Do you remember when Mel painted?", True),
    ("Which dates does Rui fly?", True),
    # ... not as a conjunction after one, nor for a time of day
    ("What does Ana wear when hiking?", False),
    ("Who looks after the cat when Nora is away?", False),
    ("When in the day does Ed study?", False),
])
def test_is_temporal_question(question: str, temporal: bool) -> None:
    assert is_temporal_question(question) is temporal


@pytest.mark.parametrize("n", ["3000", "4000", "9999", "100000", "99999999999999999999"])
@pytest.mark.parametrize("unit", ["days", "weeks", "months", "years", "decades"])
@pytest.mark.parametrize("template", ["{n} {u} ago", "I will go in {n} {u}",
                                      "the {u} after {n} {u} ago",
                                      "the week before, {n} {u} ago", "{n} {u} ago at 3 pm"])
def test_times_beyond_the_calendar_are_left_out(n: str, unit: str, template: str) -> None:
    """"4000 years ago" (LongMemEval has it) names no date Python can hold: the
    expression is left out, the rest of the text is still read, nothing raises."""
    now = datetime(2023, 5, 10, 12, 0, tzinfo=UTC)
    text = template.format(n=n, u=unit) + "; two weeks ago we went camping."
    assert [(t.surface, t.window.label) for t in parse_times(text, now)][-1:] == \
        [("two weeks ago", "2023-W17")]


@pytest.mark.parametrize("text", [
    "Is Diego going to the summer school in Portugal?", "Did she buy a winter coat?",
    "Ana starts her summer internship", "the spring cleaning is done",
    "What is in the fall collection?", "Is he taking summer classes?",
])
def test_a_season_before_a_thing_of_the_season_is_no_time(text: str) -> None:
    assert query_window(text, NOW) is None
    assert parse_times(text, NOW) == []


@pytest.mark.parametrize("text", [
    "What did Ana do last summer?", "Where did they go in the summer?",
    "in the summer, we went to camp", "during the spring of 2022",
])
def test_a_season_that_stands_for_a_time_is_read(text: str) -> None:
    window = query_window(text, NOW)
    assert window is not None and window.granularity == "season"
