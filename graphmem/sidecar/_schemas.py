"""Request bodies of the sidecar: strict (unknown fields are refused, naming them)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._kuzu import CYPHER_LIMITS
from .._models import Kind, Status

__all__ = ["ArchiveIn", "ConversationIn", "CypherIn", "ErrorOut", "EvaluateIn", "FeedbackIn",
           "KeepIn", "LearnIn", "LifecycleRunIn", "LinkIn", "MemoriesIn", "MemoryIn",
           "NamedQueryIn", "PatchIn", "PromoteIn", "RetrieveIn", "SupersedeIn"]


def _owner() -> Any:
    """The local user may name an owner; a token may only repeat its own."""
    return Field(default=None, description="Only this owner's memories (the local user); "
                                           "a token may only give its own.")


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")

class MemoryIn(_Body):
    """One memory to add. ``owner`` is the token's; it may be given only to repeat it."""

    text: str
    kind: Kind = Kind.EPISODIC
    subject: str | None = None
    importance: float = Field(default=0.5, ge=0.0, le=1.0, allow_inf_nan=False)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0, allow_inf_nan=False)
    tags: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    owner: str | None = None
    project: str | None = None
    visibility: str = "private"
    created: datetime | None = Field(
        default=None, description="When it was first remembered (default: now), as "
                                  "MemoryStore.add takes it: a memory brought from before")
    observed: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    session: str | None = None
    context: str | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)
    payload: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    status: Literal["active", "candidate"] = Field(
        default="active", description="candidate: a weak memory that waits for "
                                      "reinforcement (useful feedback, a later mention)")

class MemoriesIn(_Body):
    """Several memories in one request (one transaction per 500)."""

    memories: list[MemoryIn] = Field(min_length=1, max_length=5000)

class ConversationIn(_Body):
    session_id: str = Field(min_length=1)
    messages: list[dict[str, Any] | str] = Field(min_length=1, max_length=2000)
    timestamp: datetime | None = None
    cooccur_window: int = Field(default=2, ge=0, le=20)
    owner: str | None = _owner()

class RetrieveIn(_Body):
    query: str
    k: int = Field(default=10, ge=1, le=1000)
    preset: str = "default"
    kinds: list[Kind] | None = None
    as_of: datetime | None = None
    #: only memories created at or after ``since`` and before ``until``
    since: datetime | None = None
    until: datetime | None = None
    #: answer nothing when no memory's cosine similarity to the query reaches this
    min_similarity: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    #: drop hits scoring below this share of the best hit's score
    min_relative: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    include_archived: bool = False
    #: record an access for each hit (off: a recall changes nothing)
    record_access: bool = False
    explain: bool = True
    owner: str | None = _owner()

class PatchIn(_Body):
    """``UpdateFields`` (graphmem/_input.py) as JSON, less provenance, which only the
    store's own callers change; a test holds the two to the same names."""

    text: str | None = None
    subject: str | None = None
    importance: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    tags: list[str] | None = None
    kind: Kind | None = None
    project: str | None = None
    visibility: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    reason: str = "manual_edit"

class SupersedeIn(_Body):
    """The replacement: the ``text`` of a new memory, or the ``new_id`` of an existing one."""

    text: str | None = None
    new_id: str | None = None
    reason: str = "conflict_update"
    subject: str | None = None
    kind: Kind | None = None
    importance: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    tags: list[str] | None = None

class LinkIn(_Body):
    """An edge from the memory of the path to ``other``."""

    other: str = Field(min_length=1)
    kind: Literal["references", "co_occurs"] = "references"
    weight: float = Field(default=1.0, gt=0.0, allow_inf_nan=False)
    source: str = "explicit"

class FeedbackIn(_Body):
    memory_id: str
    useful: bool
    query: str | None = None

class PromoteIn(_Body):
    reason: str = "manual"

class ArchiveIn(_Body):
    reason: str = "manual"
    create_summary: bool = False

class ForgetIn(_Body):
    ids: list[str] = Field(max_length=10_000)
    reason: str = "manual"

class KeepIn(_Body):
    reason: str = "kept on review"

class LearnIn(_Body):
    ranker: bool = True
    forecast: bool = True
    horizon_days: float = 30.0  # checked by the store, which says what is allowed

class LifecycleRunIn(_Body):
    apply: bool = False
    owner: str | None = _owner()

class EvaluateIn(_Body):
    """Memories to evaluate: these ``ids``, or every one of these kinds and statuses."""

    ids: list[str] | None = Field(default=None, max_length=100_000)
    kinds: list[Kind] | None = None
    statuses: list[Status] = Field(default_factory=lambda: [Status.ACTIVE])
    owner: str | None = _owner()

class NamedQueryIn(_Body):
    """The parameters of a named query (typed by its header; strings are converted)."""

    params: dict[str, Any] = Field(default_factory=dict)
    owner: str | None = _owner()

class CypherIn(_Body):
    """One read-only Cypher statement and its parameters (bound, never pasted)."""

    query: str = Field(
        min_length=1, max_length=CYPHER_LIMITS.chars,
        description=(f"One Cypher statement of at most {CYPHER_LIMITS.chars:,} characters and "
                     f"{CYPHER_LIMITS.tokens:,} tokens, with brackets and CASE nested at most "
                     f"{CYPHER_LIMITS.depth} deep (CASE {CYPHER_LIMITS.case_depth}) and at "
                     f"most {CYPHER_LIMITS.prefix_run} NOT or unary minus in a row; a larger "
                     "one is refused (422, field 'query') before Kuzu parses it."))
    params: dict[str, Any] = Field(default_factory=dict)

Format = Literal["json", "markdown"]

class ErrorOut(BaseModel):
    """Every error the sidecar answers, whatever its status."""

    error: str = Field(description="A stable code: invalid_input, not_found, unauthorized, "
                                   "forbidden, conflict, too_large, timeout, invalid_host, "
                                   "store_locked, internal ...")
    detail: str = Field(description="What was wrong and how to fix it.")
    field: str | None = Field(default=None, description="The input at fault (a body field "
                              "such as memories.1.importance, or body, path, host, "
                              "content-length); left out when no single input is.")
    result: dict[str, Any] | None = Field(default=None, description="A promotion, archive "
                                          "or restore that did not apply (409): its result, "
                                          "with success false and the reason in error.")
