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
from urllib.parse import quote

import httpx

from .._errors import BackendUnavailableError, GraphmemError, InvalidInputError
from .._facade import MemoryStore
from .._settings import Settings

__all__ = ["Backend", "EmbeddedBackend", "FallbackBackend", "SidecarBackend", "SidecarError",
           "SidecarUnreachable", "path_segment"]


class SidecarError(GraphmemError):
    """The sidecar answered with an error (its ``error`` code and ``detail``)."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code


class SidecarUnreachable(BackendUnavailableError):
    """The sidecar did not answer. ``maybe_applied``: the request may have reached it (a
    timeout after sending), so a change it carried may have been made there."""

    def __init__(self, message: str, *, maybe_applied: bool) -> None:
        super().__init__(message)
        self.maybe_applied = maybe_applied


def path_segment(memory_id: str) -> str:
    """``memory_id`` as one URL path segment: every reserved character percent-encoded
    (``/``, ``#``, ``?`` and ``%`` too), and the dot segments that HTTP clients collapse
    (``.``, ``..``) spelled out, so the request reaches this memory and no other."""
    if not isinstance(memory_id, str) or not memory_id:
        raise InvalidInputError("memory_id must be a non-empty id", field="memory_id")
    segment = quote(memory_id, safe="")
    return {".": "%2E", "..": "%2E%2E"}.get(segment, segment)


def compact_hit(memory: dict[str, Any], score: float, rank: int,
                why: list[str] | None) -> dict[str, Any]:
    out = {"id": memory["id"], "rank": rank, "score": round(score, 6),
           "kind": memory["kind"], "subject": memory.get("subject"), "text": memory["text"],
           "created": memory["created"]}
    if why is not None:
        out["why"] = why
    return out


def compact_memory(memory: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "kind", "status", "subject", "text", "tags", "importance", "owner",
            "created")
    return {k: memory.get(k) for k in keys}


class Backend(Protocol):
    name: str

    def remember(self, fields: dict[str, Any]) -> dict[str, Any]: ...
    def recall(self, query: str, k: int, preset: str, explain: bool) -> list[dict[str, Any]]: ...
    def feedback(self, memory_id: str, useful: bool, query: str | None) -> dict[str, Any]: ...
    def forget(self, memory_id: str, hard: bool) -> dict[str, Any]: ...
    def history(self, memory_id: str) -> list[dict[str, Any]]: ...
    def lifecycle_report(self) -> str: ...


class EmbeddedBackend:
    """The store in this process, opened on first use; every call is scoped to ``owner``
    (``None``: the local user, who sees every owner)."""

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

    def store_id(self) -> str | None:
        """The id of the store at ``db``, read without creating or changing anything:
        None when there is no database there."""
        with self._lock:
            if self._store is not None:
                return self._store.store_id
        if str(self.db) == ":memory:" or not Path(self.db).exists():
            return None
        with MemoryStore(self.db, settings=self._settings, embedder=self._embedder,
                         read_only=True) as peek:
            return peek.store_id

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    def remember(self, fields: dict[str, Any]) -> dict[str, Any]:
        memory = self.store.add(**fields, owner=self.owner)
        return compact_memory(memory.model_dump(mode="json"))

    def recall(self, query: str, k: int, preset: str, explain: bool) -> list[dict[str, Any]]:
        hits = self.store.recall(query, k=k, preset=preset, owner=self.owner)
        return [compact_hit(h.memory.model_dump(mode="json"), h.score, h.rank,
                            h.explanation.lines() if explain else None) for h in hits]

    def feedback(self, memory_id: str, useful: bool, query: str | None) -> dict[str, Any]:
        memory = self.store.feedback(memory_id, useful=useful, query=query, owner=self.owner)
        return {"memory_id": memory.id, "useful_count": memory.useful_count,
                "ignored_count": memory.ignored_count, "importance": memory.importance}

    def forget(self, memory_id: str, hard: bool) -> dict[str, Any]:
        if hard:
            self.store.forget(memory_id, confirm=True, owner=self.owner)
            return {"memory_id": memory_id, "status": "forgotten"}
        memory = self.store.tombstone(memory_id, owner=self.owner)
        return {"memory_id": memory_id, "status": memory.status.value}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        return [v.model_dump(mode="json")
                for v in self.store.history(memory_id, owner=self.owner)]

    def lifecycle_report(self) -> str:
        return self.store.run_lifecycle(apply=False, owner=self.owner).to_markdown()


class SidecarBackend:
    """The HTTP sidecar at ``url`` (with a bearer ``token`` when it wants one)."""

    name = "sidecar"

    def __init__(self, url: str, *, token: str | None = None, timeout_s: float = 10.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise InvalidInputError(f"sidecar URL must start with http:// or https://, got "
                                    f"{url!r}", field="sidecar")
        self.url, self.timeout_s = url.rstrip("/"), timeout_s
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(base_url=self.url, headers=headers,
                                    timeout=httpx.Timeout(timeout_s, connect=min(2.0,
                                                                                 timeout_s)))

    def close(self) -> None:
        self._client.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._client.request(method, path, **kwargs)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise SidecarUnreachable(f"cannot connect ({_why(exc)})",
                                     maybe_applied=False) from exc
        except httpx.TimeoutException as exc:
            raise SidecarUnreachable(f"no answer within {self.timeout_s:g} s "
                                     f"({type(exc).__name__})", maybe_applied=True) from exc
        except httpx.TransportError as exc:
            raise SidecarUnreachable(f"the connection failed ({_why(exc)})",
                                     maybe_applied=True) from exc
        if response.status_code >= 400:
            try:
                body = response.json()
                raise SidecarError(body.get("error", "error"), body.get("detail", ""))
            except (ValueError, AttributeError):
                raise SidecarError("http_error", f"status {response.status_code}") from None
        return response.json()

    def store_id(self) -> str | None:
        """The ``store_id`` of the store the sidecar serves."""
        found = self._call("GET", "/v1/store").get("store_id")
        return str(found) if found else None

    def remember(self, fields: dict[str, Any]) -> dict[str, Any]:
        return compact_memory(self._call("POST", "/v1/memories", json=fields))

    def recall(self, query: str, k: int, preset: str, explain: bool) -> list[dict[str, Any]]:
        body = self._call("POST", "/v1/memories/retrieve",
                          json={"query": query, "k": k, "preset": preset, "explain": explain})
        return [compact_hit(h["memory"], h["score"], h["rank"], h.get("why"))
                for h in body["hits"]]

    def feedback(self, memory_id: str, useful: bool, query: str | None) -> dict[str, Any]:
        out: dict[str, Any] = self._call("POST", "/v1/feedback", json={
            "memory_id": memory_id, "useful": useful, "query": query})
        return out

    def forget(self, memory_id: str, hard: bool) -> dict[str, Any]:
        out: dict[str, Any] = self._call("DELETE", f"/v1/memories/{path_segment(memory_id)}",
                                         params={"hard": str(hard).lower()})
        return out

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        path = f"/v1/memories/{path_segment(memory_id)}/history"
        out: list[dict[str, Any]] = self._call("GET", path)["versions"]
        return out

    def lifecycle_report(self) -> str:
        return str(self._call("GET", "/v1/lifecycle/report",
                              params={"format": "markdown"})["markdown"])


def _why(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


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
            return operation(self.fallback), self.fallback.name, f"sidecar unreachable: {exc}"

    def _asking(self) -> bool:
        with self._lock:
            return self._ask

    def _refuse_unless_same_store(self, exc: SidecarUnreachable, known: str | None,
                                  changes: bool) -> None:
        where = f"the graphmem sidecar at {self.primary.url} did not answer: {exc}."
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
