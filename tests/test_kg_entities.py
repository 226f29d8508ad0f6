"""Typed entity mentions: names minus sentence-opening words, gazetteer and cue places,
organisations, products and versions, events, speakers, dates; one type per name per text."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem._kg import extract_mentions, parse_times

NOW = datetime(2023, 5, 10, 12, tzinfo=UTC)


def _typed(text: str) -> list[tuple[str, str]]:
    return [(m.surface, m.type) for m in extract_mentions(text, now=NOW)]


@pytest.mark.parametrize(("text", "expected"), [
    ("Caroline: I went to the support group with Melanie.",
     [("Caroline", "person"), ("Melanie", "person")]),
    ("My friend Jonas and I drove to Portland, Oregon.",
     [("Jonas", "person"), ("Portland", "place"), ("Oregon", "place")]),
    ("She moved to Zwolle last year.", [("Zwolle", "place"), ("last year", "date")]),
    ("I visited NYC and the US embassy.", [("NYC", "place"), ("US", "place")]),
    ("Tim works at Brightwave Ltd and studied at the University of Ghana.",
     [("Tim", "person"), ("Brightwave Ltd", "organization"),
      ("University of Ghana", "organization")]),
    ("He works at Quillfeather as a designer.",
     [("Quillfeather", "organization")]),
    ("Orchard runs on PostgreSQL 16 and axum 0.7; we deployed orchard v1.9.0.",
     [("PostgreSQL 16", "product"), ("axum 0.7", "product"), ("orchard v1.9.0", "product")]),
    ("I got an iPhone 15 and love TypeScript.",
     [("iPhone 15", "product"), ("TypeScript", "product")]),
    ("We planned her birthday party and the AgriAI workshop.",
     [("birthday party", "event"), ("AgriAI workshop", "event")]),
    ("Dr. Okafor said the wedding was lovely.",
     [("Dr. Okafor", "person"), ("wedding", "event")]),
    ("Zoltan said hi to Priya.", [("Zoltan", "person"), ("Priya", "person")]),
])
def test_mentions_and_their_types(text: str, expected: list[tuple[str, str]]) -> None:
    assert _typed(text) == expected


@pytest.mark.parametrize("text", [
    "Yesterday was great. Honestly I loved it.",
    "Thanks! Sounds good. Let me know.",
    "Deployed the fix. Investigating the cache.",
    "The API returns JSON over HTTPS; the CI runs on every PR.",
    "May I ask what you think?",
])
def test_sentence_openers_pronouns_and_common_acronyms_are_not_names(text: str) -> None:
    assert [m for m in extract_mentions(text) if m.type != "date"] == []


def test_a_sentence_opening_verb_is_not_part_of_the_name_after_it() -> None:
    assert _typed("Visited Paris and Rome. Loved Lisbon.") == [
        ("Paris", "place"), ("Rome", "place"), ("Lisbon", "place")]


def test_a_sentence_opening_name_is_kept_when_the_text_confirms_it() -> None:
    # Unknown word at a sentence start: kept if possessive or seen mid-sentence.
    assert _typed("Quorra's garden is big.") == [("Quorra", "other")]
    assert _typed("Quorra paints. I like Quorra.") == [("Quorra", "other"), ("Quorra", "other")]
    assert _typed("Quorra paints. I met Quorra.") == [("Quorra", "person"), ("Quorra", "person")]
    assert _typed("Quorra paints.") == []


def test_one_type_per_name_and_parts_of_a_full_name() -> None:
    text = "Amara Obi runs. Later Obi said Zed and Amara met. My friend Zed is kind."
    types = {m.surface: m.type for m in extract_mentions(text)}
    assert types == {"Amara Obi": "person", "Obi": "person", "Zed": "person",
                     "Amara": "person"}


def test_dates_come_from_the_time_parser_and_can_be_passed_in() -> None:
    text = "We met on 8 May, 2023 and yesterday."
    dates = [(m.surface, m.normalized) for m in extract_mentions(text, now=NOW)
             if m.type == "date"]
    assert dates == [("8 May, 2023", "2023-05-08"), ("yesterday", "2023-05-09")]
    # Without a reference time only absolute dates are dates.
    assert [m.surface for m in extract_mentions(text) if m.type == "date"] == ["8 May, 2023"]
    times = parse_times(text, NOW)
    assert extract_mentions(text, times=times) == extract_mentions(text, now=NOW)


def test_holidays_are_events() -> None:
    assert _typed("We spent Christmas in Accra.") == [("Christmas", "event"),
                                                      ("Accra", "place")]
    assert _typed("Happy Valentine's Day! Last Christmas was fun. The next day we left.") == [
        ("Valentine's Day", "event"), ("Christmas", "event"), ("The next day", "date")]


def test_a_possessor_is_not_part_of_an_event() -> None:
    assert _typed("We went to my cousin Amara's wedding.") == [("Amara", "person"),
                                                               ("wedding", "event")]


def test_chat_words_that_are_no_names() -> None:
    # an emoji ends a sentence; a function word, a weekday in the plural are no names
    def surfaces(text: str) -> list[str]:
        return [m.surface for m in extract_mentions(text)]

    assert surfaces("long day 😩 But the kids slept well") == []
    assert surfaces("ok ✌️ Tomorrow we go") == []
    assert surfaces("the market is on Saturdays, the choir on Thursdays") == []
    assert surfaces("haha So then Priya won the raffle") == ["Priya"]
    assert surfaces("great run 👍🏽 But my knee") == []
    assert surfaces("I met Will at the gym") == ["Will"]


def test_normalized_forms() -> None:
    found = {m.surface: m.normalized for m in extract_mentions(
        "Caroline's sister met Prof. Adeyemi in the US.")}
    assert found == {"Caroline": "caroline", "Prof. Adeyemi": "adeyemi", "US": "us"}


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("AaBbCcMmIi ':.,-0123456789\nTheofv")),
               max_size=80))
def test_mentions_are_exact_slices_and_never_overlap(text: str) -> None:
    mentions = extract_mentions(text, now=NOW)
    for m in mentions:
        assert text[m.start:m.end] == m.surface and m.normalized is not None
    for a, b in itertools.pairwise(mentions):
        assert a.end <= b.start


def test_a_long_run_of_capitalised_words_names_nothing_where_a_long_name_still_does() -> None:
    assert ("Melinda Gates Foundation Global Health Division", "other") in \
        _typed("I work for the Bill and Melinda Gates Foundation Global Health Division now.")
    shouted = "We Went To The Big Blue House On The Hill And Then We All Sat Down By The Fire"
    assert _typed(f"Then {shouted} together.") == []
    assert _typed("I met A" + "a" * 200 + " at the station.") == []
