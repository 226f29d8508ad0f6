"""The knowledge graph in the store: entities resolved per owner, mentions, facts valid in
time, and how forget, supersede and edits keep them right."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graphmem import InvalidInputError, MemoryInput, MemoryStore, RecallConfig
from ingest.ump import export_ump, import_ump
from tests.conftest import Clock

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def _graph(store: MemoryStore, owner: str | None = None) -> dict[str, object]:
    engine = store._ctx.engine
    entities = {e.id: e for e in engine.entities(owner=owner)}
    return {"entities": entities,
            "names": sorted(e.name for e in entities.values()),
            "facts": engine.facts(owner=owner),
            "mentions": engine.mentions()}


def _facts(store: MemoryStore, owner: str | None = None) -> list[tuple[str, str, str, bool]]:
    graph = _graph(store, owner)
    names = {i: e.name for i, e in graph["entities"].items()}  # type: ignore[attr-defined]
    return sorted((names.get(f.subject, f.subject), f.predicate, names.get(f.object, f.object),
                   f.valid_to is None) for f in graph["facts"])  # type: ignore[attr-defined]


def test_entities_and_mentions_come_with_a_memory(store: MemoryStore) -> None:
    first = store.add("Melanie moved to Lisbon in March 2022 and works at Acme Inc.",
                      owner="ann", provenance={"speaker": "Caroline"})
    graph = _graph(store, "ann")
    assert {"melanie", "lisbon", "acme inc", "caroline"} <= set(graph["names"])  # type: ignore[arg-type]
    mentioned = {m.entity_id for m in graph["mentions"] if m.memory_id == first.id}  # type: ignore[attr-defined]
    assert mentioned == set(graph["entities"])  # type: ignore[arg-type]
    assert ("melanie", "lives_in", "lisbon", True) in _facts(store, "ann")
    assert ("melanie", "works_at", "acme inc", True) in _facts(store, "ann")
    assert store.get(first.id).times_from  # "in March 2022" is a time the text speaks of
    assert store.get(first.id).times_from[0] == datetime(2022, 3, 1, tzinfo=UTC)


def test_surface_forms_resolve_to_one_entity(store: MemoryStore) -> None:
    store.add("Melanie went hiking with her dog", owner="ann", session="s1")
    store.add("Mel said the hike was long", owner="ann", session="s1")
    graph = _graph(store, "ann")
    melanie = [e for e in graph["entities"].values() if e.name == "melanie"]  # type: ignore[attr-defined]
    assert len(melanie) == 1 and "mel" in melanie[0].aliases
    assert melanie[0].merges[0]["rule"] == "prefix"
    assert len({m.memory_id for m in graph["mentions"]  # type: ignore[attr-defined]
                if m.entity_id == melanie[0].id}) == 2


def test_entities_are_each_owners_own(store: MemoryStore) -> None:
    store.add("Melanie lives in Lisbon", owner="ann")
    store.add("Melanie lives in Porto", owner="bob")
    ann, bob = _graph(store, "ann"), _graph(store, "bob")
    assert not set(ann["entities"]) & set(bob["entities"])  # type: ignore[arg-type]
    assert _facts(store, "ann") == [("melanie", "lives_in", "lisbon", True)]
    assert _facts(store, "bob") == [("melanie", "lives_in", "porto", True)]


def test_a_text_edit_in_a_fresh_process_leaves_the_fact_cache_as_the_store(
        tmp_path: Path) -> None:
    """The first edit of a process planned the old text's facts away before the owner's
    facts were cached, then cached them as still stored: the next memory to say the same
    joined a fact that was gone, and its facts were lost."""
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        first = store.add("Mia moved to Lisbon in 2014.").id
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.update(first, text="Mia is the sister of Leo.")
        again = store.add("Mia moved to Lisbon in 2014.").id
        assert sorted(f.predicate for f in store.facts() if f.sources == (again,)) == [
            "lives_in", "moved_to"]
        assert not [f for f in store.facts() if first in f.sources
                    and f.predicate in ("lives_in", "moved_to")]


def test_two_edits_in_one_merge_leave_the_facts_a_reopened_store_would(
        tmp_path: Path) -> None:
    """A merge that edits two memories of one owner: the second edit reads the facts as
    stored, not the first edit's plan (it took a planned fact for a stored one, so a
    later edit left it behind in this process and not in a reopened one)."""
    from graphmem import MemoryInput

    def linz(store: MemoryStore) -> list[tuple[str, ...]]:
        names = {e.id: e.name for e in store.entities(owner="a")}
        return sorted(f.sources for f in store.facts(owner="a")
                      if names.get(f.object) == "linz")

    found = []
    for reopen in (False, True):
        path = tmp_path / f"db{reopen}"
        store = MemoryStore(path, embedder="hashing")
        for memory_id, text in (("m1", "Ana lives in Linz."), ("ma", "Mia likes tea."),
                                ("m2", "Ana lives in Graz.")):
            store.add(text, id=memory_id, owner="a")
        store.merge([MemoryInput(id="ma", text="Ana lives in Linz.", owner="a"),
                     MemoryInput(id="m2", text="Tom likes tea.", owner="a")])
        if reopen:
            store.close()
            store = MemoryStore(path, embedder="hashing")
        store.update("ma", text="Leo likes jazz.")
        found.append(linz(store))
        store.close()
    assert found[0] == found[1] == [("m1",)]


def test_a_newer_fact_ends_the_older_one(tmp_path: Path) -> None:
    clock = Clock(T0)
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=clock) as store:
        store.add("Caroline lives in Ibadan", owner="ann", created=T0)
        store.add("Caroline moved to Lisbon", owner="ann", created=T0 + timedelta(days=30))
        facts = {(f.predicate, f.object): f for f in store._ctx.engine.facts(owner="ann")}
        names = {e.id: e.name for e in store._ctx.engine.entities(owner="ann")}
        lives = {names[o]: f for (p, o), f in facts.items() if p == "lives_in"}
        assert lives["ibadan"].valid_to == T0 + timedelta(days=30)
        assert lives["ibadan"].ended_by == lives["lisbon"].id
        assert lives["lisbon"].valid_to is None


def test_an_ended_fact_the_question_does_not_ask_about_lifts_nothing(tmp_path: Path
                                                                     ) -> None:
    """Every fact about a named person lifted its memory, asked about or not: a memory of
    an ended fact came first for every question naming her."""
    clock = Clock(T0 + timedelta(days=40))
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=clock) as store:
        old = store.add("Caroline lives in Ibadan", owner="ann", created=T0)
        new = store.add("Caroline moved to Lisbon", owner="ann", created=T0 + timedelta(days=30))
        store.add("Caroline paints on weekends", owner="ann", created=T0 + timedelta(days=31))

        def by_facts(question: str) -> set[str]:
            return {h.memory.id for h in store.recall(question, owner="ann", k=5,
                                                      record_access=False)
                    if "facts" in h.explanation.channels}

        assert old.id not in by_facts("What does Caroline do on weekends?")
        assert new.id in by_facts("What does Caroline do on weekends?")  # still true
        assert old.id in by_facts("Where did Caroline live before she moved?")  # asked


def test_the_same_statement_of_the_same_time_is_the_same_fact(store: MemoryStore) -> None:
    """Said again once a newer value ended it, a statement with its own start is one more
    source of the fact it names (one id, one row), not a second fact valid again."""
    first = store.add("Caroline moved to Ibadan in January 2015", owner="ann")
    store.add("Caroline moved to Lisbon in March 2016", owner="ann")
    again = store.add("Caroline moved to Ibadan in January 2015", owner="ann")
    facts = [f for f in store._ctx.engine.facts(owner="ann") if f.predicate == "lives_in"]
    assert len({f.id for f in facts}) == len(facts) == 2
    assert [(f[2], f[3]) for f in _facts(store, "ann") if f[1] == "lives_in"] == [
        ("ibadan", False), ("lisbon", True)]
    assert [f.sources for f in facts if f.valid_to is not None] == [(first.id, again.id)]


def test_forget_takes_mentions_facts_and_lonely_entities(tmp_path: Path) -> None:
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        shared = store.add("Priya works at Zorbatech", owner="ann")
        alone = store.add("Priya adopted a ferret named Pimpernickel", owner="ann")
        names_before = _graph(store, "ann")["names"]
        assert "pimpernickel" in names_before  # type: ignore[operator]
        store.forget(alone.id, confirm=True)
        graph = _graph(store, "ann")
        assert "pimpernickel" not in graph["names"]  # type: ignore[operator]
        assert "priya" in graph["names"]  # type: ignore[operator]  # still mentioned
        assert all(m.memory_id != alone.id for m in graph["mentions"])  # type: ignore[attr-defined]
        assert all(alone.id not in f.sources for f in graph["facts"])  # type: ignore[attr-defined]
        assert _facts(store, "ann") == [("priya", "works_at", "zorbatech", True)]
        store.forget(shared.id, confirm=True)
        assert _graph(store, "ann")["names"] == []
    leaked = [p for p in db.rglob("*") if p.is_file() and (
        b"Pimpernickel" in p.read_bytes() or b"pimpernickel" in p.read_bytes()
        or b"zorbatech" in p.read_bytes())]
    assert leaked == []


def test_an_edit_and_a_correction_update_the_facts(store: MemoryStore) -> None:
    memory = store.add("Priya works at Globex", owner="ann")
    store.update(memory.id, text="Priya works at Initech")
    assert _facts(store, "ann") == [("priya", "works_at", "initech", True)]
    old = store.add("Priya likes tea. Priya lives in Leeds.", owner="ann")
    store.correct(old.id, "Priya lives in York", owner="ann")
    facts = _facts(store, "ann")
    assert ("priya", "lives_in", "york", True) in facts
    assert ("priya", "lives_in", "leeds", False) in facts  # ended, not deleted
    assert ("priya", "likes", "tea", False) in facts  # the corrected memory's other facts end


def test_an_edit_of_a_replaced_memory_leaves_its_facts_replaced(tmp_path: Path) -> None:
    """Editing a superseded memory's text made what it now says current again, beside
    what replaced it (two places one lives in); its new facts end when it was replaced,
    by its replacement, and what the replacement says again stays current. Reopened, the
    store holds what the cache held."""
    clock = Clock(T0)
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing", clock=clock) as store:
        old = store.add("Priya Rao lives in Leeds. Priya Rao works at Globex.", owner="ann")
        replaced_at = clock.advance(days=2)
        new = store.supersede(old.id, "Priya Rao lives in York. Priya Rao works at Globex.")
        clock.advance(days=3)
        store.update(old.id, text="Priya Rao lives in Hull. Priya Rao works at Globex.")
        facts = _facts(store, "ann")
        assert ("priya rao", "lives_in", "york", True) in facts
        assert ("priya rao", "lives_in", "hull", False) in facts
        assert ("priya rao", "works_at", "globex", True) in facts
        assert not [f for f in facts if f[1] == "lives_in" and f[3] and f[2] != "york"]
        hull = [f for f in store._ctx.engine.facts(owner="ann") if old.id in f.sources
                and f.predicate == "lives_in"]
        assert [(f.valid_to, f.ended_by) for f in hull] == [(replaced_at, f"memory:{new.id}")]
        clock.advance(days=1)
        store.update(old.id, text="Priya Rao lives in Bath.")  # and again
        assert [f[2] for f in _facts(store, "ann") if f[1] == "lives_in" and f[3]] == ["york"]
        cached = _facts(store, "ann")
    with MemoryStore(path, embedder="hashing", clock=clock) as store:
        assert _facts(store, "ann") == cached


def test_a_quoted_id_is_found_in_a_list_of_sources_exactly_when_it_is_one() -> None:
    """The needle ``f.sources CONTAINS`` looks for, over random lists of ids made of the
    characters JSON gives structure to (and "u" and digits, to mimic its escapes)."""
    import random

    from graphmem._kuzu._rows import source_needle, sources_of, sources_text

    rng = random.Random(5)
    alphabet = ['a', ',', '"', '\\', '[', ']', 'u', '0', '2', '\n', ' ']
    for _ in range(20_000):
        ids = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4)))
               for _ in range(rng.randint(0, 3))]
        probe = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4)))
        text = sources_text(ids)
        assert sources_of(text) == tuple(ids)
        assert (source_needle(probe) in text) == (probe in ids), (ids, probe)


@pytest.mark.parametrize("odd", ['z"x', "x,", ",", "[x]", "back\\x", "new\nline", "é✓"])
def test_a_memory_with_an_odd_id_finds_exactly_its_facts(tmp_path: Path, odd: str) -> None:
    """A fact's sources are text on Kuzu, and a memory's facts are found by its id in
    that text: an id with quotes, commas, brackets, backslashes or controls finds its
    own facts and no other memory's ("x" matched the facts of 'z"x', and "," those of
    every fact of two sources, so a supersede by "x" kept facts it should have ended);
    the named queries give the ids as the API does."""
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        old = store.add("Dana Silva lives in Oslo.", id="old", owner="o")
        store.add("Dana Silva lives in Oslo.", id=odd, owner="o")
        store.add("Bo Lund works at Globex.", id="urn:other", owner="o")
        store.add("Dana Silva works at Globex.", id="x", owner="o")
        [oslo] = [f for f in store.facts(owner="o") if f.predicate == "lives_in"]
        assert set(oslo.sources) == {"old", odd}
        named = store.named_query("entity_facts", {"name": "Dana Silva", "owner": "o"})
        assert sorted(tuple(r["sources"]) for r in named) == sorted(
            f.sources for f in store.facts(owner="o") if f.subject == oslo.subject)
        # the odd one replaced, then "old": no current memory states Oslo, and "x" (whose
        # facts are read by its id) does not either
        store.supersede(odd, "Eli Novak likes tea.")
        store.supersede(old.id, "x")
        [oslo] = [f for f in store.facts(owner="o") if f.predicate == "lives_in"]
        assert oslo.ended_by == "memory:x"
        lima = store.add("Eli Novak lives in Lima.", id="lima", owner="o")
        also = store.add("Eli Novak lives in Lima.", id="lima too", owner="o")
        store.supersede(also.id, "Eli Novak likes coffee.")
        store.supersede(lima.id, odd)  # replaced by the odd one, which says other things
        [ended] = [f for f in store.facts(owner="o") if set(f.sources) == {"lima", "lima too"}]
        assert ended.ended_by == f"memory:{odd}"
        store.forget(odd, confirm=True)
        assert all(odd not in f.sources for f in store.facts(owner="o"))
        assert [f.sources for f in store.facts(owner="o") if f.object != oslo.object
                and f.predicate == "works_at" and "urn:other" in f.sources] == [("urn:other",)]


def test_a_replaced_memory_edited_later_ends_when_replaced_and_not_by_a_forgotten_one(
        tmp_path: Path) -> None:
    """An edit of a replaced memory ends its new facts at the supersede's own time (an
    importance change in between moved it there, when the old facts were ended by a
    newer fact rather than by the replacement), and a forgotten replacement replaces
    nothing: a later replacement that states the fact keeps it current (a fact of both
    was ended by the forgotten one, and the current memory had no current fact)."""
    clock = Clock(T0)
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=clock) as store:
        old = store.add("Dana Silva works at Initech.", owner="ann")
        replaced_at = clock.advance(days=1)
        store.supersede(old.id, "Dana Silva works at Globex.")
        clock.advance(days=1)
        store.update(old.id, importance=0.9)
        clock.advance(days=1)
        store.update(old.id, text="Dana Silva lives in Bergen.")
        [bergen] = [f for f in store._ctx.engine.facts(owner="ann") if f.predicate == "lives_in"]
        assert bergen.valid_to == replaced_at

        first = store.add("Ana Costa lives in Oslo.", owner="ann")
        gone = store.supersede(first.id, "Ana Costa lives in Lima.")
        store.forget(gone.id, confirm=True)
        store.update(first.id, text="Ana Costa works at Acme.")
        assert ("ana costa", "works_at", "acme", True) in _facts(store, "ann")
        later = store.supersede(first.id, "Ana Costa works at Acme.")
        store.update(first.id, text="Ana Costa works at Acme. Ana Costa lives in Lima.")
        facts = _facts(store, "ann")
        assert ("ana costa", "works_at", "acme", True) in facts
        assert ("ana costa", "lives_in", "lima", False) in facts
        [acme] = [f for f in store._ctx.engine.facts(owner="ann") if f.predicate == "works_at"
                  and later.id in f.sources]
        assert acme.valid_to is None and acme.ended_by is None


def test_a_supersede_ends_only_what_no_other_current_memory_states(
        store: MemoryStore) -> None:
    """"A supersede or correction ends the facts only the replaced memory stated": a
    fact another current memory states too stayed current no more when one of them was
    replaced; once that other memory is replaced as well, it ends."""
    first = store.add("Dana Silva works at Globex. Dana Silva likes tea.", owner="ann")
    second = store.add("Dana Silva works at Globex.", owner="ann")
    store.supersede(first.id, "Dana Silva likes coffee.")
    facts = _facts(store, "ann")
    assert ("dana silva", "works_at", "globex", True) in facts
    assert ("dana silva", "likes", "tea", False) in facts
    store.supersede(second.id, "Dana Silva works at Initech.")
    assert ("dana silva", "works_at", "globex", False) in _facts(store, "ann")


def test_a_replacement_that_stops_restating_a_fact_ends_it(tmp_path: Path) -> None:
    """What a replacement states again of a replaced memory (here of its edited text)
    stays current; once the replacement's new text no longer states it, it ends as the
    supersede ended the rest, at the supersede's time (it stayed current); reopened, the
    store holds what the cache held."""
    clock = Clock(T0)
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing", clock=clock) as store:
        old = store.add("Dana Silva works at Initech. Dana Silva lives in Oslo.", owner="ann")
        replaced_at = clock.advance(days=1)
        new = store.supersede(old.id, "Dana Silva works at Globex.")
        clock.advance(days=1)
        store.update(old.id, text="Dana Silva works at Initech. Dana Silva lives in Bergen.")
        clock.advance(days=1)
        store.update(new.id, text="Dana Silva works at Globex. Dana Silva lives in Bergen.")
        assert ("dana silva", "lives_in", "bergen", True) in _facts(store, "ann")
        clock.advance(days=1)
        store.update(new.id, text="Dana Silva works at Globex.")
        [bergen] = [f for f in store._ctx.engine.facts(owner="ann")
                    if f.predicate == "lives_in" and f.valid_from is not None
                    and old.id in f.sources]
        assert (bergen.valid_to, bergen.ended_by, bergen.sources) == (
            replaced_at, f"memory:{new.id}", (old.id,))
        cached = _facts(store, "ann")
    with MemoryStore(path, embedder="hashing", clock=clock) as store:
        assert _facts(store, "ann") == cached


def test_recall_walks_through_entities(store: MemoryStore) -> None:
    target = store.add("The conference in Sweden starts next week", owner="ann", session="a")
    store.add("Melanie flew to Sweden for work", owner="ann", session="b")
    for i in range(8):
        store.add(f"filler note {i} about groceries and weather", owner="ann", session=f"f{i}")
    config = RecallConfig(name="kg", weights={"fulltext": 1.0, "vector": 0.0, "graph": 1.0},
                          ).with_(graph={"entities": 1.0, "query_entities": 1.0})
    hits = store.recall("Where did Melanie go?", owner="ann", preset=config, k=5,
                        record_access=False)
    ids = [h.memory.id for h in hits]
    assert target.id in ids  # never says Melanie: reached through Sweden
    hit = hits[ids.index(target.id)]
    assert hit.explanation.graph_path[-1] == "sweden"
    assert any(line.startswith("  via ") for line in hit.explanation.lines())
    plain = store.recall("Where did Melanie go?", owner="ann", preset="fulltext", k=5,
                         record_access=False)
    assert target.id not in [h.memory.id for h in plain]


def test_a_query_window_favours_its_memories(tmp_path: Path) -> None:
    now = datetime(2023, 6, 20, tzinfo=UTC)
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=lambda: now) as store:
        may = store.add("Went hiking with friends", created=datetime(2023, 5, 6, tzinfo=UTC))
        store.add("Went hiking alone", created=datetime(2023, 6, 10, tzinfo=UTC))
        config = RecallConfig(name="t", weights={"fulltext": 1.0, "time": 1.0})
        hits = store.recall("what did I do in May 2023?", preset=config, k=2,
                            record_access=False)
        assert hits[0].memory.id == may.id
        assert "time" in hits[0].explanation.channels


def test_a_store_from_before_the_graph_gains_it(tmp_path: Path) -> None:
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        store.add("Tobias works at Umbrella Corp", owner="ann")
        engine = store._ctx.engine
        engine.db.run_auto("MATCH ()-[r:MENTIONS]->() SET r.gone = true")
        engine.db.run_auto("MATCH ()-[f:FACT]->() SET f.gone = true")
        engine.db.run_auto("MATCH (e:Entity) SET e.gone = true")
        engine.set_meta({"kg_pending": "1"})  # as a v4 store migrated to v5 is left
    with MemoryStore(db, embedder="hashing") as store:
        assert store._ctx.engine.meta()["kg_pending"] == "0"
        assert _facts(store, "ann") == [("tobias", "works_at", "umbrella corp", True)]


def test_stats_and_export_are_json(store: MemoryStore) -> None:
    store.add("Melanie lives in Lisbon", owner="ann")
    json.dumps(store.export())


def test_the_public_graph_api_and_a_split(store: MemoryStore) -> None:
    store.add("Melanie went hiking with her dog", owner="ann", session="s1")
    second = store.add("Mel said the hike was long", owner="ann", session="s1")
    [melanie] = store.find_entities("Mel", owner="ann")
    assert melanie.name == "melanie" and store.find_entities("mel", owner="bob") == []
    assert {m.entity_id for m in store.mentions(second.id)} == {melanie.id}
    alone = store.split_entity(melanie.id, "mel", owner="ann")
    assert alone.name == "mel"
    assert {m.entity_id for m in store.mentions(second.id)} == {alone.id}
    assert "mel" not in store.find_entities("Melanie", owner="ann")[0].aliases
    store.add("Mel baked bread", owner="ann", session="s1")  # never merged again
    assert {e.name for e in store.entities(owner="ann")} >= {"melanie", "mel"}
    assert len(store.find_entities("mel", owner="ann")) == 1


def test_a_split_moves_mentions_and_keeps_what_was_stated(tmp_path: Path) -> None:
    """A split moves the mentions of the form to the new entity and leaves the facts as
    they were stated: reading the memories again would lose what an import or another
    extractor gave them (a graph imported with its facts lost them at a split). The
    store reopened and an export into a new store hold the same graph."""
    def graph(store: MemoryStore) -> list[tuple[str, str, str, bool]]:
        return _facts(store, "ann")

    with MemoryStore(tmp_path / "a", embedder="hashing") as store:
        store.add("Melanie went hiking with her dog. Melanie works at Acme.", owner="ann",
                  session="s1")
        mel = store.add("Mel said the hike was long. She lives in Porto.", owner="ann",
                        session="s1")
        [melanie] = store.find_entities("Melanie", owner="ann")
        before = graph(store)
        alone = store.split_entity(melanie.id, "mel", owner="ann")
        assert graph(store) == before
        assert alone.id in {m.entity_id for m in store.mentions(mel.id)}
        export_ump(store, tmp_path / "ann.ump", owner="ann")
    with MemoryStore(tmp_path / "a", embedder="hashing") as store:
        assert graph(store) == before
    with MemoryStore(tmp_path / "b", embedder="hashing") as fresh:
        import_ump(fresh, tmp_path / "ann.ump")
        assert graph(fresh) == before
        assert "mel" in {e.name for e in fresh.entities(owner="ann")}


def test_a_split_outlives_a_later_merge_into_the_entity(tmp_path: Path) -> None:
    """A form split off stays apart: a later merge into the entity it left wrote the
    entity without its split record (what an export carries and a reopened store's
    resolver blocks), so the split was kept only until the store closed. Reopened, with
    the split-off entity gone, the form makes an entity of its own again."""
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add("Melanie went hiking with her dog.", owner="ann", session="s1")
        mel = store.add("Mel said the hike was long.", owner="ann", session="s1")
        [melanie] = store.find_entities("Melanie", owner="ann")
        store.split_entity(melanie.id, "mel", owner="ann")
        store.add("Melanie Rao baked bread.", owner="ann", session="s1")  # merges into her
        [kept] = [e for e in store.entities(owner="ann") if e.id == melanie.id]
        assert "melanie rao" in kept.aliases
        assert {"alias": "mel", "rule": "split", "evidence": "split by hand"} in kept.merges
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.forget(mel.id, confirm=True)  # the entity "mel" goes with it
        again = store.add("Mel said the cake was good.", owner="ann", session="s1")
        names = {e.id: e.name for e in store.entities(owner="ann")}
        assert {names[m.entity_id] for m in store.mentions(again.id)} == {"mel"}


def test_facts_by_entity_and_time(store: MemoryStore) -> None:
    store.add("Caroline lives in Ibadan", owner="ann", created=T0)
    store.add("Caroline moved to Lisbon", owner="ann", created=T0 + timedelta(days=30))
    names = {e.id: e.name for e in store.entities(owner="ann")}
    then = store.facts(about="Caroline", owner="ann", as_of=T0 + timedelta(days=1))
    assert [(f.predicate, names[f.object]) for f in then] == [("lives_in", "ibadan")]
    now = store.facts(about="caroline", owner="ann", current=True)
    assert sorted((f.predicate, names[f.object]) for f in now) == [
        ("lives_in", "lisbon"), ("moved_to", "lisbon")]
    assert store.facts(about="Caroline", owner="bob") == []


def test_named_queries_over_entities_and_facts(store: MemoryStore) -> None:
    from queries.library import run_named

    store.add("Caroline lives in Ibadan with Melanie", owner="ann", created=T0)
    store.add("Caroline moved to Lisbon", owner="ann", created=T0 + timedelta(days=30))
    [profile] = run_named(store, "entity_profile", {"name": "Caroline"})
    assert (profile["name"], profile["type"], profile["mentions"]) == ("caroline", "person", 2)
    facts = run_named(store, "entity_facts", {"name": "caroline"})
    assert facts[0]["object"] == "ibadan"  # oldest first
    assert sorted((f["predicate"], f["object"], f["current"]) for f in facts) == [
        ("lives_in", "ibadan", False), ("lives_in", "lisbon", True),
        ("moved_to", "lisbon", True)]
    timeline = run_named(store, "entity_timeline", {"name": "Caroline", "owner": "ann"})
    assert [row["created"] for row in timeline] == sorted(row["created"] for row in timeline)
    together = run_named(store, "co_mentioned", {"name": "Caroline"})
    assert {row["entity"] for row in together} >= {"ibadan", "melanie", "lisbon"}
    between = run_named(store, "relations_between", {"a": "lisbon", "b": "Caroline"})
    assert {row["predicate"] for row in between} == {"lives_in", "moved_to"}
    top = run_named(store, "most_mentioned_entities", {"owner": "ann"})
    assert top[0]["entity"] == "caroline"


def test_entity_analytics(store: MemoryStore) -> None:
    from queries.analytics import entity_centrality, entity_communities, entity_graph

    store.add("Caroline lives in Lisbon with Melanie", owner="ann")
    store.add("Caroline and Melanie visited Porto", owner="ann")
    store.add("Tobias works at Umbrella Corp in Berlin", owner="ann")
    store.add("Tobias met Umbrella Corp's founder", owner="ann")
    graph = entity_graph(store, owner="ann")
    names = {d["name"]: n for n, d in graph.nodes(data=True)}
    assert graph[names["caroline"]][names["melanie"]]["weight"] >= 2
    assert "lives_in" in graph[names["caroline"]][names["lisbon"]]["facts"]
    top = entity_centrality(store, owner="ann", limit=3)
    assert set(top["name"]) & {"caroline", "melanie", "tobias"}
    groups = entity_communities(store, owner="ann")
    caroline = groups[groups["name"] == "caroline"]["community"].iloc[0]
    tobias = groups[groups["name"] == "tobias"]["community"].iloc[0]
    assert caroline != tobias


def test_facts_come_from_ollama_when_a_server_is_configured(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """With a server, a memory's facts are the model's checked triples (the rules find none
    in this text); a triple naming what the text does not say is dropped; with the server
    gone the rules answer and the write still succeeds."""
    import json

    from graphmem import Settings

    from .fake_ollama import fake_ollama

    answer = json.dumps({"facts": [
        {"subject": "I", "predicate": "likes", "object": "pottery", "confidence": 0.9},
        {"subject": "I", "predicate": "lives_in", "object": "Oslo"}]})
    with fake_ollama([answer]) as fake:
        settings = Settings(ollama_host=fake.url, ollama_model="fake")
        with MemoryStore(tmp_path / "db", embedder="hashing", settings=settings) as store:
            store.add("Pottery is what I enjoy most these days.",
                      provenance={"speaker": "Melanie"})
            names = {e.id: e.name.lower() for e in store.entities()}
            facts = [(names[f.subject], f.predicate, names[f.object], f.rule)
                     for f in store.facts()]
            assert [path for path, _ in fake.requests] == ["/api/generate"]
    assert facts == [
        ("melanie", "likes", "pottery", "ollama")]
    with MemoryStore(tmp_path / "db", embedder="hashing", settings=settings) as store:
        memory = store.add("Melanie: I moved to Oslo last year.")  # the server is gone now
        stated = [f for f in store.facts() if memory.id in f.sources]
    assert {f.predicate for f in stated} == {"moved_to", "lives_in"}
    assert all(f.rule != "ollama" for f in stated)
    assert "Ollama unavailable" in caplog.text and "used the rule extractor" in caplog.text
    assert Settings(fact_extractor="rules", ollama_host=fake.url)  # rules: no server asked
    with pytest.raises(InvalidInputError, match="GRAPHMEM_FACT_EXTRACTOR"):
        Settings(fact_extractor="ollama")


def test_an_entity_knows_its_mentions_and_when_it_was_first_and_last_seen(
        tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        first = datetime(2023, 1, 5, tzinfo=UTC)
        store.add("Melanie went camping in Oregon.", created=first)
        store.add("Melanie painted a sunset.", created=first + timedelta(days=30),
                  observed=first + timedelta(days=40))
        forgotten = store.add("Melanie bought a violin.", created=first + timedelta(days=90))
        store.add("Jon opened a studio.", created=first)
        store.forget(forgotten.id, confirm=True)
        [melanie] = store.find_entities("Melanie")
        assert (melanie.mentions, melanie.first_seen, melanie.last_seen) == (
            2, first, first + timedelta(days=40))
        [oregon] = store.find_entities("oregon")
        assert oregon.mentions == 1 and oregon.first_seen == oregon.last_seen == first


def test_the_entities_channel_searches_what_the_named_entities_say(store: MemoryStore
                                                                   ) -> None:
    """"What does Melanie do to relax?": the entities channel ranks the memories that name
    Melanie or that she says (with ``named_speakers``), never another owner's; and a hit
    from it says so in its explanation."""
    own = [store.add(t, owner="ann", provenance={"speaker": "Melanie"}, session=f"s{i}")
           for i, t in enumerate(("Running helps me unwind after work.",
                                  "Pottery class is my calm place."))]
    other = store.add("Caroline: I relax by reading in the park.", owner="ann")
    named = store.add("Caroline: Melanie told me she loves the quiet of the lake.", owner="ann")
    foreign = store.add("Melanie: I relax with yoga.", owner="bob",
                        provenance={"speaker": "Melanie"})
    config = RecallConfig(name="e", weights={"fulltext": 1.0, "vector": 1.0, "entities": 1.0})
    hits = store.recall("What does Melanie do to relax?", owner="ann", preset=config, k=10,
                        record_access=False)
    through = {h.memory.id for h in hits if "entities" in h.explanation.channels}
    assert through == {own[0].id, own[1].id, named.id}
    assert other.id not in through and foreign.id not in {h.memory.id for h in hits}
    text_only = config.with_(graph={"named_speakers": False})
    hits = store.recall("What does Melanie do to relax?", owner="ann", preset=text_only, k=10,
                        record_access=False)
    assert {h.memory.id for h in hits if "entities" in h.explanation.channels} == {named.id}
    plain = store.recall("What do people do to relax?", owner="ann", preset=config, k=10,
                         record_access=False)
    assert not any("entities" in h.explanation.channels for h in plain)  # nobody named



def test_a_new_speaker_is_a_new_reading_of_the_text(store: MemoryStore) -> None:
    """Who said a memory decides whom its "I" names: an edit of the speaker, with the
    text or alone, and a merged record that changes it, state the facts of the new one
    (they kept the old speaker's)."""
    def stated() -> list[tuple[str, str, str]]:
        name = {e.id: e.name for e in store.entities(owner="o")}
        return sorted((name[f.subject], f.predicate, name[f.object])
                      for f in store.facts(owner="o"))

    memory = store.add("I work at Acme.", owner="o", provenance={"speaker": "Tom"})
    assert stated() == [("tom", "works_at", "acme")]
    store.update(memory.id, text="I work at Globex.", provenance={"speaker": "Ana"})
    assert stated() == [("ana", "works_at", "globex")]
    store.update(memory.id, provenance={"speaker": "Mia"})
    assert stated() == [("mia", "works_at", "globex")]
    record = MemoryInput(id=memory.id, text="I work at Globex.", owner="o",
                         provenance={"speaker": "Lea"})
    assert store.merge([record]).updated == [memory.id]
    assert stated() == [("lea", "works_at", "globex")]
    # the same speaker spelled otherwise is no new reading: the facts stay as they are
    before = [(f.id, f.recorded, f.sources) for f in store.facts(owner="o")]
    store.update(memory.id, provenance={"speaker": " LEA"})
    assert [(f.id, f.recorded, f.sources) for f in store.facts(owner="o")] == before


def test_a_merge_that_swaps_what_two_memories_say_leaves_no_fact_on_a_gone_entity(
        store: MemoryStore) -> None:
    """One merge edits two memories: the first edit leaves an entity unmentioned (it is
    to go) and joins the other's fact, the second names the entity again and leaves that
    fact: the entity stays, the fact keeps its new source, every fact's ends are live
    entities; in one transaction and in two chunks of one (a fact pointed at the deleted
    entity, and the other was lost)."""
    for owner, chunks in (("o", 0), ("p", 1)):
        store.add("Ana works at Globex.", owner=owner, id=f"urn:{owner}a")
        store.add("Tom works at Globex.", owner=owner, id=f"urn:{owner}b")
        records = [MemoryInput(id=f"urn:{owner}a", text="Tom works at Globex.", owner=owner),
                   MemoryInput(id=f"urn:{owner}b", text="Ana works at Globex.", owner=owner)]
        if chunks:
            store.merge_chunks([[r] for r in records],
                               index_of={r.id: n for n, r in enumerate(records)})
        else:
            store.merge(records)
        live = {e.id: e.name for e in store.entities(owner=owner)}
        facts = store.facts(owner=owner)
        assert all(f.subject in live and f.object in live for f in facts)
        assert sorted((live[f.subject], f.predicate, live[f.object], f.sources)
                      for f in facts) == [("ana", "works_at", "globex", (f"urn:{owner}b",)),
                                          ("tom", "works_at", "globex", (f"urn:{owner}a",))]
        mentioned = {(m.memory_id, live.get(m.entity_id)) for m in store.mentions()}
        assert {(f"urn:{owner}a", "tom"), (f"urn:{owner}b", "ana")} <= mentioned


def test_a_transcript_lines_label_is_its_speaker(store: MemoryStore) -> None:
    """"Caroline: I went ..." said by Caroline: the label names who speaks (role speaker),
    not someone the line speaks of; her name said to her is a mention."""
    own = store.add("Caroline: I went to a support group yesterday.", owner="ann",
                    provenance={"speaker": "Caroline"})
    told = store.add("Melanie: Thanks, Caroline! Glad you went.", owner="ann",
                     provenance={"speaker": "Melanie"})
    graph = _graph(store, "ann")
    names = {i: e.name for i, e in graph["entities"].items()}  # type: ignore[attr-defined]
    roles = {(m.memory_id, names[m.entity_id]): m.role
             for m in graph["mentions"]}  # type: ignore[attr-defined]
    assert roles[(own.id, "caroline")] == "speaker"
    assert roles[(told.id, "melanie")] == "speaker"
    assert roles[(told.id, "caroline")] == "mention"


def test_a_question_naming_a_speaker_favours_what_they_said(store: MemoryStore) -> None:
    """Of two turns that match a question alike, the one said by the person it names comes
    first (``RecallConfig.speaker``); naming the owner's own self favours nothing."""
    said = {who: store.add(text, owner="ann", provenance={"speaker": who}, session="s1")
            for who, text in (("Caroline", "We went camping by the lake last week."),
                              ("Melanie", "Last week we went camping by the lake."))}
    base = RecallConfig(name="t", weights={"fulltext": 1.0, "vector": 0.5}, rrf_k=10.0)

    def first(question: str, config: RecallConfig, owner: str = "ann") -> str:
        hits = store.recall(question, owner=owner, preset=config, k=5, record_access=False)
        return hits[0].memory.id

    for who in ("Caroline", "Melanie"):
        assert first(f"Where did {who} go camping?", base.with_(speaker=0.5)) == said[who].id
    assert first("Where did Caroline go camping?", base) == first(
        "Where did Melanie go camping?", base)  # alike without it
    # the owner's own memories: every one is theirs, so their name lifts none of them
    mine = [store.add(t, owner="priya", provenance={"speaker": "Priya"}, session="p")
            for t in ("I went camping in the hills.", "I cook dal on Sundays.",
                      "I bake bread on Saturdays.")]
    mine.append(store.add("Where to go camping: the lake, the hills.", owner="priya"))
    plain = [h.memory.id for h in store.recall("Where did Priya go camping?", owner="priya",
                                               preset=base, k=5, record_access=False)]
    lifted = [h.memory.id for h in store.recall("Where did Priya go camping?", owner="priya",
                                                preset=base.with_(speaker=0.5), k=5,
                                                record_access=False)]
    assert plain[0] == mine[-1].id and plain == lifted
    with pytest.raises(InvalidInputError):
        RecallConfig(speaker=-0.1)
    # every lift is a finite number: an infinite one made every fused score NaN, a text
    # or None failed with a bare TypeError
    for name in ("speaker", "answer", "advice"):
        for bad in (float("inf"), float("nan"), -1.0, "0.5", None, True):
            with pytest.raises(InvalidInputError, match=f"{name} must be a finite number"):
                RecallConfig(**{name: bad})


def test_a_refused_or_failed_write_leaves_the_fact_cache_as_the_store(
        store: MemoryStore) -> None:
    """What a refused ``add_many`` planned, or an edit whose planning failed, is not left
    in the knowledge cache: the next memory stating the same gets its facts (it joined
    facts that were never written, and got none). A provenance speaker that names no one
    is none."""
    store.add("Tom works at Acme.", owner="b")
    other = next(e for e in store.entities(owner="b") if e.name == "acme")
    graph = {"mentions": [{"entity": {"id": other.id, "name": "acme", "type": "org"}}]}
    with pytest.raises(InvalidInputError):
        store.add_many([{"text": "Ana lives in Linz.", "owner": "a"},
                        {"text": "Mia works at Acme.", "owner": "a", "graph": graph}])
    kept = store.add("Ana lives in Linz.", owner="a")
    assert [f.predicate for f in store.facts(owner="a") if kept.id in f.sources] == [
        "lives_in"]
    store.update(kept.id, provenance={"speaker": "."})
    store.update(kept.id, text="Ana lives in Graz.")  # it raised a ValueError mid-plan
    names = {e.id: e.name for e in store.entities(owner="a")}
    assert [names[f.object] for f in store.facts(owner="a") if kept.id in f.sources] == [
        "graz"]
