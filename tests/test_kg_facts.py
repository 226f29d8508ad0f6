"""Fact patterns: each predicate family, first person through the speaker, pronouns,
coordination, negation/questions/plans, validity from times, and supersession."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphmem._kg import (
    FUNCTIONAL_PREDICATES,
    PREDICATES,
    Fact,
    extract_facts,
    normalize_predicate,
    supersedes,
)

NOW = datetime(2023, 5, 10, 12, tzinfo=UTC)


def _triples(text: str, speaker: str | None = "Caroline") -> list[tuple[str, str, str]]:
    return [(f.subject, f.predicate, f.object)
            for f in extract_facts(text, speaker=speaker, now=NOW)]


@pytest.mark.parametrize(("text", "expected"), [
    ("Tim works at Brightwave Ltd.", [("tim", "works_at", "brightwave ltd")]),
    ("Priya got a new job at Google!", [("priya", "works_at", "google")]),
    ("Gina lives in Chicago.", [("gina", "lives_in", "chicago")]),
    ("Tomás works from Madrid.", [("tomás", "lives_in", "madrid")]),
    ("Ahmed moved to Lisbon.", [("ahmed", "moved_to", "lisbon"), ("ahmed", "lives_in", "lisbon")]),
    ("Ada was born in Accra.", [("ada", "born_in", "accra")]),
    ("Ada is originally from Kumasi.", [("ada", "from", "kumasi")]),
    ("Maria is married to David.", [("maria", "married_to", "david")]),
    ("Nadia's sister Funke loves jazz.", [("nadia", "sister", "funke"),
                                          ("funke", "likes", "jazz")]),
    ("Anna, Nadia's cousin, is here.", [("nadia", "cousin", "anna")]),
    ("Nadia's cat is called Biscuit.", [("nadia", "has_pet", "biscuit")]),
    ("Leo hates mushrooms.", [("leo", "dislikes", "mushrooms")]),
    ("Leo doesn't like loud bars.", [("leo", "dislikes", "loud bars")]),
    ("Nadia prefers TypeScript over JavaScript.", [("nadia", "prefers", "typescript")]),
    ("Leo is a huge fan of Arsenal.", [("leo", "likes", "arsenal")]),
    ("Nadia is a nurse at St Mary's Hospital.", [("nadia", "is_a", "nurse"),
                                                 ("nadia", "works_at", "st mary hospital")]),
    ("Nadia is a PhD student at the University of Ghana.",
     [("nadia", "is_a", "phd student"), ("nadia", "studies_at", "university of ghana")]),
    ("Leo bought a red bike.", [("leo", "bought", "red bike")]),
    ("Leo adopted a puppy named Max.", [("leo", "adopted", "max"), ("leo", "has_pet", "max")]),
    ("Leo joined a book club.", [("leo", "joined", "book club")]),
    ("Leo started pottery classes.", [("leo", "started", "pottery classes")]),
    ("Nadia uses Neovim and tmux daily.", [("nadia", "uses", "neovim")]),
    ("Leo visited Paris and Rome.", [("leo", "visited", "paris"), ("leo", "visited", "rome")]),
    ("Leo went to the Pride parade.", [("leo", "attended", "pride parade")]),
    ("Nadia is supervised by Prof. Adeyemi.", [("nadia", "supervisor", "adeyemi")]),
])
def test_third_person_patterns(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert _triples(text) == expected


@pytest.mark.parametrize(("text", "speaker", "expected"), [
    ("I moved to Lisbon.", "Caroline",
     [("caroline", "moved_to", "lisbon"), ("caroline", "lives_in", "lisbon")]),
    ("My husband Paulo loves surfing.", "Caroline",
     [("caroline", "husband", "paulo"), ("paulo", "likes", "surfing")]),
    ("My friend Jonas and I drove to Portland.", "Caroline",
     [("caroline", "friend", "jonas"), ("jonas", "visited", "portland"),
      ("caroline", "visited", "portland")]),
    ("I'm really into photography.", "Melanie", [("melanie", "likes", "photography")]),
    ("Melanie: I adopted a kitten named Luna.\nCaroline: I love hiking.", None,
     [("melanie", "adopted", "luna"), ("melanie", "has_pet", "luna"),
      ("caroline", "likes", "hiking")]),
    ("I moved to Lisbon.", None, []),  # nobody to say it about
])
def test_first_person_is_the_speaker(text: str, speaker: str | None,
                                     expected: list[tuple[str, str, str]]) -> None:
    assert _triples(text, speaker) == expected


def test_pronouns_coordination_and_appositions() -> None:
    assert _triples("Ada met Leo. She works at Acme Inc.") == [("ada", "works_at", "acme inc")]
    assert _triples("Ada and Leo moved to Oslo.") == [
        ("ada", "moved_to", "oslo"), ("ada", "lives_in", "oslo"),
        ("leo", "moved_to", "oslo"), ("leo", "lives_in", "oslo")]
    assert _triples("Anna, my older sister, loves hiking and painting.") == [
        ("anna", "likes", "hiking"), ("anna", "likes", "painting"),
        ("caroline", "sister", "anna")]
    assert _triples("Tom is a firefighter and I'm a pharmacist.") == [
        ("tom", "is_a", "firefighter"), ("caroline", "is_a", "pharmacist")]
    assert _triples("My boss, Karen, works for Deloitte.") == [
        ("caroline", "boss", "karen"), ("karen", "works_at", "deloitte")]
    assert _triples("I was born in Lagos and moved to London.") == [
        ("caroline", "born_in", "lagos"), ("caroline", "moved_to", "london"),
        ("caroline", "lives_in", "london")]


@pytest.mark.parametrize("text", [
    "Does Caroline live in Lisbon?",
    "Ada doesn't work at Acme Inc.",
    "Leo never lived in Rome.",
    "Leo no longer works at Google.",
    "You moved to Lisbon.",
    "I'm moving to Lisbon next month.",
    "She hates mushrooms.",  # nobody named before
    "It is a great idea.",
])
def test_questions_negations_plans_and_unknown_subjects_state_nothing(text: str) -> None:
    assert _triples(text, "Caroline") == []


def test_validity_comes_from_the_times_of_the_verbs_clause() -> None:
    [moved, lives] = extract_facts("Last year I moved to Lisbon.", speaker="Ada", now=NOW)
    assert moved.valid_from == lives.valid_from == datetime(2022, 1, 1, tzinfo=UTC)
    assert moved.when is not None and moved.when.label == "2022" and moved.valid_to is None
    facts = extract_facts("I've been living in Chicago since 2019, but I grew up in Ohio.",
                          speaker="Gina", now=NOW)
    assert [(f.predicate, f.valid_from) for f in facts] == [
        ("lives_in", datetime(2019, 1, 1, tzinfo=UTC)), ("from", None)]
    [worked] = extract_facts("Leo worked at Acme Inc from 2015 to 2019.", now=NOW)
    assert (worked.valid_from, worked.valid_to) == (datetime(2015, 1, 1, tzinfo=UTC),
                                                    datetime(2020, 1, 1, tzinfo=UTC))
    [born, moved, lives] = extract_facts("I was born in Lagos and moved to London in 2015.",
                                         speaker="Ada", now=NOW)
    assert born.valid_from is None and moved.valid_from == lives.valid_from
    [relation] = extract_facts("Yesterday my sister Anna called.", speaker="Ada", now=NOW)
    assert relation.valid_from is None


def test_facts_carry_their_span_rule_types_and_confidence() -> None:
    text = "Caroline: Yesterday she said Ada works at Acme Inc."
    [fact] = extract_facts(text, now=NOW)
    assert text[fact.span[0]:fact.span[1]] == "Ada works at Acme Inc"
    assert (fact.rule, fact.subject_type, fact.object_type) == ("works_at", "person",
                                                                "organization")
    assert 0 < fact.confidence <= 1
    [pronoun] = extract_facts("Ada met Leo. She works at Acme Inc.")
    assert pronoun.confidence < fact.confidence


def _fact(predicate: str, obj: str, start: datetime | None = None,
          end: datetime | None = None, subject: str = "caroline") -> Fact:
    return Fact(subject, predicate, obj, 0.9, start, end, (0, 1), "test")


def test_supersedes() -> None:
    y2019, y2022 = datetime(2019, 1, 1, tzinfo=UTC), datetime(2022, 1, 1, tzinfo=UTC)
    assert supersedes(_fact("lives_in", "ibadan"), _fact("lives_in", "lisbon"))
    assert supersedes(_fact("lives_in", "ibadan", y2019), _fact("lives_in", "lisbon", y2022))
    assert supersedes(_fact("works_at", "acme"), _fact("works_at", "google"))
    assert supersedes(_fact("husband", "tom"), _fact("husband", "paulo"))
    assert not supersedes(_fact("lives_in", "ibadan"), _fact("lives_in", "ibadan"))
    assert not supersedes(_fact("lives_in", "lisbon", y2022), _fact("lives_in", "paris", y2019))
    assert not supersedes(_fact("lives_in", "lisbon"), _fact("lives_in", "paris", y2019, y2022))
    assert not supersedes(_fact("likes", "jazz"), _fact("likes", "hiking"))
    assert not supersedes(_fact("friend", "ada"), _fact("friend", "leo"))
    assert not supersedes(_fact("lives_in", "oslo", subject="ada"), _fact("lives_in", "rome"))


def test_moved_to_supersedes_through_its_lives_in() -> None:
    old = extract_facts("Caroline lives in Ibadan.", now=NOW)
    new = extract_facts("Caroline moved to Lisbon last month.", now=NOW)
    ended = [(o.object, n.object) for o in old for n in new if supersedes(o, n)]
    assert ended == [("ibadan", "lisbon")]


def test_predicates() -> None:
    assert FUNCTIONAL_PREDICATES <= PREDICATES
    assert {"lives_in", "works_at", "married_to"} <= FUNCTIONAL_PREDICATES
    assert "likes" not in FUNCTIONAL_PREDICATES
    assert normalize_predicate("Works For") == "works_at"
    assert normalize_predicate("sister of") == "sister"
    assert normalize_predicate("owns") is None


def test_every_predicate_the_rules_emit_is_declared() -> None:
    text = ("Ada works at Acme Inc. Ada lives in Oslo. Ada moved to Rome. Ada is from Accra. "
            "Ada was born in Kumasi. Ada married Leo. Ada loves jazz. Ada hates rain. "
            "Ada prefers tea. Ada wants a dog. Ada is a nurse. Ada bought a car. "
            "Ada adopted a cat. Ada started yoga. Ada joined a choir. Ada uses Vim. "
            "Ada visited Paris. Ada went to the wedding. Ada's dog is called Rex. "
            "Ada's sister Funke is here. Ada studies at the University of Ghana.")
    predicates = {f.predicate for f in extract_facts(text)}
    assert predicates <= PREDICATES
    assert len(predicates) == 21
