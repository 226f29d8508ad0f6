"""Where the MCP tools get their answers: the HTTP sidecar, or the embedded store.

Both speak the same small dicts, so a tool's result does not depend on the path. A
server with a token uses the sidecar alone: only the sidecar knows the token's owner and
scopes, so answering from the embedded store would widen it. Without a token, the
embedded store answers when the sidecar cannot be reached, but only when it is the very
store the sidecar serves (same ``store_id``), and never repeats a change the sidecar may
already have applied.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from .._errors import BackendUnavailableError, GraphmemError, InvalidInputError
from .._facade import MemoryStore
from .._recall import Hit
from .._settings import Settings
from .._views import to_json
from ..client import Client, SidecarUnreachable
from ..engines import is_postgres_url

__all__ = ["Backend", "EmbeddedBackend", "FallbackBackend", "SharedBackend", "SidecarBackend",
           "SidecarUnreachable", "within_budget"]


def compact_hit(hit: Hit, *, explain: bool) -> dict[str, Any]:
    """A hit as a tool answers it: the memory's main fields, when it was said (its
    session's time) and the times its text names, and with ``explain`` why it came back."""
    data = to_json(hit)
    memory = data["memory"]
    out = {"id": memory["id"], "rank": hit.rank, "score": round(hit.score, 6),
           "kind": memory["kind"], "subject": memory.get("subject"), "text": memory["text"],
           "created": memory["created"], "when": data["when"], "speaks_of": data["speaks_of"]}
    if explain:
        out["why"] = hit.explanation.lines()
    return out


def within_budget(hits: list[dict[str, Any]], max_chars: int | None
                  ) -> tuple[list[dict[str, Any]], int]:
    """The hits, best first, whose texts fit in ``max_chars`` characters together (the
    first that does not fit is cut to what is left, marked ``truncated``), and how many
    were left out.

    >>> hits = [{"text": "a" * 6}, {"text": "b" * 6}, {"text": "c" * 6}]
    >>> kept, left_out = within_budget(hits, 10)
    >>> [h["text"] for h in kept], kept[1]["truncated"], left_out
    (['aaaaaa', 'bbbb'], True, 1)
    """
    if max_chars is None:
        return hits, 0
    kept: list[dict[str, Any]] = []
    room = max_chars
    for hit in hits:
        if room <= 0:
            break
        text = hit["text"]
        if len(text) > room:
            hit = {**hit, "text": text[:room], "truncated": True}
        kept.append(hit)
        room -= len(hit["text"])
    return kept, len(hits) - len(kept)


def compact_memory(memory: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "kind", "status", "subject", "text", "tags", "importance", "owner",
            "created", "version", "superseded_by")
    return {k: memory.get(k) for k in keys}


class Backend(Protocol):
    name: str

    def remember(self, fields: dict[str, Any]) -> dict[str, Any]: ...
    def recall(self, query: str, k: int, preset: str, explain: bool,
               record_access: bool, options: dict[str, Any]) -> list[dict[str, Any]]: ...
    def feedback(self, memory_id: str, useful: bool, query: str | None) -> dict[str, Any]: ...
    def forget(self, memory_id: str, hard: bool) -> dict[str, Any]: ...
    def history(self, memory_id: str) -> list[dict[str, Any]]: ...
    def lifecycle_report(self) -> str: ...
    def supersede(self, memory_id: str, text: str, reason: str,
                  fields: dict[str, Any]) -> dict[str, Any]: ...
    def update(self, memory_id: str, fields: dict[str, Any]) -> dict[str, Any]: ...
    def link(self, memory_id: str, other: str, kind: str, weight: float) -> dict[str, Any]: ...


