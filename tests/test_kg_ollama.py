"""The Ollama fact extractor against a real loopback HTTP server (tests/fake_ollama.py): good
answers validated, hallucinations rejected, and every failure falling back to the rules."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest

from graphmem._kg import PREDICATES, OllamaFactExtractor, extract_facts

from .fake_ollama import fake_ollama

NOW = datetime(2023, 5, 10, 12, tzinfo=UTC)
TEXT = "Caroline: I moved to Lisbon last year. My sister Anna works at Acme Inc."


def _answer(*facts: dict[str, object]) -> str:
    return json.dumps({"facts": list(facts)})


def _triples(result: object) -> list[tuple[str, str, str]]:
    return [(f.subject, f.predicate, f.object) for f in result.facts]  # type: ignore


def test_a_valid_answer_is_used_and_checked() -> None:
    answer = _answer(
        {"subject": "I", "predicate": "moved to", "object": "Lisbon", "confidence": 0.9},
        {"subject": "Anna", "predicate": "works_for", "object": "Acme Inc"},
        {"subject": "Caroline", "predicate": "sister", "object": "Anna", "confidence": 0.8},
        {"subject": "Anna", "predicate": "lives_in", "object": "Berlin"},        # not in text
        {"subject": "Anna", "predicate": "is the CEO of", "object": "Acme Inc"},  # predicate
        {"subject": "Anna", "predicate": "likes", "object": "anna"},             # self
    )
    with fake_ollama([answer]) as fake:
        extractor = OllamaFactExtractor.connect(fake.url, "fake", timeout=5)
        result = extractor.extract(TEXT, speaker="Caroline", now=NOW)
        [(path, body)] = fake.requests
    assert result.source == "ollama" and result.warning is None
    assert _triples(result) == [("caroline", "moved_to", "lisbon"),
                                ("anna", "works_at", "acme inc"),
                                ("caroline", "sister", "anna")]
    assert result.rejected == ("'Berlin' does not occur in the text",
                               "predicate 'is the CEO of' is not allowed",
                               "subject and object are both 'anna'")
    moved = result.facts[0]
    assert moved.rule == "ollama" and moved.confidence == 0.9
    assert moved.valid_from == datetime(2022, 1, 1, tzinfo=UTC)  # "last year", same sentence
    assert TEXT[moved.span[0]:moved.span[1]] == "I moved to Lisbon last year."
    assert (moved.subject_type, moved.object_type) == ("person", "place")
    assert result.facts[1].confidence == 0.7 and result.facts[1].valid_from is None
    assert path == "/api/generate" and body["model"] == "fake" and body["format"] == "json"
    assert "works_at" in body["system"] and TEXT in body["prompt"]


def test_a_restricted_predicate_list_is_enforced() -> None:
    answer = _answer({"subject": "Anna", "predicate": "works_at", "object": "Acme Inc"},
                     {"subject": "I", "predicate": "lives_in", "object": "Lisbon"})
    with fake_ollama([answer]) as fake:
        extractor = OllamaFactExtractor.connect(fake.url, "fake")
        extractor.predicates = frozenset({"lives_in"})
        result = extractor.extract(TEXT, speaker="Caroline")
    assert _triples(result) == [("caroline", "lives_in", "lisbon")]
    assert result.rejected == ("predicate 'works_at' is not allowed",)


@pytest.mark.parametrize("garbage", [
    "not json at all",
    '{"facts": [{"subject": "Anna"}]}',                                    # fields missing
    '{"facts": [], "extra": 1}',                                           # unknown field
    '{"facts": [{"subject": "I", "predicate": "lives_in", "object": 3}]}',  # wrong type
    '{"facts": [{"subject": "I", "predicate": "x", "object": "y", "confidence": 7}]}',
    '["a list"]',
])
def test_malformed_answers_are_retried_then_fall_back_to_the_rules(garbage: str) -> None:
    with fake_ollama([garbage]) as fake:
        result = OllamaFactExtractor.connect(fake.url, "fake").extract(
            TEXT, speaker="Caroline", now=NOW)
        assert len(fake.requests) == 2  # one retry
    assert result.source == "rules"
    assert result.warning is not None and "malformed JSON 2 times" in result.warning
    assert list(result.facts) == extract_facts(TEXT, speaker="Caroline", now=NOW)


def test_a_retry_that_succeeds_is_used() -> None:
    good = _answer({"subject": "Anna", "predicate": "works_at", "object": "Acme Inc"})
    with fake_ollama(["{oops", good]) as fake:
        result = OllamaFactExtractor.connect(fake.url, "fake").extract(TEXT)
    assert result.source == "ollama" and _triples(result) == [("anna", "works_at", "acme inc")]


def test_an_answer_with_only_hallucinations_falls_back() -> None:
    answer = _answer({"subject": "Bob", "predicate": "lives_in", "object": "Paris"})
    with fake_ollama([answer]) as fake:
        result = OllamaFactExtractor.connect(fake.url, "fake").extract(TEXT, speaker="Caroline")
    assert result.source == "rules" and result.rejected == ("'Bob' does not occur in the text",)
    assert result.warning is not None and "were all rejected" in result.warning
    assert ("anna", "works_at", "acme inc") in _triples(result)


def test_an_empty_answer_is_an_answer() -> None:
    with fake_ollama([_answer()]) as fake:
        result = OllamaFactExtractor.connect(fake.url, "fake").extract(TEXT)
    assert result.source == "ollama" and result.facts == () and result.warning is None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_server_that_is_down_falls_back() -> None:
    extractor = OllamaFactExtractor.connect(f"http://127.0.0.1:{_free_port()}", "fake",
                                            timeout=2)
    result = extractor.extract(TEXT, speaker="Caroline", now=NOW)
    assert result.source == "rules"
    assert result.warning is not None and result.warning.startswith("Ollama unavailable")
    assert list(result.facts) == extract_facts(TEXT, speaker="Caroline", now=NOW)


@contextmanager
def _silent_server() -> Iterator[str]:
    """Accepts connections and never answers: a hung Ollama."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


def test_a_server_that_times_out_falls_back() -> None:
    with _silent_server() as url:
        result = OllamaFactExtractor.connect(url, "fake", timeout=0.5).extract(TEXT)
    assert result.source == "rules"
    assert result.warning is not None and "unavailable" in result.warning


def test_the_prompt_lists_the_predicates() -> None:
    prompt = OllamaFactExtractor.connect("http://127.0.0.1:1", "fake").system_prompt()
    assert all(p in prompt for p in PREDICATES)
