"""What a text implies, derived in one place: a memory's hash, entities and vector, and the
version rows and events that record changes.

Every path that writes a text (add, merge, update, supersede, forget's scrub, reembed)
calls ``derive_fields``, so a new text can never keep stale entities or a stale vector.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ._embed import joint_text, sentence_texts
from ._engine import NewMemory, Patch
from ._engine_rules import version_id
from ._input import MemoryInput
from ._kg import (
    Fact,
    Mention,
    TimeMention,
    extract_mentions,
    parse_times,
    person_speaker,
)
from ._models import ChangeType, EventType, LifecycleEvent, Memory, TriggeredBy, Version
from ._time import new_event_id, new_memory_id

__all__ = [
    "Derived",
    "Extraction",
    "TextItem",
    "derive_fields",
    "embedding_head",
    "embedding_text",
    "extract",
    "lifecycle_event",
    "message_of",
    "new_memory",
    "patch_of",
    "sentence_vectors",
    "session_contexts",
    "sha256",
    "version_of",
]


def sha256(text: str | None) -> str:
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()


def embedding_text(subject: str | None, text: str, context: str | None = None) -> str:
    """What gets embedded: the subject line, the text, then its context (text first, so a
    long context is what the model's 256-token window cuts).

    >>> embedding_text("Orchard db", "It runs PostgreSQL 16", "we upgraded last week")
    'Orchard db\\nIt runs PostgreSQL 16\\nwe upgraded last week'
    """
    return joint_text(embedding_head(subject, text), context)


def embedding_head(subject: str | None, text: str) -> str:
    """The subject line (unless the text holds it already) and the text."""
    return f"{subject}\n{text}" if subject and subject not in text else text


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


@dataclass(frozen=True)
class Extraction:
    """What the knowledge graph takes from a text: its time expressions (resolved against
    the memory's own time), its typed entity mentions, the facts it states, and who says
    it (first-person statements are about the speaker)."""

    times: tuple[TimeMention, ...]
    mentions: tuple[Mention, ...]
    facts: tuple[Fact, ...]
    speaker: str | None = None


@dataclass(frozen=True)
class Derived:
    """The fields a text determines."""

    text_sha256: str
    entities: tuple[str, ...]
    vector: np.ndarray
    extraction: Extraction | None = None
    #: the vectors of the text's sentences (``sentence_texts``; None: none)
    sentences: np.ndarray | None = None


@dataclass(frozen=True)
class TextItem:
    """A text to derive fields from: its subject, context, given entities (None: find
    them), its time (what relative dates mean) and speaker."""

    subject: str | None
    text: str
    context: str | None = None
    entities: Sequence[str] | None = None
    at: datetime | None = None
    speaker: str | None = None
    #: whom a leading "she" / "he" of the text means ("she's a pharmacist" after "my wife
    #: Abena"): its facts are read with the name in the pronoun's place
    refers_to: str | None = None
    #: the message the text is one statement of (``message_of``): searched as one more
    #: of its sentences, at ``MESSAGE_WEIGHT``
    message: str | None = None


#: Facts of a text by another extractor than the rules: (text, speaker, its time) -> facts.
FactSource = Callable[[str, str | None, datetime | None], Sequence[Fact]]


def extract(text: str, *, at: datetime | None, speaker: str | None,
            facts: FactSource | None = None, refers_to: str | None = None) -> Extraction:
    """Times, mentions and facts of one text (deterministic rules, ~0.2 ms a text; the
    facts from ``facts`` instead when given, e.g. an Ollama model's checked triples). A
    speaker who is a chat's role ("assistant") is nobody: no person, no first-person facts.
    With ``refers_to``, the facts are those of the text with its leading "she" / "he"
    replaced by that name (``named``); times and mentions are the text's own."""
    from ._kg._patterns import extract_facts  # on first use: a recall never extracts

    speaker = person_speaker(speaker)
    times = parse_times(text, now=at)
    mentions = extract_mentions(text, now=at, times=times)
    said = named(text, refers_to) if refers_to else text
    if facts is not None:
        found = facts(said, speaker, at)
    elif said != text:
        found = extract_facts(said, speaker=speaker, now=at)
    else:
        found = extract_facts(text, speaker=speaker, now=at, mentions=mentions, times=times)
    return Extraction(tuple(times), tuple(mentions), tuple(found), speaker)


_LEADING_PRONOUN = re.compile(r"^(\s*)(she|he|her|his|hers)(['’](?:s|d|ll))?\b",
                              re.IGNORECASE)


def named(text: str, name: str) -> str:
    """``text`` with its leading "she" / "he" (or "her", "his", "she's", ...) replaced by
    ``name``; else ``text`` itself.

    >>> named("she's a pharmacist, so she does the numbers", "Abena")
    "Abena's a pharmacist, so she does the numbers"
    >>> named("His car is blue", "Tom"), named("he said hi", "my dad")
    ("Tom's car is blue", 'my dad said hi')
    >>> named("the blue one", "Ana")
    'the blue one'
    """
    found = _LEADING_PRONOUN.match(text)
    if found is None:
        return text
    word, suffix = found.group(2).lower(), found.group(3) or ""
    if word in ("her", "his", "hers") and not suffix:
        suffix = "'s"
    return f"{found.group(1)}{name}{suffix}{text[found.end():]}"


#: Vectors of memories from their heads (``embedding_head``) and contexts.
MemoryEmbed = Callable[[Sequence[str], Sequence[str | None]], np.ndarray]


def derive_fields(embed: MemoryEmbed, items: Sequence[TextItem], *,
                  graph: bool = True, facts: FactSource | None = None,
                  sentences: Callable[[Sequence[str]], np.ndarray] | None = None
                  ) -> list[Derived]:
    """For each text: its hash, its entities (unless given: the names the knowledge graph
    resolves from it and its keys to other memories, ``entities_of``), its vector (of
    subject, text and context), embedded in one batch, with ``graph`` what the
    knowledge graph takes from it (``extract``), and with ``sentences`` (the model's
    ``embed``) the vectors of its sentences (``sentence_texts``), in one more batch."""
    if not items:
        return []
    from ._extract._rules import entities_of  # on first use: a recall never derives

    vectors = embed([embedding_head(i.subject, i.text) for i in items],
                    [i.context for i in items])
    split = sentence_vectors(sentences, [i.text for i in items],
                             [i.message for i in items]) if sentences else None
    out = []
    for n, i in enumerate(items):
        found = extract(i.text, at=i.at, speaker=i.speaker, facts=facts,
                        refers_to=i.refers_to) \
            if graph or not i.entities else None
        entities = tuple(i.entities) if i.entities else () if found is None \
            else entities_of(i.text, found.mentions, found.facts, found.speaker)
        out.append(Derived(text_sha256=sha256(i.text), entities=entities, vector=vectors[n],
                           extraction=found if graph else None,
                           sentences=split[n] if split is not None else None))
    return out


#: What the user's message a statement was said in counts beside the statement's own
#: words: the message's vector is kept at this length among the statement's sentence
#: vectors, so its cosine with a question counts this much of a sentence's. A statement
#: split from its message ("Sunday and Monday closed" of a turn about a shop's hours) is
#: found by what the message says, and one that says the thing itself stays before it.
#: Chosen on the everyday development sets (``python -m eval.conversations``, MRR),
#: without the message: dev 0.887, dev2 0.805, dev3 0.772, dev4 0.707; the message alone
#: (no correction's context) at 0.9: dev 0.893, dev2 0.816, dev3 0.791, dev4 0.737 (the
#: mean of the four 0.809; at 1.0 0.804, at 0.8 0.807); with a correction's context
#: (``message_of``) 0.898, 0.813, 0.793, 0.730, stale turns first 0 / 3 / 4 / 6 (the
#: message alone 1 / 3 / 5 / 6, none 0 / 3 / 5 / 6). The assistant's messages (long
#: replies, whose statements each keep another window of one) embedded too gave the
#: same mean in one trial, at twice the ingest time.
MESSAGE_WEIGHT = 0.9


def message_of(payload: str | None, context: str | None,
               provenance: Mapping[str, Any] | None) -> str | None:
    """The user's message a conversation's statement was said in (its payload), for a
    memory ``add_conversation`` made of what the user said; for a correction, followed by
    what it corrects (its context: the corrected statement in its message), which the
    correction is about (else the stale statement's message came first by the words it
    does not share with the correction: "we got the allotment ... first dig is on the
    9th" before "I meant the 16th"). None for what the assistant said, and for any other
    memory (its payload is its own)."""
    given = provenance or {}
    if not payload or given.get("source") != "conversation" or given.get("role") == "assistant":
        return None
    return f"{payload}\n{context}" if given.get("corrects") and context else payload


def sentence_vectors(embed: Callable[[Sequence[str]], np.ndarray], texts: Sequence[str | None],
                     messages: Sequence[str | None] | None = None
                     ) -> list[np.ndarray | None]:
    """The vectors of each text's sentences (``sentence_texts``; None for a text
    without), all embedded in one batch, each distinct text once. With ``messages``, a
    text that is one statement of a longer message (``message_of``) has the message's
    vector after its sentences' (the only one of a one-sentence statement), scaled to
    ``MESSAGE_WEIGHT``."""
    found = [sentence_texts(t) for t in texts]
    said = [None] * len(texts) if messages is None else [
        m if m and t and m.split() != t.split() else None
        for t, m in zip(texts, messages, strict=True)]
    for n, message in enumerate(said):
        if message is not None:
            found[n] = [*found[n], message]
    distinct = list(dict.fromkeys(t for parts in found for t in parts))
    if not distinct:
        return [None] * len(texts)
    encoded = embed(distinct)
    row = {text: n for n, text in enumerate(distinct)}
    out: list[np.ndarray | None] = []
    for parts, message in zip(found, said, strict=True):
        if not parts:
            out.append(None)
            continue
        block = encoded[[row[t] for t in parts]]
        if message is not None:
            block[-1] *= MESSAGE_WEIGHT
        out.append(block)
    return out


def new_memory(item: MemoryInput, derived: Derived, *, now: datetime,
               reason: str | None = None, actor: str | None = None) -> NewMemory:
    """A new memory of ``item``, with its first version row."""
    created = item.created or now
    times = derived.extraction.times if derived.extraction is not None else ()
    memory = Memory(
        id=item.id or new_memory_id(), kind=item.kind, status=item.status,
        subject=item.subject, text=item.text, tags=item.tags, entities=derived.entities,
        owner=item.owner, project=item.project, visibility=item.visibility,
        importance=item.importance, original_importance=item.importance,
        confidence=item.confidence, created=created, modified=item.modified or created,
        observed=item.observed, valid_from=item.valid_from, valid_to=item.valid_to,
        superseded_by=item.superseded_by, session=item.session, context=item.context,
        provenance=item.provenance, integrity=item.integrity, payload=item.payload,
        payload_hash=sha256(item.payload) if item.payload is not None else None,
        text_sha256=derived.text_sha256, version=1, xref_count=0, extra=item.extra,
        times_from=tuple(t.window.start for t in times),
        times_to=tuple(t.window.end for t in times))
    return NewMemory(memory=memory, vector=derived.vector, sentences=derived.sentences,
                     version=version_of(memory, seq=1, change_type=ChangeType.CREATED,
                                        at=created, reason=reason, actor=actor),
                     payload_at=now if item.payload is not None else None)


def version_of(memory: Memory, *, seq: int, change_type: ChangeType, at: datetime,
               reason: str | None = None, actor: str | None = None,
               **changes: Any) -> Version:
    """The version row recording ``memory`` as it is after ``changes``."""
    def value(name: str) -> Any:
        return changes[name] if name in changes else getattr(memory, name)

    text = value("text")
    return Version(id=version_id(memory.id, seq), memory_id=memory.id, seq=seq,
                   change_type=change_type, at=at, reason=reason, actor=actor, text=text,
                   subject=value("subject"), text_sha256=sha256(text),
                   importance=value("importance"), status=value("status"),
                   kind=value("kind"), redacted=False)


def patch_of(memory: Memory, updates: Mapping[str, Any], change_type: ChangeType,
             at: datetime, *, reason: str | None = None, actor: str | None = None,
             event: LifecycleEvent | None = None) -> Patch:
    """A change of ``memory``: its new fields, the version row that records the state
    they make, and ``event`` when the change is a lifecycle transition."""
    seq = memory.version + 1
    fields = dict(updates)
    fields["version"] = seq
    fields.setdefault("modified", at)
    recorded = {k: v for k, v in updates.items()
                if k in ("text", "subject", "importance", "status", "kind")}
    return Patch(memory.id, set=fields,
                 version=version_of(memory, seq=seq, change_type=change_type, at=at,
                                    reason=reason, actor=actor, **recorded),
                 event=event)


def lifecycle_event(memory_id: str, event_type: EventType, *, from_state: str, to_state: str,
                    reason: str, at: datetime, agent_id: str,
                    triggered_by: TriggeredBy = TriggeredBy.MANUAL,
                    metadata: dict[str, Any] | None = None) -> LifecycleEvent:
    """A lifecycle event with the archivist's fields."""
    return LifecycleEvent(event_id=new_event_id(at), memory_id=memory_id,
                          event_type=event_type, from_state=from_state, to_state=to_state,
                          reason=reason, triggered_by=triggered_by, agent_id=agent_id,
                          timestamp=at, metadata=metadata or {})
