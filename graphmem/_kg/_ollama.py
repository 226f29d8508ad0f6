"""Facts from a local Ollama model: JSON triples validated strictly (schema, names that occur in
the text, known predicates), with the deterministic patterns as the fallback it reports."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._errors import BackendUnavailableError
from ._entities import EntityType, extract_mentions
from ._facts import PREDICATES, Fact, normalize_predicate
from ._patterns import extract_facts, sentence_validity
from ._text import normalize, sentences, speaker_label
from ._time import TimeMention, parse_times

__all__ = ["FactExtraction", "FactGenerator", "OllamaFactExtractor"]

_FIRST_PERSON = frozenset({"i", "me", "my", "myself", "we", "us", "our"})


class FactGenerator(Protocol):
    """What the extractor needs from a model: a prompt in, text (JSON) out; failures raise
    ``BackendUnavailableError`` (``graphmem._ollama.OllamaGenerator`` is one)."""

    def generate(self, prompt: str, *, system: str | None = None, json_mode: bool = False
                 ) -> str: ...


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    subject: str = Field(min_length=1, max_length=200)
    predicate: str = Field(min_length=1, max_length=60)
    object: str = Field(min_length=1, max_length=200)
    confidence: float = Field(default=0.7, ge=0.0, le=1.0)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    facts: list[_Item] = Field(max_length=50)


@dataclass(frozen=True, slots=True)
class FactExtraction:
    """The facts of one text, who found them (``ollama`` or ``rules``), why the rules were
    used (``warning``, None when the model's answer was used) and the model's triples that
    were dropped, each with its reason."""

    facts: tuple[Fact, ...]
    source: Literal["ollama", "rules"]
    warning: str | None = None
    rejected: tuple[str, ...] = ()


class OllamaFactExtractor:
    """Facts by an Ollama model, checked, with ``extract_facts`` as the safety net.

    The model is asked for ``{"facts": [{"subject", "predicate", "object", "confidence"}]}``.
    A triple is kept only if its predicate is (or normalizes to) an allowed one, its subject
    and object occur in the text (a first-person subject is the speaker), and they differ.
    A server that fails, times out or answers malformed JSON (after ``retries`` more tries),
    or an answer whose every triple is rejected, gives the rules' facts and a warning.

    Examples
    --------
    >>> class Canned:
    ...     def generate(self, prompt, *, system=None, json_mode=False):
    ...         return ('{"facts": [{"subject": "I", "predicate": "lives in", "object": '
    ...                 '"Lisbon", "confidence": 0.9}, {"subject": "Caroline", "predicate": '
    ...                 '"owns", "object": "a boat"}]}')
    >>> result = OllamaFactExtractor(Canned()).extract("I moved to Lisbon.", speaker="Caroline")
    >>> [(f.subject, f.predicate, f.object) for f in result.facts], result.source
    ([('caroline', 'lives_in', 'lisbon')], 'ollama')
    >>> result.rejected
    ("predicate 'owns' is not allowed",)
    """

    name = "ollama"

    def __init__(self, generator: FactGenerator, *, predicates: Iterable[str] = PREDICATES,
                 retries: int = 1) -> None:
        self.generator = generator
        self.predicates = frozenset(predicates)
        self.retries = retries

    @classmethod
    def connect(cls, host: str, model: str, *, timeout: float = 30.0, retries: int = 1
                ) -> OllamaFactExtractor:
        """An extractor over ``graphmem._ollama.OllamaGenerator`` (the ``ollama`` client)."""
        from .._ollama import OllamaGenerator

        return cls(OllamaGenerator(host, model, timeout=timeout), retries=retries)

    def system_prompt(self) -> str:
        return (
            "You extract facts about people and things from one message of a personal "
            "conversation. Return JSON only: {\"facts\": [{\"subject\": str, \"predicate\": "
            "str, \"object\": str, \"confidence\": number 0..1}]}. Subject and object are "
            "names or short phrases copied from the message; use \"I\" for the speaker. "
            f"Predicates: {', '.join(sorted(self.predicates))}. A family or social relation "
            "(sister, friend, ...) as predicate means the object is the subject's relative. "
            "No facts in questions, plans or negations; nothing to say gives {\"facts\": []}."
        )

    def extract(self, text: str, *, speaker: str | None = None, now: datetime | None = None
                ) -> FactExtraction:
        """The facts of ``text``, from the model when its answer holds up, else the rules.

        Parameters
        ----------
        text : one message or memory
        speaker : who says it ("I" in the model's triples means the speaker)
        now : the reference time for validity from relative times

        Returns
        -------
        FactExtraction: the facts, their source, the fallback's reason and rejected triples.
        """
        times = parse_times(text, now)
        prompt = f"Speaker: {speaker or 'unknown'}\nMessage: {text}"
        problem = ""
        for _ in range(1 + self.retries):
            try:
                raw = self.generator.generate(prompt, system=self.system_prompt(),
                                              json_mode=True)
            except (BackendUnavailableError, OSError, TimeoutError) as exc:
                return self._fallback(text, speaker, now, f"Ollama unavailable: {exc}")
            try:
                answer = _Answer.model_validate(json.loads(raw))
            except (json.JSONDecodeError, ValidationError) as exc:
                problem = str(exc).splitlines()[0]
                continue
            facts, rejected = self._check(answer, text, speaker, times)
            if answer.facts and not facts:
                return self._fallback(text, speaker, now,
                                      f"Ollama's {len(answer.facts)} triples were all "
                                      f"rejected ({rejected[0]})", rejected)
            return FactExtraction(tuple(facts), "ollama", None, tuple(rejected))
        return self._fallback(text, speaker, now, f"Ollama answered malformed JSON "
                              f"{1 + self.retries} times ({problem})")

    def _fallback(self, text: str, speaker: str | None, now: datetime | None, why: str,
                  rejected: Iterable[str] = ()) -> FactExtraction:
        facts = extract_facts(text, speaker=speaker, now=now)
        return FactExtraction(tuple(facts), "rules", f"{why}; used the rule extractor",
                              tuple(rejected))

    def _check(self, answer: _Answer, text: str, speaker: str | None,
               times: Sequence[TimeMention]) -> tuple[list[Fact], list[str]]:
        lowered = text.lower().replace("’", "'")
        types = {m.normalized: m.type for m in extract_mentions(text, times=times)}
        spans = sentences(text)
        facts: list[Fact] = []
        rejected: list[str] = []
        for item in answer.facts:
            predicate = normalize_predicate(item.predicate)
            if predicate is None or predicate not in self.predicates:
                rejected.append(f"predicate {item.predicate!r} is not allowed")
                continue
            subject = _locate(item.subject, speaker, lowered)
            obj = _locate(item.object, None, lowered)
            if subject is None or obj is None:
                missing = item.subject if subject is None else item.object
                rejected.append(f"{missing!r} does not occur in the text")
                continue
            if subject[0] == obj[0]:
                rejected.append(f"subject and object are both {subject[0]!r}")
                continue
            sentence = next((s for s in spans if s.start <= obj[1] < s.end), None)
            span = (sentence.start, sentence.end) if sentence else (0, len(text))
            label = speaker_label(text[span[0]:span[1]])
            if label is not None:  # "Caroline: I moved ...": the statement, not its label
                start = text.index(":", span[0] + label[2]) + 1
                while start < span[1] and text[start].isspace():
                    start += 1
                span = (start, span[1])
            valid_from, valid_to, when = sentence_validity(text, span, times)
            subject_type: EntityType = "person" if subject[1] < 0 else \
                types.get(subject[0], "other")
            facts.append(Fact(subject[0], predicate, obj[0], round(item.confidence, 2),
                              valid_from, valid_to, span, "ollama", subject_type,
                              types.get(obj[0], "other"), when))
        return facts, rejected


def _locate(name: str, speaker: str | None, lowered: str) -> tuple[str, int] | None:
    """The normalized name and where it occurs in the (lowercased) text, or None; "I" is the
    speaker (position -1)."""
    norm = normalize(name)
    if norm in _FIRST_PERSON:
        return (normalize(speaker), -1) if speaker else None
    bare = normalize(re.sub(r"^(?:a|an|my|his|her|their|our)\s+", "", name.strip(),
                            flags=re.IGNORECASE))
    for candidate in dict.fromkeys((norm, bare)):
        if not candidate:
            continue
        pattern = r"\s+".join(re.escape(word) for word in candidate.split())
        found = re.search(rf"(?<!\w){pattern}(?!\w)", lowered)
        if found is not None:
            return candidate, found.start()
    return None
