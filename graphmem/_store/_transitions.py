"""Every change of a memory's state, written with the version row and event that record it.

``patch_of`` (``_derive``) is the one rule ("a change writes its version row, and its
event when it has one, in the same transaction"); ``Transitions`` applies it for status
and kind changes, tombstones, and the hard delete (``forget``).
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Required, TypedDict, Unpack

from .._context import Changed, StoreContext
from .._derive import (
    Extraction,
    TextItem,
    derive_fields,
    lifecycle_event,
    message_of,
    patch_of,
    sentence_vectors,
    version_of,
)
from .._engine import Erasure, Patch, WriteBatch
from .._errors import (
    ConfirmationRequiredError,
    ConflictError,
    StoreError,
)
from .._input import check_reason, memory_id_list
from .._keys import FORGET, key_id
from .._kg._text import named
from .._models import (
    ChangeType,
    EventType,
    Kind,
    LifecycleEvent,
    Memory,
    Status,
    TriggeredBy,
    Version,
)
from .._records import patched_memory
from .._redact import (
    DIGEST_PREFIX,
    SAID,
    Mentions,
    digest_key_id,
    keyed_digest,
    said_form,
    said_whole,
)
from .._time import still_id
from ._knowledge import Knowledge

__all__ = ["Transition", "Transitions"]


class Transition(TypedDict, total=False):
    """A change of a memory's status and/or kind: the event and version row that record
    it, why, the new ``status`` and ``kind`` (None: unchanged), who triggered it (manual
    by default), the event's ``metadata``, other fields set with it (``extra_sets``) and
    the actor."""

    event_type: Required[EventType]
    change_type: Required[ChangeType]
    reason: Required[str]
    status: Status | None
    kind: Kind | None
    triggered_by: TriggeredBy
    metadata: Mapping[str, Any] | None
    extra_sets: Mapping[str, Any] | None
    actor: str | None


class Transitions:
    """State changes: the state, a version row and an event in one transaction."""

    def __init__(self, ctx: StoreContext, knowledge: Knowledge) -> None:
        self._ctx = ctx
        self._knowledge = knowledge

    def apply(self, memory: Memory, updates: Mapping[str, Any], change_type: ChangeType, *,
              reason: str | None, actor: str | None,
              event: LifecycleEvent | None = None) -> Memory:
        """Commit one change of ``memory`` (see ``patch_of``); returns it as stored. The
        version row is dated like ``event`` when there is one."""
        ctx = self._ctx
        at = event.timestamp if event is not None else ctx.now()
        return self._commit(memory, patch_of(memory, updates, change_type, at, reason=reason,
                                             actor=actor, event=event))

    def transition(self, memory: Memory, **change: Unpack[Transition]) -> Memory:
        """Move one memory to a new status and/or kind, audited."""
        return self._commit(memory, self.transition_patch(memory, **change))

    def _commit(self, memory: Memory, patch: Patch) -> Memory:
        """Commit one memory's patch, hand the listeners the fields it set, and return the
        memory as stored."""
        ctx = self._ctx
        batch = WriteBatch(patches=[patch])
        with ctx.lock:
            ctx.engine.commit(batch)
            ctx.changed(Changed([memory.id], patched=batch.patched()))
        return patched_memory(memory, patch.set)

    def transition_patch(self, memory: Memory, **change: Unpack[Transition]) -> Patch:
        """What ``transition`` commits, for a caller that writes it with more."""
        ctx = self._ctx
        now = ctx.now()
        actor = ctx.actor(change.get("actor"))
        reason, status, kind = change["reason"], change.get("status"), change.get("kind")
        updates: dict[str, Any] = dict(change.get("extra_sets") or {})
        from_state = to_state = memory.status.value
        if status is not None:
            updates.update(status=status.value, prev_status=memory.status.value)
            to_state = status.value
        if kind is not None:
            updates.update(kind=kind.value, prev_kind=memory.kind.value)
            from_state, to_state = memory.kind.value, kind.value
        updates["state_changed"] = now
        event = lifecycle_event(memory.id, change["event_type"], from_state=from_state,
                                to_state=to_state, reason=reason, at=now, agent_id=actor,
                                triggered_by=change.get("triggered_by", TriggeredBy.MANUAL),
                                metadata=dict(change.get("metadata") or {}))
        return patch_of(memory, updates, change["change_type"], now, reason=reason,
                        actor=actor, event=event)

    def tombstone(self, memory_id: str, *, reason: str = "manual", owner: str | None = None,
                  triggered_by: TriggeredBy = TriggeredBy.MANUAL,
                  actor: str | None = None) -> Memory:
        """Delete logically: kept for audit and export, never recalled. Reversible."""
        memory = self._ctx.current(memory_id, owner)
        if memory.status in (Status.TOMBSTONED, Status.FORGOTTEN):
            raise ConflictError(f"memory {memory_id} is already {memory.status.value}")
        return self.transition(memory, status=Status.TOMBSTONED, event_type=EventType.TOMBSTONE,
                               change_type=ChangeType.TOMBSTONED, reason=reason,
                               triggered_by=triggered_by, actor=actor)

    def keep(self, memory_id: str, *, reason: str = "kept on review",
             owner: str | None = None, actor: str | None = None) -> LifecycleEvent:
        """Record a reviewer's decision to leave a memory as it is (the archivist sent it
        to review or proposed archiving it): the memory does not change; a ``keep`` event
        names the actor and the reason. Review queues leave it out for the restore window."""
        ctx = self._ctx
        memory = ctx.current(memory_id, owner)
        if memory.status in (Status.TOMBSTONED, Status.FORGOTTEN):
            raise ConflictError(f"memory {memory_id} is {memory.status.value}: nothing to keep")
        event = lifecycle_event(memory.id, EventType.KEEP, from_state=memory.status.value,
                                to_state=memory.status.value, reason=reason, at=ctx.now(),
                                agent_id=ctx.actor(actor),
                                triggered_by=TriggeredBy.MANUAL,
                                metadata={"kind": memory.kind.value})
        with ctx.lock:
            ctx.engine.commit(WriteBatch(events=[event]))
        return event

    # -- the hard delete -----------------------------------------------------------------
    def forget(self, memory_id: str, *, confirm: bool = False, reason: str = "manual",
               owner: str | None = None, purge: bool = True, actor: str | None = None) -> None:
        """Hard delete: the text leaves the node, the full-text index, the vectors, every
        version, the edges, the contexts of the memories indexed with it and the metadata
        of events that quoted it; one ``delete`` event records it. Its id stays taken for
        good (nothing can bring it back, not a re-import), and only a keyed digest of each
        text it had remains (``verify_forgotten`` checks a text against it).

        With ``purge`` (the default) the database file is then rewritten so the deleted
        bytes leave the disk too (Kuzu keeps old pages until then); to forget many
        memories, ``forget_many`` purges once.
        """
        if confirm is not True:
            raise ConfirmationRequiredError(
                f"forget({memory_id!r}) deletes the memory's text for good; "
                "pass confirm=True (or --yes on the command line)")
        self._forget([memory_id], reason=reason, owner=owner, purge=purge, actor=actor)

    def forget_many(self, memory_ids: Sequence[str], *, confirm: bool = False,
                    reason: str = "manual", owner: str | None = None, purge: bool = True,
                    actor: str | None = None) -> int:
        """``forget`` each memory, the words of all of them cut from their neighbours'
        contexts and payloads in one pass (forgetting each sentence of a long message
        alone rewrites the message in every other sentence's payload each time), and the
        file purged once. Every id is checked before anything is written; the first
        commit cuts the words of all from the neighbours (with the first erasure), so
        a run stopped part way has removed them there, and running it again finishes
        the rest. Returns how many memories were erased (one erased already counts
        none)."""
        memory_ids = memory_id_list(memory_ids)
        if confirm is not True:
            raise ConfirmationRequiredError(
                f"forget_many({len(memory_ids)} memories) deletes their texts for good; "
                "pass confirm=True (or --yes on the command line)")
        return self._forget(memory_ids, reason=reason, owner=owner, purge=purge, actor=actor)

    def _forget(self, memory_ids: Sequence[str], *, reason: str, owner: str | None,
                purge: bool, actor: str | None) -> int:
        check_reason(reason)
        ctx = self._ctx
        memories = [ctx.visible(i, owner) for i in dict.fromkeys(memory_ids)]
        # what a correction left true of a statement (``still_true``) is words of it
        level = memories
        while level:
            known = {m.id for m in memories}
            level = [m for m in ctx.engine.get_many([still_id(m.id) for m in level]).values()
                     if m.provenance.get("remains_of") in known and m.id not in known]
            memories += level
        gone: list[tuple[Memory, list[Version]]] = []
        for memory in memories:
            history = ctx.engine.history(memory.id)
            if memory.status is Status.FORGOTTEN and not memory.text \
                    and not memory.payload and not any(v.text for v in history):
                continue  # erased already; a status set by other means erases what is left
            gone.append((memory, history))
        if not gone:
            return 0
        key = ctx.keys.current(FORGET)
        tag = key_id(key)
        scrubbed: dict[str, dict[str, Any]] = {}  # one patch a memory: context and payload
        held: dict[str, Memory] = {}  # ... of these memories, as they were
        # per owner, the forgotten texts as sentences of the sittings they were said in
        owners = _by_owner(gone)
        said = {owner: _said_near(group, lambda m: m.session) for owner, group in owners}
        contexts, reread = self._scrub_contexts(owners, said)
        for memory, patch in (*contexts, *self._scrub_payloads(owners, said, key, tag)):
            scrubbed.setdefault(memory.id, {}).update(patch.set)
            held[memory.id] = memory
        self._messages_again(held, scrubbed)
        if reread:
            self._read_again(reread, scrubbed)
        for n, (memory, history) in enumerate(gone):
            # as it is now: an erasure before it may have moved its entities
            self._erase(ctx.visible(memory.id, owner) if n else memory, history, scrubbed,
                        reason=reason, key=key, tag=tag, actor=actor)
            scrubbed = {}
        if purge:
            self.purge([t for m, history in gone
                        for t in (m.text, m.payload, *(v.text for v in history)) if t])
        return len(gone)

    def _erase(self, memory: Memory, history: list[Version],
               scrubbed: dict[str, dict[str, Any]], *, reason: str, key: str, tag: str,
               actor: str | None) -> None:
        """One memory's erasure, committed with the patches of ``scrubbed`` (its
        neighbours without its words)."""
        ctx = self._ctx
        memory_id = memory.id
        now = ctx.now()
        actor = ctx.actor(actor)
        digest = keyed_digest(key, memory.text, key_id=tag)
        blank: dict[str, Any] = {
            "text": "", "subject": None, "tags": [], "vector": None, "sentences": None,
            "payload": None,
            "payload_hash": None, "context": None, "entities": [],
            "provenance": {"redacted": True}, "extra": {}, "access_times": [],
            # what a sitting typed again would say (``said_form``), for conversations
            "integrity": {SAID: _said_digests((memory.text, *(v.text for v in history)),
                                              key, tag)},
            "times_from": [], "times_to": [],  # the times its text spoke of
            # and what its writer said of it besides (a session's name can say whose)
            "session": None, "observed": None, "valid_from": None, "valid_to": None,
            "payload_at": None,
            "status": Status.FORGOTTEN.value, "prev_status": memory.status.value,
            "hot": False, "state_changed": now, "modified": now, "text_sha256": digest,
            "version": memory.version + 1,
        }
        version = version_of(memory, seq=memory.version + 1, change_type=ChangeType.FORGOTTEN,
                             at=now, actor=actor, text=None, subject=None,
                             status=Status.FORGOTTEN).model_copy(
            update={"text_sha256": digest, "redacted": True})
        event = lifecycle_event(memory_id, EventType.DELETE, from_state=memory.status.value,
                                to_state=Status.FORGOTTEN.value, reason=reason, at=now,
                                agent_id=actor, metadata={"textDigest": digest})
        texts = {memory.text, memory.payload, *(v.text for v in history)} - {None, ""}
        mentions = Mentions(sorted(t for t in texts if t))
        # a summary quotes a neighbour by its subject or the start of its text
        quoted = Mentions([t for t in (memory.subject, memory.text[:40]) if t and len(t) >= 8])
        batch = WriteBatch(
            patches=[*(Patch(i, set=s) for i, s in scrubbed.items()),
                     Patch(memory_id, set=blank, version=version, event=event)],
            erasures=[Erasure(memory_id,
                              version_digests={v.id: keyed_digest(key, v.text, key_id=tag)
                                               for v in history},
                              event_metadata=self._scrub_events(memory_id, mentions, quoted))])
        with ctx.lock:
            with self._knowledge.unlearning():
                self._knowledge.plan_forget(batch, memory)
                ctx.engine.commit(batch)
            ctx.changed(Changed([memory_id], removed=True))
            remention = sorted(set(batch.unmentioned) - {memory_id})
            if remention:  # their entities moved to keyed ids
                ctx.changed(Changed(remention))
            if scrubbed:
                ctx.changed(Changed(list(scrubbed), vectors={i: s["vector"] for i, s in
                                                             scrubbed.items() if "vector" in s}))

    def purge(self, erased: Sequence[str] = ()) -> None:
        """Rewrite the database from its live data, dropping every byte of what was deleted
        or overwritten (forgotten text, old values); ``erased``: the texts forgotten."""
        with self._ctx.lock:
            self._ctx.engine.purge(erased)

    def verify_forgotten(self, memory_id: str, text: str) -> bool:
        """Whether ``text`` is what the forgotten memory ``memory_id`` said (its keyed
        digest matches): proof of a deletion without keeping what was deleted. The
        forget key that made the digest must be in the store: a backup does not carry
        it, so a restored store needs the original store's key back first."""
        ctx = self._ctx
        memory = ctx.visible(memory_id, None)
        if memory.status is not Status.FORGOTTEN:
            raise ConflictError(f"memory {memory_id} is not forgotten")
        keys = ctx.keys.forget_keys()
        tag = digest_key_id(memory.text_sha256)
        if (tag is not None and tag not in keys) or not keys:
            raise StoreError(
                f"memory {memory_id} was forgotten under the forget key "
                f"{tag or 'of an older graphmem'}, which this store does not hold (a backup "
                f"never carries it): give the original store's key back in "
                f"{ctx.engine.secrets_location} to check a text against it")
        candidates = [keys[tag]] if tag is not None else list(keys.values())
        return any(hmac.compare_digest(memory.text_sha256,
                                       keyed_digest(key, text, key_id=tag or ""))
                   for key in candidates)

    def _scrub_contexts(self, owners: _Owners, said: dict[str | None, dict[str | None, Mentions]]
                        ) -> tuple[list[tuple[Memory, Patch]], list[tuple[Memory, Extraction]]]:
        """The forgotten texts leave the contexts of their owner's other memories indexed
        with them (matched up to whitespace; in the sitting a text was said in, the
        sentence in any case and however short: ``said``, by owner and sitting; a
        correction's context as said in the sitting of what it corrects); their vectors
        are derived again (an embedding can give its text away).

        A statement that starts with "she" or "he" was read with the name said before it
        (``refers_to``: its context, entities and facts); when a forgotten text said that
        name, the statement is read again without it, as a store that never had that
        text reads it: returned second, with what the graph takes from it now."""
        engine = self._ctx.engine
        leaving = {m.id: m.session for _, group in owners for m, _ in group}
        found: list[tuple[Memory, str | None, bool]] = []
        for owner, group in owners:
            texts = {t for m, history in group
                     for t in (m.text, m.payload, *(v.text for v in history)) if t}
            mentions = Mentions(sorted(texts))
            near = said[owner]
            candidates = {m.id: m for probe in mentions.probes
                          for m in engine.holding("context", probe)}
            for session in near.keys() - {None}:  # all of its sitting: the words in any case
                candidates.update({m.id: m for m in engine.holding("context", "",
                                                                  session=session)})
            # and whoever a "she" statement means by a name these texts said, in any
            # sitting (one that said it again only reinforced the forgotten statement)
            for name in {run for t in texts for run in _NAME_RUN.findall(t) if len(run) > 2}:
                candidates.update({m.id: m for m in engine.holding("context", name)
                                   if (m.provenance or {}).get("refers_to")})
            # another owner's contexts are their own words, though they say the same
            for m in candidates.values():
                if m.id in leaving or m.owner != owner:
                    continue
                context = mentions.scrub(m.context or "")
                if m.session in near:
                    context = near[m.session].scrub(context)
                # a correction's context is what it corrects, in its message: said in
                # that statement's sitting, maybe not the correction's own
                origin = self._sitting_corrected(m, leaving)
                if origin is not None and origin != m.session and origin in near:
                    context = near[origin].scrub(context)
                who = (m.provenance or {}).get("refers_to")
                unnamed = isinstance(who, str) and _says_name(texts, who)
                if unnamed:
                    context = _without_name(context, str(who))
                if context != (m.context or "") or unnamed:
                    found.append((m, context.strip() or None, unnamed))
        if not found:
            return [], []
        patches: list[tuple[Memory, Patch]] = []
        reread: list[tuple[Memory, Extraction]] = []
        for again in (False, True):  # read again (what the graph takes), or embedded again
            part = [(m, c) for m, c, unnamed in found if unnamed is again]
            items = [TextItem(m.subject, m.text, c, None, at=m.observed or m.created,
                              speaker=named((m.provenance or {}).get("speaker")))
                     if again else TextItem(m.subject, m.text, c, m.entities)
                     for m, c in part]
            derived = derive_fields(self._ctx.embed_memories, items, graph=again,
                                    facts=self._ctx.facts)
            for (m, c), d in zip(part, derived, strict=True):
                fields: dict[str, Any] = {"context": c, "vector": d.vector}
                if d.extraction is not None:
                    fields["provenance"] = {k: v for k, v in m.provenance.items()
                                            if k != "refers_to"}
                    fields["entities"] = list(d.entities)
                    reread.append((m, d.extraction))
                patches.append((m, Patch(m.id, set=fields)))
        return patches, reread

    def _read_again(self, reread: Sequence[tuple[Memory, Extraction]],
                    scrubbed: dict[str, dict[str, Any]]) -> None:
        """Commit the statements read again without a forgotten name (their patches taken
        out of ``scrubbed``), with what the knowledge graph loses and takes of them, before
        the forgotten memories are erased: the erasure then finds the name's entity
        mentioned by nothing else."""
        ctx = self._ctx
        batch = WriteBatch(patches=[Patch(m.id, set=scrubbed.pop(m.id)) for m, _ in reread])
        with ctx.lock:
            with self._knowledge.unlearning():
                for memory, extraction in reread:
                    self._knowledge.plan_retext(batch, memory, extraction)
                ctx.engine.commit(batch)
            ctx.changed(Changed([m.id for m, _ in reread],
                                vectors={p.memory_id: p.set["vector"] for p in batch.patches
                                         if "vector" in p.set}))

    def _sitting_corrected(self, memory: Memory, known: Mapping[str, str | None]
                           ) -> str | None:
        """The sitting of the statement a correction corrects (``known``: the sittings
        of the memories being forgotten; the others are read); None for a memory that
        corrects nothing."""
        target = (memory.provenance or {}).get("corrects")
        if not isinstance(target, str) or not target:
            return None
        if target in known:
            return known[target]
        corrected = self._ctx.engine.get(target)
        return corrected.session if corrected is not None else None

    def _scrub_payloads(self, owners: _Owners,
                        said: dict[str | None, dict[str | None, Mentions]], key: str,
                        tag: str) -> list[tuple[Memory, Patch]]:
        """The forgotten sentences leave the payloads of their owner's other memories of
        the sitting they were said in (the sentences of one message keep the message as
        their payload; another message of the sitting may say the same), however short, as
        ``said`` finds them; without a sitting, those of their own message (the same
        payload). Another sitting's messages are theirs. The payload's hash is kept for
        audit, keyed as the forgotten text's is: a plain hash of the whole message would
        confirm a guess of the words that went."""
        engine = self._ctx.engine
        leaving = {m.id for _, group in owners for m, _ in group}
        patches: list[tuple[Memory, Patch]] = []
        for owner, group in owners:
            in_sitting: dict[str | None, Mentions] = {
                s: near for s, near in said[owner].items() if s is not None}
            in_message = _said_near([g for g in group if g[0].session is None
                                     and g[0].payload], lambda m: m.payload)
            siblings = {m.id: m for session in in_sitting
                        for m in engine.holding("payload", "", session=session)}
            siblings.update({m.id: m for payload in in_message
                             for m in engine.holding("payload", str(payload), whole=True)})
            for m in siblings.values():
                if m.id in leaving or m.owner != owner or not m.payload:
                    continue
                payload = m.payload
                for near in (in_sitting.get(m.session), in_message.get(m.payload)):
                    payload = near.scrub(payload) if near is not None else payload
                if payload != m.payload:
                    patches.append((m, Patch(m.id, set={
                        "payload": payload or None,
                        "payload_hash": m.payload_hash if (m.payload_hash or "").startswith(
                            DIGEST_PREFIX) else keyed_digest(key, m.payload, key_id=tag)})))
        return patches

    def _messages_again(self, held: Mapping[str, Memory],
                        scrubbed: Mapping[str, dict[str, Any]]) -> None:
        """The sentence vectors of the memories whose payload or context the forget
        changed, made again of what is left (``message_of``) and set in their patches
        (``scrubbed``): a vector of the forgotten words would be a trace of them. Made
        again whatever the memory's message was before: a row made while its provenance
        said otherwise (edited since) holds the old message too."""
        changed = [held[i] for i in scrubbed]  # each had its payload or context cut
        vectors = sentence_vectors(self._ctx.embed, [m.text for m in changed], [
            message_of(scrubbed[m.id].get("payload", m.payload),
                       scrubbed[m.id].get("context", m.context),
                       scrubbed[m.id].get("provenance", m.provenance))
            for m in changed])
        for m, sentences in zip(changed, vectors, strict=True):
            scrubbed[m.id]["sentences"] = sentences

    def _scrub_events(self, memory_id: str, mentions: Mentions, quoted: Mentions
                      ) -> dict[str, dict[str, Any]]:
        """New metadata for other events that quoted the forgotten memory: an archive
        summary built from it (``summaryFrom``) goes whole, and any other string that
        holds its text (or subject) is blanked, the blanked fields listed."""
        out: dict[str, dict[str, Any]] = {}
        probes = list(dict.fromkeys([*mentions.probes, *quoted.probes]))
        found = {event_id: meta for probe in probes or [""]
                 for event_id, meta in self._ctx.engine.events_mentioning(memory_id, probe)}
        for event_id, meta in found.items():
            new = dict(meta)
            if memory_id in (meta.get("summaryFrom") or []) or quoted.found_in(
                    str(meta.get("summary") or "")):
                new.update(summary=None, summaryRedacted=True)
            cleaned, blanked = mentions.scrub_json(new)
            if blanked:
                cleaned["redactedFields"] = sorted(set(cleaned.get("redactedFields", []))
                                                   | set(blanked))
            if cleaned != meta:
                out[event_id] = cleaned
        return out


