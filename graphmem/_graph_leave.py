"""What the knowledge graph keeps when memories leave it (``forget``, an edit's old text):
planned into the same ``WriteBatch`` as the rest of the change.

- The facts that shared a subject and predicate with a leaving fact are written again as
  if what left had never been (``replayed``), statement by statement (each source of a
  fact is one, made when its memory was written): a fact the leaving one ended is valid
  again unless a fact or a supersede that stays would have ended it (then that one ends
  it), a fact the leaving memory stated first starts when the memory that stays stated
  it, a later statement of a fact valid again joins it, and a statement that joined a
  fact which is no longer valid by then starts one of its own.
- An entity keeps only the forms the memories that still mention it use, and its name is
  chosen again among them; one that no memory mentions any more goes (``rebuilt``).
- An entity whose forms changed and whose id is a plain hash of a name (made before ids
  were keyed) moves to a keyed id, with its mentions and facts (``move_entities``): its
  old id would give the forgotten name back to a dictionary.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from ._engine import EdgeRecord, Engine, EntityRecord, FactRecord, WriteBatch
from ._kg import FUNCTIONAL_PREDICATES, Entity, Merge, new_entity_id, normalize, restrict

__all__ = ["entity_of", "fact_id", "keyed_id", "merge_record", "move_entities", "rebuilt",
           "replayed", "set_changed", "set_gone"]

_WORD = re.compile(r"\w+")
#: Ids made under a store's id key (``new_entity_id``, ``fact_id`` with a key).
_KEYED = re.compile(r"^(?:ent_[0-9a-f]{16}|fact_[0-9a-f]{24})(?:_\d+)?$")


def fact_id(owner: str | None, subject: str, predicate: str, obj: str,
            since: datetime | None, *, key: bytes = b"", taken: Container[str] = ()) -> str:
    """A stable id for a fact: the same statement of the same time is the same fact.
    Keyed by the store's id key (24 hex digits; 16 without a key), with ``_2``, ``_3``
    ... while ``taken`` has it (a fact whose start changed keeps the id it had).

    >>> len(fact_id("ann", "ent_1", "lives_in", "ent_2", None, key=b"k" * 32))
    29
    >>> first = fact_id("ann", "ent_1", "lives_in", "ent_2", None)
    >>> fact_id("ann", "ent_1", "lives_in", "ent_2", None, taken={first}) == first + "_2"
    True
    """
    text = "\x1f".join([owner or "", subject, predicate, obj, since.isoformat() if since else ""])
    found = "fact_" + hashlib.blake2b(text.encode(), key=key,
                                      digest_size=12 if key else 8).hexdigest()
    identifier, n = found, 1
    while identifier in taken:
        n += 1
        identifier = f"{found}_{n}"
    return identifier


def keyed_id(identifier: str) -> bool:
    """Whether an entity or fact id was made under a store's id key.

    >>> keyed_id("ent_0123456789abcdef"), keyed_id("ent_0123456789ab")
    (True, False)
    """
    return bool(_KEYED.match(identifier))


def set_changed(batch: WriteBatch, fact: FactRecord) -> None:
    """``fact`` as the batch changes it (replacing an earlier change of the same fact, or
    the fact as the batch creates it: an edit of the same merge made it)."""
    for facts in (batch.facts, batch.changed_facts):
        at = _place(batch, facts, fact.id)
        if at is not None:  # the change replaces it where it is
            facts[at] = fact
            return
    batch.changed_facts.append(fact)


def set_gone(batch: WriteBatch, fact: FactRecord) -> None:
    """``fact`` leaves the graph: deleted (no longer changed), or not created when the
    batch creates it (a delete runs before the creates: it was created anyway)."""
    if _drop(batch, batch.facts, fact.id):
        return
    _drop(batch, batch.changed_facts, fact.id)
    batch.gone_facts.append(fact)


def _drop(batch: WriteBatch, facts: list[FactRecord], fact_id: str) -> bool:
    """Take the fact ``fact_id`` out of ``facts`` (a list of ``batch``); whether it was
    there."""
    at = _place(batch, facts, fact_id)
    if at is not None:
        del facts[at]
        batch.__dict__["_fact_places"].pop(id(facts), None)  # the places after it moved
    return at is not None


def _place(batch: WriteBatch, facts: list[FactRecord], fact_id: str) -> int | None:
    """Where the fact ``fact_id`` is in ``facts`` (a list of ``batch``), or None. The
    places are kept on the batch and follow what was appended since they were read (a
    scan for each change of a fact made a sitting of thousands of corrections quadratic:
    2.3 s of 18 at 4,000 messages; a fact replaced keeps its place); anything else (a
    fact taken out, which is rare, or the list made again) reads them again."""
    kept: dict[int, tuple[list[FactRecord], dict[str, int]]] = \
        batch.__dict__.setdefault("_fact_places", {})
    found = kept.get(id(facts))
    places = found[1] if found is not None and found[0] is facts else None
    n = len(places) if places is not None else 0
    if places is None or len(facts) < n or any(
            places.get(facts[i].id) != i for i in {0, n // 2, n - 1} if 0 <= i < n):
        places = {}
        n = 0
    for i in range(n, len(facts)):
        places.setdefault(facts[i].id, i)
    if len(places) != len(facts):  # one id twice: no places to keep
        kept.pop(id(facts), None)
        return next((i for i, f in enumerate(facts) if f.id == fact_id), None)
    kept[id(facts)] = (facts, places)
    return places.get(fact_id)


# -- validity -----------------------------------------------------------------------------
@dataclass(frozen=True)
class _Statement:
    """One memory's statement of a fact, as the replay meets it: ``fact`` is the stored
    fact it was recorded under; ``made_it`` when it made that fact (its start and end)."""

    memory: str
    fact: FactRecord
    made_it: bool


def replayed(facts: Sequence[FactRecord], supersedes: Sequence[EdgeRecord], *,
             creators: Mapping[str, str], when: Mapping[str, datetime],
             stated: Callable[[str, FactRecord], FactRecord], id_key: bytes = b"",
             taken: Collection[str] = ()) -> list[FactRecord]:
    """The facts of one owner's subject and predicate that stay, as the writes that made
    them leave them when replayed in the order they were made, without what left.

    Each source of a fact is one statement, made at ``when`` its memory wrote (the one
    that made the fact, its ``creators`` entry, at the fact's ``recorded``): a statement
    of a live value joins it as one more source, else one of the same value and start
    (the same statement of the same time), else it starts a fact of its own, as its
    memory states it (``stated``, under the stored fact's id while that is free);
    a new value of a functional predicate ends the live ones that began no later
    (``Knowledge._add``); a supersede ends the live facts of the memory it replaces that
    the new memory does not state (``Knowledge.plan_supersede``). An end given by the
    text itself stays. Returns the facts as they end up; a stored fact missing from
    them joined another."""
    replay = _Replay(stated, id_key, {*taken, *(f.id for f in facts)})
    for at, item in _events(facts, supersedes, creators, when):
        if isinstance(item, EdgeRecord):
            replay.supersede(item)
        else:
            replay.state(item, at)
    return list(replay.out.values())


def _events(facts: Sequence[FactRecord], supersedes: Sequence[EdgeRecord],
            creators: Mapping[str, str], when: Mapping[str, datetime]
            ) -> list[tuple[datetime, _Statement | EdgeRecord]]:
    """The statements and supersedes in the order they were written. A fact's sources
    were added in order, none before the fact was recorded; a supersede comes after the
    new memory's own statements, as it was written."""
    events: list[tuple[datetime, int, int, _Statement | EdgeRecord]] = []
    times: dict[str, list[datetime]] = {}
    for fact in sorted(facts, key=lambda f: (f.recorded, f.id)):
        previous = fact.recorded
        for n, memory in enumerate(fact.sources):
            made = n == 0 and creators.get(fact.id) == memory
            at = previous if made else max(when.get(memory, previous), previous)
            events.append((at, 0, len(events), _Statement(memory, fact, made)))
            times.setdefault(memory, []).append(at)
            previous = at
    for edge in supersedes:
        if edge.at is not None:
            events.append((max([edge.at, *times.get(edge.src, ())]), 1, len(events), edge))
    return [(at, item) for at, _, _, item in sorted(events, key=lambda e: e[:3])]


class _Replay:
    """The facts of one subject and predicate as the replay leaves them so far."""

    def __init__(self, stated: Callable[[str, FactRecord], FactRecord], id_key: bytes,
                 taken: set[str]) -> None:
        self.live: dict[str, FactRecord] = {}
        self.out: dict[str, FactRecord] = {}
        self._stated = stated
        self._id_key = id_key
        self._taken = taken

    def supersede(self, edge: EdgeRecord) -> None:
        for fact in [f for f in self.live.values()
                     if edge.dst in f.sources and edge.src not in f.sources]:
            self.out[fact.id] = replace(fact, valid_to=edge.at, ended_by=f"memory:{edge.src}")
            del self.live[fact.id]

    def state(self, statement: _Statement, at: datetime) -> None:
        value = statement.fact.object
        same = next((f for f in self.live.values() if f.object == value), None)
        if same is None:
            new = self._as_stated(statement, at)
            same = next((f for f in self.out.values()
                         if f.object == value and f.valid_from == new.valid_from), None)
            if same is None:
                self._start(new)
                return
        if statement.memory not in same.sources:
            joined = replace(same, sources=(*same.sources, statement.memory))
            self.out[same.id] = joined
            if same.id in self.live:
                self.live[same.id] = joined

    def _as_stated(self, statement: _Statement, at: datetime) -> FactRecord:
        """The fact ``statement`` would start: the stored one when it made it, else as
        its memory's text states it, recorded when it was made; under the stored fact's
        id while that is free (and does not hash a start that changed: a plain hash of
        a forgotten start would give it back), else a new keyed one."""
        fact, memory = statement.fact, statement.memory
        if statement.made_it:
            own_end = fact.valid_to if fact.ended_by is None else None
            return replace(fact, valid_to=own_end, ended_by=None, sources=(memory,))
        said = self._stated(memory, fact)
        identifier = fact.id
        if identifier in self.out or not (keyed_id(identifier)
                                          or said.valid_from == fact.valid_from):
            identifier = fact_id(fact.owner, fact.subject, fact.predicate, fact.object,
                                 said.valid_from, key=self._id_key,
                                 taken=self._taken | set(self.out))
            self._taken.add(identifier)
        return replace(said, id=identifier, recorded=at, ended_by=None, sources=(memory,))

    def _start(self, new: FactRecord) -> None:
        if new.predicate in FUNCTIONAL_PREDICATES and new.valid_from is not None:
            for old in [f for f in self.live.values() if f.object != new.object and (
                    f.valid_from is None or f.valid_from <= new.valid_from)]:
                self.out[old.id] = replace(old, valid_to=new.valid_from, ended_by=new.id)
                del self.live[old.id]
        self.out[new.id] = new
        if new.valid_to is None:
            self.live[new.id] = new


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
        set_gone(batch, fact)
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
