"""Extraction with a local Ollama model: asks for JSON, validates it, retries once, and
falls back to the deterministic extractor (saying so) when the answer or the server fails."""

from __future__ import annotations

import json

from pydantic import BaseModel, Field, ValidationError

from .._errors import BackendUnavailableError
from .._ollama import OllamaGenerator
from ._rules import Extracted, RuleExtractor, extract_entities

__all__ = ["OllamaExtractor"]

_SYSTEM = (
    "You extract durable memories for an AI assistant from one chat message. Return JSON "
    'only: {"memories": [{"text": str, "strength": number 0..1, "entities": [str]}]}. '
    "Keep facts, preferences, plans and events about the people involved, in the third "
    "person with their names; strength >= 0.55 for clear lasting facts, 0.35-0.55 for weak "
    'or uncertain ones. Greetings, filler and questions give {"memories": []}.'
)


class _Item(BaseModel):
    text: str = Field(min_length=1, max_length=2000)
    strength: float = Field(ge=0.0, le=1.0)
    entities: list[str] = Field(default_factory=list, max_length=50)


class _Answer(BaseModel):
    memories: list[_Item] = Field(max_length=20)


class OllamaExtractor:
    """Extraction by an Ollama model, with the rule extractor as the safety net.

    ``last_warning`` says why the fallback was used for the last message (or is None).
    """

    name = "ollama"

    def __init__(self, generator: OllamaGenerator, *, fallback: RuleExtractor | None = None,
                 retries: int = 1) -> None:
        self.generator = generator
        self.fallback = fallback or RuleExtractor()
        self.retries = retries
        self.last_warning: str | None = None

    def extract(self, text: str, *, speaker: str | None = None) -> list[Extracted]:
        self.last_warning = None
        prompt = f"Speaker: {speaker or 'user'}\nMessage: {text}"
        problem = ""
        for _ in range(1 + self.retries):
            try:
                raw = self.generator.generate(prompt, system=_SYSTEM, json_mode=True)
            except BackendUnavailableError as exc:
                self.last_warning = f"Ollama unavailable, used the rule extractor: {exc}"
                return self.fallback.extract(text)
            try:
                answer = _Answer.model_validate(json.loads(raw))
            except (json.JSONDecodeError, ValidationError) as exc:
                problem = str(exc).splitlines()[0]
                continue
            # the memory's entities are its knowledge graph's, whatever the model named
            return [Extracted(m.text, m.strength, extract_entities(m.text), ("ollama",))
                    for m in answer.memories]
        self.last_warning = (f"Ollama answered malformed JSON twice ({problem}); used the rule "
                             "extractor")
        return self.fallback.extract(text)
