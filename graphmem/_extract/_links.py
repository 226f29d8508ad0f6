"""The cross-references ingest derives from what memories mention: rare shared entities,
another memory's id, another memory's subject. An in-process index of who mentions what,
per owner, kept in sync with the store like the recall index."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .._models import Edge

__all__ = ["LinkIndex", "derive_edges"]

_NUMERIC = re.compile(r"[\d.,:/-]+")  # dates, times, numbers: entities, never links
_PHRASE_WORD = re.compile(r"[a-z0-9']+")


@dataclass
class _Doc:
    owner: str | None
    created: float
    entities: tuple[str, ...]
    subject_key: str | None


@dataclass
class LinkIndex:
    """Who mentions what, per owner: entity -> memories, multi-word subject -> memories."""

    docs: dict[str, _Doc] = field(default_factory=dict)
    entity_docs: dict[tuple[str | None, str], set[str]] = field(default_factory=dict)
    subjects: dict[tuple[str | None, str], set[str]] = field(default_factory=dict)
    per_owner: dict[str | None, int] = field(default_factory=dict)

    def upsert(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Add or refresh memories from rows with id, owner, created, status, entities,
        subject (forgotten ones leave the index)."""
        for row in rows:
            self.remove(row["id"])
            status = getattr(row["status"], "value", row["status"])
            if status == "forgotten":
                continue
            subject = row.get("subject")
            key = " ".join(subject.lower().split()) if subject and len(subject.split()) >= 2 \
                else None
            created = row["created"]
            doc = _Doc(owner=row.get("owner"),
                       created=created.timestamp() if isinstance(created, datetime)
                       else float(created),
                       entities=tuple(row.get("entities") or ()), subject_key=key)
            self.docs[row["id"]] = doc
            self.per_owner[doc.owner] = self.per_owner.get(doc.owner, 0) + 1
            for entity in doc.entities:
                self.entity_docs.setdefault((doc.owner, entity), set()).add(row["id"])
            if key:
                self.subjects.setdefault((doc.owner, key), set()).add(row["id"])

    def remove(self, memory_id: str) -> None:
        doc = self.docs.pop(memory_id, None)
        if doc is None:
            return
        self.per_owner[doc.owner] -= 1
        for entity in doc.entities:
            self.entity_docs.get((doc.owner, entity), set()).discard(memory_id)
        if doc.subject_key:
            self.subjects.get((doc.owner, doc.subject_key), set()).discard(memory_id)


def derive_edges(index: LinkIndex, targets: Sequence[str], texts: Mapping[str, str], *,
                 max_df: int | None = None, limit: int = 10) -> list[Edge]:
    """REFERENCES edges for the ``targets`` (their ``texts`` for subject mentions).

    A rare entity shared with another memory of the same owner links the newer memory to
    the older (source ``entity:<name>``, weight ``1 / ln(1 + df)``); an entity that is
    another memory's id links to it (``mention``); a text that contains another
    memory's subject of several words links to it (``subject``). Every count is taken
    within the owner: how rare an entity is never depends on another owner's memories.
    ``max_df``: an entity shared by more memories than this is too common to mean
    anything (default: 1% of the owner's memories, at least 3, at most 50). ``limit``:
    at most this many entity links per memory, rarest first. Dates, times and numbers do
    not link: sharing a day is not a cross-reference.
    """
    edges: list[Edge] = []
    for memory_id in targets:
        doc = index.docs.get(memory_id)
        if doc is None:
            continue
        owner = doc.owner
        cap = max_df if max_df is not None else int(min(50, max(3, index.per_owner[owner] // 100)))
        ranked = []
        for entity in doc.entities:
            docs = index.entity_docs.get((owner, entity), set())
            if 2 <= len(docs) <= cap + 1 and not _NUMERIC.fullmatch(entity):
                ranked.append((len(docs), entity, docs))
        made = 0
        for _, entity, docs in sorted(ranked):
            for other in sorted(docs - {memory_id}):
                if made >= limit:
                    break
                if entity.startswith("urn:") and other == entity:
                    continue  # handled as a mention below
                # The newer memory references the older; at the same instant, the larger
                # id the smaller, so a pair is never linked both ways.
                newer = (doc.created, memory_id) > (index.docs[other].created, other)
                newer_id, older_id = (memory_id, other) if newer else (other, memory_id)
                edges.append(Edge("references", newer_id, older_id,
                                  weight=1.0 / math.log(1 + len(docs)),
                                  source=f"entity:{entity}"[:200]))
                made += 1
        for entity in doc.entities:
            mentioned = index.docs.get(entity)
            if mentioned is not None and entity != memory_id and mentioned.owner == owner:
                edges.append(Edge("references", memory_id, entity, source="mention"))
        edges += _subject_mentions(index, memory_id, owner, texts.get(memory_id, ""))
    return edges


def _subject_mentions(index: LinkIndex, memory_id: str, owner: str | None,
                      text: str) -> list[Edge]:
    if not index.subjects:
        return []
    words = _PHRASE_WORD.findall(text.lower())
    out = []
    for size in (2, 3, 4, 5):
        for start in range(len(words) - size + 1):
            phrase = " ".join(words[start:start + size])
            for other in sorted(index.subjects.get((owner, phrase), ())):
                if other != memory_id:
                    out.append(Edge("references", memory_id, other, source="subject"))
    return out