class _Tools:
    """The tools' work over a store (a ``MemoryStore`` or a sidecar's ``Client``: the
    same methods), each answer a small dict that does not depend on which one it was.
    ``_scope`` is what every call passes (the owner), ``_changes`` what every change
    passes too (the actor); a sidecar decides both itself."""

    name = "store"

    @property
    def store(self) -> Any:
        raise NotImplementedError

    def _scope(self) -> dict[str, Any]:
        return {}

    def _changes(self) -> dict[str, Any]:
        return {}

    def remember(self, fields: dict[str, Any]) -> dict[str, Any]:
        memory = self.store.add(**fields, **self._changes())
        return compact_memory(to_json(memory))

    def recall(self, query: str, k: int, preset: str, explain: bool,
               record_access: bool, options: dict[str, Any]) -> list[dict[str, Any]]:
        """``options``: recall's filters and cuts (since, until, min_similarity ...)."""
        hits = self.store.recall(query, k=k, preset=preset, record_access=record_access,
                                 **options, **self._scope())
        return [compact_hit(h, explain=explain) for h in hits]

    def feedback(self, memory_id: str, useful: bool, query: str | None) -> dict[str, Any]:
        memory = self.store.feedback(memory_id, useful=useful, query=query, **self._changes())
        return {"memory_id": memory.id, "useful_count": memory.useful_count,
                "ignored_count": memory.ignored_count, "importance": memory.importance}

    def forget(self, memory_id: str, hard: bool) -> dict[str, Any]:
        if hard:
            self.store.forget(memory_id, confirm=True, **self._changes())
            return {"memory_id": memory_id, "status": "forgotten"}
        memory = self.store.tombstone(memory_id, **self._changes())
        return {"memory_id": memory_id, "status": memory.status.value}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        return [to_json(v) for v in self.store.history(memory_id, **self._scope())]

    def lifecycle_report(self) -> str:
        report = self.store.run_lifecycle(apply=False, **self._scope())
        return str(report.to_markdown())

    def supersede(self, memory_id: str, text: str, reason: str,
                  fields: dict[str, Any]) -> dict[str, Any]:
        new = self.store.supersede(memory_id, text, reason=reason, **fields, **self._changes())
        return compact_memory(to_json(new))

    def update(self, memory_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        memory = self.store.update(memory_id, **fields, **self._changes())
        return compact_memory(to_json(memory))

    def link(self, memory_id: str, other: str, kind: str, weight: float) -> dict[str, Any]:
        self.store.link(memory_id, other, kind=kind, weight=weight, **self._scope())
        return {"memory_id": memory_id, "other": other, "kind": kind, "weight": weight}


class EmbeddedBackend(_Tools):
    """The store in this process, opened on first use; every call is scoped to ``owner``
    (``None``: the local user, who sees every owner), every change recorded with it as
    the actor (or the store's agent id, ``GRAPHMEM_AGENT_ID``)."""

    name = "embedded"

    def __init__(self, db: str | Path, *, settings: Settings | None = None,
                 embedder: str | None = None, owner: str | None = None) -> None:
        self.db, self._settings, self._embedder = db, settings, embedder
        self.owner = owner
        self._store: MemoryStore | None = None
        self._lock = threading.Lock()

    @property
    def store(self) -> MemoryStore:
        with self._lock:
            if self._store is None:
                self._store = MemoryStore(self.db, settings=self._settings,
                                          embedder=self._embedder)
            return self._store

    def _scope(self) -> dict[str, Any]:
        return {"owner": self.owner}

    def _changes(self) -> dict[str, Any]:
        return {"owner": self.owner, "actor": self.owner}  # None: the store's agent id

    def store_id(self) -> str | None:
        """The id of the store at ``db``, read without creating or changing anything:
        None when there is no database there."""
        with self._lock:  # a peek beside this backend's own first open would refuse it
            if self._store is not None:
                return self._store.store_id
            if str(self.db) == ":memory:" or (not is_postgres_url(str(self.db))
                                              and not Path(self.db).exists()):
                return None
            with MemoryStore(self.db, settings=self._settings, embedder=self._embedder,
                             read_only=True) as peek:
                return peek.store_id

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None


class SidecarBackend(_Tools):
    """The HTTP sidecar at ``url`` (with a bearer ``token`` when it wants one), through
    ``graphmem.connect``: the sidecar scopes every call to the token's owner and records
    that owner as the actor of every change."""

    name = "sidecar"

    def __init__(self, url: str, *, token: str | None = None, timeout_s: float = 10.0,
                 actor: str | None = None) -> None:
        try:
            self._client = Client(url, token=token, timeout_s=timeout_s, actor=actor)
        except InvalidInputError:
            raise InvalidInputError(f"sidecar URL must start with http:// or https://, got "
                                    f"{url!r}", field="sidecar") from None
        self.url, self.timeout_s = self._client.url, timeout_s

    @property
    def store(self) -> Client:
        return self._client

    def close(self) -> None:
        self._client.close()

    def store_id(self) -> str | None:
        """The ``store_id`` of the store the sidecar serves (asked each time: the
        sidecar may have been restarted on another store)."""
        found = self._client.whoami(fresh=True).get("store_id")
        return str(found) if found else None


class FallbackBackend:
    """The sidecar first. With ``fallback`` (no token), the embedded store answers when
    the sidecar cannot be reached, if it is the store the sidecar said it serves; with
    none (a token), an unreachable sidecar is an error that says what to do."""

    def __init__(self, primary: SidecarBackend, fallback: EmbeddedBackend | None, *,
                 db: str | Path) -> None:
        self.primary, self.fallback, self.db = primary, fallback, db
        self._sidecar_store: str | None = None  # what the sidecar said it serves
        self._ask = True  # ask it (again): at the start, and once it answers after a gap
        self._lock = threading.Lock()

    def call(self, operation: Callable[[Backend], Any], *, changes: bool
             ) -> tuple[Any, str, str | None]:
        """(result, which path answered, why the sidecar did not). ``changes``: the
        operation writes, so it is never repeated where it may already have been made."""
        try:
            if self.fallback is not None and self._asking():
                found = self.primary.store_id()
                with self._lock:
                    self._sidecar_store, self._ask = found, False
            return operation(self.primary), self.primary.name, None
        except SidecarUnreachable as exc:
            with self._lock:
                known, self._ask = self._sidecar_store, True
            self._refuse_unless_same_store(exc, known, changes)
            assert self.fallback is not None
            why = f"sidecar unreachable: {exc.reason}"
            return operation(self.fallback), self.fallback.name, why

    def _asking(self) -> bool:
        with self._lock:
            return self._ask

    def _refuse_unless_same_store(self, exc: SidecarUnreachable, known: str | None,
                                  changes: bool) -> None:
        where = f"the graphmem sidecar at {self.primary.url} did not answer: {exc.reason}."
        if self.fallback is None:
            raise BackendUnavailableError(
                f"{where} This MCP server was started with a token, whose owner and scopes "
                f"only the sidecar can enforce, so it does not answer from the store at "
                f"{self.db} instead. Start the sidecar (graphmem --db DB serve --tokens "
                f"FILE) or fix --sidecar / GRAPHMEM_SIDECAR_URL, then call again."
                + (" The change may have been made there: check before repeating it."
                   if changes and exc.maybe_applied else ""))
        if changes and exc.maybe_applied:
            raise BackendUnavailableError(
                f"{where} The change may have been made there, so it is not repeated on "
                f"the store at {self.db}: check with recall or history once the sidecar "
                f"answers, then repeat it if needed.")
        if known is None:
            raise BackendUnavailableError(
                f"{where} It has not said which store it serves since this MCP server "
                f"started, so the store at {self.db} is not used in its place (it could "
                f"be another one). Start the sidecar, or run graphmem mcp without "
                f"--sidecar to use {self.db} directly.")
        try:
            local = self.fallback.store_id()
        except GraphmemError as error:
            raise BackendUnavailableError(
                f"{where} The store at {self.db} cannot be opened in its place either: "
                f"{error}") from None
        if local != known:
            found = f"store {local}" if local else "no graphmem store"
            raise BackendUnavailableError(
                f"{where} The store at {self.db} ({found}) is not the one the sidecar "
                f"serves (store {known}), so it is not used in its place. Pass the "
                f"sidecar's database as --db, or start the sidecar.")


class SharedBackend:
    """The store at ``db`` shared with other processes through its sidecar, found or
    started on first use (``graphmem.client.find_or_start``) and again when it has gone
    (it exits when idle): the local user's tools as embedded (every owner, the agent id
    as the actor), answered by the one process that holds the store. Says on stderr which
    sidecar it works through."""

    name = "sidecar"

    def __init__(self, db: str | Path, *, settings: Settings, embedder: str | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        self.db, self._settings, self._embedder = db, settings, embedder
        self._say = say or (lambda line: None)
        self._sidecar: SidecarBackend | None = None
        self._lock = threading.Lock()

    def _backend(self, *, again: bool = False) -> SidecarBackend:
        from ..client import find_or_start

        with self._lock:
            if self._sidecar is not None and not again:
                return self._sidecar
            if self._sidecar is not None:
                self._sidecar.close()
                self._sidecar = None
            found, started = find_or_start(self.db, embedder=self._embedder)
            self._sidecar = SidecarBackend(found.url, token=found.secret,
                                           timeout_s=self._settings.sidecar_timeout_s,
                                           actor=self._settings.agent_id)
            how = "started by this server" if started else "already running"
            self._say(f"graphmem mcp: {self.db} is shared through the graphmem sidecar at "
                      f"{found.url} (process {found.pid}, {how}); working through it")
            return self._sidecar

    def call(self, operation: Callable[[Backend], Any], *, changes: bool
             ) -> tuple[Any, str, str | None]:
        """(result, path, None), through the sidecar; one that went away (it exits when
        idle) is found or started again, and the call repeated unless it was a change
        that may have reached it."""
        try:
            return operation(self._backend()), self.name, None
        except SidecarUnreachable as exc:
            if changes and exc.maybe_applied:
                raise BackendUnavailableError(
                    f"{exc} The change may have been made there, so it is not repeated: "
                    "check with recall or history, then repeat it if needed.") from None
            return operation(self._backend(again=True)), self.name, None

    def close(self) -> None:
        with self._lock:
            if self._sidecar is not None:
                self._sidecar.close()
                self._sidecar = None
