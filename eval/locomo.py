"""LoCoMo runs: one store per conversation, every question asked of every configuration.

Gold is turn level (the repaired ``evidence`` dia_ids); the store's clock stands one day
after the conversation's last session, so ages and ACT-R activation mean what they would
for an agent that just had these conversations.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from graphmem import Embedder, MemoryStore, RecallConfig, Settings
from ingest.locomo import Conversation, Question, ingest_conversation

from .metrics import score_run

__all__ = ["QueryResult", "build_store", "conversation_now", "dia_id_of", "run_conversation"]

DEPTH = 50  # how many hits are kept per query (metrics look at the top 20 at most)


@dataclass
class QueryResult:
    sample_id: str
    index: int
    question: str
    category: int
    gold: list[str]
    preset: str
    ranking: list[str]
    metrics: dict[str, float]
    ms: float
    extra: dict[str, Any] = field(default_factory=dict)


def dia_id_of(memory_id: str) -> str:
    """``urn:locomo:conv-26:D1:3`` -> ``D1:3``."""
    return memory_id.rsplit(":", 2)[-2] + ":" + memory_id.rsplit(":", 1)[-1]


def conversation_now(conversation: Conversation) -> datetime:
    dates = [s.date for s in conversation.sessions if s.date is not None]
    return max(dates) + timedelta(days=1)


def build_store(conversation: Conversation, embedder: Embedder | str, *,
                settings: Settings | None = None, path: str = ":memory:",
                **ingest: Any) -> MemoryStore:
    """A store holding one conversation (one memory per turn), in memory unless
    ``path`` names a database."""
    now = conversation_now(conversation)
    store = MemoryStore(path, embedder=embedder, settings=settings or Settings(),
                        clock=lambda: now)
    ingest_conversation(store, conversation, **ingest)
    return store


def run_conversation(
    store: MemoryStore,
    conversation: Conversation,
    configs: Mapping[str, RecallConfig],
    *,
    questions: Sequence[tuple[int, Question]] | None = None,
    record_access: bool = False,
    on_query: Callable[[], object] | None = None,
    embed_ms: Mapping[str, float] | None = None,
) -> list[QueryResult]:
    """Ask every question with valid evidence (of ``questions``, else of the
    conversation) of every configuration.

    ``embed_ms``: when query vectors come from a cache, the time each took to embed, added
    to the latency of configurations that use the vector channel.
    """
    asked = [(i, q) for i, q in (enumerate(conversation.questions) if questions is None
                                 else questions) if q.evidence]
    out = []
    for name, config in configs.items():
        for index, question in asked:
            start = time.perf_counter()
            hits = store.recall(question.question, k=DEPTH, preset=config,
                                record_access=record_access)
            ms = (time.perf_counter() - start) * 1000
            if embed_ms is not None and config.active("vector"):
                ms += embed_ms.get(question.question, 0.0)
            ranking = [dia_id_of(h.memory.id) for h in hits]
            out.append(QueryResult(conversation.sample_id, index, question.question,
                                   question.category, list(question.evidence), name, ranking,
                                   score_run(ranking, question.evidence), ms))
            if on_query is not None:
                on_query()
    return out
