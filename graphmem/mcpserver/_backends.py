"""Where the MCP tools get their answers: the HTTP sidecar, or the embedded store.

Both speak the same small dicts, so a tool's result does not depend on the path; the
fallback answers from the embedded store when the sidecar cannot be reached, and says
which path answered.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import httpx

from .._errors import BackendUnavailableError, GraphmemError, InvalidInputError
from .._facade import MemoryStore
from .._settings import Settings

__all__ = ["Backend", "EmbeddedBackend", "FallbackBackend", "SidecarBackend", "SidecarError"]


class SidecarError(GraphmemError):
    """The sidecar answered with an error (its ``error`` code and ``detail``)."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code


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
    """The store in this process, opened on first use."""

    name = "embedded"

    def __init__(self, db: str | Path, *, settings: Settings | None = None,
                 embedder: str | None = None) -> None:
        self._db, self._settings, self._embedder = db, settings, embedder
        self._store: MemoryStore | None = None
        self._lock = threading.Lock()

    @property
    def store(self) -> MemoryStore:
        with self._lock:
            if self._store is None:
                self._store = MemoryStore(self._db, settings=self._settings,
                                          embedder=self._embedder)
            return self._store

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    def remember(self, fields: dict[str, Any]) -> dict[str, Any]:
        return compact_memory(self.store.add(**fields).model_dump(mode="json"))

    def recall(self, query: str, k: int, preset: str, explain: bool) -> list[dict[str, Any]]:
        hits = self.store.recall(query, k=k, preset=preset)
        return [compact_hit(h.memory.model_dump(mode="json"), h.score, h.rank,
                            h.explanation.lines() if explain else None) for h in hits]

    def feedback(self, memory_id: str, useful: bool, query: str | None) -> dict[str, Any]:
        memory = self.store.feedback(memory_id, useful=useful, query=query)
        return {"memory_id": memory.id, "useful_count": memory.useful_count,
                "ignored_count": memory.ignored_count, "importance": memory.importance}

    def forget(self, memory_id: str, hard: bool) -> dict[str, Any]:
        if hard:
            self.store.forget(memory_id, confirm=True)
            return {"memory_id": memory_id, "status": "forgotten"}
        return {"memory_id": memory_id, "status": self.store.tombstone(memory_id).status.value}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        return [v.model_dump(mode="json") for v in self.store.history(memory_id)]

    def lifecycle_report(self) -> str:
        return self.store.run_lifecycle(apply=False).to_markdown()


class SidecarBackend:
    """The HTTP sidecar at ``url`` (with a bearer ``token`` when it wants one)."""

    name = "sidecar"

    def __init__(self, url: str, *, token: str | None = None, timeout_s: float = 10.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise InvalidInputError(f"sidecar URL must start with http:// or https://, got "
                                    f"{url!r}", field="sidecar")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(base_url=url.rstrip("/"), headers=headers,
                                    timeout=httpx.Timeout(timeout_s, connect=2.0))

    def close(self) -> None:
        self._client.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise BackendUnavailableError(f"sidecar unreachable: {exc}") from exc
        if response.status_code >= 400:
            try:
                body = response.json()
                raise SidecarError(body.get("error", "error"), body.get("detail", ""))
            except ValueError:
                raise SidecarError("http_error", f"status {response.status_code}") from None
        return response.json()

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
        out: dict[str, Any] = self._call("DELETE", f"/v1/memories/{memory_id}",
                                         params={"hard": str(hard).lower()})
        return out

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = self._call("GET",
                                               f"/v1/memories/{memory_id}/history")["versions"]
        return out

    def lifecycle_report(self) -> str:
        return str(self._call("GET", "/v1/lifecycle/report",
                              params={"format": "markdown"})["markdown"])


class FallbackBackend:
    """The sidecar first; the embedded store when the sidecar cannot be reached."""

    def __init__(self, primary: SidecarBackend, fallback: EmbeddedBackend) -> None:
        self.primary, self.fallback = primary, fallback

    def call(self, operation: Callable[[Backend], Any]) -> tuple[Any, str, str | None]:
        """(result, which path answered, why the sidecar did not)."""
        try:
            return operation(self.primary), self.primary.name, None
        except BackendUnavailableError as exc:
            return operation(self.fallback), self.fallback.name, str(exc)