#: forgotten memories (each with its history) by owner
_Owners = list[tuple[str | None, list[tuple[Memory, list[Version]]]]]


def _by_owner(gone: Sequence[tuple[Memory, list[Version]]]) -> _Owners:
    """The forgotten memories (each with its history) by owner, in the order given."""
    groups: dict[str | None, list[tuple[Memory, list[Version]]]] = {}
    for memory, history in gone:
        groups.setdefault(memory.owner, []).append((memory, history))
    return list(groups.items())


def _said_near(group: Sequence[tuple[Memory, list[Version]]],
               place: Callable[[Memory], str | None]) -> dict[str | None, Mentions]:
    """Per place (a sitting, or a message) where memories of ``group`` were said, their
    texts as sentences (``Mentions(anywhere=True)``): the words leave the place they were
    said in, however short (other places lose them where the rule of ``Mentions`` finds
    them)."""
    texts: dict[str | None, list[str]] = {}
    whole: set[str] = set()  # said as a sentence of its own in its message
    for memory, history in group:
        texts.setdefault(place(memory), []).extend(
            t for t in (memory.text, *(v.text for v in history)) if t)
        if memory.text and said_whole(memory.text, memory.payload):
            whole.add(memory.text)
    return {where: Mentions(said, anywhere=True, whole=whole)
            for where, said in texts.items()}


