"""The analysts' face: every named query on the sample corpus, bound parameters, analytics
DataFrames, drawings (PNG and self-contained HTML) and the query/draw commands."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import networkx as nx
import pandas as pd
import pytest

from graphmem import InvalidInputError, MemoryStore, NotFoundError, Settings
from ingest.markdown import import_markdown
from ingest.ump import import_ump
from queries.analytics import (
    centrality_ranking,
    communities,
    cooccurrence_clusters,
    lifecycle_flows,
    memories_frame,
    supersede_chains,
    timeline,
)
from queries.draw import (
    draw_entities,
    draw_lifecycle_flow,
    draw_neighbourhood,
    entity_view,
    neighbourhood,
)
from queries.library import load_queries, run_named

from .conftest import SAMPLE, Clock

NOW = datetime(2026, 7, 15, 12, 0, tzinfo=UTC)
INJECTION = "x' OR 1=1 //"
DEPLOY = "urn:ump:qiwl24cv2sejkhrndb56r6dvhz"  # "Deploy orchard": the most referenced


@pytest.fixture(scope="module")
def analyst_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_analyst(tmp_path_factory.mktemp("analyst"))


def build_analyst(root: Path) -> Path:
    """The sample corpus plus a conversation, a Markdown daily with a wiki pointer, a
    recall, and one applied lifecycle run, in the Kuzu store ``root/db``."""
    daily = root / "notes" / "workspace-main" / "memory"
    daily.mkdir(parents=True)
    (daily / "2026-07-10.md").write_text(
        "# 2026-07-10\n## Work\n- Rotated the deploy keys → see [wiki/deploy-keys]\n"
        "- Checked the key rotation log → see [wiki/deploy-keys]\n", encoding="utf-8")
    with MemoryStore(root / "db", embedder="hashing", clock=Clock(NOW),
                     settings=Settings()) as store:
        import_ump(store, SAMPLE)
        import_markdown(store, root / "notes")
        store.add_conversation(
            [{"speaker": "Nadia", "text": "I moved the greenhouse sensors to bed-07 today."},
             {"speaker": "Nadia",
              "text": "My sister Amara started a new job as a nurse in Lagos last week."}],
            session_id="s-greenhouse", timestamp=NOW)
        store.recall("deploy orchard release", k=5)
        store.flush()
        store.run_lifecycle(apply=True)
    return root / "db"


@pytest.fixture
def analyst(analyst_db: Path) -> Iterator[MemoryStore]:
    with MemoryStore(analyst_db, read_only=True, clock=Clock(NOW)) as store:
        yield store


def _first_supersede(store: MemoryStore) -> tuple[str, str]:
    rows = store.cypher("MATCH (a:Memory)-[:SUPERSEDES]->(b:Memory) RETURN a.id AS new, "
                        "b.id AS old ORDER BY new LIMIT 1")
    return rows[0]["new"], rows[0]["old"]


def test_there_are_at_least_a_dozen_named_queries() -> None:
    queries = load_queries()
    assert len(queries) >= 12
    for query in queries.values():
        assert query.description and query.name == query.path.stem


def test_every_named_query_has_a_test(analyst: MemoryStore) -> None:
    assert set(load_queries()) == set(CASES)


def _case_supersede_chain(store: MemoryStore) -> None:
    new, old = _first_supersede(store)
    rows = run_named(store, "supersede_chain", {"id": new})
    assert {"id", "created", "status", "current", "text"} == set(rows[0])
    ids = [r["id"] for r in rows]
    assert new in ids and old in ids
    assert {r["id"]: r["current"] for r in rows}[old] is False
    # a memory nothing replaced and that replaced nothing is its own chain (collect() of
    # nulls alone is null in Kuzu: the chain was empty)
    alone = next(m for m in store.memories() if not m.superseded_by and m.id not in ids
                 and not any(link.kind == "supersedes" for link in store.links(m.id)))
    assert [r["id"] for r in run_named(store, "supersede_chain", {"id": alone.id})] == \
        [alone.id]


def _case_most_referenced(store: MemoryStore) -> None:
    # DEPLOY was a weak candidate that expired (tombstoned): left out unless asked
    assert store.get(DEPLOY).status.value == "tombstoned"
    rows = run_named(store, "most_referenced", {"limit": "3"})
    assert len(rows) == 3 and DEPLOY not in {r["id"] for r in rows}
    # archived memories are referenced too (no candidate is: a memory's entities are its
    # knowledge graph's, which no candidate of the sample shares with a rarer few)
    assert {r["status"] for r in run_named(store, "most_referenced", {"limit": 500})} == {
        "active", "archived"}
    rows = run_named(store, "most_referenced", {"limit": "3", "include_tombstoned": "true"})
    assert len(rows) == 3 and rows[0]["id"] == DEPLOY and rows[0]["referenced_by"] == 4
    kinds = {r["kind"] for r in run_named(store, "most_referenced", {"kind": "semantic"})}
    assert kinds == {"semantic"}


def _case_co_occurrence_neighbourhood(store: MemoryStore) -> None:
    session = run_named(store, "session_timeline", {"session": "s-greenhouse"})
    first, second = session[0]["id"], session[1]["id"]
    rows = run_named(store, "co_occurrence_neighbourhood", {"id": first, "depth": 1})
    assert rows and rows[0]["id"] == second and rows[0]["hops"] == 1


def _case_memories_between(store: MemoryStore) -> None:
    rows = run_named(store, "memories_between",
                     {"start": "2026-05-01T00:00:00Z", "end": "2026-05-02T00:00:00Z"})
    assert rows and set(rows[0]) == {"id", "created", "kind", "status", "text"}
    assert all(r["created"].month == 5 and r["created"].day == 1 for r in rows)


def _case_promotion_candidates(store: MemoryStore) -> None:
    rows = run_named(store, "promotion_candidates", {"xref_threshold": 3})
    assert rows and all(r["xrefs"] >= 3 or r["importance"] >= 0.8 or r["accesses"] >= 10
                        for r in rows)
    assert {r["id"] for r in rows} <= {m.id for m in store.memories()
                                       if m.kind.value == "episodic"}


def _case_archive_candidates(store: MemoryStore) -> None:
    rows = run_named(store, "archive_candidates", {"now": NOW.isoformat()})
    assert rows and all(r["importance"] < 0.3 for r in rows)
    assert all((NOW - r["created"].replace(tzinfo=UTC)).days >= 30 for r in rows)


def _case_orphans(store: MemoryStore) -> None:
    rows = run_named(store, "orphans")
    assert rows
    assert all(not store.links(r["id"]) for r in rows[:10])


def _case_lifecycle_events(store: MemoryStore) -> None:
    rows = run_named(store, "lifecycle_events", {"since": "2026-07-15T00:00:00Z",
                                                 "event_type": "hot"})
    assert rows and {r["event_type"] for r in rows} == {"hot"}
    assert rows[0]["triggered_by"] == "auto"  # the lifecycle manager, not a person


def _case_hot_set(store: MemoryStore) -> None:
    rows = run_named(store, "hot_set")
    # the hot set is each owner's own: the top hot_set_size of every owner's active memories
    active: dict[str | None, int] = {}
    for memory in store.memories():
        if memory.status.value == "active":
            active[memory.owner] = active.get(memory.owner, 0) + 1
    assert len(rows) == sum(min(Settings().hot_set_size, n) for n in active.values())
    assert all(store.get(r["id"]).hot for r in rows[:5])


def _case_kinds_by_status(store: MemoryStore) -> None:
    rows = run_named(store, "kinds_by_status")
    assert sum(r["memories"] for r in rows) == store.stats().memories
    assert {"kind", "status", "memories"} == set(rows[0])


def _case_top_entities(store: MemoryStore) -> None:
    rows = run_named(store, "top_entities", {"limit": 5})
    assert len(rows) == 5 and rows[0]["memories"] >= rows[-1]["memories"]
    assert all(not re.fullmatch(r"\d{2}", r["entity"]) for r in rows)  # dates stay whole


def _case_recent_memories(store: MemoryStore) -> None:
    rows = run_named(store, "recent_memories", {"limit": 2})
    assert len(rows) == 2 and rows[0]["created"] >= rows[1]["created"]


def _case_version_history(store: MemoryStore) -> None:
    rows = run_named(store, "version_history", {"id": DEPLOY})
    assert rows[0]["seq"] == 1 and rows[0]["change_type"] == "created"


def _case_wiki_pointers(store: MemoryStore) -> None:
    rows = run_named(store, "wiki_pointers")
    assert rows[0]["page"] == "wiki/deploy-keys" and rows[0]["pointers"] == 2


def _case_session_timeline(store: MemoryStore) -> None:
    rows = run_named(store, "session_timeline", {"session": "s-greenhouse"})
    assert len(rows) == 2 and {"bed-07", "Lagos"} <= set(" ".join(r["text"] for r in rows)
                                                     .replace(".", " ").split())


def _case_strongest_co_occurrences(store: MemoryStore) -> None:
    rows = run_named(store, "strongest_co_occurrences", {"limit": 1})
    assert len(rows) == 1 and rows[0]["weight"] > 0
    assert {"a", "b", "weight", "count", "source"} == set(rows[0])


def _case_central_memories(store: MemoryStore) -> None:
    rows = run_named(store, "central_memories", {"limit": 3})
    assert len(rows) == 3 and rows[0]["centrality"] >= rows[1]["centrality"] > 0
    # read-only stores rank with networkx (Kuzu projects graphs only when writable):
    # the same values the lifecycle run stored through Kuzu's algo extension
    ranks = store.centrality()
    assert rows[0]["id"] == max(ranks.items(), key=lambda kv: kv[1])[0]
    stored = {m.id: m.centrality for m in store.memories()}
    assert ranks == pytest.approx(stored, abs=1e-6)


def _case_most_mentioned_entities(store: MemoryStore) -> None:
    rows = run_named(store, "most_mentioned_entities", {"limit": 5})
    assert rows[0]["entity"] == "nadia" and rows[0]["type"] == "person"
    assert [r["mentions"] for r in rows] == sorted((r["mentions"] for r in rows), reverse=True)
    people = run_named(store, "most_mentioned_entities", {"type": "person", "limit": 50})
    assert {r["type"] for r in people} == {"person"}


def _case_entity_profile(store: MemoryStore) -> None:
    rows = run_named(store, "entity_profile", {"name": "Amara"})
    assert [(r["name"], r["type"], r["mentions"]) for r in rows] == [("amara", "person", 1)]
    assert rows[0]["first_seen"] == rows[0]["last_seen"]


def _case_entity_facts(store: MemoryStore) -> None:
    rows = run_named(store, "entity_facts", {"name": "amara"})
    assert ("nadia", "sister", "amara", True) in {
        (r["subject"], r["predicate"], r["object"], r["current"]) for r in rows}


def _case_entity_timeline(store: MemoryStore) -> None:
    rows = run_named(store, "entity_timeline", {"name": "Nadia"})
    assert len(rows) > 10
    assert [r["created"] for r in rows] == sorted(r["created"] for r in rows)


def _case_co_mentioned(store: MemoryStore) -> None:
    rows = run_named(store, "co_mentioned", {"name": "Amara", "limit": 10})
    assert {"nadia", "lagos"} <= {r["entity"] for r in rows}


def _case_relations_between(store: MemoryStore) -> None:
    rows = run_named(store, "relations_between", {"a": "Amara", "b": "Nadia"})
    assert [(r["subject"], r["predicate"], r["object"]) for r in rows] == [
        ("nadia", "sister", "amara")]


CASES = {name.removeprefix("_case_"): fn for name, fn in dict(globals()).items()
         if name.startswith("_case_")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_named_query(analyst: MemoryStore, name: str) -> None:
    CASES[name](analyst)


@pytest.mark.parametrize("name", ["supersede_chain", "version_history", "session_timeline",
                                  "co_occurrence_neighbourhood"])
def test_injection_string_is_just_a_value(analyst: MemoryStore, name: str) -> None:
    before = analyst.stats()
    key = {"session_timeline": "session"}.get(name, "id")
    assert run_named(analyst, name, {key: INJECTION}) == []
    assert analyst.stats() == before


def test_bad_parameters_are_named(analyst: MemoryStore) -> None:
    for bad in ("ten", "2.5", 2.5, True):  # said in words, not as Python's int() says it
        with pytest.raises(InvalidInputError, match=r"parameter limit \(INT64\): expected a "
                                                    "whole number"):
            run_named(analyst, "most_referenced", {"limit": bad})
    assert run_named(analyst, "most_referenced", {"limit": " 3 "}) is not None
    with pytest.raises(InvalidInputError, match="required"):
        run_named(analyst, "supersede_chain")
    with pytest.raises(InvalidInputError, match="unknown parameter"):
        run_named(analyst, "hot_set", {"limit": 3})
    with pytest.raises(InvalidInputError, match="no named query"):
        run_named(analyst, "drop_everything")


@pytest.mark.parametrize(("query", "params", "named", "says"), [
    ("MATCH (m:Memory) WHERE m.importance > $floor RETURN count(*)", {"floor": "abc"},
     "floor", "abc is not in DOUBLE range"),
    ("MATCH (m:Memory) WHERE m.importance > $floor RETURN count(*)", {"floor": ""},
     "floor", "Cast failed"),
    # a valid value inside the bad one is not the one named
    ("MATCH (m:Memory) WHERE m.text <> $y AND m.importance > $x RETURN m.text",
     {"y": "tea", "x": "green tea"}, "x", "green tea is not"),
    ("RETURN CAST($v AS INT8)", {"v": 1000}, "v", "not within INT8 range"),
    ("RETURN date($v)", {"v": "2020-13-45"}, "v", "parsing date"),
    # values the database's binding raised a Python error for
    ("RETURN $xs", {"xs": [1, "a"]}, "xs", "both a number and a string"),
    ("RETURN $xs", {"xs": [True, 1]}, "xs", "both a boolean and a number"),
    ("RETURN $xs", {"xs": [{"a": 1}, {"a": "x"}]}, "xs", "one type per list"),
    ("RETURN $xs", {"xs": [[1], [2, "x"]]}, "xs", "one type per list"),
    ("RETURN $xs", {"xs": [{"a": 1}, {"a": 2, "b": 3}]}, "xs", "one set of keys per list"),
    ("RETURN $xs", {"xs": [date(2024, 1, 2), "x"]}, "xs", "both a date and a string"),
    ("RETURN $n", {"n": 2 ** 64}, "n", "beyond a 64-bit integer"),
    ("RETURN $n", {"n": [-(2 ** 63) - 1]}, "n", "beyond a 64-bit integer"),
    # a bad value inside a map is its parameter's
    ("MATCH (m:Memory) WHERE m.importance > $x.k RETURN count(*)", {"x": {"k": "abc"}}, "x",
     "abc is not in DOUBLE range"),
    # Kuzu finds no type for these (a 500 through the sidecar before)
    ("RETURN $v", {"v": []}, "v", "has no type"),
    ("RETURN $v", {"v": [None]}, "v", "has no type"),
    ("RETURN $v", {"v": {"a": None}}, "v", "has no type"),
])
def test_an_ad_hoc_parameter_the_query_cannot_use_is_named(
        analyst: MemoryStore, query: str, params: dict[str, Any], named: str,
        says: str) -> None:
    with pytest.raises(InvalidInputError, match=rf"^parameter \${named}: .*{says}") as caught:
        analyst.cypher(query, params)
    assert caught.value.field == named


def test_a_value_two_parameters_hold_names_neither(analyst: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match=r"^Cast failed\. abc") as caught:
        analyst.cypher("MATCH (m:Memory) WHERE m.importance > $x.k AND m.text <> $y "
                       "RETURN count(*)", {"x": {"k": "abc"}, "y": "abc"})
    assert caught.value.field == "params"


def test_ad_hoc_parameters_of_one_type_per_list_are_taken(analyst: MemoryStore) -> None:
    from decimal import Decimal

    import numpy as np

    # maps in any key order (Kuzu read the second by the first's order: values swapped)
    assert analyst.cypher("RETURN $v AS v", {"v": [{"a": 1, "b": 2}, {"b": 3, "a": 4}]}) == [
        {"v": [{"a": 1, "b": 2}, {"a": 4, "b": 3}]}]
    assert analyst.cypher("RETURN $v AS v", {"v": [Decimal("1.5"), 2]}) == [
        {"v": [Decimal("1.5"), Decimal("2.0")]}]
    assert analyst.cypher("MATCH (m:Memory) WHERE m.id IN $ids RETURN count(*) AS n",
                          {"ids": []}) == [{"n": 0}]
    assert analyst.cypher("RETURN $v AS v", {"v": [[], [1]]}) == [{"v": [[], [1]]}]
    # a map outside a list keeps its order: a query compares it with the maps it spells
    mine = {"m": {"b": 1, "a": 2}}
    assert analyst.cypher("RETURN $m = {b: 1, a: 2} AS x", mine) == [{"x": True}]
    assert analyst.cypher("UNWIND [$m, {b: 5, a: 6}] AS r RETURN r.a AS a", mine) == [
        {"a": 2}, {"a": 6}]
    assert analyst.cypher("RETURN $m AS m", mine) == [{"m": {"b": 1, "a": 2}}]
    with pytest.raises(InvalidInputError, match=r"^parameter \$l: a numpy int64"):
        analyst.cypher("RETURN $l AS l", {"l": [np.int64(1), 2]})
    assert analyst.cypher("RETURN $xs AS xs", {"xs": [1, 2.5, None]}) == [
        {"xs": [1.0, 2.5, None]}]
    assert analyst.cypher("RETURN $xs AS xs", {"xs": [{"a": 1, "b": None},
                                                      {"a": 2, "b": "x"}]}) == [
        {"xs": [{"a": 1, "b": None}, {"a": 2, "b": "x"}]}]
    assert analyst.cypher("RETURN $n AS n", {"n": 2 ** 63 - 1}) == [{"n": 2 ** 63 - 1}]


def test_analytics_frames(analyst: MemoryStore) -> None:
    frame = memories_frame(analyst)
    assert len(frame) == analyst.stats().memories
    pagerank = centrality_ranking(analyst, limit=5)
    assert list(pagerank.columns) == ["id", "score", "kind", "status", "label"]
    assert pagerank["score"].is_monotonic_decreasing
    graph = analyst.to_networkx(edge_kinds=["references", "co_occurs"])
    # centrality is each owner's own: PageRank over every owner's subgraph alone
    oracle: dict[str, float] = {}
    for owner in {d.get("owner") for _, d in graph.nodes(data=True)}:
        mine = [n for n, d in graph.nodes(data=True) if d.get("owner") == owner]
        oracle.update(nx.pagerank(nx.MultiDiGraph(graph.subgraph(mine)), weight=None,
                                  tol=1e-12, max_iter=2000))
    best = max(oracle.values())
    assert pagerank["score"].iloc[0] == pytest.approx(best, abs=1e-9)
    assert oracle[pagerank.iloc[0]["id"]] == pytest.approx(best, abs=1e-9)  # ties: any
    degree = centrality_ranking(analyst, method="degree", limit=1)
    assert degree.iloc[0]["score"] == max(d for _, d in nx.Graph(graph).degree())
    between = centrality_ranking(analyst, method="betweenness", sample=50, limit=3)
    assert len(between) == 3 and between["score"].iloc[0] > 0
    groups = communities(analyst)
    assert groups["community"].nunique() >= 3
    assert groups.groupby("community")["size"].first().is_monotonic_decreasing
    chains = supersede_chains(analyst)
    # the sample's 11 SUPERSEDES edges: three chains of three versions, five of two
    assert chains["length"].tolist() == [3, 3, 3, 2, 2, 2, 2, 2]
    assert all(len(v) == n for v, n in zip(chains["versions"], chains["length"], strict=True))
    new, _ = _first_supersede(analyst)
    assert any(new in v for v in chains["versions"])
    weekly = timeline(analyst, by="status")
    assert int(weekly.to_numpy().sum()) == analyst.stats().memories
    clusters = cooccurrence_clusters(analyst)
    assert (clusters["size"] >= 2).all()
    flows = lifecycle_flows(analyst)
    hot = flows[(flows["event_type"] == "hot")]
    hot_now = len(run_named(analyst, "hot_set"))  # one run: every hot memory joined once
    assert int(hot["count"].sum()) == hot_now
    assert isinstance(lifecycle_flows(analyst, freq="D"), pd.DataFrame)


def test_neighbourhood_graph(analyst: MemoryStore) -> None:
    graph = neighbourhood(analyst, DEPLOY, depth=1)
    assert graph.nodes[DEPLOY]["centre"] and graph.number_of_nodes() == 1 + len(
        {link.other for link in analyst.links(DEPLOY)})
    assert max(d["hop"] for _, d in graph.nodes(data=True)) == 1
    deeper = neighbourhood(analyst, DEPLOY, depth=2)
    assert deeper.number_of_nodes() > graph.number_of_nodes()
    assert neighbourhood(analyst, DEPLOY, depth=2, max_nodes=4).number_of_nodes() == 4
    with pytest.raises(NotFoundError):
        neighbourhood(analyst, "urn:nope")


def test_drawings_are_valid_files(analyst: MemoryStore, tmp_path: Path) -> None:
    png = draw_neighbourhood(analyst, DEPLOY, tmp_path / "n.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    page = draw_neighbourhood(analyst, DEPLOY, tmp_path / "n.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "</html>" in page
    assert not re.search(r"(src|href)=\"https?:", page)  # self-contained: nothing fetched
    data = json.loads(re.search(r"const DATA = (.*);\n", page).group(1))  # type: ignore[union-attr]
    assert {n["id"] for n in data["nodes"]} == set(neighbourhood(analyst, DEPLOY))
    assert {e["kind"] for e in data["edges"]} >= {"references"}
    flow = draw_lifecycle_flow(analyst, tmp_path / "flow.png")
    assert flow.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(InvalidInputError,
                       match=r"a \.png picture or an \.html page; name the file so"):
        draw_neighbourhood(analyst, DEPLOY, tmp_path / "n.svg")


def test_html_escapes_script_breaking_text(mem_store: MemoryStore, tmp_path: Path) -> None:
    memory = mem_store.add("</script><script>alert(1)</script> evil text")
    page = draw_neighbourhood(mem_store, memory.id, tmp_path / "x.html").read_text()
    assert "</script><script>alert(1)" not in page
    assert page.count("</script>") == 1


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "graphmem.cli", "--db", str(db), *args],
                          capture_output=True, text=True, timeout=120)


def test_query_and_draw_commands(analyst_db: Path, tmp_path: Path) -> None:
    listing = _cli(analyst_db, "query", "--list", "--format", "json")
    assert listing.returncode == 0, listing.stderr
    assert {q["name"] for q in json.loads(listing.stdout)} == set(load_queries())
    shown = _cli(analyst_db, "query", "--list").stdout  # each query, whole (piped here)
    words = " ".join(shown.split())
    assert all(f"{q.name}(" in shown and " ".join(q.description.split()) in words
               for q in load_queries().values())
    assert max(len(line) for line in shown.splitlines()
               if line.startswith("    ")) <= 88  # descriptions wrapped, not padded
    extra = _cli(analyst_db, "query", "--list", "most_referenced")
    assert extra.returncode == 2 and "--list lists the named queries" in extra.stderr
    top = _cli(analyst_db, "query", "most_referenced", "--param", "limit=2", "--param",
               "include_tombstoned=true", "--format", "csv")
    assert top.returncode == 0 and top.stdout.splitlines()[1].startswith(DEPLOY)
    inject = _cli(analyst_db, "query", "supersede_chain", "--param", f"id={INJECTION}")
    assert inject.returncode == 0 and "(no rows)" in inject.stdout
    bad = _cli(analyst_db, "query", "most_referenced", "--param", "limit=ten")
    assert bad.returncode == 1 and "parameter limit" in bad.stderr
    assert "Traceback" not in bad.stderr
    write = _cli(analyst_db, "query", "MATCH (m:Memory) SET m.text = 'x' RETURN count(*)")
    assert write.returncode == 1 and "--write" in write.stderr
    count = _cli(analyst_db, "query", "MATCH (m:Memory) WHERE m.text = 'x' RETURN count(*) AS n",
                 "--format", "json")
    assert json.loads(count.stdout) == [{"n": 0}]
    out = tmp_path / "draw.html"
    drawn = _cli(analyst_db, "draw", DEPLOY, "--depth", "1", "--out", str(out))
    assert drawn.returncode == 0, drawn.stderr
    assert out.read_text().startswith("<!DOCTYPE html>")
    flow = _cli(analyst_db, "draw", "--lifecycle", "--out", str(tmp_path / "flow.png"))
    assert flow.returncode == 0 and (tmp_path / "flow.png").read_bytes()[:4] == b"\x89PNG"
    missing = _cli(analyst_db, "draw", "--out", str(tmp_path / "x.png"))
    assert missing.returncode == 2 and "ID" in missing.stderr  # a usage error


def test_entity_drawings_show_entities_and_facts(tmp_path: Path) -> None:
    """The knowledge-graph drawing holds the entities around one entity and the facts
    between them (an ended fact drawn as ended), in PNG and in a self-contained page; the
    CLI draws it; an unknown entity is a clear error."""
    db = tmp_path / "kg"
    with MemoryStore(db, embedder="hashing") as store:
        store.add("Caroline: I live in Ibadan with my friend Melanie.",
                  created=datetime(2023, 1, 5, tzinfo=UTC))
        store.add("Caroline: I moved to Lisbon last month.",
                  created=datetime(2023, 6, 5, tzinfo=UTC))
        store.add("Jon: I opened a dance studio in Paris.")
        view = entity_view(store, about="Caroline")
        names = {d["name"] for _, d in view.nodes(data=True)}
        assert {"caroline", "melanie", "ibadan", "lisbon"} <= names and "paris" not in names
        facts = {(view.nodes[v]["name"], d["label"], d["kind"])
                 for _, v, d in view.edges(data=True) if d["label"]}
        assert ("ibadan", "lives_in", "ended") in facts  # the move ended it
        assert ("lisbon", "lives_in", "fact") in facts
        png = draw_entities(store, tmp_path / "kg.png", about="caroline")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
        page = draw_entities(store, tmp_path / "kg.html").read_text()
        data = json.loads(re.search(r"const DATA = (.*);\n", page).group(1))  # type: ignore[union-attr]
        assert {n["label"] for n in data["nodes"]} >= {"Caroline", "Lisbon", "Paris"}
        assert not re.search(r"(src|href)=\"https?:", page)
        with pytest.raises(NotFoundError, match="no entity named 'Nobody'"):
            entity_view(store, about="Nobody")
    drawn = _cli(db, "draw", "--entities", "--about", "Caroline", "--out",
                 str(tmp_path / "cli.html"))
    assert drawn.returncode == 0, drawn.stderr
    assert "lives_in" in (tmp_path / "cli.html").read_text()
    wrong = _cli(db, "draw", "--about", "Caroline", "--out", str(tmp_path / "x.html"))
    assert wrong.returncode == 2 and "--entities" in wrong.stderr  # a usage error


def test_named_query_libraries_are_found_by_entry_point(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The store finds the analyst's library through the ``graphmem.named_queries``
    entry point (graphmem's core imports no ``queries``); a second library adds its
    queries, a name given twice is refused naming both files, and with no library the
    error says how to get one."""
    from graphmem import UnsupportedError, named
    from queries.library import QUERY_DIR

    assert named.libraries() == [QUERY_DIR]
    extra = tmp_path / "mine"
    extra.mkdir()
    (extra / "longest.cypher").write_text(
        "// name: longest\n// description: the longest memory\n// param: limit INT64 = 1\n"
        "MATCH (m:Memory) RETURN m.id AS id ORDER BY size(m.text) DESC LIMIT $limit\n")
    monkeypatch.setattr(named, "libraries", lambda: [QUERY_DIR, extra])
    with MemoryStore(tmp_path / "db") as store:
        store.add("short")
        long = store.add("a much longer memory than the other one")
        assert store.named_query("longest") == [{"id": long.id}]
        assert sum(r["memories"] for r in store.named_query("kinds_by_status")) == 2
        twin = tmp_path / "twin"
        twin.mkdir()
        (twin / "hot_set.cypher").write_text(
            "// name: hot_set\n// description: a twin\nMATCH (m:Memory) RETURN m.id\n")
        monkeypatch.setattr(named, "libraries", lambda: [QUERY_DIR, extra, twin])
        with pytest.raises(UnsupportedError, match=r"hot_set.*hot_set\.cypher"):
            store.named_query("longest")
        monkeypatch.setattr(named, "libraries", lambda: [])
        with pytest.raises(UnsupportedError, match="no named-query library"):
            store.named_query("longest")
