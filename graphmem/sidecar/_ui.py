"""The operator dashboard at ``/ui``: Overview, Extraction quality, Review queue, Memory
view and Recall playground, over the same tokens, scopes and owner isolation as the API.

``mount_ui`` adds it to a sidecar app: ``SessionGate`` (ui/_sessions.py: login, session
cookie, CSRF, static files) in front of the sidecar's gate, and the JSON routes below,
each one call into ``Pages`` (ui/_pages.py) with the caller's owner. Reading needs the
``read`` scope, review decisions ``admin``, feedback ``write`` (as ``/v1/feedback``).
"""

from __future__ import annotations

import base64
import hashlib
import re
import tempfile
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from .. import PRESETS
from .._facade import MemoryStore
from .._models import Kind
from ._auth import Principal, Tokens
from ._guard import PRINCIPAL, Refusal
from .ui import SESSION, Pages, Session, SessionGate, Sessions
from .ui._pages import actor_of
from .ui._sessions import session_cookie

__all__ = ["mount_ui"]

_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


class _Need:
    """A dependency: the caller the gate authenticated, holding ``needs`` (the gate reads
    ``needs`` too, and refuses before a body is read)."""

    def __init__(self, needs: str) -> None:
        self.needs = needs

    def __call__(self, request: Request) -> Principal:
        principal = request.scope.get(PRINCIPAL)
        if not isinstance(principal, Principal):
            raise Refusal(401, "unauthorized", "log in first")
        if not principal.allows(self.needs):
            raise Refusal(403, "forbidden", f"this token lacks the {self.needs} scope")
        return principal


def _session(request: Request) -> Session:
    session = request.scope.get(SESSION)
    if not isinstance(session, Session):  # SessionGate sets it on every /ui/api route
        raise Refusal(401, "unauthorized", "log in first")
    return session


Reader = Annotated[Principal, Depends(_Need("read"))]
Writer = Annotated[Principal, Depends(_Need("write"))]
Admin = Annotated[Principal, Depends(_Need("admin"))]
Browser = Annotated[Session, Depends(_session)]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DecisionIn(_In):
    memory_id: str = Field(min_length=1)
    decision: Literal["promote", "archive", "keep"]


class UndoIn(_In):
    memory_id: str = Field(min_length=1)


class ApproveIn(_In):
    #: the archives to approve (the queue holds at most 100 of them)
    memory_ids: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1,
                                                                  max_length=500)


class RecallIn(_In):
    query: str = Field(min_length=1, max_length=2000)
    preset: str = "default"
    k: int = Field(default=10, ge=1, le=50)
    kinds: list[Kind] | None = None


class FeedbackIn(_In):
    memory_id: str = Field(min_length=1)
    useful: bool
    query: str | None = Field(default=None, max_length=2000)


def _assets() -> dict[str, tuple[bytes, str]]:
    folder = resources.files("graphmem.sidecar.ui") / "static"
    return {item.name: (item.read_bytes(), _TYPES.get(Path(item.name).suffix, "text/plain"))
            for item in folder.iterdir() if item.is_file()}


def mount_ui(app: FastAPI, store: MemoryStore, *, tokens: Tokens | None) -> None:
    """Serve the dashboard at ``/ui`` from ``app`` (a sidecar made by ``create_app``)."""
    sessions = Sessions()
    app.add_middleware(SessionGate, tokens=tokens, sessions=sessions, assets=_assets())
    app.include_router(_router(Pages(store), sessions, tokens))


