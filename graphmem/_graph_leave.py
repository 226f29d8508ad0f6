"""What the knowledge graph keeps when memories leave it (``forget``, an edit's old text):
planned into the same ``WriteBatch`` as the rest of the change.

- The facts that shared a subject and predicate with a leaving fact are written again as
  if what left had never been (``replayed``): a fact the leaving one ended is valid
  again unless a fact or a supersede that stays would have ended it (then that one ends
  it), a fact the leaving memory stated first starts when the memory that stays stated
  it, and a later statement of a fact valid again joins it.
- An entity keeps only the forms the memories that still mention it use, and its name is
  chosen again among them; one that no memory mentions any more goes (``rebuilt``).
- An entity whose forms changed and whose id is a plain hash of a name (made before ids
  were keyed) moves to a keyed id, with its mentions and facts (``move_entities``): its
  old id would give the forgotten name back to a dictionary.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from ._engine import EdgeRecord, Engine, EntityRecord, FactRecord, WriteBatch
from ._kg import FUNCTIONAL_PREDICATES, Entity, Merge, new_entity_id, normalize, restrict

__all__ = ["entity_of", "fact_id", "keyed_id", "merge_record", "move_entities", "rebuilt",
           "replayed", "set_changed"]

_WORD = re.compile(r"\w+")
#: Ids made under a store's id key (``new_entity_id``, ``fact_id`` with a key).
_KEYED = re.compile(r"^(?:ent_[0-9a-f]{16}|fact_[0-9a-f]{24})(?:_\d+)?$")


def fact_id(owner: str | None, subject: str, predicate: str, obj: str,
            since: datetime | None, *, key: bytes = b"") -> str:
    """A stable id for a fact: the same statement of the same time is the same fact.
    Keyed by the store's id key (24 hex digits; 16 without a key).

    >>> len(fact_id("ann", "ent_1", "lives_in", "ent_2", None, key=b"k" * 32))
    29
    """
    text = "\x1f".join([owner or "", subject, predicate, obj, since.isoformat() if since else ""])
    return "fact_" + hashlib.blake2b(text.encode(), key=key,
                                     digest_size=12 if key else 8).hexdigest()


def keyed_id(identifier: str) -> bool:
    """Whether an entity or fact id was made under a store's id key.

    >>> keyed_id("ent_0123456789abcdef"), keyed_id("ent_0123456789ab")
    (True, False)
    """
    return bool(_KEYED.match(identifier))


def set_changed(batch: WriteBatch, fact: FactRecord) -> None:
    """``fact`` as the batch changes it (replacing an earlier change of the same fact)."""
    batch.changed_facts[:] = [f for f in batch.changed_facts if f.id != fact.id]
    batch.changed_facts.append(fact)


# -- validity -----------------------------------------------------------------------------
def replayed(facts: Sequence[FactRecord], supersedes: Sequence[EdgeRecord]
             ) -> tuple[list[FactRecord], dict[str, str]]:
    """The facts of one owner's subject and predicate that stay, as the writes that made
    them leave them when replayed in the order they were recorded, without what left:
    a newer value of a functional predicate ends the live ones that began no later
    (``Knowledge._add``); a supersede ends the live facts of the memory it replaces that
    the new memory does not state (``Knowledge.plan_supersede``); a statement of a live
    fact again is one more source of it. An end given by the text itself stays.

    Returns the facts as they end up (those merged into another left out) and, for each
    merged fact, the id of the fact it joined."""
    events: list[tuple[datetime, int, str, FactRecord | EdgeRecord]] = [
        (f.recorded, 0, f.id, f) for f in facts]
    for edge in supersedes:
        if edge.at is not None:  # after the new memory's own facts, as it was written
            after = [f.recorded for f in facts if f.sources and f.sources[0] == edge.src]
            events.append((max([edge.at, *after]), 1, edge.src, edge))
    live: dict[str, FactRecord] = {}
    out: dict[str, FactRecord] = {}
    merged: dict[str, str] = {}
    for _, _, _, item in sorted(events, key=lambda e: e[:3]):
        if isinstance(item, EdgeRecord):
            for fact in [f for f in live.values()
                         if item.dst in f.sources and item.src not in f.sources]:
                out[fact.id] = replace(fact, valid_to=item.at, ended_by=f"memory:{item.src}")
                del live[fact.id]
            continue
        new = item if item.ended_by is None else replace(item, valid_to=None, ended_by=None)
        same = next((f for f in live.values() if f.object == new.object), None)
        if same is not None:
            joined = replace(same, sources=tuple(dict.fromkeys((*same.sources, *new.sources))))
            out[same.id] = live[same.id] = joined
            merged[new.id] = same.id
            continue
        if new.predicate in FUNCTIONAL_PREDICATES and new.valid_from is not None:
            for old in [f for f in live.values() if f.object != new.object and (
                    f.valid_from is None or f.valid_from <= new.valid_from)]:
                out[old.id] = replace(old, valid_to=new.valid_from, ended_by=new.id)
                del live[old.id]
        out[new.id] = new
        if new.valid_to is None:
            live[new.id] = new
    return list(out.values()), merged


# -- names --------------------------------------------------------------------------------
def _words(text: str | None) -> str:
    return " " + " ".join(_WORD.findall((text or "").lower())) + " "


def rebuilt(record: EntityRecord, surfaces: Iterable[str],
            texts: Callable[[], Iterable[str | None]]) -> EntityRecord:
    """``record`` as the memories that still mention it name it: the forms they were
    seen under (``surfaces``) and the aliases their texts (read by ``texts()`` only when
    a surface does not settle it) still say, the name chosen
    again among those; merge records of other forms leave (a split record stays, it
    names another entity's form). Unchanged when nothing names it (a mention without a
    surface whose text does not say any form: nothing to choose from)."""
    forms = {normalize(s) for s in surfaces if s} & set(record.aliases)
    unconfirmed = [a for a in record.aliases if a not in forms]
    if unconfirmed:
        said = [_words(t) for t in texts()]
        forms |= {a for a in unconfirmed if any(_words(a) in t for t in said)}
    kept = restrict(entity_of(record), forms)
    if kept is None:
        return record
    splits = tuple(m for m in record.merges if m.get("rule") == "split")
    return replace(record, name=kept.name, aliases=kept.aliases,
                   merges=(*(merge_record(m) for m in kept.merges), *splits))


def entity_of(record: EntityRecord) -> Entity:
    """A stored entity as the resolver holds it (split records left out)."""
    merges = tuple(Merge(record.id, m["alias"], m["rule"], m.get("evidence", ""))
                   for m in record.merges if m.get("rule") != "split")
    return Entity(record.id, record.owner or "", record.name, record.type,  # type: ignore[arg-type]
                  record.aliases or (record.name,), merges)


def merge_record(merge: Merge) -> dict[str, str]:
    """A merge as an entity record keeps it."""
    return {"alias": merge.alias, "rule": merge.rule, "evidence": merge.evidence}


# -- moving to keyed ids ------------------------------------------------------------------
def move_entities(engine: Engine, batch: WriteBatch, owner: str | None,
                  records: Sequence[EntityRecord], *, taken: Collection[str],
                  leaving: Collection[str], id_key: bytes) -> dict[str, str]:
    """Give each of ``records`` (rebuilt entities of ``owner``) a keyed id: the new entity
    comes, the old goes, the mentions of the memories that mention it (but those in
    ``leaving``) are written again, and the facts about it move to keyed ids too (with
    the ``ended_by`` that name them). Returns old id -> new id."""
    moves: dict[str, str] = {}
    held = set(taken)
    for record in records:
        new = new_entity_id(owner or "", record.type, record.name, taken=held, id_key=id_key)
        held.add(new)
        moves[record.id] = new
        batch.new_entities.append(replace(record, id=new))
        batch.gone_entities.append(record.id)
    if not moves:
        return moves
    memories = {m.memory_id for m in engine.mentions(entity_ids=sorted(moves))} - set(leaving)
    for memory_id in sorted(memories):
        batch.unmentioned.append(memory_id)
        batch.mentions += [replace(m, entity_id=moves.get(m.entity_id, m.entity_id))
                           for m in engine.mentions(memory_ids=[memory_id])]
    _move_facts(engine, batch, owner, moves, id_key)
    return moves


def _move_facts(engine: Engine, batch: WriteBatch, owner: str | None,
                moves: Mapping[str, str], id_key: bytes) -> None:
    gone = {f.id for f in batch.gone_facts}
    pending = {f.id: f for f in batch.changed_facts}
    about = [pending.get(f.id, f) for f in engine.facts(entity_ids=sorted(moves))
             if f.owner == owner and f.id not in gone]
    renamed: dict[str, FactRecord] = {}
    for fact in about:
        subject, obj = moves.get(fact.subject, fact.subject), moves.get(fact.object, fact.object)
        renamed[fact.id] = replace(fact, subject=subject, object=obj, id=fact_id(
            owner, subject, fact.predicate, obj, fact.valid_from, key=id_key))
    for fact in about:
        batch.changed_facts[:] = [f for f in batch.changed_facts if f.id != fact.id]
        batch.gone_facts.append(fact)
    # facts this batch makes already (a fact that moved to a keyed id) follow too
    batch.facts[:] = [replace(f, subject=moves.get(f.subject, f.subject),
                              object=moves.get(f.object, f.object)) for f in batch.facts]
    for fact in renamed.values():
        by = renamed.get(fact.ended_by or "")
        batch.facts.append(replace(fact, ended_by=by.id) if by is not None else fact)
    # facts that stay where they are but were ended by a moved one
    for fact in engine.facts(owner=owner):
        current = pending.get(fact.id, fact)
        if fact.id not in renamed and fact.id not in gone and current.ended_by in renamed:
            set_changed(batch, replace(current, ended_by=renamed[current.ended_by].id))
