"""Graph analytics over a store, as pandas DataFrames and networkx graphs (public API only).

Centrality rankings (PageRank within each owner, degree, betweenness on a sample),
communities (Louvain), supersede chains, timelines by kind and status, co-occurrence
clusters and lifecycle flows; over the knowledge graph, the entity graph (co-mentions and
facts), entity centrality and entity communities.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

import networkx as nx
import pandas as pd

from graphmem import InvalidInputError, MemoryStore

__all__ = ["centrality_ranking", "communities", "cooccurrence_clusters", "entity_centrality",
           "entity_communities", "entity_graph", "lifecycle_flows", "memories_frame",
           "supersede_chains", "timeline"]


def memories_frame(store: MemoryStore, *, owner: str | None = None) -> pd.DataFrame:
    """One row per memory: id, kind, status, hot, subject, text, owner, created, importance,
    access_count, entities."""
    rows = [{"id": m.id, "kind": m.kind.value, "status": m.status.value, "hot": m.hot,
             "subject": m.subject, "text": m.text, "owner": m.owner, "created": m.created,
             "importance": m.importance, "access_count": m.access_count,
             "entities": list(m.entities)} for m in store.memories(owner=owner)]
    return pd.DataFrame(rows, columns=["id", "kind", "status", "hot", "subject", "text",
                                       "owner", "created", "importance", "access_count",
                                       "entities"])


def _label(data: dict) -> str:
    return str(data.get("label") or "")[:60]


def centrality_ranking(store: MemoryStore, *, method: Literal["pagerank", "degree",
                                                              "betweenness"] = "pagerank",
                       limit: int | None = 20, sample: int = 500, seed: int = 0
                       ) -> pd.DataFrame:
    """Memories ranked by centrality over REFERENCES and CO_OCCURS.

    ``pagerank``: the store's centrality (PageRank within each owner's memories, equal
    to networkx's over that owner's subgraph); ``degree``:
    distinct neighbours; ``betweenness``: networkx's estimate from ``sample`` pivot nodes.
    """
    graph = store.to_networkx(edge_kinds=["references", "co_occurs"])
    if method == "pagerank":
        scores: dict[str, float] = store.centrality()
    elif method == "degree":
        simple = nx.Graph(graph)
        scores = {n: float(d) for n, d in simple.degree()}
    elif method == "betweenness":
        simple = nx.Graph(graph)
        k = min(sample, simple.number_of_nodes()) or None
        scores = nx.betweenness_centrality(simple, k=k, seed=seed) if k else {}
    else:
        raise InvalidInputError(f"unknown method {method!r}", field="method")
    rows = [{"id": n, "score": scores.get(n, 0.0), "kind": d.get("kind"),
             "status": d.get("status"), "label": _label(d)} for n, d in graph.nodes(data=True)]
    frame = pd.DataFrame(rows, columns=["id", "score", "kind", "status", "label"])
    frame = frame.sort_values(["score", "id"], ascending=[False, True]).reset_index(drop=True)
    return frame.head(limit) if limit is not None else frame


def communities(store: MemoryStore, *, resolution: float = 1.0, seed: int = 0,
                min_size: int = 2) -> pd.DataFrame:
    """Louvain communities of the memory graph (REFERENCES and CO_OCCURS, undirected,
    weighted): one row per memory of a community of at least ``min_size``."""
    graph = nx.Graph()
    full = store.to_networkx(edge_kinds=["references", "co_occurs"])
    graph.add_nodes_from(full.nodes(data=True))
    for u, v, data in full.edges(data=True):
        weight = graph.get_edge_data(u, v, {}).get("weight", 0.0) + data.get("weight", 1.0)
        graph.add_edge(u, v, weight=weight)
    found = nx.community.louvain_communities(graph, weight="weight", resolution=resolution,
                                             seed=seed) if graph.number_of_edges() else []
    ordered = sorted((c for c in found if len(c) >= min_size), key=lambda c: (-len(c),
                                                                                min(c)))
    rows = [{"community": i, "size": len(members), "id": node,
             "kind": graph.nodes[node].get("kind"), "label": _label(graph.nodes[node])}
            for i, members in enumerate(ordered) for node in sorted(members)]
    return pd.DataFrame(rows, columns=["community", "size", "id", "kind", "label"])


def supersede_chains(store: MemoryStore) -> pd.DataFrame:
    """One row per supersede chain: its length, the current (newest shown) version and
    the versions oldest first.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> from graphmem import MemoryStore
    >>> store = MemoryStore(":memory:", embedder="hashing",
    ...                     clock=lambda: datetime(2026, 7, 1, tzinfo=UTC))
    >>> pg14 = store.add("Orchard uses PostgreSQL 14", created="2026-05-01T00:00:00Z")
    >>> pg15 = store.add("Orchard uses PostgreSQL 15", created="2026-06-01T00:00:00Z")
    >>> pg16 = store.supersede(pg15.id, "Orchard uses PostgreSQL 16")
    >>> _ = store.supersede(pg14.id, pg15.id)
    >>> chains = supersede_chains(store)
    >>> len(chains), int(chains.loc[0, "length"]), chains.loc[0, "current"] == pg16.id
    (1, 3, True)
    >>> chains.loc[0, "versions"] == [pg14.id, pg15.id, pg16.id]
    True
    >>> store.close()
    """
    graph = store.to_networkx(edge_kinds=["supersedes"])
    chain = nx.DiGraph(graph.edges())
    rows = []
    for component in nx.weakly_connected_components(chain):
        members = sorted(component, key=lambda n: graph.nodes[n].get("created"))
        heads = [n for n in members if chain.in_degree(n) == 0]  # nothing supersedes them
        head = heads[-1] if heads else members[-1]
        rows.append({"length": len(members), "current": head,
                     "current_label": _label(graph.nodes[head]), "versions": members})
    frame = pd.DataFrame(rows, columns=["length", "current", "current_label", "versions"])
    return frame.sort_values(["length", "current"], ascending=[False, True]).reset_index(
        drop=True)


def timeline(store: MemoryStore, *, by: Literal["kind", "status"] = "kind",
             freq: str = "W") -> pd.DataFrame:
    """Memories created per period (``freq``: a pandas offset such as D, W, MS), one
    column per kind or status.

    >>> from graphmem import MemoryStore
    >>> store = MemoryStore(":memory:", embedder="hashing")
    >>> _ = store.add_many([
    ...     {"text": "sprint planning", "created": "2026-06-01T09:00:00Z"},
    ...     {"text": "deploy runbook", "kind": "procedural", "created": "2026-06-02T09:00:00Z"},
    ...     {"text": "retro notes", "created": "2026-06-20T09:00:00Z"}])
    >>> timeline(store, freq="M").to_dict("index")
    {Timestamp('2026-06-01 00:00:00'): {'episodic': 2, 'procedural': 1}}
    >>> timeline(store, by="status", freq="W")["active"].tolist()
    [2, 1]
    >>> store.close()
    """
    frame = memories_frame(store)
    if frame.empty:
        return pd.DataFrame()
    frame["period"] = pd.to_datetime(frame["created"], utc=True).dt.tz_localize(None) \
        .dt.to_period(freq).dt.start_time
    return frame.pivot_table(index="period", columns=by, values="id", aggfunc="count",
                             fill_value=0)


def cooccurrence_clusters(store: MemoryStore, *, min_weight: float = 0.0,
                          min_size: int = 2) -> pd.DataFrame:
    """Groups of memories joined by CO_OCCURS edges (of at least ``min_weight``): size,
    members and their most shared entities.

    >>> from graphmem import MemoryStore
    >>> store = MemoryStore(":memory:", embedder="hashing")
    >>> a, b, c, d = (store.add(t).id for t in (
    ...     "Ada checked the pump", "Ada oiled the valve", "Ada wrote the log", "Biscuit"))
    >>> store.link(a, b, kind="co_occurs", weight=2.0)
    >>> store.link(b, c, kind="co_occurs", weight=0.5)
    >>> clusters = cooccurrence_clusters(store)
    >>> clusters["size"].tolist(), clusters.loc[0, "top_entities"][0]
    ([3], 'ada')
    >>> cooccurrence_clusters(store, min_weight=1.0)["members"].tolist() == [sorted([a, b])]
    True
    >>> store.close()
    """
    graph = store.to_networkx(edge_kinds=["co_occurs"])
    strong = nx.Graph()
    strong.add_edges_from((u, v) for u, v, d in graph.edges(data=True)
                          if d.get("weight", 0.0) >= min_weight)
    entities = {m.id: m.entities for m in store.memories()}
    rows = []
    for component in nx.connected_components(strong):
        if len(component) < min_size:
            continue
        counts = Counter(e for node in component for e in entities.get(node, ()))
        rows.append({"size": len(component), "members": sorted(component),
                     "top_entities": [e for e, _ in counts.most_common(5)]})
    frame = pd.DataFrame(rows, columns=["size", "members", "top_entities"])
    return frame.sort_values("size", ascending=False).reset_index(drop=True)


def lifecycle_flows(store: MemoryStore, *, freq: str | None = None,
                    event_types: Sequence[str] | None = None) -> pd.DataFrame:
    """Counts of lifecycle transitions (event type, from state, to state), per period when
    ``freq`` is given.

    >>> from graphmem import MemoryStore
    >>> store = MemoryStore(":memory:", embedder="hashing")
    >>> ids = [m.id for m in store.add_many(["first note", "second note", "third note"])]
    >>> _ = store.archive(ids[0]), store.archive(ids[1]), store.tombstone(ids[2])
    >>> lifecycle_flows(store).to_dict("records")  # doctest: +NORMALIZE_WHITESPACE
    [{'event_type': 'archive', 'from_state': 'active', 'to_state': 'archived', 'count': 2},
     {'event_type': 'tombstone', 'from_state': 'active', 'to_state': 'tombstoned',
      'count': 1}]
    >>> store.close()
    """
    rows = [{"timestamp": e.timestamp, "event_type": e.event_type.value,
             "from_state": e.from_state, "to_state": e.to_state}
            for e in store.events()
            if event_types is None or e.event_type.value in event_types]
    frame = pd.DataFrame(rows, columns=["timestamp", "event_type", "from_state", "to_state"])
    keys = ["event_type", "from_state", "to_state"]
    if freq is not None and not frame.empty:
        frame["period"] = pd.to_datetime(frame["timestamp"], utc=True).dt.tz_localize(None) \
            .dt.to_period(freq).dt.start_time
        keys = ["period", *keys]
    if frame.empty:
        return pd.DataFrame(columns=[*keys, "count"])
    return frame.groupby(keys).size().reset_index(name="count").sort_values(
        "count", ascending=False).reset_index(drop=True)


def entity_graph(store: MemoryStore, *, owner: str | None = None,
                 with_speakers: bool = False) -> nx.Graph:
    """The entities of the knowledge graph as an undirected networkx graph: nodes are
    entity ids (``name``, ``type``, ``mentions``), an edge joins two entities mentioned by
    the same memories (``weight``: how many) or related by a fact (``facts``: its
    predicates). A speaker's own label is left out unless ``with_speakers``."""
    graph = nx.Graph()
    entities = {e.id: e for e in store.entities(owner=owner)}
    by_memory: dict[str, set[str]] = {}
    counts: Counter[str] = Counter()
    for mention in store.mentions(owner=owner):
        if mention.role == "speaker" and not with_speakers:
            continue
        if mention.entity_id in entities:
            by_memory.setdefault(mention.memory_id, set()).add(mention.entity_id)
            counts[mention.entity_id] += 1
    for entity_id, count in counts.items():
        entity = entities[entity_id]
        graph.add_node(entity_id, name=entity.name, type=entity.type, mentions=count)
    for together in by_memory.values():
        ordered = sorted(together)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1:]:
                weight = graph.get_edge_data(a, b, {}).get("weight", 0)
                graph.add_edge(a, b, weight=weight + 1)
    for fact in store.facts(owner=owner):
        if fact.subject in graph and fact.object in graph and fact.subject != fact.object:
            data = graph.get_edge_data(fact.subject, fact.object, {})
            graph.add_edge(fact.subject, fact.object, weight=data.get("weight", 0) + 1,
                           facts=sorted({*data.get("facts", ()), fact.predicate}))
    return graph


