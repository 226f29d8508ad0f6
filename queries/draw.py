"""Drawings of the memory graph: a memory's neighbourhood (PNG or a self-contained HTML
page), the knowledge graph's entities and facts (PNG or HTML), and the lifecycle flow (PNG).

In both neighbourhood drawings nodes are coloured by kind, shaped by status (hot memories
get a thick outline), and edges are styled by type: references solid, co-occurrence dashed,
supersedes red. The HTML page needs no network: its data, styles and script are inline.
"""

from __future__ import annotations

import html
import json
from collections import deque
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import networkx as nx

from graphmem import InvalidInputError, MemoryStore, NotFoundError

from .analytics import entity_centrality, entity_graph, lifecycle_flows

__all__ = ["EDGE_STYLES", "ENTITY_COLOURS", "FACT_STYLES", "KIND_COLOURS", "STATUS_SHAPES",
           "draw_entities", "draw_lifecycle_flow", "draw_neighbourhood", "drawing_title",
           "entity_view", "neighbourhood", "neighbourhood_figure", "node_labels"]

KIND_COLOURS = {"episodic": "#4C78A8", "semantic": "#F58518", "procedural": "#54A24B",
                "identity": "#B279A2", "working": "#E45756", "note": "#72B7B2"}
#: matplotlib marker and the HTML shape for each status.
STATUS_SHAPES = {"active": ("o", "circle"), "candidate": ("D", "diamond"),
                 "archived": ("s", "square"), "tombstoned": ("X", "cross"),
                 "forgotten": ("x", "cross")}
EDGE_STYLES = {"references": {"color": "#444444", "style": "solid", "dash": ""},
               "co_occurs": {"color": "#9A9A9A", "style": "dashed", "dash": "5,4"},
               "supersedes": {"color": "#D62728", "style": "solid", "dash": ""}}
EDGE_MEANINGS = {"references": "references (points at)", "co_occurs": "co-occurs (together)",
                 "supersedes": "supersedes (replaces)"}
ENTITY_COLOURS = {"person": "#4C78A8", "place": "#54A24B", "organization": "#F58518",
                  "product": "#B279A2", "event": "#E45756", "date": "#72B7B2",
                  "other": "#9D9D9D"}
#: Entity drawings: co-mentioned (dashed grey), a fact valid at the drawing's time (solid
#: blue, labelled by its predicate), a fact that had ended by then (dotted red).
FACT_STYLES = {"co_mentioned": {"color": "#B0B0B0", "style": "dashed", "dash": "5,4"},
               "fact": {"color": "#1F5FA8", "style": "solid", "dash": ""},
               "ended": {"color": "#D62728", "style": "dotted", "dash": "2,3"}}
FACT_MEANINGS = {"co_mentioned": "mentioned together", "fact": "a fact (valid)",
                 "ended": "a fact that has ended"}


def neighbourhood(store: MemoryStore, memory_id: str, *, depth: int = 2,
                  max_nodes: int = 150, owner: str | None = None) -> nx.MultiDiGraph:
    """The memories within ``depth`` hops of one memory over every edge type (breadth
    first, at most ``max_nodes``), as a ``networkx.MultiDiGraph`` whose nodes carry kind,
    status, hot, label, text and importance, and whose edges carry kind and weight.

    Examples
    --------
    >>> from graphmem import MemoryStore
    >>> store = MemoryStore(":memory:", embedder="hashing")
    >>> a, b, c = (store.add(t).id for t in ("deploy runbook", "release notes", "retro"))
    >>> store.link(a, b)
    >>> store.link(b, c, kind="co_occurs")
    >>> graph = neighbourhood(store, a, depth=1)
    >>> sorted(graph.nodes[n]["hop"] for n in graph), list(graph.edges(keys=True)) == [
    ...     (a, b, "references")]
    ([0, 1], True)
    >>> neighbourhood(store, a, depth=2).number_of_nodes()
    3
    >>> store.close()
    """
    if depth < 0:
        raise InvalidInputError(f"depth must be >= 0, got {depth}", field="depth")
    if max_nodes < 1:
        raise InvalidInputError(f"max_nodes must be >= 1, got {max_nodes}", field="max_nodes")
    store.get(memory_id, owner=owner)  # NotFoundError for an unknown or foreign id
    graph = nx.MultiDiGraph()
    hops = {memory_id: 0}
    queue = deque([memory_id])
    edges: list[tuple[str, str, str, float]] = []
    while queue:
        node = queue.popleft()
        for link in store.links(node, owner=owner):
            src, dst = (node, link.other) if link.direction == "out" else (link.other, node)
            if link.other not in hops:
                if hops[node] >= depth or len(hops) >= max_nodes:
                    continue
                hops[link.other] = hops[node] + 1
                queue.append(link.other)
            edges.append((src, dst, link.kind, link.weight))
    for memory in store.get_many(list(hops), owner=owner):
        node, hop = memory.id, hops[memory.id]
        label = memory.subject or memory.text or "(forgotten)"
        graph.add_node(node, kind=memory.kind.value, status=memory.status.value,
                       hot=memory.hot, label=label[:40], text=memory.text[:300],
                       importance=memory.importance, hop=hop, centre=node == memory_id,
                       created=memory.created.strftime("%Y-%m-%d"),
                       current=not memory.superseded_by)
    for src, dst, kind, weight in edges:
        if src in graph and dst in graph and not graph.has_edge(src, dst, key=kind):
            graph.add_edge(src, dst, key=kind, kind=kind, weight=weight)
    return graph