#: The words a sentence of a forgotten text needs for a digest of its own: a paragraph
#: forgotten whole is not said again sentence by sentence, but a short common sentence
#: in it ("I'm fine.") may be said again and kept
_SENTENCE_WORDS = 4


def _said_digests(texts: tuple[str | None, ...], key: str, tag: str) -> list[str]:
    """What a forgotten memory keeps of its ``texts`` for conversations imported later:
    the keyed digest of the ``said_form`` of each text and of each of its sentences of
    ``_SENTENCE_WORDS`` words or more."""
    from .._extract._rules import sentences

    forms = {said_form(part) for text in texts if text
             for part in (text, *(s for s in sentences(text)
                                  if len(s.split()) >= _SENTENCE_WORDS))}
    return sorted(keyed_digest(key, form, key_id=tag) for form in forms - {""})


#: a run of capitalised words, as a person's name is written
_NAME_RUN = re.compile(r"\b[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*")


def _name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, name.split())) + r"(?!\w)",
                      re.IGNORECASE)


def _says_name(texts: Iterable[str], name: str) -> bool:
    """Whether one of ``texts`` says ``name`` (whole words, any case or spacing).

    >>> _says_name(["My aunt Ilse  Varga teaches"], "Ilse Varga"), _says_name(["Ilsen"], "Ilse")
    (True, False)
    """
    pattern = _name_pattern(name)
    return bool(name.strip()) and any(pattern.search(t) for t in texts)


def _without_name(context: str, name: str) -> str:
    """A context without ``name``: the line that gives whom a pronoun means, and the name
    said elsewhere in it.

    >>> _without_name("Ilse Varga\\nshe teaches in Graz", "Ilse Varga")
    'she teaches in Graz'
    """
    pattern = _name_pattern(name)
    lines = [" ".join(pattern.sub(" ", line).split()) for line in context.split("\n")]
    return "\n".join(line for line in lines if line)
