"""Summaries written when a memory is archived: Ollama when configured, else extractive."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .._errors import BackendUnavailableError
from .._models import Memory
from .._ollama import OllamaGenerator

__all__ = ["extractive_summary", "summarize"]

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
MAX_CHARS = 280


def extractive_summary(memory: Memory, neighbours: Sequence[Memory] = (),
                       *, max_chars: int = MAX_CHARS) -> str:
    """The memory's first sentence (with its subject), and what it is linked to.

    >>> from datetime import UTC, datetime
    >>> now = datetime(2026, 7, 1, tzinfo=UTC)
    >>> m = Memory(id="m", subject="Deploy", text="Run make release. Then fly deploy.",
    ...            created=now, modified=now)
    >>> extractive_summary(m)
    'Deploy: Run make release.'
    """
    first = _SENTENCE.split(" ".join(memory.text.split()))[0]
    head = f"{memory.subject}: {first}" if memory.subject and memory.subject not in first \
        else first
    if len(head) > max_chars:
        head = head[: max_chars - 1].rstrip() + "…"
    related = [n.short(50) for n in neighbours[:3]]
    if related:
        tail = " Related: " + "; ".join(related) + "."
        if len(head) + len(tail) <= max_chars * 2:
            head += tail
    return head


def summarize(memory: Memory, neighbours: Sequence[Memory],
              generator: OllamaGenerator | None) -> tuple[str, str]:
    """(summary, source): "ollama" when the model answered, else "extractive".

    >>> from datetime import UTC, datetime
    >>> now = datetime(2026, 7, 1, tzinfo=UTC)
    >>> m = Memory(id="m", text="The valve sticks in cold weather. Oil it monthly.",
    ...            created=now, modified=now)
    >>> pump = Memory(id="p", text="Greenhouse pump maintenance log", created=now,
    ...               modified=now)
    >>> summarize(m, [pump], None)
    ('The valve sticks in cold weather. Related: Greenhouse pump maintenance log.', \
'extractive')
    """
    if generator is not None:
        context = "\n".join(f"- {n.short(120)}" for n in neighbours[:5])
        prompt = ("Summarise this memory of an AI agent in one sentence of at most 40 "
                  f"words, keeping names, dates and numbers.\n\nMemory: {memory.text}\n"
                  + (f"\nLinked memories:\n{context}\n" if context else ""))
        try:
            text = " ".join(generator.generate(prompt).split())
        except BackendUnavailableError:
            text = ""
        if text:
            return text[: MAX_CHARS * 2], "ollama"
    return extractive_summary(memory, neighbours), "extractive"