def node_labels(graph: nx.MultiDiGraph, width: int = 24) -> dict[str, str]:
    """A label per node that tells it apart: its subject (or text) cut to ``width``, and
    where several nodes would read the same (the versions of one memory share their
    subject), their creation dates and which are replaced.

    >>> g = nx.MultiDiGraph()
    >>> g.add_node("a", label="Orchard database", created="2026-05-01", current=False)
    >>> g.add_node("b", label="Orchard database", created="2026-06-09", current=True)
    >>> g.add_node("c", label="Deploy orchard", created="2026-06-01", current=True)
    >>> for node, label in node_labels(g).items():
    ...     print(node, label)
    a Orchard database · 2026-05-01, replaced
    b Orchard database · 2026-06-09
    c Deploy orchard
    """
    base = {n: d["label"][:width] for n, d in graph.nodes(data=True)}
    counts: dict[str, int] = {}
    for label in base.values():
        counts[label] = counts.get(label, 0) + 1
    out = {}
    for node, label in base.items():
        data = graph.nodes[node]
        if counts[label] > 1:
            label += f" · {data.get('created', '')}" + (
                "" if data.get("current", True) else ", replaced")
        out[node] = label
    return out


def drawing_title(graph: nx.MultiDiGraph, centre: str, depth: int) -> str:
    """The drawing's title, in words: the memory's subject or text, not its id.

    >>> g = nx.MultiDiGraph()
    >>> g.add_node("urn:ump:x", label="Deploy orchard", kind="procedural")
    >>> drawing_title(g, "urn:ump:x", 2)
    '“Deploy orchard” (procedural) and what it connects to within 2 hops: 1 memory, 0 edges'
    """
    data = graph.nodes[centre]
    memories = graph.number_of_nodes()
    edges = graph.number_of_edges()
    return (f"“{data['label']}” ({data['kind']}) and what it connects to within {depth} "
            f"hop{'s' if depth != 1 else ''}: {memories} memor{'ies' if memories != 1 else 'y'}"
            f", {edges} edge{'s' if edges != 1 else ''}")


def _layout(graph: nx.MultiDiGraph, seed: int) -> dict[str, tuple[float, float]]:
    if graph.number_of_nodes() == 1:
        return {n: (0.0, 0.0) for n in graph}
    simple = nx.Graph(graph)
    positions = nx.spring_layout(simple, seed=seed, k=1.5 / max(1, len(simple)) ** 0.5)
    return {n: (float(x), float(y)) for n, (x, y) in positions.items()}