def entity_centrality(store: MemoryStore, *, owner: str | None = None,
                      limit: int | None = 20) -> pd.DataFrame:
    """Entities ranked by weighted PageRank over the entity graph: the people, places and
    things the memories revolve around (id, name, type, mentions, score)."""
    graph = entity_graph(store, owner=owner)
    scores = nx.pagerank(graph, weight="weight") if graph.number_of_nodes() else {}
    rows = [{"id": n, "name": d["name"], "type": d["type"], "mentions": d["mentions"],
             "score": scores.get(n, 0.0)} for n, d in graph.nodes(data=True)]
    frame = pd.DataFrame(rows, columns=["id", "name", "type", "mentions", "score"])
    frame = frame.sort_values(["score", "name"], ascending=[False, True]).reset_index(drop=True)
    return frame.head(limit) if limit is not None else frame


def entity_communities(store: MemoryStore, *, owner: str | None = None,
                       resolution: float = 1.0, seed: int = 0,
                       min_size: int = 2) -> pd.DataFrame:
    """Louvain communities of the entity graph: one row per entity of a community of at
    least ``min_size`` (community, size, id, name, type), largest communities first."""
    graph = entity_graph(store, owner=owner)
    groups = nx.community.louvain_communities(graph, weight="weight", resolution=resolution,
                                              seed=seed) if graph.number_of_nodes() else []
    groups = sorted((g for g in groups if len(g) >= min_size), key=lambda g: (-len(g),
                                                                                min(g)))
    rows = [{"community": n, "size": len(group), "id": entity,
             "name": graph.nodes[entity]["name"], "type": graph.nodes[entity]["type"]}
            for n, group in enumerate(groups) for entity in sorted(group)]
    return pd.DataFrame(rows, columns=["community", "size", "id", "name", "type"])
