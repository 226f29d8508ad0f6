"""The engine contract for the knowledge graph: entities, mentions and facts written in one
batch with the memories, read back by owner, memory, entity and source, changed and removed
(``changed_*``, ``unmentioned``, ``gone_*``), and a returning entity under its old id.
Parametrized by engine like ``test_contract``."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from graphmem import ConflictError
from graphmem._engine import Engine, EntityRecord, FactRecord, MentionRecord, WriteBatch

from .test_contract import NOW, _new

ANN_MEL = EntityRecord("ent:mel", "ann", "melanie", "person", aliases=("melanie", "mel"),
                       merges=({"alias": "mel", "rule": "short_form"},), created=NOW)
ANN_SWE = EntityRecord("ent:swe", "ann", "sweden", "place", aliases=("sweden",), created=NOW)
BOB_MEL = EntityRecord("ent:bmel", "bob", "melanie", "person", aliases=("melanie",),
                       created=NOW)
LIVES = FactRecord("fact:1", "ann", "ent:mel", "lives_in", "ent:swe", 0.9, NOW, None, NOW,
                   ("m:1",), "moved_to")


def _graph(engine: Engine) -> WriteBatch:
    batch = WriteBatch(
        memories=_new({"id": "m:1", "text": "Melanie moved to Sweden", "owner": "ann"},
                      {"id": "m:2", "text": "Mel paints", "owner": "ann"},
                      {"id": "m:3", "text": "Melanie plays chess", "owner": "bob"}),
        new_entities=[ANN_MEL, ANN_SWE, BOB_MEL],
        mentions=[MentionRecord("m:1", "ent:mel", "subject", 1.0, "Melanie"),
                  MentionRecord("m:1", "ent:swe", "object", 1.0, "Sweden"),
                  MentionRecord("m:2", "ent:mel", "mention", 0.8, "Mel"),
                  MentionRecord("m:3", "ent:bmel", "subject", 1.0, "Melanie")],
        facts=[LIVES])
    engine.commit(batch)
    return batch


def _mentions(engine: Engine, **where: list[str]) -> set[tuple[str, str, str, float, str]]:
    return {(m.memory_id, m.entity_id, m.role, m.weight, m.surface)
            for m in engine.mentions(**where)}  # type: ignore[arg-type]


def test_entities_mentions_and_facts_read_back(engine: Engine) -> None:
    _graph(engine)
    assert engine.entities(owner="ann") == [ANN_MEL, ANN_SWE]
    assert engine.entities(owner="bob") == [BOB_MEL]
    assert {e.id for e in engine.entities(all_owners=True)} == {"ent:mel", "ent:swe",
                                                                 "ent:bmel"}
    assert engine.entities(ids=["ent:swe", "ent:none"]) == [ANN_SWE]
    assert _mentions(engine, memory_ids=["m:2"]) == {("m:2", "ent:mel", "mention", 0.8, "Mel")}
    assert {m for m, *_ in _mentions(engine, entity_ids=["ent:mel"])} == {"m:1", "m:2"}
    assert len(_mentions(engine)) == 4
    assert engine.facts(owner="ann") == [LIVES]
    assert engine.facts(owner="bob") == []
    assert engine.facts(sources=["m:1"]) == [LIVES] and engine.facts(sources=["m:2"]) == []
    assert engine.facts(entity_ids=["ent:swe"]) == [LIVES]  # as object too
    assert engine.facts(all_owners=True) == [LIVES]


def test_changes_and_removals(engine: Engine) -> None:
    _graph(engine)
    ended = replace(LIVES, valid_to=NOW + timedelta(days=3), ended_by="fact:2",
                    sources=("m:1", "m:2"), confidence=0.7)
    renamed = replace(ANN_MEL, aliases=("melanie",), merges=())
    engine.commit(WriteBatch(changed_facts=[ended], changed_entities=[renamed],
                             unmentioned=["m:2"]))
    assert engine.facts(owner="ann") == [ended]
    assert engine.entities(ids=["ent:mel"]) == [renamed]
    assert _mentions(engine, memory_ids=["m:2"]) == set()
    assert {m for m, *_ in _mentions(engine, entity_ids=["ent:mel"])} == {"m:1"}
    engine.commit(WriteBatch(gone_facts=[ended], unmentioned=["m:1"],
                             gone_entities=["ent:mel", "ent:swe"]))
    assert engine.facts(all_owners=True) == []
    assert engine.entities(owner="ann") == []
    assert engine.entities(owner="bob") == [BOB_MEL]  # another owner's stays
    assert _mentions(engine) == {("m:3", "ent:bmel", "subject", 1.0, "Melanie")}
    # a gone entity named again comes back under its old id
    back = replace(ANN_SWE, created=NOW + timedelta(days=9))
    engine.commit(WriteBatch(new_entities=[back],
                             mentions=[MentionRecord("m:2", "ent:swe", "mention", 0.8,
                                                     "Sweden")]))
    assert engine.entities(owner="ann") == [back]
    assert _mentions(engine, entity_ids=["ent:swe"]) == {("m:2", "ent:swe", "mention", 0.8,
                                                         "Sweden")}


def test_a_failed_batch_leaves_no_graph_behind(engine: Engine) -> None:
    _graph(engine)
    before = (engine.entities(all_owners=True), _mentions(engine),
              engine.facts(all_owners=True))
    extra = EntityRecord("ent:new", "ann", "lisbon", "place", aliases=("lisbon",),
                         created=NOW)
    batch = WriteBatch(memories=_new({"id": "m:1", "text": "duplicate id"}),
                       new_entities=[extra],
                       mentions=[MentionRecord("m:2", "ent:new", "mention", 0.8, "Lisbon")],
                       facts=[replace(LIVES, id="fact:9", object="ent:new")],
                       unmentioned=["m:3"], gone_facts=[LIVES])
    with pytest.raises(ConflictError):
        engine.commit(batch)
    assert (engine.entities(all_owners=True), _mentions(engine),
            engine.facts(all_owners=True)) == before


def test_an_id_stays_its_owners_and_a_mention_never_crosses_owners(engine: Engine) -> None:
    _graph(engine)
    before = (engine.entities(all_owners=True), _mentions(engine))
    # bob's memory m:3 naming ann's Melanie, or bob's fact between ann's entities
    engine.commit(WriteBatch(mentions=[MentionRecord("m:3", "ent:mel", "mention", 0.8, "Mel")],
                             facts=[replace(LIVES, id="fact:bob", owner="bob")]))
    assert (engine.entities(all_owners=True), _mentions(engine)) == before
    assert [f.id for f in engine.facts(all_owners=True)] == ["fact:1"]
    taken = replace(ANN_MEL, owner="bob", name="mallory's melanie")
    with pytest.raises(ConflictError, match="ent:mel belongs to another owner"):
        engine.commit(WriteBatch(new_entities=[taken]))
    assert engine.entities(ids=["ent:mel"]) == [ANN_MEL]
    assert engine.graph_owners(entities=["ent:mel", "ent:bmel", "ent:none"]) == {
        "ent:mel": "ann", "ent:bmel": "bob"}
    assert engine.graph_owners(facts=["fact:1", "fact:none"]) == {"fact:1": "ann"}
    engine.commit(WriteBatch(unmentioned=["m:1", "m:2"], gone_facts=[LIVES],
                             gone_entities=["ent:mel"]))
    if engine.graph_owners(entities=["ent:mel"]):  # Kuzu holds a gone entity until a purge
        with pytest.raises(ConflictError, match="belongs to another owner"):
            engine.commit(WriteBatch(new_entities=[taken]))
    assert engine.graph_owners(facts=["fact:1"]) == {}  # a gone fact keeps no id


def test_secret_keys_are_kept_apart_from_meta(engine: Engine) -> None:
    assert engine.secrets() == []
    engine.add_secret("forget", "ab" * 32)
    engine.add_secret("ids", "cd" * 32)
    assert engine.secrets() == [("forget", "ab" * 32), ("ids", "cd" * 32)]
    assert not {"ab" * 32, "cd" * 32} & set(engine.meta().values())