def draw_neighbourhood(store: MemoryStore, memory_id: str, out: str | Path, *,
                       depth: int = 2, max_nodes: int = 150, owner: str | None = None,
                       fmt: str | None = None, seed: int = 0) -> Path:
    """Draw one memory's neighbourhood to ``out``: PNG (matplotlib) or a self-contained
    interactive HTML page, by ``fmt`` or the file's suffix. Returns the path written.

    Examples
    --------
    >>> import tempfile
    >>> from graphmem import MemoryStore
    >>> store = MemoryStore(":memory:", embedder="hashing")
    >>> a, b = store.add("deploy runbook").id, store.add("release notes").id
    >>> store.link(a, b)
    >>> page = draw_neighbourhood(store, a, Path(tempfile.mkdtemp()) / "deploy.html")
    >>> text = page.read_text(encoding="utf-8")
    >>> text.startswith("<!DOCTYPE html>"), "release notes" in text, "https://" in text
    (True, True, False)
    >>> store.close()
    """
    path = Path(out)
    kind = _kind(path, fmt)
    graph = neighbourhood(store, memory_id, depth=depth, max_nodes=max_nodes, owner=owner)
    positions = _layout(graph, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "png":
        _png(graph, positions, path, memory_id, depth)
    else:
        _html(graph, positions, path, memory_id, depth)
    return path


def _png(graph: nx.MultiDiGraph, positions: dict[str, tuple[float, float]], path: Path,
         centre: str, depth: int) -> None:
    import matplotlib.pyplot as plt

    fig = neighbourhood_figure(graph, positions, centre, depth)
    fig.savefig(path, format="png")
    plt.close(fig)


def neighbourhood_figure(graph: nx.MultiDiGraph, positions: dict[str, tuple[float, float]],
                         centre: str, depth: int) -> Any:
    """The PNG drawing as a matplotlib figure: the graph on the left, the legend (kinds,
    statuses, outlines and sizes, edges) in its own column on the right, clear of it."""
    from matplotlib.lines import Line2D

    fig, ax = _canvas()
    _edges(graph, positions, ax, EDGE_STYLES, undirected="co_occurs", heavy="supersedes",
           node_size=300)
    for status, (marker, _) in STATUS_SHAPES.items():
        nodes = [n for n, d in graph.nodes(data=True) if d["status"] == status]
        if not nodes:
            continue
        nx.draw_networkx_nodes(
            graph, positions, nodelist=nodes, ax=ax, node_shape=marker,
            node_color=[KIND_COLOURS.get(graph.nodes[n]["kind"], "#888888") for n in nodes],
            node_size=[700 if graph.nodes[n]["centre"] else 300 for n in nodes],
            edgecolors=["black" if graph.nodes[n]["hot"] or graph.nodes[n]["centre"]
                        else "white" for n in nodes],
            linewidths=[2.5 if graph.nodes[n]["hot"] else 1.0 for n in nodes])
    shown = node_labels(graph)
    labels = {n: shown[n] for n, d in graph.nodes(data=True)
              if d["hop"] <= 1 or graph.number_of_nodes() <= 40}
    nx.draw_networkx_labels(graph, {n: (x, y - 0.045) for n, (x, y) in positions.items()},
                            labels=labels, ax=ax, font_size=7, verticalalignment="top")
    ax.margins(0.08)  # room for the outermost nodes and their labels
    kinds = sorted({d["kind"] for _, d in graph.nodes(data=True)})
    statuses = sorted({d["status"] for _, d in graph.nodes(data=True)})
    edge_kinds = sorted({d["kind"] for _, _, d in graph.edges(data=True)})
    header = _header
    handles = [header("colour: kind")]
    handles += [Line2D([], [], marker="o", linestyle="", markersize=9,
                       markerfacecolor=KIND_COLOURS.get(k, "#888888"),
                       markeredgecolor="white", label=k) for k in kinds]
    handles += [header("shape: status")]
    handles += [Line2D([], [], marker=STATUS_SHAPES[s][0], linestyle="", markersize=8,
                       markerfacecolor="#CCCCCC", markeredgecolor="black", label=s)
                for s in statuses]
    handles += [header("size and outline"),
                Line2D([], [], marker="o", linestyle="", markersize=14,
                       markerfacecolor="#CCCCCC", markeredgecolor="black",
                       label="large: the memory drawn around"),
                Line2D([], [], marker="o", linestyle="", markersize=9, markeredgewidth=2.5,
                       markerfacecolor="#CCCCCC", markeredgecolor="black",
                       label="thick black outline: hot (most activated)")]
    handles += _edge_handles(EDGE_STYLES, EDGE_MEANINGS, edge_kinds)
    _legend(fig, ax, handles, drawing_title(graph, centre, depth))
    return fig


def _canvas() -> tuple[Any, Any]:
    """A matplotlib figure and axes for a graph drawing (the Agg backend: no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(13, 8), dpi=110)


def _edges(graph: nx.MultiDiGraph, positions: dict[str, tuple[float, float]], ax: Any,
           styles: dict[str, dict[str, str]], *, undirected: str, heavy: str | None,
           node_size: int) -> None:
    """Edges by kind in their style: ``undirected`` without arrows, ``heavy`` thicker."""
    for kind, style in styles.items():
        edges = [(u, v) for u, v, d in graph.edges(data=True) if d["kind"] == kind]
        if edges:
            nx.draw_networkx_edges(graph, positions, edgelist=edges, ax=ax,
                                   edge_color=style["color"], style=style["style"],
                                   width=2.0 if kind == heavy else 1.0,
                                   arrows=kind != undirected, arrowsize=10, alpha=0.8,
                                   node_size=node_size)


def _header(text: str) -> Any:
    """A legend line that is a heading (no marker, no line; drawn bold)."""
    from matplotlib.lines import Line2D

    return Line2D([], [], linestyle="", label=text)


def _edge_handles(styles: dict[str, dict[str, str]], meanings: dict[str, str],
                  kinds: list[str]) -> list[Any]:
    from matplotlib.lines import Line2D

    return ([_header("line: edge")] if kinds else []) + [
        Line2D([], [], color=styles[k]["color"], linestyle=cast(Any, styles[k]["style"]),
               label=meanings.get(k, k)) for k in kinds]


def _legend(fig: Any, ax: Any, handles: list[Any], title: str) -> None:
    """The legend in its own column right of the graph (headings bold), and the title."""
    legend = ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                       fontsize=8, framealpha=0.95, borderaxespad=0.0)
    headers = {h.get_label() for h in handles if h.get_linestyle() in ("", "None")
               and h.get_marker() in ("", "None", None)}
    for text in legend.get_texts():
        if text.get_text() in headers:
            text.set_fontweight("bold")
    ax.set_title(title, fontsize=10, wrap=True)
    ax.axis("off")
    fig.tight_layout()


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
body{margin:0;font:13px system-ui,sans-serif;display:flex;height:100vh}
#side{width:300px;flex:none;padding:10px;border-right:1px solid #ddd;overflow:auto;
overflow-wrap:anywhere;word-break:break-word}
#canvas{flex:1;min-width:0}svg{width:100%;height:100%;cursor:grab;overflow:visible}
.node{cursor:pointer;stroke:#fff;stroke-width:1.2}.node.hot{stroke:#000;stroke-width:3}
.node.centre{stroke:#000;stroke-width:2.5}.label{font-size:10px;pointer-events:none;fill:#333}
.edge{fill:none;stroke-width:1.3}.dim{opacity:.15}
.key{display:inline-block;width:10px;height:10px;margin-right:4px}
#legend div{margin:2px 0}#legend h4{margin:10px 0 2px}
pre{white-space:pre-wrap;background:#f6f6f6;padding:6px}
</style></head><body>
<div id="side"><h3>__TITLE__</h3><p>Drag nodes, scroll to zoom, drag the background to pan,
click a node for its details.</p><div id="filters"></div><div id="legend"></div>
<div id="detail"><p><i>no memory selected</i></p></div></div>
<div id="canvas"><svg id="svg"><defs>__MARKERS__</defs><g id="view"></g></svg></div>
<script>
const DATA = __DATA__;
const NS = "http://www.w3.org/2000/svg";
const svg = document.getElementById("svg"), view = document.getElementById("view");
let scale = 1, tx = 0, ty = 0;
const W = () => svg.clientWidth || 900, H = () => svg.clientHeight || 700;
// Coordinates in [-1, 1] fill the canvas inside a margin: nodes and labels stay in view.
const MX = 60, MY = 30;
const px = n => MX + (n.x + 1) / 2 * (W() - 2 * MX - 120);
const py = n => MY + (n.y + 1) / 2 * (H() - 2 * MY);
function el(tag, attrs, parent) { const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]); parent.appendChild(e); return e; }
const byId = {}; DATA.nodes.forEach(n => byId[n.id] = n);
const hidden = new Set();
function shape(n, g) {
  const r = n.centre ? 11 : 7, x = px(n), y = py(n);
  const cls = "node" + (n.hot ? " hot" : "") + (n.centre ? " centre" : "");
  const fill = DATA.colours[n.kind] || "#888";
  if (n.shape === "square") return el("rect", {x: x - r, y: y - r, width: 2 * r,
    height: 2 * r, fill, class: cls}, g);
  if (n.shape === "diamond") return el("polygon", {points: `${x},${y - r} ${x + r},${y} ` +
    `${x},${y + r} ${x - r},${y}`, fill, class: cls}, g);
  if (n.shape === "cross") return el("path", {d: `M${x - r},${y - r}L${x + r},${y + r}` +
    `M${x + r},${y - r}L${x - r},${y + r}`, stroke: fill, "stroke-width": 4, class: cls}, g);
  return el("circle", {cx: x, cy: y, r, fill, class: cls}, g);
}
function render() {
  view.innerHTML = "";
  view.setAttribute("transform", `translate(${tx},${ty}) scale(${scale})`);
  const eg = el("g", {}, view), ng = el("g", {}, view);
  DATA.edges.forEach(e => { if (hidden.has(e.kind)) return;
    const s = byId[e.source], t = byId[e.target], st = DATA.edge_styles[e.kind];
    const line = el("line", {x1: px(s), y1: py(s), x2: px(t), y2: py(t), class: "edge",
      stroke: st.color, "stroke-dasharray": st.dash,
      "marker-end": DATA.undirected.includes(e.kind) ? "" : `url(#arrow-${e.kind})`}, eg);
    el("title", {}, line).textContent = e.title ||
      `${e.kind} ${e.source} -> ${e.target} (w=${e.weight})`;
    if (e.label) { el("text", {x: (px(s) + px(t)) / 2, y: (py(s) + py(t)) / 2,
      class: "label"}, eg).textContent = e.label; }
  });
  DATA.nodes.forEach(n => { const s = shape(n, ng);
    el("title", {}, s).textContent = n.detail ? `${n.shown}\\n${n.detail}` :
      `${n.id} [${n.kind}, ${n.status}]\\n${n.text}`;
    s.addEventListener("mousedown", ev => startDrag(ev, n));
    s.addEventListener("click", () => show(n));
    if (n.hop <= 1 || DATA.nodes.length <= 40) {
      el("text", {x: px(n) + 9, y: py(n) + 3, class: "label"}, ng).textContent = n.shown; }
  });
}
function show(n) {
  const d = document.getElementById("detail"); d.innerHTML = "";
  const h = document.createElement("h4"); h.textContent = n.shown; d.appendChild(h);
  const id = document.createElement("p"); id.textContent = n.id; d.appendChild(id);
  const p = document.createElement("p");
  p.textContent = n.detail || `${n.kind} · ${n.status}${n.hot ? " · hot" : ""}` +
    `${n.current ? "" : " · replaced"} · created ${n.created} · importance ` +
    `${n.importance} · ${n.hop} hop(s) away`; d.appendChild(p);
  const pre = document.createElement("pre"); pre.textContent = n.text; d.appendChild(pre);
}
let drag = null, pan = null;
function startDrag(ev, n) { ev.stopPropagation(); drag = n; }
svg.addEventListener("mousedown", ev => { pan = {x: ev.clientX - tx, y: ev.clientY - ty}; });
window.addEventListener("mousemove", ev => {
  if (drag) { const r = svg.getBoundingClientRect();
    drag.x = (((ev.clientX - r.left - tx) / scale) - MX) / (W() - 2 * MX - 120) * 2 - 1;
    drag.y = (((ev.clientY - r.top - ty) / scale) - MY) / (H() - 2 * MY) * 2 - 1; render(); }
  else if (pan) { tx = ev.clientX - pan.x; ty = ev.clientY - pan.y; render(); } });
window.addEventListener("mouseup", () => { drag = null; pan = null; });
svg.addEventListener("wheel", ev => { ev.preventDefault();
  const f = ev.deltaY < 0 ? 1.1 : 1 / 1.1, r = svg.getBoundingClientRect();
  const mx = ev.clientX - r.left, my = ev.clientY - r.top;
  tx = mx - (mx - tx) * f; ty = my - (my - ty) * f; scale *= f; render(); },
  {passive: false});
const filters = document.getElementById("filters");
Object.keys(DATA.edge_styles).forEach(k => { const l = document.createElement("label");
  const c = document.createElement("input"); c.type = "checkbox"; c.checked = true;
  c.onchange = () => { c.checked ? hidden.delete(k) : hidden.add(k); render(); };
  l.appendChild(c); l.append(` ${k} edges `); filters.appendChild(l); });
const legend = document.getElementById("legend");
function heading(text) { const h = document.createElement("h4"); h.textContent = text;
  legend.appendChild(h); }
function entry(swatch, text) { const d = document.createElement("div");
  d.innerHTML = swatch; d.append(text); legend.appendChild(d); }
DATA.legend.forEach(([title, items]) => { heading(title);
  items.forEach(([colour, text]) => entry(colour ?
    `<span class="key" style="background:${colour}"></span>` : "", text)); });
render(); window.addEventListener("resize", render);
</script></body></html>
"""


def _html(graph: nx.MultiDiGraph, positions: dict[str, tuple[float, float]], path: Path,
          centre: str, depth: int) -> None:
    scale = _scale(positions)
    shown = node_labels(graph, width=40)
    nodes = [{"id": n, "x": positions[n][0] / scale, "y": positions[n][1] / scale,
              "kind": d["kind"], "status": d["status"], "hot": d["hot"],
              "shape": STATUS_SHAPES.get(d["status"], ("o", "circle"))[1],
              "label": d["label"], "shown": shown[n], "text": d["text"],
              "importance": d["importance"], "hop": d["hop"], "centre": d["centre"],
              "created": d["created"], "current": d["current"]}
             for n, d in graph.nodes(data=True)]
    edges = [{"source": u, "target": v, "kind": d["kind"], "weight": round(d["weight"], 3)}
             for u, v, d in graph.edges(data=True)]
    legend = [["colour: kind", [[c, k] for k, c in KIND_COLOURS.items()]],
              ["shape: status", [[None, f"{shape}: {status}"]
                                 for status, (_, shape) in STATUS_SHAPES.items()]],
              ["size and outline", [[None, "large, black outline: the memory drawn around"],
                                    [None, "thick black outline: hot (most activated)"]]],
              ["line: edge", [[None, "solid grey with an arrow: references (points at)"],
                              [None, "dashed: co-occurs (together)"],
                              [None, "red with an arrow: supersedes (replaces)"]]]]
    _page(path, drawing_title(graph, centre, depth), nodes, edges, KIND_COLOURS,
          EDGE_STYLES, legend, undirected=["co_occurs"])


def _scale(positions: dict[str, tuple[float, float]]) -> float:
    return max((max(abs(x), abs(y)) for x, y in positions.values()), default=1.0) or 1.0


def _page(path: Path, title: str, nodes: list[dict[str, Any]], edges: list[dict[str, Any]],
          colours: dict[str, str], styles: dict[str, dict[str, str]], legend: list[Any], *,
          undirected: list[str]) -> None:
    """The self-contained interactive page: the template filled with the drawing's data."""
    data: dict[str, Any] = {"nodes": nodes, "edges": edges, "colours": colours,
                            "edge_styles": styles, "legend": legend,
                            "undirected": undirected}
    # JSON inside <script>: escape "<" so text such as "</script>" cannot end the block.
    payload = json.dumps(data).replace("<", "\\u003c")
    markers = "".join(
        f'<marker id="arrow-{k}" viewBox="0 0 10 10" refX="18" refY="5" markerWidth="7" '
        f'markerHeight="7" orient="auto"><path d="M0,0L10,5L0,10z" fill="{s["color"]}"/>'
        f"</marker>" for k, s in styles.items())
    page = (_PAGE.replace("__TITLE__", html.escape(title)).replace("__MARKERS__", markers)
            .replace("__DATA__", payload))
    path.write_text(page, encoding="utf-8")


def entity_view(store: MemoryStore, *, about: str | None = None, owner: str | None = None,
                limit: int = 40, as_of: datetime | None = None) -> nx.MultiDiGraph:
    """The part of the knowledge graph a drawing shows, as a ``networkx.MultiDiGraph``:
    with ``about`` (an entity id, name or alias) that entity and the ``limit`` entities
    most often mentioned with it or related to it by a fact; without, the ``limit`` most
    central entities. Nodes carry name, type, mentions and ``centre``; edges are
    ``co_mentioned`` (weight: memories naming both) or facts, subject -> object, with
    predicate, validity and ``kind`` "fact" (valid at ``as_of``, default now) or "ended".

    Examples
    --------
    >>> from graphmem import MemoryStore
    >>> store = MemoryStore(":memory:", embedder="hashing")
    >>> _ = store.add("Caroline: I moved to Sweden with my friend Melanie.")
    >>> view = entity_view(store, about="Caroline")
    >>> sorted(d["name"] for _, d in view.nodes(data=True))
    ['caroline', 'melanie', 'sweden']
    >>> for u, v, d in sorted(view.edges(data=True), key=lambda e: e[2]["label"]):
    ...     if d["kind"] == "fact":
    ...         print(view.nodes[u]["name"], d["label"], view.nodes[v]["name"])
    caroline friend melanie
    caroline lives_in sweden
    caroline moved_to sweden
    >>> store.close()
    """
    if limit < 1:
        raise InvalidInputError(f"limit must be >= 1, got {limit}", field="limit")
    whole = entity_graph(store, owner=owner, with_speakers=about is not None)
    centre: str | None = None
    if about is not None:
        found = [e.id for e in store.find_entities(about, owner=owner)] or (
            [about] if about in whole else [])
        if not found:
            raise NotFoundError(f"no entity named {about!r}"
                                + (f" for owner {owner!r}" if owner else ""))
        centre = found[0]
        if centre not in whole:
            whole.add_node(centre, **{k: v for k, v in _entity_attrs(store, centre,
                                                                     owner).items()})
        near = sorted(whole[centre], key=lambda n: (-whole[centre][n].get("weight", 0), n))
        chosen = [centre, *near[:limit]]
    else:
        chosen = list(entity_centrality(store, owner=owner, limit=limit)["id"])
    when = as_of or datetime.now(UTC)
    view = nx.MultiDiGraph()
    for node in chosen:
        data = whole.nodes[node]
        view.add_node(node, name=data["name"], type=data["type"],
                      mentions=data.get("mentions", 0), centre=node == centre)
    for u, v, data in whole.subgraph(chosen).edges(data=True):
        view.add_edge(u, v, key="co_mentioned", kind="co_mentioned", label="",
                      weight=float(data.get("weight", 1)), valid="")
    for fact in store.facts(owner=owner):
        if fact.subject in view and fact.object in view and fact.subject != fact.object:
            ended = fact.valid_to is not None and fact.valid_to <= when
            view.add_edge(fact.subject, fact.object, key=fact.id,
                          kind="ended" if ended else "fact", label=fact.predicate,
                          weight=fact.confidence, valid=_validity(fact.valid_from,
                                                                  fact.valid_to))
    return view


def _entity_attrs(store: MemoryStore, entity_id: str, owner: str | None) -> dict[str, Any]:
    entity = next(e for e in store.entities(owner=owner) if e.id == entity_id)
    return {"name": entity.name, "type": entity.type, "mentions": entity.mentions}


def _display(name: str) -> str:
    """An entity's name as drawn: entities are kept in normalized (lower-case) form."""
    return name.title() if name.islower() else name


def _validity(start: datetime | None, end: datetime | None) -> str:
    def day(t: datetime | None) -> str:
        return t.date().isoformat() if t is not None else "…"

    return "" if start is None and end is None else f"{day(start)} – {day(end)}"


def draw_entities(store: MemoryStore, out: str | Path, *, about: str | None = None,
                  owner: str | None = None, limit: int = 40, as_of: datetime | None = None,
                  fmt: str | None = None, seed: int = 0) -> Path:
    """Draw entities and facts (``entity_view``) to ``out``: PNG or a self-contained HTML
    page, by ``fmt`` or the file's suffix. Nodes are coloured by type and sized by
    mentions; facts are arrows labelled by predicate (dotted red once ended). Returns
    the path written.

    Examples
    --------
    >>> import tempfile
    >>> from graphmem import MemoryStore
    >>> store = MemoryStore(":memory:", embedder="hashing")
    >>> _ = store.add("Caroline: I moved to Sweden with my friend Melanie.")
    >>> page = draw_entities(store, Path(tempfile.mkdtemp()) / "kg.html", about="Caroline")
    >>> text = page.read_text(encoding="utf-8")
    >>> "moved_to" in text, "Sweden" in text, "https://" in text
    (True, True, False)
    >>> store.close()
    """
    path = Path(out)
    kind = _kind(path, fmt)
    view = entity_view(store, about=about, owner=owner, limit=limit, as_of=as_of)
    positions = _layout(view, seed) if view.number_of_nodes() else {}
    title = (f"graphmem: entities around {about}" if about is not None
             else f"graphmem: the {view.number_of_nodes()} most central entities")
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "png":
        _entity_png(view, positions, path, title)
    else:
        scale = _scale(positions)
        nodes = [{"id": n, "x": positions[n][0] / scale, "y": positions[n][1] / scale,
                  "kind": d["type"], "status": "active", "hot": False, "shape": "circle",
                  "label": _display(d["name"])[:40], "shown": _display(d["name"])[:40],
                  "text": "", "hop": 0, "centre": d["centre"],
                  "detail": f"{d['type']} · {d['mentions']} mention(s) · {n}"}
                 for n, d in view.nodes(data=True)]
        edges = [{"source": u, "target": v, "kind": d["kind"], "weight": round(d["weight"], 3),
                  "label": d["label"],
                  "title": (f"{_display(view.nodes[u]['name'])} {d['label']} "
                            f"{_display(view.nodes[v]['name'])}"
                            f" {d['valid']}".strip() if d["label"] else
                            f"mentioned together in {int(d['weight'])} memories")}
                 for u, v, d in view.edges(data=True)]
        legend = [["colour: type", [[c, t] for t, c in ENTITY_COLOURS.items()]],
                  ["size", [[None, "larger: mentioned by more memories"]]],
                  ["line", [[None, "dashed grey: mentioned together"],
                            [None, "blue arrow: a fact, labelled by its predicate"],
                            [None, "dotted red arrow: a fact that has ended"]]]]
        _page(path, title, nodes, edges, ENTITY_COLOURS, FACT_STYLES, legend,
              undirected=["co_mentioned"])
    return path


def _entity_png(view: nx.MultiDiGraph, positions: dict[str, tuple[float, float]],
                path: Path, title: str) -> None:
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    fig, ax = _canvas()
    _edges(view, positions, ax, FACT_STYLES, undirected="co_mentioned", heavy="fact",
           node_size=400)
    labels: dict[tuple[str, str], str] = {}
    for u, v, d in view.edges(data=True):
        if d["label"]:  # two facts between the same entities share one label
            labels[(u, v)] = ", ".join(sorted({*labels.get((u, v), "").split(", "),
                                               d["label"]} - {""}))
    if labels:
        nx.draw_networkx_edge_labels(view, positions, edge_labels=labels, ax=ax,
                                     font_size=6, font_color="#1F5FA8")
    if positions:
        nodes = list(view.nodes)
        nx.draw_networkx_nodes(
            view, positions, nodelist=nodes, ax=ax,
            node_color=[ENTITY_COLOURS.get(view.nodes[n]["type"], "#888888") for n in nodes],
            node_size=[120 + 40 * min(30, view.nodes[n]["mentions"]) for n in nodes],
            edgecolors=["black" if view.nodes[n]["centre"] else "white" for n in nodes])
        nx.draw_networkx_labels(view, {n: (x, y - 0.04) for n, (x, y) in positions.items()},
                                labels={n: _display(d["name"])[:24]
                                        for n, d in view.nodes(data=True)},
                                ax=ax, font_size=7, verticalalignment="top")
        ax.margins(0.08)
    else:
        ax.text(0.5, 0.5, "no entities yet", ha="center", va="center")
    types = sorted({d["type"] for _, d in view.nodes(data=True)})
    handles = [_header("colour: type")]
    handles += [Line2D([], [], marker="o", linestyle="", markersize=9,
                       markerfacecolor=ENTITY_COLOURS.get(t, "#888888"),
                       markeredgecolor="white", label=t) for t in types]
    handles += [_header("size"), Line2D([], [], marker="o", linestyle="", markersize=14,
                                        markerfacecolor="#CCCCCC", markeredgecolor="white",
                                        label="larger: more mentions")]
    handles += _edge_handles(FACT_STYLES, FACT_MEANINGS,
                             sorted({d["kind"] for _, _, d in view.edges(data=True)}))
    _legend(fig, ax, handles, title)
    fig.savefig(path, format="png")
    plt.close(fig)


def draw_lifecycle_flow(store: MemoryStore, out: str | Path) -> Path:
    """The lifecycle flow as a PNG bar chart: how many memories took each transition
    (from state -> to state), coloured by event type."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(out)
    if path.suffix.lower() != ".png":
        raise InvalidInputError(f"{path}: the lifecycle flow is drawn as .png", field="out")
    flows = lifecycle_flows(store)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(9, max(2.5, 0.38 * len(flows) + 1.2)), dpi=110)
    if flows.empty:
        ax.text(0.5, 0.5, "no lifecycle events yet", ha="center", va="center")
        ax.axis("off")
    else:
        flows = flows.iloc[::-1].reset_index(drop=True)
        labels = [f"{row['from_state'] or '∅'} → {row['to_state'] or '∅'}  "
                  f"({row['event_type']})" for row in flows.to_dict("records")]
        palette = plt.get_cmap("tab10")
        types = sorted(set(flows["event_type"]))
        colours = [palette(types.index(t) % 10) for t in flows["event_type"]]
        bars = ax.barh(range(len(flows)), flows["count"], color=colours)
        ax.set_yticks(range(len(flows)), labels, fontsize=8)
        ax.bar_label(bars, fontsize=8, padding=2)
        ax.set_xlabel("memories")
        ax.set_title("lifecycle flow: transitions between states", fontsize=10)
        ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
    return path


def _kind(path: Path, fmt: str | None) -> str:
    """What a drawing is written as: ``fmt``, else the file's suffix (png or html)."""
    kind = (fmt or path.suffix.lstrip(".")).lower()
    if kind not in ("png", "html"):
        raise InvalidInputError(
            f"{path}: a drawing is a .png picture or an .html page; name the file so"
            + ("" if fmt is None else f" (fmt {fmt!r} is neither)"),
            field="out")
    return kind
