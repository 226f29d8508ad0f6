"""``MemoryAPI``: the methods an agent's code may call on a store, whether it holds it
(``MemoryStore``) or reaches it through its sidecar (``graphmem.connect``); mypy holds
both to it, so a signature that drifts on one side fails the type check."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, Self, Unpack

if TYPE_CHECKING:
    import networkx as nx

    from ._backup import BackupInfo
    from ._engine import EntityRecord, FactRecord, Link
    from ._input import MemoryInput, UpdateFields
    from ._learn import LearnReport
    from ._lifecycle import (
        ArchiveResult,
        EvaluationResult,
        LifecycleReport,
        PromoteResult,
        RestoreResult,
    )
    from ._models import (
        AddResult,
        ChangeType,
        EventType,
        Kind,
        LifecycleEvent,
        Memory,
        Stats,
        Status,
        Version,
    )
    from ._recall import Hit, RecallConfig
    from ._store._conversations import Extractor

__all__ = ["MemoryAPI"]


class MemoryAPI(Protocol):
    """What ``MemoryStore`` and the sidecar's ``Client`` both answer, with the same
    arguments, return types and errors (see ``MemoryStore`` for each method). Code
    written against it runs on an embedded store and over HTTP alike; what only the
    embedded store does (bulk merges, re-embedding, ad-hoc writes, SQL) is not here."""

    @property
    def path(self) -> str: ...

    @property
    def store_id(self) -> str | None: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...

    # -- memories ------------------------------------------------------------------------
    def get(self, memory_id: str, *, owner: str | None = None) -> Memory: ...

    def memories(self, *, owner: str | None = None, offset: int = 0,
                 limit: int | None = None) -> list[Memory]: ...

    def memory_count(self, *, owner: str | None = None) -> int: ...

    def links(self, memory_id: str, *, owner: str | None = None) -> list[Link]: ...

    def history(self, memory_id: str, *, owner: str | None = None) -> list[Version]: ...

    def events(self, memory_id: str | None = None, *,
               event_type: EventType | str | None = None, since: datetime | None = None,
               until: datetime | None = None, limit: int | None = None,
               owner: str | None = None) -> list[LifecycleEvent]: ...

    def stats(self) -> Stats: ...

    def add(self, text: str, *, actor: str | None = None, **fields: Any) -> Memory: ...

    def add_many(self, records: Iterable[MemoryInput | Mapping[str, Any] | str], *,
                 batch_size: int = 500, progress: bool = False,
                 actor: str | None = None) -> list[Memory]: ...

    def add_conversation(self, messages: Sequence[Mapping[str, Any] | str], *,
                         session_id: str, owner: str | None = None,
                         timestamp: datetime | None = None, extractor: Extractor | None = None,
                         cooccur_window: int = 2,
                         actor: str | None = None) -> AddResult: ...

    def update(self, memory_id: str, *, reason: ChangeType | str = ...,
               actor: str | None = None, owner: str | None = None,
               **fields: Unpack[UpdateFields]) -> Memory: ...

    def supersede(self, old_id: str, new: Memory | str, *, reason: str = "conflict_update",
                  owner: str | None = None, actor: str | None = None,
                  **fields: Any) -> Memory: ...

    def correct(self, memory_id: str, new_text: str, *, owner: str | None = None,
                actor: str | None = None, **fields: Any) -> Memory: ...

    def link(self, a: str, b: str, *, kind: str = "references", weight: float = 1.0,
             source: str = "explicit", owner: str | None = None) -> None: ...

    # -- state changes -------------------------------------------------------------------
    def tombstone(self, memory_id: str, *, reason: str = "manual", owner: str | None = None,
                  actor: str | None = None) -> Memory: ...

    def keep(self, memory_id: str, *, reason: str = "kept on review",
             owner: str | None = None, actor: str | None = None) -> LifecycleEvent: ...

    def forget(self, memory_id: str, *, confirm: bool = False, reason: str = "manual",
               owner: str | None = None, actor: str | None = None) -> None: ...

    def forget_many(self, memory_ids: Sequence[str], *, confirm: bool = False,
                    reason: str = "manual", owner: str | None = None,
                    actor: str | None = None) -> int: ...

    # -- recall and learning -------------------------------------------------------------
    def recall(self, query: str, *, k: int = 10, preset: str | RecallConfig = "default",
               owner: str | None = None, kinds: Sequence[Kind | str] | None = None,
               as_of: datetime | None = None, include_archived: bool = False,
               record_access: bool = False, since: datetime | str | None = None,
               until: datetime | str | None = None, min_similarity: float | None = None,
               min_relative: float | None = None) -> list[Hit]: ...

    def feedback(self, memory_id: str, *, useful: bool, query: str | None = None,
                 owner: str | None = None, actor: str | None = None) -> Memory: ...

    def learn(self, *, ranker: bool = True, forecast: bool = True,
              horizon_days: float = 30.0) -> LearnReport: ...

    def learned(self) -> LearnReport: ...

    # -- lifecycle -----------------------------------------------------------------------
    def evaluate(self, memory_id: str, *, owner: str | None = None) -> EvaluationResult: ...

    def batch_evaluate(self, ids: Sequence[str] | None = None, *, owner: str | None = None,
                       kinds: Sequence[Kind | str] | None = None,
                       statuses: Sequence[Status | str] = ...
                       ) -> list[EvaluationResult]: ...

    def promote(self, memory_id: str, *, reason: str = "manual", owner: str | None = None,
                actor: str | None = None) -> PromoteResult: ...

    def archive(self, memory_id: str, *, reason: str = "manual", create_summary: bool = False,
                owner: str | None = None, actor: str | None = None) -> ArchiveResult: ...

    def restore(self, memory_id: str, *, owner: str | None = None,
                window_days: float | None = None,
                actor: str | None = None) -> RestoreResult: ...

    def run_lifecycle(self, *, apply: bool = False, owner: str | None = None,
                      actor: str | None = None) -> LifecycleReport: ...

    # -- the knowledge graph and views ---------------------------------------------------
    def entities(self, *, owner: str | None = None) -> list[EntityRecord]: ...

    def facts(self, *, owner: str | None = None, about: str | None = None,
              as_of: datetime | None = None, current: bool = False) -> list[FactRecord]: ...

    def to_networkx(self, *, owner: str | None = None, edge_kinds: Iterable[str] = ...,
                    statuses: Iterable[str] | None = None) -> nx.MultiDiGraph: ...

    def named_query(self, name: str, params: Mapping[str, Any] | None = None, *,
                    as_dataframe: bool = False, owner: str | None = None) -> Any: ...

    def cypher(self, query: str, params: Mapping[str, Any] | None = None, *,
               write: bool = False, as_dataframe: bool = False,
               actor: str | None = None) -> Any: ...

    def export(self, owner: str | None = None) -> dict[str, Any]: ...

    def backup(self, directory: str | os.PathLike[str]) -> BackupInfo: ...


if TYPE_CHECKING:  # the check itself: each side must be a MemoryAPI (mypy only)
    from ._facade import MemoryStore
    from .client import Client

    _STORE: type[MemoryAPI] = MemoryStore
    _CLIENT: type[MemoryAPI] = Client
