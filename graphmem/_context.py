"""What the store's components share: the engine, settings, clock, embedder, secret keys,
write lock and the listeners told of every commit. Components get this object, never each
other's state.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ._derive import FactSource
from ._embed import Embedder, embed_memories, embedder_from_spec, fingerprint, query_vectors
from ._engine import EdgeRecord, Engine, FactRecord, ForeignChange, WriteBatch
from ._errors import EmbedderMismatchError, InvalidInputError, NotFoundError
from ._input import check_unicode
from ._keys import StoreKeys
from ._kg import Fact
from ._models import Memory
from ._settings import Settings
from ._time import to_utc

__all__ = ["Changed", "FactsWritten", "StoreContext"]


@dataclass(frozen=True)
class Changed:
    """What a commit changed: these memories (``new`` holds the ones it created, when
    the writer has them); ``removed``: they were forgotten; ``edges_only``: only their
    edges changed; ``bulk``: anything may have changed; ``foreign``: another process
    committed it (what this process derived from the store may be stale anywhere);
    ``access_only``: only their access counters changed (another process recalled them);
    ``patched``: the fields the commit set on each of them, when that is all it did to
    them (no text indexed again, no knowledge graph: what they say and mention is as it
    was), so that a listener takes them from here instead of reading the store again."""

    ids: Sequence[str]
    new: Sequence[Memory] = ()
    vectors: Mapping[str, np.ndarray | None] | None = None
    #: the sentence vectors of the ``new`` memories (``NewMemory.sentences``)
    sentences: Mapping[str, np.ndarray | None] | None = None
    removed: bool = False
    edges_only: bool = False
    bulk: bool = False
    foreign: bool = False
    access_only: bool = False
    patched: Mapping[str, Mapping[str, Any]] | None = None
    #: ``patched`` leaves out fields the commit set from the memory's own values (a
    #: lifecycle job's version): enough for an index, not for a whole row
    partial: bool = False
    #: the facts the commit wrote, when the writer has them all (None: any fact may have
    #: changed), so that a listener need not read every fact again
    facts: FactsWritten | None = None
    #: with ``edges_only``: the edges the commit created, when creating them is all it
    #: did to edges (None: the edges of ``ids`` may have changed otherwise: read them)
    edges: Sequence[EdgeRecord] | None = None


@dataclass(frozen=True)
class FactsWritten:
    """The facts one commit wrote, as it left them: ``live`` ones created or changed
    (of one id, the last wins) and ``gone`` ones."""

    live: Sequence[FactRecord] = ()
    gone: Sequence[FactRecord] = ()

    @classmethod
    def of(cls, batch: WriteBatch) -> FactsWritten:
        """What ``batch`` writes of facts, in the order the engines write it."""
        return cls([*batch.facts, *batch.changed_facts], list(batch.gone_facts))


def make_embedder(spec: Embedder | str, settings: Settings) -> Embedder:
    """The embedder of ``spec`` with ``settings``' threads and Ollama host (an embedder
    passes through); a bad spec raises ``InvalidInputError``."""
    if not isinstance(spec, str):
        return spec
    return embedder_from_spec(spec, threads=settings.embed_threads,
                              batch_threads=settings.embed_batch_threads,
                              ollama_host=settings.ollama_host,
                              timeout=settings.ollama_timeout_s)


class StoreContext:
    """The engine and everything the components of one store share."""

    def __init__(self, engine: Engine, settings: Settings,
                 clock: Callable[[], datetime], embedder: Embedder | str | None) -> None:
        self.engine = engine
        self.settings = settings
        #: the forget key and the id key (``_keys``)
        self.keys = StoreKeys(engine)
        self._clock = clock
        #: one writer at a time inside this process (the engine serialises too)
        self.lock = threading.RLock()
        self._listeners: list[Callable[[Changed], None]] = []
        self._before_read: list[Callable[[], None]] = []
        self._held: Callable[[str], Memory | None] = self._read
        self._sync_lock = threading.Lock()
        self._embedder_checked = False
        self.embedder = self._resolve_embedder(embedder)
        #: facts from an Ollama model (checked, rules as fallback), or None: the rules
        self.facts: FactSource | None = _fact_source(settings)

    # -- time, actor and change notification ------------------------------------------
    def now(self) -> datetime:
        return to_utc(self._clock())

    def actor(self, given: str | None) -> str:
        """Who a change is recorded under, in its version rows and events: the caller
        the face names (a token's owner), else the local user, the store's agent id
        (``GRAPHMEM_AGENT_ID``)."""
        return given or self.settings.agent_id

    def on_change(self, listener: Callable[[Changed], None]) -> None:
        """Call ``listener`` after every commit (in registration order)."""
        self._listeners.append(listener)

    def changed(self, change: Changed) -> None:
        for listener in self._listeners:
            listener(change)

    def on_read(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` before memories are read back (pending writes flush there)."""
        self._before_read.append(hook)

    def before_read(self) -> None:
        self.sync()
        self.flush_pending()

    def flush_pending(self) -> None:
        """Write what this process holds back to write later (``on_read``)."""
        for hook in self._before_read:
            hook()

    def sync(self) -> None:
        """Tell the listeners what other processes committed since the last call (for
        engines that many processes share; nothing to do for the others)."""
        feed = self.engine.changes
        if feed is None:
            return
        with self._sync_lock:
            for change in feed.poll():
                for local in foreign_changes(change):
                    self.changed(local)

    def hold(self, rows: Callable[[str], Memory | None]) -> None:
        """Where ``current`` finds a memory's row: one this process holds current, with
        the accesses it counted and has not written yet, else read after writing them
        (None: no such memory)."""
        self._held = rows

    def _read(self, memory_id: str) -> Memory | None:
        self.flush_pending()
        return self.engine.get(memory_id)

    def visible(self, memory_id: str, owner: str | None) -> Memory:
        """The memory, if it exists and ``owner`` (when given) owns it; else NotFound."""
        return self._visible(memory_id, owner, held=False)

    def current(self, memory_id: str, owner: str | None) -> Memory:
        """``visible``, from the row this process holds current when it holds one (what a
        write starts from: reading it again was a third of an importance update's time)."""
        return self._visible(memory_id, owner, held=True)

    def _visible(self, memory_id: str, owner: str | None, *, held: bool) -> Memory:
        self.sync()
        if not isinstance(memory_id, str) or not memory_id:
            raise InvalidInputError("a memory id must be a non-empty string", field="id")
        check_unicode(memory_id, field="id")  # a lone surrogate: no database takes it
        # a held row has the accesses not yet written (a write after feedback waited
        # for their commit: 1.6 ms of a tombstone at 100k memories)
        memory = self._held(memory_id) if held else self._read(memory_id)
        if memory is None or (owner is not None and memory.owner != owner):
            raise NotFoundError(f"no memory {memory_id}")
        return memory

    # -- embeddings ----------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts with the store's model (checked against the store's fingerprint)."""
        return self._checked(self.embedder.embed(list(texts)))

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Embed questions with the store's model (``query_vectors``), checked as ``embed``."""
        return self._checked(query_vectors(self.embedder, list(texts)))

    def embed_memories(self, heads: Sequence[str],
                       contexts: Sequence[str | None]) -> np.ndarray:
        """Memory vectors (``embed_memories``) with the store's model, checked as ``embed``."""
        return self._checked(embed_memories(self.embedder, heads, contexts))

    def _checked(self, vectors: np.ndarray) -> np.ndarray:
        if not self._embedder_checked:
            self._check_fingerprint()
        return vectors

    def check_embedder(self) -> None:
        """Check (or record) the model's fingerprint now, not inside an open write: the
        first embedding records it, which is a write of its own."""
        if not self._embedder_checked:
            self._check_fingerprint()

    def make_embedder(self, spec: Embedder | str) -> Embedder:
        return make_embedder(spec, self.settings)

    def switch_embedder(self, embedder: Embedder) -> None:
        """Make ``embedder`` the store's model (after every vector was recomputed)."""
        self.engine.set_meta({"embedder_spec": embedder.spec, "embedder_name": embedder.name,
                              "embedder_dim": str(embedder.dim),
                              "embedder_fingerprint": fingerprint(embedder)})
        self.embedder = embedder
        self._embedder_checked = True

    def vector_dim(self) -> int:
        meta = self.engine.meta()
        return int(meta.get("embedder_dim") or self.embedder.dim)

    def _resolve_embedder(self, embedder: Embedder | str | None) -> Embedder:
        meta = self.engine.meta()
        stored_spec, stored_name = meta.get("embedder_spec"), meta.get("embedder_name")
        chosen = self.make_embedder(embedder or stored_spec or self.settings.embedder)
        path = self.engine.path
        if stored_name and stored_name != chosen.name:
            raise EmbedderMismatchError(
                f"store {path} was embedded with {stored_name}; you asked for "
                f"{chosen.name}. Open it without choosing an embedder, or switch models "
                f"with `graphmem --db {path} reembed --embedder {chosen.spec}`")
        if not stored_name and not self.engine.read_only:
            self.engine.set_meta({"embedder_spec": chosen.spec, "embedder_name": chosen.name})
        return chosen

    def _check_fingerprint(self) -> None:
        stored = self.engine.meta().get("embedder_fingerprint")
        mine = fingerprint(self.embedder)
        if stored is None:
            if not self.engine.read_only:
                self.engine.set_meta({"embedder_fingerprint": mine,
                                      "embedder_dim": str(self.embedder.dim)})
        elif stored != mine:
            path = self.engine.path
            raise EmbedderMismatchError(
                f"store {path} was embedded by a model with fingerprint {stored}; "
                f"{self.embedder.name} now gives {mine} (another version of the model?). "
                f"Re-embed with `graphmem --db {path} reembed --embedder "
                f"{self.embedder.spec}`")
        self._embedder_checked = True


def foreign_changes(change: ForeignChange) -> list[Changed]:
    """Another process's commit as the notifications this process's listeners take."""
    if change.bulk:
        return [Changed([], bulk=True, foreign=True)]
    removed = set(change.removed)
    out = []
    kept = [i for i in change.ids if i not in removed]
    if kept:
        out.append(Changed(kept, foreign=True))
    if removed:
        out.append(Changed(sorted(removed), removed=True, foreign=True))
    if change.edge_ends:
        out.append(Changed(list(change.edge_ends), edges_only=True, foreign=True))
    accessed = [i for i in change.accessed if i not in removed]
    if accessed:
        out.append(Changed(accessed, access_only=True, foreign=True))
    return out


def _fact_source(settings: Settings) -> FactSource | None:
    """Ollama's fact triples when ``fact_extractor`` asks for them (or, with "auto", when
    a server is configured); a failing server gives the rules' facts and one warning."""
    host = settings.ollama_host
    if settings.fact_extractor == "rules" or not host:
        return None
    from ._kg import OllamaFactExtractor

    extractor = OllamaFactExtractor.connect(host, settings.ollama_model,
                                            timeout=settings.ollama_timeout_s)
    warned: set[str] = set()

    def facts(text: str, speaker: str | None, at: datetime | None) -> Sequence[Fact]:
        result = extractor.extract(text, speaker=speaker, now=at)
        if result.warning and result.warning.split(":")[0] not in warned:
            warned.add(result.warning.split(":")[0])
            logging.getLogger("graphmem").warning("fact extraction: %s", result.warning)
        return result.facts

    return facts
