"""The HTTP sidecar: one process owns the store and serves agents over JSON.

Routes are thin: the gate (``_guard``) has checked the host, the token and the body
before they run; each route makes one store call scoped to the caller's owner and
serialises it. Errors become ``{"error", "detail", "field"?}`` bodies in ``_errors``.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import unquote

from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from .. import __version__
from .._errors import ConflictError, InvalidInputError
from .._facade import MemoryStore
from .._input import MemoryInput
from ._auth import Principal, Tokens
from ._errors import BODY, GATE, ID, error_status, errors, install_handlers
from ._guard import PRINCIPAL, Guard, Refusal
from ._schemas import (
    ArchiveIn,
    ConversationIn,
    FeedbackIn,
    LifecycleRunIn,
    MemoriesIn,
    MemoryIn,
    PatchIn,
    PromoteIn,
    RetrieveIn,
    SupersedeIn,
)
from ._ui import mount_ui

__all__ = ["create_app", "error_status"]

_BEARER = HTTPBearer(
    scheme_name="bearer", auto_error=False,
    description="A token from the sidecar's tokens file (--tokens / GRAPHMEM_TOKENS_FILE): "
                "it sees only its owner's memories, within its scopes (read, write, "
                "admin). A sidecar without tokens serves loopback clients, with no token, "
                "as the local user.")


def _dump(value: Any) -> Any:
    return value.model_dump(mode="json")


class _Need:
    """A dependency: the caller the gate authenticated, who must hold ``needs`` (the gate
    reads ``needs`` too, to refuse before a body is read)."""

    def __init__(self, needs: str | None) -> None:
        self.needs = needs

    def __call__(self, request: Request, _: Annotated[HTTPAuthorizationCredentials | None,
                                                      Depends(_BEARER)]) -> Principal:
        principal = request.scope.get(PRINCIPAL)
        if not isinstance(principal, Principal):  # the gate always sets one
            raise Refusal(401, "unauthorized", "send 'Authorization: Bearer <token>'",
                          headers=[("www-authenticate", "Bearer")])
        if self.needs and not principal.allows(self.needs):
            raise Refusal(403, "forbidden", f"this token lacks the {self.needs} scope")
        return principal


def _memory_id(memory_id: Annotated[str, Path(
        description="The memory's id as one path segment, percent-encoded: every reserved "
                    "character, '/' included (urllib.parse.quote(id, safe='')).")]) -> str:
    # The gate re-encoded each raw segment, so this decodes exactly once.
    return unquote(memory_id, errors="strict")


# Module level: FastAPI resolves these annotations by name in this module.
Caller = Annotated[Principal, Depends(_Need(None))]
Reader = Annotated[Principal, Depends(_Need("read"))]
Writer = Annotated[Principal, Depends(_Need("write"))]
Admin = Annotated[Principal, Depends(_Need("admin"))]
MemoryId = Annotated[str, Depends(_memory_id)]


def create_app(store: MemoryStore, *, tokens: Tokens | None = None,
               max_body_bytes: int | None = None,
               idle_timeout_s: float | None = None) -> FastAPI:
    """The sidecar's ASGI app over an open store. With ``tokens`` every request needs a
    bearer token and sees only its owner's memories; without, every caller is the local
    user and only loopback Host headers are served (bind such a server to loopback).
    Bodies are capped at ``max_body_bytes`` and may stall ``idle_timeout_s`` at most
    (default: the store's settings)."""
    app = FastAPI(title="graphmem sidecar", version=__version__,
                  description="An agent's memory over HTTP: remember, recall (explained), "
                              "feedback, lifecycle, GDPR export. Ids in paths are "
                              "percent-encoded single segments.",
                  docs_url=None, redoc_url=None)  # the docs pages fetch scripts from a CDN
    app.add_middleware(
        Guard, tokens=tokens, routes=app.router.routes,
        max_body_bytes=max_body_bytes or store.settings.max_body_bytes,
        idle_timeout_s=idle_timeout_s or store.settings.idle_timeout_s)
    install_handlers(app)
    mount_ui(app, store, tokens=tokens)  # the dashboard at /ui (graphmem/sidecar/_ui.py)

    def owned(principal: Principal, owner: str | None) -> str | None:
        """The owner a new memory gets: the token's (a different one is refused)."""
        if principal.owner is None:
            return owner
        if owner is not None and owner != principal.owner:
            raise InvalidInputError("owner must be left out (or be the token's own)",
                                    field="owner")
        return principal.owner

    def new_input(principal: Principal, item: MemoryIn) -> MemoryInput:
        fields = item.model_dump(exclude_none=True)
        fields["owner"] = owned(principal, item.owner)
        return MemoryInput.parse(fields)

    adding = errors(*GATE, *BODY, 409)
    by_id, changes_by_id = errors(*GATE, *ID), errors(*GATE, *BODY, *ID, 409)

    # -- memories -------------------------------------------------------------------------
    @app.post("/v1/memories", status_code=201, tags=["memories"], responses=adding)
    def add_memories(body: MemoryIn | MemoriesIn, who: Writer) -> dict[str, Any]:
        """Add one memory, or several (``{"memories": [...]}``) in bulk."""
        items = body.memories if isinstance(body, MemoriesIn) else [body]
        created = store.add_many([new_input(who, item) for item in items])
        if isinstance(body, MemoriesIn):
            return {"memories": [_dump(m) for m in created], "count": len(created)}
        out: dict[str, Any] = _dump(created[0])
        return out

    @app.post("/v1/conversations", status_code=201, tags=["memories"], responses=adding)
    def add_conversation(body: ConversationIn, who: Writer) -> dict[str, Any]:
        """Remember what a conversation says (quality gate, extraction, candidates)."""
        result = store.add_conversation(body.messages, session_id=body.session_id,
                                        owner=owned(who, None), timestamp=body.timestamp,
                                        cooccur_window=body.cooccur_window)
        out: dict[str, Any] = _dump(result)
        return out

    @app.post("/v1/memories/retrieve", tags=["recall"], responses=adding)
    def retrieve(body: RetrieveIn, who: Reader) -> dict[str, Any]:
        """Recall: full text, vectors and graph walks fused by RRF, re-ranked by ACT-R.
        Recalled memories get an access recorded (``record_access``), except for a token
        without the write scope: reading changes nothing it could not change itself."""
        record = body.record_access and who.allows("write")
        hits = store.recall(body.query, k=body.k, preset=body.preset, owner=who.owner,
                            kinds=body.kinds, as_of=body.as_of,
                            include_archived=body.include_archived, record_access=record)
        out = []
        for hit in hits:
            item = {"memory": _dump(hit.memory), "score": hit.score, "rank": hit.rank}
            if body.explain:
                item["explanation"] = _dump(hit.explanation)
                item["why"] = hit.explanation.lines()
            out.append(item)
        return {"query": body.query, "preset": body.preset, "count": len(out),
                "record_access": record, "hits": out}

    @app.get("/v1/memories/{memory_id}", tags=["memories"], responses=by_id)
    def get_memory(memory_id: MemoryId, who: Reader) -> dict[str, Any]:
        out: dict[str, Any] = _dump(store.get(memory_id, owner=who.owner))
        return out

    @app.get("/v1/memories/{memory_id}/history", tags=["memories"], responses=by_id)
    def history(memory_id: MemoryId, who: Reader) -> dict[str, Any]:
        versions = store.history(memory_id, owner=who.owner)
        return {"memory_id": memory_id, "versions": [_dump(v) for v in versions]}

    @app.patch("/v1/memories/{memory_id}", tags=["memories"], responses=changes_by_id)
    def patch_memory(memory_id: MemoryId, body: PatchIn, who: Writer) -> dict[str, Any]:
        """Change fields; one version row with change type ``reason``."""
        fields = body.model_dump(exclude_unset=True)
        reason = fields.pop("reason", "manual_edit")
        if not fields:
            raise InvalidInputError("nothing to change: give at least one field", field="body")
        memory = store.update(memory_id, **fields, reason=reason, owner=who.owner)
        out: dict[str, Any] = _dump(memory)
        return out

    @app.post("/v1/memories/{memory_id}/supersede", status_code=201, tags=["memories"],
              responses=changes_by_id)
    def supersede(memory_id: MemoryId, body: SupersedeIn, who: Writer) -> dict[str, Any]:
        """Replace a memory by a newer one; both are kept, linked by SUPERSEDES."""
        if (body.text is None) == (body.new_id is None):
            raise InvalidInputError("give exactly one of text (a new memory) or new_id",
                                    field="text")
        fields = body.model_dump(exclude_none=True, exclude={"text", "new_id", "reason"})
        if body.new_id is not None:
            new = store.supersede(memory_id, store.get(body.new_id, owner=who.owner),
                                  reason=body.reason, owner=who.owner)
        else:
            new = store.supersede(memory_id, str(body.text), reason=body.reason,
                                  owner=who.owner, **fields)
        out: dict[str, Any] = _dump(new)
        return out

    @app.post("/v1/feedback", tags=["recall"], responses=errors(*GATE, *BODY, 404, 409))
    def feedback(body: FeedbackIn, who: Writer) -> dict[str, Any]:
        """Whether a recalled memory helped: counts, importance, co-occurrence."""
        memory = store.feedback(body.memory_id, useful=body.useful, query=body.query,
                                owner=who.owner)
        return {"memory_id": memory.id, "useful_count": memory.useful_count,
                "ignored_count": memory.ignored_count, "importance": memory.importance}

    def _result(result: Any) -> Any:
        if not result.success:
            raise ConflictError(result.error or "the transition did not apply")
        return result.model_dump(mode="json", by_alias=True)

    @app.post("/v1/memories/{memory_id}/promote", tags=["lifecycle"],
              responses=changes_by_id)
    def promote(memory_id: MemoryId, who: Writer, body: PromoteIn | None = None) -> Any:
        body = body or PromoteIn()
        return _result(store.promote(memory_id, reason=body.reason, owner=who.owner))

    @app.post("/v1/memories/{memory_id}/archive", tags=["lifecycle"],
              responses=changes_by_id)
    def archive(memory_id: MemoryId, who: Writer, body: ArchiveIn | None = None) -> Any:
        body = body or ArchiveIn()
        return _result(store.archive(memory_id, reason=body.reason,
                                     create_summary=body.create_summary, owner=who.owner))

    @app.post("/v1/memories/{memory_id}/restore", tags=["lifecycle"],
              responses=errors(*GATE, *ID, 409))
    def restore(memory_id: MemoryId, who: Writer) -> Any:
        return _result(store.restore(memory_id, owner=who.owner))

    @app.delete("/v1/memories/{memory_id}", tags=["memories"],
                responses=errors(*GATE, *ID, 409))
    def delete(memory_id: MemoryId, who: Caller,
               hard: Annotated[bool, Query(description="forget: erase the text "
                                                       "everywhere (admin scope)")] = False,
               reason: str = "manual") -> dict[str, Any]:
        """Tombstone a memory (write scope), or with ``hard=true`` forget it (admin)."""
        need = "admin" if hard else "write"
        if not who.allows(need):
            raise Refusal(403, "forbidden", f"this token lacks the {need} scope")
        if hard:
            store.forget(memory_id, confirm=True, reason=reason, owner=who.owner)
            return {"memory_id": memory_id, "status": "forgotten"}
        memory = store.tombstone(memory_id, reason=reason, owner=who.owner)
        return {"memory_id": memory.id, "status": memory.status.value}

    @app.get("/v1/export", tags=["memories"], responses=errors(*GATE))
    def export(who: Reader) -> dict[str, Any]:
        """The GDPR export: every memory of the caller's owner, versions and events."""
        return store.export(owner=who.owner)

    # -- lifecycle ------------------------------------------------------------------------
    @app.post("/v1/lifecycle/run", tags=["lifecycle"], responses=adding)
    def lifecycle_run(who: Admin, body: LifecycleRunIn | None = None) -> Any:
        """The lifecycle manager over the caller's memories (a dry run unless apply)."""
        body = body or LifecycleRunIn()
        report = store.run_lifecycle(apply=body.apply, owner=who.owner)
        return report.model_dump(mode="json", by_alias=True)

    @app.get("/v1/lifecycle/report", tags=["lifecycle"], responses=errors(*GATE, 422))
    def lifecycle_report(who: Reader, format: str = "json") -> Any:
        """The Archivist Lifecycle Report of a dry run: JSON, or Markdown."""
        if format not in ("json", "markdown"):
            raise InvalidInputError("format must be json or markdown", field="format")
        report = store.run_lifecycle(apply=False, owner=who.owner)
        if format == "markdown":
            return {"markdown": report.to_markdown()}
        return report.model_dump(mode="json", by_alias=True)

    # -- service --------------------------------------------------------------------------
    @app.get("/v1/store", tags=["service"], responses=errors(*GATE))
    def which_store(who: Reader) -> dict[str, Any]:
        """Which store this sidecar serves (its stable random ``store_id``) and who the
        caller is: an MCP server falls back to an embedded store only when it is this
        one."""
        return {"store_id": store.store_id, "version": __version__,
                "auth": "tokens" if tokens is not None else "local",
                "owner": who.owner, "scopes": sorted(who.scopes)}

    @app.get("/healthz", tags=["service"], responses=errors(400, 500))
    def healthz() -> dict[str, Any]:
        """Liveness: no token needed, says nothing about anyone's memories."""
        return {"status": "ok", "version": __version__,
                "auth": "tokens" if tokens is not None else "local"}

    return app
