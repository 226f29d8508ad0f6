"""``MemoryStore``: the one entry object. It opens an engine, builds the components over one
shared context, and delegates each method to the component that owns it (each one a
module of ``_store``):

    memories     add, add_many, merge, get, update, supersede, link, reembed (``_memories``)
    transitions  tombstone, forget, purge, verify_forgotten             (``_transitions``)
    knowledge    entities, facts, mentions, split_entity                 (``_knowledge``)
    recall       recall, feedback, flush                                 (``_recall``)
    rows         drop_caches                                             (``_row_cache``)
    learning     learn, learned, forecast, use_ranker                    (``_learning``)
    lifecycle    evaluate, promote, archive, restore, run_lifecycle      (``_lifecycle``)
    conversations add_conversation, correct, derive_links                 (``_conversations``)
    views        export, cypher, sql, to_networkx, named_query           (``_views``)

Every ``owner`` a method takes is checked here (``check_owner``: a string that a memory
could be written with, or None) before a component, and so the engine, sees it.

Recall searches the index that ``IndexSync`` (``_recall_index``) keeps in sync with every
commit, which conversations read too. A component is handed the others it calls here, at
construction; the algorithms they run are in the packages below (``_recall``, ``_learn``,
``_lifecycle``, ``_extract``, ``_kg``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Self, TypeVar, Unpack, cast

import numpy as np

from ._context import StoreContext, make_embedder
from ._embed import Embedder
from ._engine import EDGE_KINDS, Engine, Link
from ._engine import EntityRecord as Entity
from ._engine import FactRecord as Fact
from ._engine import MentionRecord as Mention
from ._errors import InvalidInputError, StoreLockedError
from ._input import (
    MemoryInput,
    UpdateFields,
    check_count,
    check_flag,
    check_owner,
    check_text,
    moment,
)
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
    Edge,
    EventType,
    Kind,
    LifecycleEvent,
    Memory,
    MergeResult,
    Stats,
    Status,
    TriggeredBy,
    Version,
)
from ._recall import Hit, RecallConfig
from ._settings import Settings
from ._store._conversations import Conversations, Extractor
from ._store._knowledge import Knowledge
from ._store._learning import Learning
from ._store._lifecycle import Lifecycle
from ._store._memories import Memories
from ._store._recall import Recall
from ._store._recall_index import IndexSync
from ._store._row_cache import RowCache
from ._store._transitions import Transitions
from ._time import utcnow
from ._views import Views
from .engines import open_engine

if TYPE_CHECKING:
    import networkx as nx

    from ._backup import BackupInfo
    from ._learn import LearnReport, RankerInfo, RankerModel

__all__ = ["MemoryStore"]

F = TypeVar("F", bound=Callable[..., Any])


def _doc(source: Callable[..., Any]) -> Callable[[F], F]:
    """Give a facade method the docstring of the component method it calls."""

    def copy(method: F) -> F:
        method.__doc__ = source.__doc__
        return method

    return copy


def _one_writer(method: F) -> F:
    """A write that reads the memories it changes holds the store's write lock from that
    read to its commit, so two threads writing one memory each build on the other's
    change: unlocked, both wrote the same next version and the second failed (and with
    Kuzu 0.11.3 a failed write broke the row it had updated, ``_kuzu._db``)."""

    @functools.wraps(method)
    def locked(self: MemoryStore, *args: Any, **kwargs: Any) -> Any:
        with self._ctx.lock:
            return method(self, *args, **kwargs)

    return cast(F, locked)


class MemoryStore:
    """An agent's memories in an embedded graph.

    Parameters
    ----------
    path : str or os.PathLike
        A database directory (created when missing), or ``":memory:"``.
    settings : Settings, optional
        Configuration; ``Settings.from_env()`` when omitted.
    embedder : Embedder or str, optional
        The embedding model: an ``Embedder`` or a spec (``"minilm"``, ``"hashing"``,
        ``"ollama:MODEL"``). By default the one the store was created with, or
        ``settings.embedder`` (the bundled MiniLM) for a new store. A model other than
        the store's is refused; ``reembed`` switches.
    read_only : bool
        Open without write access (several read-only processes may share a database).
    create : bool
        Create the store when ``path`` holds none yet (the default); with False that is
        an error (``StoreError``), and nothing is created.
    clock : callable, optional
        Returns the current time; tests and replays pass their own.

    Examples
    --------
    >>> from graphmem import MemoryStore
    >>> with MemoryStore(":memory:", embedder="hashing") as store:
    ...     memory = store.add("The user prefers TypeScript over JavaScript", kind="semantic")
    ...     store.get(memory.id).kind.value
    'semantic'
    """

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *,
                 settings: Settings | None = None, embedder: Embedder | str | None = None,
                 read_only: bool = False, clock: Callable[[], datetime] | None = None,
                 create: bool = True) -> None:
        if not isinstance(path, str | os.PathLike):
            raise InvalidInputError(f"path must be a directory path, a PostgreSQL URL or "
                                    f"':memory:', not {type(path).__name__}", field="path")
        named = os.fsdecode(path)
        if not named.strip():
            raise InvalidInputError("path is empty: give a database directory, a PostgreSQL "
                                    "URL or ':memory:'", field="path")
        if "\x00" in named:
            raise InvalidInputError("path holds a NUL character, which no file name may",
                                    field="path")
        if settings is not None and not isinstance(settings, Settings):
            raise InvalidInputError(f"settings must be a graphmem Settings, not "
                                    f"{type(settings).__name__} (Settings.from_env(), or "
                                    "Settings(...))", field="settings")
        if embedder is not None and not isinstance(embedder, str) \
                and not callable(getattr(embedder, "embed", None)):
            raise InvalidInputError(f"embedder must be a model spec ('minilm', 'hashing', "
                                    f"...) or an Embedder, not {type(embedder).__name__}",
                                    field="embedder")
        for name, flag in (("read_only", read_only), ("create", create)):
            if not isinstance(flag, bool):
                raise InvalidInputError(f"{name} must be True or False, not {flag!r}",
                                        field=name)
        if clock is not None and not callable(clock):
            raise InvalidInputError("clock must be a function returning the time",
                                    field="clock")
        self.settings = settings or Settings.from_env()
        if embedder is not None:  # a bad spec is refused before any file is made
            embedder = make_embedder(embedder, self.settings)
        elif not isinstance(self.settings.embedder, str):  # ... and the settings' one,
            raise InvalidInputError(  # used when the store has none yet
                f"settings.embedder must be a model spec ('minilm', 'hashing', ...), not "
                f"{type(self.settings.embedder).__name__}", field="embedder")
        else:
            make_embedder(self.settings.embedder, self.settings)
        try:
            engine = open_engine(path, settings=self.settings, read_only=read_only,
                                 create=create)
        except StoreLockedError as exc:
            if exc.here:
                raise
            from ._discovery import held_by

            raise StoreLockedError(f"{exc}: {held_by(path)}") from None
        try:
            self._assemble(engine, clock or utcnow, embedder, read_only=read_only)
        except BaseException:  # (Ctrl-C in a long derivation too) nothing stays held
            recall = getattr(self, "_recall", None)
            if recall is not None:
                recall.close()
            engine.close()
            raise

    def _assemble(self, engine: Engine, clock: Callable[[], datetime],
                  embedder: Embedder | None, *, read_only: bool) -> None:
        """The components over the opened engine, and what an old store needs once."""
        ctx = StoreContext(engine, self.settings, clock, embedder)
        meta = engine.meta()
        self._store_id = meta.get("store_id")
        if self._store_id is None and not read_only:
            # A random id given when the store is first opened read-write: faces use it
            # to tell whether two handles (a sidecar, an embedded open) are one store.
            import uuid

            self._store_id = uuid.uuid4().hex
            engine.set_meta({"store_id": self._store_id})
        self._ctx = ctx
        self._knowledge = Knowledge(ctx)
        self._transitions = Transitions(ctx, self._knowledge)
        self._memories = Memories(ctx, self._transitions, self._knowledge)
        # The index hears of a commit before the row cache: a hit another thread makes
        # from the index's snapshot once the cache has dropped a row finds the snapshot
        # row marked old, and one made before is dropped with it (the other way round, a
        # recall between the two kept the old row for good).
        self._recall_index = IndexSync(ctx)
        self._rows = RowCache(ctx)
        self._recall = Recall(ctx, self._memories, self._transitions, self._recall_index,
                              self._rows)
        ctx.hold(self._recall.held)  # writes start from the rows recall holds
        self._learning = Learning(ctx)
        self._recall.reranker = self._learning.rerank
        self._lifecycle = Lifecycle(ctx, self._memories, self._transitions)
        self._lifecycle.forecaster = self._learning.lifecycle_forecast
        self._conversations = Conversations(ctx, self._memories, self._recall_index,
                                            self._transitions)
        self._views = Views(ctx)
        if engine.meta().get("kg_pending") == "1" and not read_only:
            # A store from before the knowledge graph: derive it from the stored texts.
            self._knowledge.derive_all()
        if engine.meta().get("kg_repair") == "1" and not read_only:
            # A store from before v6: what its forgets left in the graph goes.
            self._knowledge.repair()

    # -- the object ----------------------------------------------------------------------
    @property
    def path(self) -> str:
        return self._ctx.engine.path

    @property
    def embedder(self) -> Embedder:
        return self._ctx.embedder

    @property
    def query_language(self) -> str:
        """What the store's engine answers statements in: ``"cypher"`` (Kuzu,
        ``cypher``) or ``"sql"`` (PostgreSQL, ``sql``); the named queries have both."""
        return "cypher" if self._ctx.engine.cypher is not None else "sql"

    @property
    def store_id(self) -> str | None:
        """This database's stable random id (None for an old store opened read-only)."""
        return self._store_id

    def now(self) -> datetime:
        return self._ctx.now()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts with the store's model (checked against the store's fingerprint)."""
        return self._ctx.embed(texts)

    def warm(self) -> None:
        """Load now what the first request would otherwise wait for: the embedding model,
        the recall index and what the default preset builds on first use (one recall,
        no access recorded). A server calls this before it reports healthy."""
        self._recall.recall("warm up", k=1, record_access=False)

    def close(self) -> None:
        """Close the database (safe to call twice); pending access records are written."""
        self._recall.close()
        self._recall_index.close()
        self._ctx.engine.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryStore({self.path!r})"

    # -- memories --------------------------------------------------------------------------
    @_doc(Memories.get)
    def get(self, memory_id: str, *, owner: str | None = None) -> Memory:
        return self._memories.get(memory_id, owner=check_owner(owner))

    @_doc(Memories.get_many)
    def get_many(self, ids: Iterable[str], *, owner: str | None = None) -> list[Memory]:
        return self._memories.get_many(ids, owner=check_owner(owner))

    @_doc(Memories.memories)
    def memories(self, *, owner: str | None = None, offset: int = 0,
                 limit: int | None = None) -> list[Memory]:
        return self._memories.memories(owner=check_owner(owner), offset=offset, limit=limit)

    @_doc(Memories.memory_count)
    def memory_count(self, *, owner: str | None = None) -> int:
        return self._memories.memory_count(owner=check_owner(owner))

    @_doc(Memories.links)
    def links(self, memory_id: str, *, owner: str | None = None) -> list[Link]:
        return self._memories.links(memory_id, owner=check_owner(owner))

    @_doc(Memories.history)
    def history(self, memory_id: str, *, owner: str | None = None) -> list[Version]:
        return self._memories.history(memory_id, owner=check_owner(owner))

    @_doc(Memories.events)
    def events(self, memory_id: str | None = None, *, event_type: EventType | str | None = None,
               since: datetime | None = None, until: datetime | None = None,
               limit: int | None = None, owner: str | None = None) -> list[LifecycleEvent]:
        return self._memories.events(memory_id, event_type=event_type, since=since,
                                     until=until, owner=check_owner(owner),
                                     limit=None if limit is None else check_count(limit, "limit"))

    @_doc(Memories.stats)
    def stats(self) -> Stats:
        return self._memories.stats()

    def add(self, text: str, *, actor: str | None = None, **fields: Any) -> Memory:
        """Add one memory and return it.

        Keyword fields are those of ``MemoryInput``: kind ("episodic"), subject,
        importance (0.5), confidence (1.0), tags, owner, project, visibility, status
        ("active"), id, created, observed, valid_from, valid_to, session, provenance,
        payload, extra. ``actor`` is recorded in the first version row.
        """
        return self._memories.add_many([{"text": text, **fields}], actor=actor)[0]

    @_doc(Memories.add_many)
    def add_many(self, records: Iterable[MemoryInput | Mapping[str, Any] | str], *,
                 batch_size: int = 500, progress: bool = False,
                 actor: str | None = None) -> list[Memory]:
        return self._memories.add_many(records, batch_size=batch_size, progress_bar=progress,
                                       actor=actor)

    @_doc(Memories.merge)
    @_one_writer
    def merge(self, records: Sequence[MemoryInput], *, edges: Sequence[Edge] = (),
              reason: str = "import", actor: str | None = None,
              source: str | None = None) -> MergeResult:
        return self._memories.merge(records, edges=edges, reason=reason, actor=actor,
                                    source=source)

    @_doc(Memories.merge_chunks)
    def merge_chunks(self, chunks: Iterable[Sequence[MemoryInput]], *,
                     edges: Sequence[Edge] = (), index_of: Mapping[str | None, int],
                     reason: str = "import", actor: str | None = None,
                     source: str | None = None) -> MergeResult:
        return self._memories.merge_chunks(chunks, edges=edges, index_of=index_of,
                                           reason=reason, actor=actor, source=source)

    @_doc(Memories.update)
    @_one_writer
    def update(self, memory_id: str, *, reason: ChangeType | str = ChangeType.MANUAL_EDIT,
               actor: str | None = None, owner: str | None = None,
               **fields: Unpack[UpdateFields]) -> Memory:
        return self._memories.update(memory_id, reason=reason, actor=actor,
                                     owner=check_owner(owner), **fields)

    @_doc(Memories.supersede)
    @_one_writer
    def supersede(self, old_id: str, new: Memory | str, *, reason: str = "conflict_update",
                  owner: str | None = None, actor: str | None = None, **fields: Any) -> Memory:
        return self._memories.supersede(old_id, new, reason=reason, owner=check_owner(owner),
                                        actor=actor, **fields)

    @_doc(Memories.link)
    @_one_writer
    def link(self, a: str, b: str, *, kind: str = "references", weight: float = 1.0,
             source: str = "explicit", owner: str | None = None) -> None:
        self._memories.link(a, b, kind=kind, weight=weight, source=source, owner=check_owner(owner))

    @_doc(Memories.link_many)
    @_one_writer
    def link_many(self, edges: Sequence[Edge]) -> int:
        return self._memories.link_many(edges)

    # -- state changes ---------------------------------------------------------------------
    @_doc(Transitions.tombstone)
    @_one_writer
    def tombstone(self, memory_id: str, *, reason: str = "manual", owner: str | None = None,
                  triggered_by: TriggeredBy = TriggeredBy.MANUAL,
                  actor: str | None = None) -> Memory:
        return self._transitions.tombstone(memory_id, reason=reason, owner=check_owner(owner),
                                           triggered_by=triggered_by, actor=actor)

    @_doc(Transitions.keep)
    @_one_writer
    def keep(self, memory_id: str, *, reason: str = "kept on review", owner: str | None = None,
             actor: str | None = None) -> LifecycleEvent:
        return self._transitions.keep(memory_id, reason=reason, owner=check_owner(owner),
                                      actor=actor)

    @_doc(Transitions.forget)
    @_one_writer
    def forget(self, memory_id: str, *, confirm: bool = False, reason: str = "manual",
               owner: str | None = None, purge: bool = True, actor: str | None = None) -> None:
        self._transitions.forget(memory_id, confirm=confirm, reason=reason,
                                 owner=check_owner(owner), purge=purge, actor=actor)

    @_doc(Transitions.forget_many)
    @_one_writer
    def forget_many(self, memory_ids: Sequence[str], *, confirm: bool = False,
                    reason: str = "manual", owner: str | None = None, purge: bool = True,
                    actor: str | None = None) -> int:
        return self._transitions.forget_many(memory_ids, confirm=confirm,
                                             reason=reason, owner=check_owner(owner),
                                             purge=purge, actor=actor)

    @_doc(Transitions.verify_forgotten)
    def verify_forgotten(self, memory_id: str, text: str) -> bool:
        return self._transitions.verify_forgotten(memory_id, text)

    @_doc(Transitions.purge)
    def purge(self) -> None:
        self._transitions.purge()

    # -- recall ----------------------------------------------------------------------------
    @_doc(Recall.recall)
    def recall(self, query: str, *, k: int = 10, preset: str | RecallConfig = "default",
               owner: str | None = None, kinds: Sequence[Kind | str] | None = None,
               as_of: datetime | None = None, include_archived: bool = False,
               record_access: bool = False, since: datetime | str | None = None,
               until: datetime | str | None = None, min_similarity: float | None = None,
               min_relative: float | None = None) -> list[Hit]:
        return self._recall.recall(query, k=k, preset=preset, owner=check_owner(owner), kinds=kinds,
                                   as_of=as_of, include_archived=include_archived,
                                   record_access=record_access, since=since, until=until,
                                   min_similarity=min_similarity, min_relative=min_relative)

    @_one_writer
    def feedback(self, memory_id: str, *, useful: bool, query: str | None = None,
                 owner: str | None = None, actor: str | None = None) -> Memory:
        """Report whether a recalled memory helped (retrieval feedback).

        Useful: the useful count grows and importance rises by ``feedback_boost`` (a
        version row ``importance_boost``); memories of the same recall marked useful
        gain or strengthen a CO_OCCURS edge; a weak candidate is confirmed (it becomes
        active). Not useful: the ignored count grows.
        """
        return self._recall.feedback(memory_id, useful=useful, query=query,
                                     owner=check_owner(owner), actor=actor)

    @_doc(Memories.reembed)
    def reembed(self, embedder: Embedder | str, *, batch_size: int = 256,
                progress: bool = False) -> int:
        return self._memories.reembed(embedder, batch_size=batch_size, progress_bar=progress)

    @_doc(Recall.flush)
    def flush(self) -> None:
        self._recall.flush()

    @_doc(RowCache.drop_caches)
    def drop_caches(self) -> None:
        self._rows.drop_caches()

    # -- learning from use -----------------------------------------------------------------
    @_doc(Learning.learn)
    def learn(self, *, ranker: bool = True, forecast: bool = True,
              horizon_days: float = 30.0) -> LearnReport:
        return self._learning.learn(ranker=ranker, forecast=forecast,
                                    horizon_days=horizon_days)

    @_doc(Learning.forecast)
    def forecast(self, *, validated_only: bool = True) -> dict[str, float] | None:
        return self._learning.forecast(validated_only=validated_only)

    @_doc(Learning.status)
    def learned(self) -> LearnReport:
        return self._learning.status()

    @_doc(Learning.use_ranker)
    def use_ranker(self, model: RankerModel | Mapping[str, Any]) -> RankerInfo:
        return self._learning.use_ranker(model)

    # -- lifecycle -------------------------------------------------------------------------
    @_doc(Lifecycle.centrality)
    def centrality(self) -> dict[str, float]:
        return self._lifecycle.centrality()

    @_doc(Lifecycle.evaluate)
    def evaluate(self, memory_id: str, *, owner: str | None = None) -> EvaluationResult:
        return self._lifecycle.evaluate(memory_id, owner=check_owner(owner))

    @_doc(Lifecycle.batch_evaluate)
    def batch_evaluate(self, ids: Sequence[str] | None = None, *, owner: str | None = None,
                       kinds: Sequence[Kind | str] | None = None,
                       statuses: Sequence[Status | str] = (Status.ACTIVE,)
                       ) -> list[EvaluationResult]:
        return self._lifecycle.batch_evaluate(ids, owner=check_owner(owner), kinds=kinds,
                                              statuses=statuses)

    @_doc(Lifecycle.promote)
    @_one_writer
    def promote(self, memory_id: str, *, reason: str = "manual", owner: str | None = None,
                triggered_by: TriggeredBy = TriggeredBy.MANUAL,
                actor: str | None = None) -> PromoteResult:
        return self._lifecycle.promote(memory_id, reason=reason, owner=check_owner(owner),
                                       triggered_by=triggered_by, actor=actor)

    @_doc(Lifecycle.archive)
    @_one_writer
    def archive(self, memory_id: str, *, reason: str = "manual", create_summary: bool = False,
                owner: str | None = None, triggered_by: TriggeredBy = TriggeredBy.MANUAL,
                actor: str | None = None) -> ArchiveResult:
        return self._lifecycle.archive(memory_id, reason=reason, create_summary=create_summary,
                                       owner=check_owner(owner), triggered_by=triggered_by,
                                       actor=actor)

    @_doc(Lifecycle.restore)
    @_one_writer
    def restore(self, memory_id: str, *, owner: str | None = None,
                window_days: float | None = None, actor: str | None = None) -> RestoreResult:
        return self._lifecycle.restore(memory_id, owner=check_owner(owner), window_days=window_days,
                                       actor=actor)

    @_doc(Lifecycle.run)
    def run_lifecycle(self, *, apply: bool = False, owner: str | None = None,
                      actor: str | None = None) -> LifecycleReport:
        return self._lifecycle.run(apply=apply, owner=check_owner(owner), actor=actor)

    # -- conversations ---------------------------------------------------------------------
    @_doc(Conversations.add_conversation)
    def add_conversation(self, messages: Sequence[Mapping[str, Any] | str], *,
                         session_id: str, owner: str | None = None,
                         timestamp: datetime | None = None, extractor: Extractor | None = None,
                         cooccur_window: int = 2, actor: str | None = None) -> AddResult:
        return self._conversations.add_conversation(
            messages, session_id=session_id, owner=check_owner(owner), timestamp=timestamp,
            extractor=extractor, cooccur_window=cooccur_window, actor=actor)

    @_doc(Conversations.correct)
    @_one_writer
    def correct(self, memory_id: str, new_text: str, *, owner: str | None = None,
                actor: str | None = None, **fields: Any) -> Memory:
        return self._conversations.correct(memory_id, new_text, owner=check_owner(owner),
                                           actor=actor, **fields)

    @_doc(Conversations.derive_links)
    def derive_links(self, ids: Sequence[str] | None = None, *, max_df: int | None = None,
                     limit: int = 10) -> int:
        return self._conversations.derive_links(ids, max_df=max_df, limit=limit)

    # -- the knowledge graph -----------------------------------------------------------------
    @_doc(Knowledge.entities)
    def entities(self, *, owner: str | None = None) -> list[Entity]:
        return self._knowledge.entities(owner=check_owner(owner))

    @_doc(Knowledge.find)
    def find_entities(self, name: str, *, owner: str | None = None) -> list[Entity]:
        return self._knowledge.find(name, owner=check_owner(owner))

    @_doc(Knowledge.facts)
    def facts(self, *, owner: str | None = None, about: str | None = None,
              as_of: datetime | None = None, current: bool = False) -> list[Fact]:
        if about is not None:
            check_text(about, field="about")
        return self._knowledge.facts(owner=check_owner(owner), about=about,
                                     as_of=moment(as_of, "as_of"),
                                     current=check_flag(current, "current"))

    @_doc(Knowledge.mentions)
    def mentions(self, memory_id: str | None = None, *, owner: str | None = None
                 ) -> list[Mention]:
        return self._knowledge.mentions(memory_id, owner=check_owner(owner))

    @_doc(Knowledge.sections)
    def graph_sections(self, memory_ids: Sequence[str], *, owner: str | None = None
                       ) -> dict[str, dict[str, list[dict[str, Any]]]]:
        return self._knowledge.sections(memory_ids, owner=check_owner(owner))

    @_doc(Memories.split_entity)
    def split_entity(self, entity_id: str, alias: str, *, owner: str | None = None) -> Entity:
        return self._memories.split_entity(entity_id, alias, owner=check_owner(owner))

    # -- views -----------------------------------------------------------------------------
    @_doc(Views.export)
    def export(self, owner: str | None = None) -> dict[str, Any]:
        return self._views.export(check_owner(owner))

    @_doc(Views.cypher)
    def cypher(self, query: str, params: Mapping[str, Any] | None = None, *,
               write: bool = False, as_dataframe: bool = False,
               actor: str | None = None) -> Any:
        return self._views.cypher(query, params, write=write, as_dataframe=as_dataframe,
                                  actor=actor)

    @_doc(Views.sql)
    def sql(self, query: str, params: Mapping[str, Any] | None = None, *,
            as_dataframe: bool = False) -> Any:
        return self._views.sql(query, params, as_dataframe=as_dataframe)

    def named_query(self, name: str, params: Mapping[str, Any] | None = None, *,
                    as_dataframe: bool = False, owner: str | None = None) -> Any:
        """Run one of the named queries (``graphmem query --list``; the analyst's library
        ``queries/`` and any other registered in ``graphmem.named``) with its parameters
        bound, read-only, in the store's query language; with ``owner``, an owner-scoped
        query confined to that owner. Rows are dicts (column -> value), or a DataFrame
        with ``as_dataframe=True``."""
        from . import named

        if not isinstance(name, str):
            raise InvalidInputError(f"name must be a named query's name, got {name!r}",
                                    field="name")
        return named.run(self, name, params, as_dataframe=as_dataframe, owner=check_owner(owner))

    @_doc(Views.vectors)
    def vectors(self, *, owner: str | None = None) -> tuple[list[str], np.ndarray]:
        return self._views.vectors(owner=check_owner(owner))

    @_doc(Views.to_networkx)
    def to_networkx(self, *, owner: str | None = None,
                    edge_kinds: Iterable[str] = EDGE_KINDS,
                    statuses: Iterable[str] | None = None) -> nx.MultiDiGraph:
        return self._views.to_networkx(owner=check_owner(owner), edge_kinds=edge_kinds,
                                       statuses=statuses)

    # -- backups ---------------------------------------------------------------------------
    def backup(self, directory: str | os.PathLike[str]) -> BackupInfo:
        """Write a consistent snapshot of the store to ``directory`` (new or empty).

        Writers wait while it is taken; readers go on. ``MemoryStore.restore_backup``
        makes a new database from it.
        """
        from ._backup import backup

        if not isinstance(directory, str | os.PathLike) or not os.fspath(directory).strip():
            raise InvalidInputError(f"directory must be a path, got {directory!r}",
                                    field="directory")
        return backup(self._ctx, directory)

    @staticmethod
    def restore_backup(directory: str | os.PathLike[str], target: str | os.PathLike[str],
                       *, settings: Settings | None = None) -> BackupInfo:
        """Create the database ``target`` (a new or empty directory, or an empty PostgreSQL
        store's URL) from a backup, after checking its manifest, checksums and rows; a
        legacy backup's older schema is migrated. ``forgotten`` of the result counts the
        forgotten memories: a backup holds no forget key, so the restored store checks a
        chat imported again against what they said only once the original store's forget
        key is added back (docs/security.md)."""
        from ._backup import restore

        return restore(directory, target, settings=settings)