def _router(pages: Pages, sessions: Sessions, tokens: Tokens | None) -> APIRouter:
    router = APIRouter(prefix="/ui/api", tags=["dashboard"], include_in_schema=False)
    store = pages.store

    def who(principal: Principal) -> dict[str, Any]:
        return {"owner": principal.owner, "scopes": sorted(principal.scopes),
                "auth": "tokens" if tokens is not None else "local"}

    # -- the session ----------------------------------------------------------------------
    @router.post("/login")
    def login(request: Request, principal: Reader) -> JSONResponse:
        """Open a session for the token in ``Authorization`` (none without tokens)."""
        token = None
        if tokens is not None:
            token = request.headers.get("authorization", "").split(None, 1)[-1].strip()
        session = sessions.create(token=token, owner=principal.owner,
                                  scopes=frozenset(principal.scopes))
        response = JSONResponse({**who(principal), "csrf": session.csrf})
        response.headers["set-cookie"] = session_cookie(request.scope, session.sid)
        response.headers["cache-control"] = "no-store"
        return response

    @router.get("/session")
    def current(principal: Reader, session: Browser) -> dict[str, Any]:
        return {**who(principal), "csrf": session.csrf, "presets": list(PRESETS),
                "kinds": [k.value for k in Kind],
                "window_days": store.settings.restore_window_days}

    @router.post("/logout")
    def logout(request: Request, session: Browser) -> JSONResponse:
        sessions.drop(session.sid)
        response = JSONResponse({"logged_out": True})
        response.headers["set-cookie"] = session_cookie(request.scope, "", max_age=0)
        return response

    # -- pages ----------------------------------------------------------------------------
    @router.get("/overview")
    def overview(principal: Reader) -> dict[str, Any]:
        return pages.overview(principal.owner)

    @router.get("/lifecycle/plan")
    def plan(principal: Reader) -> dict[str, Any]:
        report = store.run_lifecycle(apply=False, owner=principal.owner)
        return {"evaluated": report.evaluated, "counts": report.counts,
                "jobs": report.jobs.model_dump(mode="json"), "seconds": report.seconds}

    @router.get("/quality")
    def quality(principal: Reader) -> dict[str, Any]:
        return pages.quality(principal.owner)

    @router.get("/review")
    def review(principal: Reader) -> dict[str, Any]:
        return {**pages.review(principal.owner), "can_decide": principal.allows("admin")}

    @router.post("/review/decide")
    def decide(body: DecisionIn, principal: Admin) -> dict[str, Any]:
        return pages.decide(body.memory_id, body.decision, owner=principal.owner,
                            actor=actor_of(principal.owner))

    @router.post("/review/approve-archives")
    def approve_archives(body: ApproveIn, principal: Admin) -> dict[str, Any]:
        """Archive those of these memories the archivist still recommends archiving."""
        return pages.approve_archives(body.memory_ids, owner=principal.owner,
                                      actor=actor_of(principal.owner))

    @router.post("/review/undo")
    def undo(body: UndoIn, principal: Admin) -> dict[str, Any]:
        return pages.undo(body.memory_id, owner=principal.owner,
                          actor=actor_of(principal.owner))

    @router.get("/memories")
    def find(principal: Reader, q: Annotated[str, Query(max_length=2000)] = ""
             ) -> dict[str, Any]:
        return {"query": q, "memories": pages.find(q, principal.owner)}

    @router.get("/memory")
    def memory(principal: Reader, id: Annotated[str, Query(min_length=1)]) -> dict[str, Any]:
        return pages.memory(id, principal.owner)

    @router.get("/drawing")
    def drawing(principal: Reader, id: Annotated[str, Query(min_length=1)],
                depth: Annotated[int, Query(ge=1, le=3)] = 2) -> HTMLResponse:
        """The interactive neighbourhood drawing of ``queries.draw``, for a sandboxed
        frame: its one inline script is allowed by its hash, nothing else."""
        from queries.draw import draw_neighbourhood

        with tempfile.TemporaryDirectory() as tmp:
            path = draw_neighbourhood(store, id, Path(tmp) / "drawing.html", depth=depth,
                                      owner=principal.owner, fmt="html")
            page = path.read_text(encoding="utf-8")
        hashes = " ".join(
            "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'"
            for s in _SCRIPT.findall(page))
        return HTMLResponse(page, headers={
            "content-security-policy": f"default-src 'none'; script-src {hashes}; "
                                       "style-src 'unsafe-inline'; base-uri 'none'; "
                                       "form-action 'none'; frame-ancestors 'self'",
            "x-content-type-options": "nosniff", "cache-control": "no-store",
            "referrer-policy": "no-referrer"})

    @router.post("/recall")
    def recall(body: RecallIn, principal: Reader) -> dict[str, Any]:
        """Recall as ``/v1/memories/retrieve`` does; browsing records no access."""
        return pages.recall(body.query, owner=principal.owner, preset=body.preset,
                            k=body.k, kinds=[k.value for k in body.kinds or []],
                            record_access=False)

    @router.post("/feedback")
    def feedback(body: FeedbackIn, principal: Writer) -> dict[str, Any]:
        memory = store.feedback(body.memory_id, useful=body.useful, query=body.query,
                                owner=principal.owner, actor=actor_of(principal.owner))
        return {"memory_id": memory.id, "useful_count": memory.useful_count,
                "ignored_count": memory.ignored_count, "importance": memory.importance,
                "status": memory.status.value}

    return router
