"""The HTTP sidecar: one process owns the store and serves agents over JSON.

Routes are thin: the gate (``_guard``) has checked the host, the token and the body
before they run; each route makes one store call scoped to the caller's owner, with the
caller's owner as the actor of any change, and serialises it. Errors become
``{"error", "detail", "field"?}`` bodies in ``_errors``. The analyst's read side (stats,
named queries, Cypher, backups) is in ``_live``. JSON keys are snake_case throughout.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Query
from fastapi.responses import JSONResponse

from .. import __version__
from .._errors import InvalidInputError
from .._facade import MemoryStore
from .._input import MEMORY_PAGE, MemoryInput
from .._models import LifecycleEvent
from .._views import to_json
from ._auth import Principal, Tokens
from ._deps import Admin, AllOwners, Caller, MemoryId, OwnerParam, Reader, Writer, scoped_owner
from ._errors import BODY, GATE, ID, error_status, errors, install_handlers
from ._guard import Guard, Refusal
from ._live import add_live_routes
from ._schemas import (
    ArchiveIn,
    ConversationIn,
    EvaluateIn,
    FeedbackIn,
    ForgetIn,
    KeepIn,
    LearnIn,
    LifecycleRunIn,
    LinkIn,
    MemoriesIn,
    MemoryIn,
    PatchIn,
    PromoteIn,
    RetrieveIn,
    SupersedeIn,
)
from ._ui import mount_ui

__all__ = ["create_app", "error_status"]

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
                              "feedback, lifecycle, GDPR export, and the analyst's read "
                              "side (stats, named queries, Cypher, backups). Ids in paths "
                              "are percent-encoded single segments; JSON keys are "
                              "snake_case.",
                  docs_url=None, redoc_url=None)  # the docs pages fetch scripts from a CDN
    app.add_middleware(
        Guard, tokens=tokens, routes=app.router.routes,
        max_body_bytes=max_body_bytes or store.settings.max_body_bytes,
        idle_timeout_s=idle_timeout_s or store.settings.idle_timeout_s)
    install_handlers(app)
    mount_ui(app, store, tokens=tokens)  # the dashboard at /ui (graphmem/sidecar/_ui.py)

    def new_input(principal: Principal, item: MemoryIn) -> MemoryInput:
        fields = item.model_dump(exclude_none=True)
        fields["owner"] = scoped_owner(principal, item.owner)
        return MemoryInput.parse(fields)

    adding = errors(*GATE, *BODY, 409)
    by_id, changes_by_id = errors(*GATE, *ID), errors(*GATE, *BODY, *ID, 409)

    # -- memories -------------------------------------------------------------------------
    @app.post("/v1/memories", status_code=201, tags=["memories"], responses=adding)
    def add_memories(body: MemoryIn | MemoriesIn, who: Writer) -> dict[str, Any]:
        """Add one memory, or several (``{"memories": [...]}``) in bulk."""
        if isinstance(body, MemoriesIn):
            inputs = []
            for index, item in enumerate(body.memories):
                try:
                    inputs.append(new_input(who, item))
                except InvalidInputError as exc:  # which record of the batch
                    at = f"memories.{index}"  # as the 422s of the request's own validation
                    raise InvalidInputError(f"{at}: {exc}", field=f"{at}.{exc.field}"
                                            if exc.field else at) from None
        else:
            inputs = [new_input(who, body)]
        created = store.add_many(inputs, actor=who.acting)
        if isinstance(body, MemoriesIn):
            return {"memories": [to_json(m) for m in created], "count": len(created)}
        return to_json(created[0])

    @app.post("/v1/conversations", status_code=201, tags=["memories"], responses=adding)
    def add_conversation(body: ConversationIn, who: Writer) -> dict[str, Any]:
        """Remember what a conversation says (quality gate, extraction, candidates)."""
        result = store.add_conversation(body.messages, session_id=body.session_id,
                                        owner=scoped_owner(who, body.owner),
                                        timestamp=body.timestamp,
                                        cooccur_window=body.cooccur_window, actor=who.acting)
        return to_json(result)

    @app.post("/v1/memories/retrieve", tags=["recall"], responses=adding)
    def retrieve(body: RetrieveIn, who: Reader) -> dict[str, Any]:
        """Recall: full text, vectors and graph walks fused by RRF, re-ranked by ACT-R.
        A recall changes nothing unless ``record_access`` asks for an access to be recorded
        for each hit, and never for a token without the write scope."""
        record = body.record_access and who.allows("write")
        hits = store.recall(body.query, k=body.k, preset=body.preset,
                            owner=scoped_owner(who, body.owner), kinds=body.kinds,
                            as_of=body.as_of, include_archived=body.include_archived,
                            record_access=record, since=body.since, until=body.until,
                            min_similarity=body.min_similarity,
                            min_relative=body.min_relative)
        out = []
        for hit in hits:
            item = to_json(hit)
            if not body.explain:
                del item["explanation"]
            else:
                item["why"] = hit.explanation.lines()
            out.append(item)
        return {"query": body.query, "preset": body.preset, "count": len(out),
                "record_access": record, "hits": out}

    @app.get("/v1/memories/{memory_id}", tags=["memories"], responses=by_id)
    def get_memory(memory_id: MemoryId, who: Reader, owner: OwnerParam = None
                   ) -> dict[str, Any]:
        return to_json(store.get(memory_id, owner=scoped_owner(who, owner)))

    @app.get("/v1/memories", tags=["memories"], responses=errors(*GATE, 422))
    def list_memories(who: Reader, owner: OwnerParam = None,
                      limit: Annotated[int | None, Query(
                          ge=1, le=MEMORY_PAGE, description="at most this many (default: "
                          "all); the answer's next_offset asks for the next page")] = None,
                      offset: Annotated[int, Query(ge=0, description="memories to skip, in "
                                                   "the store's order (new ones come last)")] = 0
                      ) -> dict[str, Any]:
        """The memories the caller sees (a token: its owner's), whatever their status: all
        of them, or a page (``limit``, ``offset``; ``count`` is the total, ``next_offset``
        null on the last page)."""
        whose = scoped_owner(who, owner)
        page = store.memories(owner=whose, offset=offset, limit=limit)  # only the page
        count = store.memory_count(owner=whose) if limit is not None or offset else len(page)
        end = offset + len(page)
        return {"count": count, "offset": offset,
                "next_offset": end if end < count else None,
                "memories": [to_json(m) for m in page]}

    @app.get("/v1/memories/{memory_id}/history", tags=["memories"], responses=by_id)
    def history(memory_id: MemoryId, who: Reader, owner: OwnerParam = None
                ) -> dict[str, Any]:
        versions = store.history(memory_id, owner=scoped_owner(who, owner))
        return {"memory_id": memory_id, "versions": [to_json(v) for v in versions]}

    @app.get("/v1/memories/{memory_id}/links", tags=["memories"], responses=by_id)
    def links(memory_id: MemoryId, who: Reader, owner: OwnerParam = None) -> dict[str, Any]:
        """The memory's edges: kind, the other end, direction (out or in), weight."""
        found = store.links(memory_id, owner=scoped_owner(who, owner))
        return {"memory_id": memory_id, "links": [vars(link) for link in found]}

    @app.post("/v1/memories/{memory_id}/links", status_code=201, tags=["memories"],
              responses=changes_by_id)
    def link(memory_id: MemoryId, body: LinkIn, who: Writer) -> dict[str, Any]:
        """Connect the memory to ``other``: references (it points at other) or co_occurs."""
        store.link(memory_id, body.other, kind=body.kind, weight=body.weight,
                   source=body.source, owner=who.owner)
        return {"memory_id": memory_id, "other": body.other, "kind": body.kind,
                "weight": body.weight, "source": body.source}

    @app.patch("/v1/memories/{memory_id}", tags=["memories"], responses=changes_by_id)
    def patch_memory(memory_id: MemoryId, body: PatchIn, who: Writer) -> dict[str, Any]:
        """Change fields; one version row with change type ``reason``."""
        fields = body.model_dump(exclude_unset=True)
        reason = fields.pop("reason", "manual_edit")
        if not fields:
            raise InvalidInputError("nothing to change: give at least one field", field="body")
        memory = store.update(memory_id, **fields, reason=reason, owner=who.owner,
                              actor=who.acting)
        return to_json(memory)

    @app.post("/v1/memories/{memory_id}/supersede", status_code=201, tags=["memories"],
              responses=changes_by_id)
    def supersede(memory_id: MemoryId, body: SupersedeIn, who: Writer) -> dict[str, Any]:
        """Replace a memory by a newer one; both are kept, linked by SUPERSEDES. A
        correction is a supersede with the default reason, conflict_update."""
        if (body.text is None) == (body.new_id is None):
            raise InvalidInputError("give exactly one of text (a new memory) or new_id",
                                    field="text")
        fields = body.model_dump(exclude_none=True, exclude={"text", "new_id", "reason"})
        if body.new_id is not None:
            new = store.supersede(memory_id, store.get(body.new_id, owner=who.owner),
                                  reason=body.reason, owner=who.owner, actor=who.acting)
        else:
            new = store.supersede(memory_id, str(body.text), reason=body.reason,
                                  owner=who.owner, actor=who.acting, **fields)
        return to_json(new)

    @app.post("/v1/feedback", tags=["recall"], responses=errors(*GATE, *BODY, 404, 409))
    def feedback(body: FeedbackIn, who: Writer) -> dict[str, Any]:
        """Whether a recalled memory helped: counts, importance, co-occurrence."""
        memory = store.feedback(body.memory_id, useful=body.useful, query=body.query,
                                owner=who.owner, actor=who.acting)
        return {"memory_id": memory.id, "useful_count": memory.useful_count,
                "ignored_count": memory.ignored_count, "importance": memory.importance,
                "memory": to_json(memory)}

    def recorded(event: LifecycleEvent) -> dict[str, Any]:
        """An event with its metadata as the store holds it: a client's events equal the
        store's (``to_json`` spells the metadata's keys snake_case, for people)."""
        return event.model_dump(mode="json")

    def transition(result: Any) -> Any:
        """A transition's result; one that did not apply is a 409 that carries it."""
        data = to_json(result)
        if not result.success:
            status, code = 409, "conflict"
            return JSONResponse({"error": code, "detail": result.error or
                                 "the transition did not apply", "result": data},
                                status_code=status)
        return data

    @app.post("/v1/memories/{memory_id}/promote", tags=["lifecycle"],
              responses=changes_by_id)
    def promote(memory_id: MemoryId, who: Writer, body: PromoteIn | None = None) -> Any:
        body = body or PromoteIn()
        return transition(store.promote(memory_id, reason=body.reason, owner=who.owner,
                                        actor=who.acting))

    @app.post("/v1/memories/{memory_id}/archive", tags=["lifecycle"],
              responses=changes_by_id)
    def archive(memory_id: MemoryId, who: Writer, body: ArchiveIn | None = None) -> Any:
        body = body or ArchiveIn()
        return transition(store.archive(memory_id, reason=body.reason,
                                        create_summary=body.create_summary, owner=who.owner,
                                        actor=who.acting))

    @app.post("/v1/memories/{memory_id}/keep", tags=["lifecycle"], responses=changes_by_id)
    def keep(memory_id: MemoryId, who: Writer, body: KeepIn | None = None) -> dict[str, Any]:
        """A reviewer leaves the memory as it is: it does not change, a keep event
        records who decided and why."""
        body = body or KeepIn()
        return recorded(store.keep(memory_id, reason=body.reason, owner=who.owner,
                                   actor=who.acting))

    @app.post("/v1/memories/{memory_id}/restore", tags=["lifecycle"],
              responses=errors(*GATE, *ID, 409))
    def restore(memory_id: MemoryId, who: Writer) -> Any:
        return transition(store.restore(memory_id, owner=who.owner, actor=who.acting))

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
            store.forget(memory_id, confirm=True, reason=reason, owner=who.owner,
                         actor=who.acting)
            return {"memory_id": memory_id, "status": "forgotten"}
        memory = store.tombstone(memory_id, reason=reason, owner=who.owner, actor=who.acting)
        return {"memory_id": memory.id, "status": memory.status.value,
                "memory": to_json(memory)}

    @app.post("/v1/forget", tags=["memories"], responses=errors(*GATE, *ID, *BODY, 409))
    def forget_many(body: ForgetIn, who: Admin) -> dict[str, Any]:
        """Forget several memories at once (admin): each as ``DELETE ?hard=true`` does,
        their words cut from the neighbours in one pass and the file purged once."""
        count = store.forget_many(body.ids, confirm=True, reason=body.reason,
                                  owner=who.owner, actor=who.acting)
        return {"forgotten": count, "memory_ids": body.ids}

    @app.get("/v1/export", tags=["memories"], responses=errors(*GATE, 422))
    def export(who: Reader, owner: OwnerParam = None,
               format: Annotated[Literal["gdpr", "ump"], Query(
                   description="gdpr: memories, versions, events and edges; ump: a UMP "
                               "file's records")] = "gdpr") -> Any:
        """The caller's memories: the GDPR export, or the records of a UMP file."""
        owner = scoped_owner(who, owner)
        if format == "ump":
            from ingest.ump import ump_records

            return ump_records(store, owner=owner)
        return store.export(owner=owner)

    # -- lifecycle ------------------------------------------------------------------------
    @app.get("/v1/memories/{memory_id}/evaluation", tags=["lifecycle"], responses=by_id)
    def evaluation(memory_id: MemoryId, who: Reader, owner: OwnerParam = None
                   ) -> dict[str, Any]:
        """The archivist's recommendation for one memory, with its reasons and metrics."""
        return to_json(store.evaluate(memory_id, owner=scoped_owner(who, owner)))

    @app.post("/v1/lifecycle/evaluate", tags=["lifecycle"], responses=adding)
    def evaluate_many(body: EvaluateIn, who: Reader) -> dict[str, Any]:
        """Recommendations for these ``ids``, or every memory matching the filters."""
        results = store.batch_evaluate(body.ids, owner=scoped_owner(who, body.owner),
                                       kinds=body.kinds, statuses=body.statuses)
        return {"count": len(results), "evaluations": [to_json(r) for r in results]}

    @app.get("/v1/events", tags=["lifecycle"], responses=errors(*GATE, *ID))
    def events(who: Reader, owner: OwnerParam = None, memory_id: str | None = None,
               event_type: str | None = None, since: datetime | None = None,
               until: datetime | None = None,
               limit: Annotated[int | None, Query(ge=0)] = None) -> dict[str, Any]:
        """Lifecycle events, oldest first: of one memory, or of every memory the caller
        sees; each with its metadata as recorded (the archivist's camelCase keys)."""
        found = store.events(memory_id, event_type=event_type, since=since, until=until,
                             limit=limit, owner=scoped_owner(who, owner))
        return {"count": len(found), "events": [recorded(e) for e in found]}

    @app.get("/v1/learn", tags=["lifecycle"], responses=errors(*GATE))
    def learned(who: Reader, _: AllOwners) -> dict[str, Any]:
        """What the store learned (``graphmem learn --status``): each model's training
        date, data size and validation, and whether it is used."""
        return to_json(store.learned())

    @app.post("/v1/learn", tags=["lifecycle"], responses=errors(*GATE, *BODY, 409))
    def learn(who: Admin, _: AllOwners, body: LearnIn | None = None) -> dict[str, Any]:
        """Train the ranker and the forecast of need from every owner's feedback and
        use (hence the all_owners scope); the models serve every owner's recalls."""
        body = body or LearnIn()
        return to_json(store.learn(ranker=body.ranker, forecast=body.forecast,
                                   horizon_days=body.horizon_days))

    @app.post("/v1/lifecycle/run", tags=["lifecycle"], responses=adding)
    def lifecycle_run(who: Admin, body: LifecycleRunIn | None = None) -> Any:
        """The lifecycle manager over the caller's memories (a dry run unless apply)."""
        body = body or LifecycleRunIn()
        report = store.run_lifecycle(apply=body.apply, owner=scoped_owner(who, body.owner),
                                     actor=who.acting)
        return to_json(report)

    @app.get("/v1/lifecycle/report", tags=["lifecycle"], responses=errors(*GATE, 422))
    def lifecycle_report(who: Reader, owner: OwnerParam = None, format: str = "json") -> Any:
        """The Archivist Lifecycle Report of a dry run: JSON, or Markdown."""
        if format not in ("json", "markdown"):
            raise InvalidInputError("format must be json or markdown", field="format")
        report = store.run_lifecycle(apply=False, owner=scoped_owner(who, owner))
        if format == "markdown":
            return {"markdown": report.to_markdown()}
        return to_json(report)

    # -- service --------------------------------------------------------------------------
    @app.get("/v1/store", tags=["service"], responses=errors(*GATE))
    def which_store(who: Reader) -> dict[str, Any]:
        """Which store this sidecar serves (its stable random ``store_id``) and who the
        caller is: an MCP server falls back to an embedded store only when it is this
        one, and the command line uses a sidecar only when it serves the --db it names."""
        return {"store_id": store.store_id, "version": __version__,
                "auth": "tokens" if tokens is not None else "local",
                "owner": who.owner, "scopes": sorted(who.scopes)}

    @app.get("/healthz", tags=["service"], responses=errors(400, 500))
    def healthz() -> dict[str, Any]:
        """Liveness: no token needed, says nothing about anyone's memories."""
        return {"status": "ok", "version": __version__,
                "auth": "tokens" if tokens is not None else "local"}

    add_live_routes(app, store)
    return app
