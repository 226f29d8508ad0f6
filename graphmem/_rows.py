"""Building the rows the adapter writes: a new memory, a version snapshot, a lifecycle event."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ._input import MemoryInput
from ._models import ChangeType, EventType, Memory, TriggeredBy
from ._time import new_event_id, new_memory_id

__all__ = [
    "decode_vector",
    "embedding_text",
    "encode_vector",
    "event_row",
    "memory_row",
    "session_contexts",
    "sha256",
    "version_row",
]


def sha256(text: str | None) -> str:
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()


def encode_vector(vector: np.ndarray) -> str:
    """float32 bytes as base64 (a string parameter is ~50x cheaper for Kuzu than a list)."""
    return base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode("ascii")


def decode_vector(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=np.float32)


def embedding_text(subject: str | None, text: str, context: str | None = None) -> str:
    """What gets embedded: the subject line, the text, then its context (text first, so a
    long context is what the model's 256-token window cuts)."""
    head = f"{subject}\n{text}" if subject and subject not in text else text
    return f"{head}\n{context}" if context else head


def session_contexts(texts: Sequence[str], window: int) -> list[str | None]:
    r"""For each text of a session, the texts up to ``window`` places before and after it,
    one per line (None with ``window`` 0): what a memory is indexed with besides itself.

    >>> session_contexts(["a", "b", "c"], 1)
    ['b', 'a\nc', 'b']
    """
    if window <= 0:
        return [None] * len(texts)
    return ["\n".join(texts[j] for j in range(max(0, i - window), min(len(texts), i + window + 1))
                      if j != i) or None for i in range(len(texts))]


def memory_row(item: MemoryInput, *, now: datetime, vector: np.ndarray | None) -> dict[str, Any]:
    """The ``Memory`` node of a new memory."""
    created = item.created or now
    return {
        "id": item.id or new_memory_id(),
        "owner": item.owner,
        "project": item.project,
        "visibility": item.visibility,
        "kind": item.kind.value,
        "status": item.status.value,
        "hot": False,
        "subject": item.subject,
        "text": item.text,
        "tags": list(item.tags),
        "entities": list(item.entities),
        "importance": item.importance,
        "original_importance": item.importance,
        "confidence": item.confidence,
        "created": created,
        "modified": item.modified or created,
        "observed": item.observed,
        "valid_from": item.valid_from,
        "valid_to": item.valid_to,
        "access_count": 0,
        "last_accessed": None,
        "access_times": [],
        "useful_count": 0,
        "ignored_count": 0,
        "superseded_by": list(item.superseded_by),
        "session": item.session,
        "context": item.context,
        "provenance": item.provenance,
        "integrity": item.integrity,
        "ump": item.extra,
        "payload": item.payload,
        "payload_hash": sha256(item.payload) if item.payload is not None else None,
        "payload_at": now if item.payload is not None else None,
        "text_sha256": sha256(item.text),
        "version": 1,
        "centrality": None,
        "xref_count": 0,
        "prev_status": None,
        "prev_kind": None,
        "state_changed": None,
        "vec": encode_vector(vector) if vector is not None else None,
    }


def version_row(
    memory: Memory | dict[str, Any],
    *,
    seq: int,
    change_type: ChangeType,
    at: datetime,
    reason: str | None = None,
    actor: str | None = None,
) -> dict[str, Any]:
    """A version snapshot of ``memory`` (a model, or a node row about to be written)."""
    data = memory.model_dump() if isinstance(memory, Memory) else memory
    kind = data["kind"]
    status = data["status"]
    return {
        "id": f"{data['id']}#v{seq}",
        "memory_id": data["id"],
        "seq": seq,
        "change_type": change_type.value,
        "at": at,
        "reason": reason,
        "actor": actor,
        "text": data["text"],
        "subject": data["subject"],
        "text_sha256": sha256(data["text"]),
        "importance": data["importance"],
        "status": getattr(status, "value", status),
        "kind": getattr(kind, "value", kind),
        "redacted": False,
    }


def event_row(
    memory_id: str,
    event_type: EventType,
    *,
    from_state: str,
    to_state: str,
    reason: str,
    at: datetime,
    agent_id: str,
    triggered_by: TriggeredBy = TriggeredBy.MANUAL,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A lifecycle event with the archivist's fields."""
    return {
        "event_id": new_event_id(at),
        "memory_id": memory_id,
        "event_type": event_type.value,
        "from_state": from_state,
        "to_state": to_state,
        "reason": reason,
        "triggered_by": triggered_by.value,
        "agent_id": agent_id,
        "timestamp": at,
        "metadata": metadata or {},
    }
