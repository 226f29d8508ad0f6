"""A recall index as sections of a snapshot file, and back: every part the index holds
(the per-memory arrays and lists, BM25 postings and statistics per owner group, vectors,
sign bits, edge tables, the combined adjacencies built so far, the knowledge graph, the
row snapshot), as it holds them, so that an index read back answers as the one written.

Numpy arrays are written as they are (with room to grow, so that the index read back
adds memories without copying them); Python lists and dicts as flat arrays and Arrow
columns. ``ATTRIBUTES`` names, per class, every attribute this codec writes or derives:
a test checks them against the classes, so an attribute added to the index is noticed
here, and comes with a new ``FORMAT`` (files of the old format are then built again).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa

from ..._arrow import array_of, column_values
from ..._engine import FactRecord
from ..._models import STATUS_CODE
from .._bm25 import BM25Index, _Column
from .._entities import EntityIndex
from .._index import Adjacency, EdgeTable, RecallIndex, replaced_map
from .._vectors import SignCodes
from ._file import DamagedFile, SnapshotFile, SnapshotWriter

__all__ = ["ATTRIBUTES", "FORMAT", "read_index", "write_index"]

#: The format of the file: a new one whenever what is written changes.
FORMAT = 8

#: class -> the attributes written (or derived from what is written) for it
ATTRIBUTES: dict[type, frozenset[str]] = {
    RecallIndex: frozenset({
        "dim", "ids", "pos", "vectors", "has_vector", "status", "kind", "owner", "hot", "assistant",
        "asks", "message", "_replaced", "created", "valid_from", "valid_to", "access_count",
        "useful", "ignored", "centrality", "xrefs",
        "confidence", "importance", "access_times", "access_seconds", "last_accessed",
        "superseded_by", "owner_codes", "bm25", "references", "co_occurs", "rows",
        "_row_batches", "_row_starts", "_readers", "stale", "_adjacency", "session", "entities",
        "_signs", "sign_bits_from", "changes", "_derived", "_derived_at", "sentences",
        "sentence_of", "sentence_rows", "sentence_start", "sentence_count"}),
    BM25Index: frozenset({
        "k1", "b", "context_weight", "_vocab", "_token", "_doc", "_tf", "_live", "_start", "_end",
        "_lengths", "_groups", "_docs", "_dead", "_total_length", "_sorted", "_perm",
        "_offsets", "_group_docs", "_group_length", "_df", "_group_df", "_pending",
        "_term_masks"}),
    EdgeTable: frozenset({"overlay", "indptr", "indices", "weights"}),
    Adjacency: frozenset({"_index", "key", "indptr", "indices", "weights", "overlay"}),
    EntityIndex: frozenset({
        "ids", "pos", "names", "types", "owner", "by_form", "of_memory", "memories_of",
        "facts_of", "times", "_count", "_selves", "_forms", "changes"}),
    SignCodes: frozenset({"dim", "words", "codes", "center"}),
}

#: the per-memory arrays and the value their unused rows hold (``RecallIndex._grow``)
_MEMORY_ARRAYS: dict[str, Any] = {
    "has_vector": False, "status": STATUS_CODE["forgotten"], "kind": 0, "owner": -1, "hot": False,
    "assistant": False, "asks": False, "message": 0,
    "created": np.nan, "valid_from": np.nan, "valid_to": np.nan, "access_count": 0,
    "useful": 0, "ignored": 0, "confidence": 0.0, "importance": 0.0, "centrality": np.nan,
    "xrefs": 0,
    "sentence_start": 0, "sentence_count": 0}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NO_TIMES = np.zeros(0)


def _room(n: int) -> int:
    """Rows written for ``n`` in use: room for ~6% more before an array is copied."""
    return n + max(1024, n // 16)


def _micros(t: datetime) -> int:
    return (t - _EPOCH) // timedelta(microseconds=1)


def _moment(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


# -- writing ---------------------------------------------------------------------------
def write_index(out: SnapshotWriter, index: RecallIndex) -> dict[str, Any]:
    """Write ``index`` into ``out``; returns the values the manifest keeps for it."""
    n = index.size
    rows = _room(n)
    out.array("vectors", index.vectors[:n], rows=rows)
    for name, fill in _MEMORY_ARRAYS.items():
        out.array(name, getattr(index, name)[:n], rows=rows, fill=fill)
    used = index.sentence_rows
    out.array("sentences", index.sentences[:used], rows=_room(used))
    out.array("sentence_of", index.sentence_of[:used], rows=_room(used), fill=-1)
    out.table("memory_lists", pa.table({
        "id": array_of(index.ids, pa.string()),
        "session": array_of(index.session, pa.string())}))
    _write_sparse_times(out, "access_times", index.access_times)
    late = [(p, t) for p, t in enumerate(index.last_accessed) if t is not None]
    out.array("last_accessed.pos", np.array([p for p, _ in late], dtype=np.int64))
    out.array("last_accessed.us", np.array([_micros(t) for _, t in late], dtype=np.int64))
    _write_sparse_strings(out, "superseded_by", index.superseded_by)
    _write_bm25(out, index.bm25)
    for kind in ("references", "co_occurs"):
        _write_edges(out, kind, getattr(index, kind))
    keys = []
    for number, (key, adjacency) in enumerate(index._adjacency.items()):
        keys.append(list(key))
        prefix = f"adjacency.{number}"
        for name in ("indptr", "indices", "weights"):
            out.array(f"{prefix}.{name}", getattr(adjacency, name))
        _write_rows(out, f"{prefix}.overlay", {p: dict(zip(o.tolist(), w.tolist(), strict=True))
                                               for p, (o, w) in adjacency.overlay.items()})
    if index.rows is not None:
        out.table("rows", index.rows)
    out.array("stale", np.array(sorted(index.stale), dtype=np.int64))
    signs = index._signs
    if signs is not None:
        codes = np.zeros((signs.words, _room(n)), dtype=np.uint64)
        kept = min(len(signs), codes.shape[1])
        codes[:, :kept] = signs.codes[:, :kept]
        out.array("signs", codes)
        out.array("signs_center", signs.center)
    entities = _write_entities(out, index.entities)
    return {
        "size": n, "dim": index.dim, "half": index.half, "owners": list(index.owner_codes),
        "sentence_rows": used,
        "bm25": {"k1": index.bm25.k1, "b": index.bm25.b,
                 "context_weight": index.bm25.context_weight, "docs": index.bm25._docs,
                 "dead": index.bm25._dead, "total_length": index.bm25._total_length,
                 "sorted": index.bm25._sorted,
                 "columns": {name: getattr(index.bm25, name).size
                             for name in ("_token", "_doc", "_tf", "_live")},
                 "group_docs": sorted(index.bm25._group_docs.items()),
                 "group_length": sorted(index.bm25._group_length.items())},
        "adjacency": keys, "rows": index.rows is not None, "signs": signs is not None,
        "signs_dim": signs.dim if signs is not None else 0, "entities": entities}


def _write_sparse_times(out: SnapshotWriter, name: str,
                        lists: Sequence[Sequence[datetime]]) -> None:
    used = [(p, times) for p, times in enumerate(lists) if times]
    out.array(f"{name}.pos", np.array([p for p, _ in used], dtype=np.int64))
    out.array(f"{name}.count", np.array([len(t) for _, t in used], dtype=np.int64))
    out.array(f"{name}.us", np.array([_micros(t) for _, times in used for t in times],
                                     dtype=np.int64))


def _write_sparse_strings(out: SnapshotWriter, name: str,
                          lists: Sequence[Sequence[str]]) -> None:
    used = [(p, values) for p, values in enumerate(lists) if values]
    out.array(f"{name}.pos", np.array([p for p, _ in used], dtype=np.int64))
    out.table(name, pa.table({"values": array_of([list(v) for _, v in used],
                                                 pa.list_(pa.string()))}))


def _write_rows(out: SnapshotWriter, name: str,
                rows: Mapping[int, Mapping[int, float]]) -> None:
    """A dict of dicts (row -> neighbour -> weight) with both orders kept."""
    out.array(f"{name}.row", np.fromiter(rows, dtype=np.int64, count=len(rows)))
    out.array(f"{name}.count", np.array([len(r) for r in rows.values()], dtype=np.int64))
    out.array(f"{name}.other", np.array([o for r in rows.values() for o in r],
                                        dtype=np.int64))
    out.array(f"{name}.weight", np.array([w for r in rows.values() for w in r.values()],
                                         dtype=np.float64))


def _write_bm25(out: SnapshotWriter, bm25: BM25Index) -> None:
    bm25._flush()  # what was set since the last flush joins the columns
    out.table("bm25.vocab", pa.table({"token": array_of(list(bm25._vocab), pa.string())}))
    for name in ("_token", "_doc", "_tf", "_live"):
        column: _Column = getattr(bm25, name)
        out.array(f"bm25.{name}", column.view(), rows=_room(column.size))
    for name, fill in (("_start", -1), ("_end", -1), ("_lengths", 0), ("_groups", -1)):
        out.array(f"bm25.{name}", getattr(bm25, name), fill=fill)
    out.array("bm25._perm", bm25._perm)
    out.array("bm25._offsets", bm25._offsets)
    out.array("bm25._df", np.array(bm25._df, dtype=np.int64))
    pairs = [(tid, group, count) for tid, by_group in enumerate(bm25._group_df)
             for group, count in by_group.items()]
    out.array("bm25._group_df", np.array(pairs, dtype=np.int64).reshape(-1, 3))


def _write_edges(out: SnapshotWriter, kind: str, table: EdgeTable) -> None:
    for name in ("indptr", "indices", "weights"):
        out.array(f"{kind}.{name}", getattr(table, name))
    _write_rows(out, f"{kind}.overlay", table.overlay)


def _write_entities(out: SnapshotWriter, graph: EntityIndex) -> dict[str, Any]:
    out.table("entities", pa.table({
        "id": array_of(graph.ids, pa.string()), "name": array_of(graph.names, pa.string()),
        "type": array_of(graph.types, pa.string()),
        "owner": array_of(graph.owner, pa.string())}))
    forms = list(graph.by_form.items())
    out.table("entities.forms", pa.table({
        "owner": array_of([o for (o, _), _ in forms], pa.string()),
        "form": array_of([f for (_, f), _ in forms], pa.string()),
        "positions": array_of([list(p) for _, p in forms], pa.list_(pa.int64()))}))
    _write_rows(out, "entities.of_memory", graph.of_memory)
    _write_rows(out, "entities.memories_of", graph.memories_of)
    numbers: dict[int, int] = {}  # a fact about two entities is one record, listed twice
    facts: list[FactRecord] = []
    pairs = []
    for entity, stated in graph.facts_of.items():
        for fact in stated:
            number = numbers.get(id(fact))
            if number is None:
                number = numbers[id(fact)] = len(facts)
                facts.append(fact)
            pairs.append((entity, number))
    out.table("entities.facts", _facts_table(facts))
    out.array("entities.facts_of", np.array(pairs, dtype=np.int64).reshape(-1, 2))
    times = graph.times
    out.array("entities.times.row", np.fromiter(times, dtype=np.int64, count=len(times)))
    out.array("entities.times.count", np.array([len(t) for t in times.values()], dtype=np.int64))
    out.array("entities.times.values",
              np.concatenate([np.asarray(t, dtype=np.float64).reshape(-1, 2)
                              for t in times.values()]) if times else np.zeros((0, 2)))
    return {"count": [[o, c] for o, c in graph._count.items()]}


def _facts_table(facts: Sequence[FactRecord]) -> pa.Table:
    moment = pa.timestamp("us", tz="UTC")
    return pa.table({
        "id": array_of([f.id for f in facts], pa.string()),
        "owner": array_of([f.owner for f in facts], pa.string()),
        "subject": array_of([f.subject for f in facts], pa.string()),
        "predicate": array_of([f.predicate for f in facts], pa.string()),
        "object": array_of([f.object for f in facts], pa.string()),
        "confidence": array_of([f.confidence for f in facts], pa.float64()),
        "valid_from": array_of([f.valid_from for f in facts], moment),
        "valid_to": array_of([f.valid_to for f in facts], moment),
        "recorded": array_of([f.recorded for f in facts], moment),
        "sources": array_of([list(f.sources) for f in facts], pa.list_(pa.string())),
        "rule": array_of([f.rule for f in facts], pa.string()),
        "ended_by": array_of([f.ended_by for f in facts], pa.string())})


# -- reading ---------------------------------------------------------------------------
def _read_facts(table: pa.Table) -> list[FactRecord]:
    """The facts ``_facts_table`` wrote, made from its columns in the record's field
    order (a dict a row, then a record from it: ~2 s more of the first recall of a
    1M-memory store, 1.15M facts)."""
    names = [f.name for f in dataclasses.fields(FactRecord)]
    columns = [column_values(table.column(name)) for name in names]
    at = names.index("sources")
    columns[at] = [tuple(s) for s in columns[at]]
    return [FactRecord(*row) for row in zip(*columns, strict=True)]


def read_index(snapshot: SnapshotFile) -> RecallIndex:
    """The index written into ``snapshot``. Raises ``DamagedFile`` when a part is missing
    or does not fit the rest."""
    try:
        return _read(snapshot, snapshot.values["index"])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise DamagedFile(f"its index does not hold together ({exc!r})") from None


def _read(snapshot: SnapshotFile, values: dict[str, Any]) -> RecallIndex:
    n, dim = int(values["size"]), int(values["dim"])
    index = RecallIndex(dim, capacity=1, half=bool(values["half"]))
    index.vectors = snapshot.array("vectors")
    if index.vectors.ndim != 2 or index.vectors.shape[1] != dim or len(index.vectors) < n:
        raise DamagedFile("its vectors do not fit the index")
    for name in _MEMORY_ARRAYS:
        array = snapshot.array(name)
        if len(array) != len(index.vectors):
            raise DamagedFile(f"its {name} does not fit the vectors")
        setattr(index, name, array)
    index.sentence_rows = used = int(values["sentence_rows"])
    index.sentences = snapshot.array("sentences")
    index.sentence_of = snapshot.array("sentence_of")
    if index.sentences.ndim != 2 or index.sentences.shape[1] != dim \
            or len(index.sentences) < used or len(index.sentence_of) != len(index.sentences):
        raise DamagedFile("its sentence vectors do not fit the index")
    lists = snapshot.table("memory_lists")
    index.ids = lists.column("id").to_pylist()
    index.session = lists.column("session").to_pylist()
    if len(index.ids) != n or len(index.session) != n:
        raise DamagedFile("its ids do not fit the index")
    index.pos = dict(zip(index.ids, range(n), strict=True))
    index.access_times = _read_sparse_times(snapshot, "access_times", n)
    index.access_seconds = [np.array([t.timestamp() for t in times]) if times else _NO_TIMES
                            for times in index.access_times]
    index.last_accessed = [None] * n
    for p, us in zip(snapshot.array("last_accessed.pos").tolist(),
                     snapshot.array("last_accessed.us").tolist(), strict=True):
        index.last_accessed[p] = _moment(us)
    index.superseded_by = [()] * n
    superseded = list(zip(snapshot.array("superseded_by.pos").tolist(),
                          snapshot.table("superseded_by").column("values").to_pylist(),
                          strict=True))
    for p, found in superseded:
        index.superseded_by[p] = tuple(found)
    index._replaced = replaced_map(superseded)
    index.owner_codes = {owner: code for code, owner in enumerate(values["owners"])}
    index.bm25 = _read_bm25(snapshot, values["bm25"])
    index.references = _read_edges(snapshot, "references")
    index.co_occurs = _read_edges(snapshot, "co_occurs")
    for number, key in enumerate(values["adjacency"]):
        adjacency = Adjacency.__new__(Adjacency)
        adjacency._index = index
        adjacency.key = (float(key[0]), float(key[1]), int(key[2]))
        prefix = f"adjacency.{number}"
        for name in ("indptr", "indices", "weights"):
            setattr(adjacency, name, snapshot.array(f"{prefix}.{name}"))
        adjacency.overlay = {p: _arrays(row) for p, row in
                             _read_rows(snapshot, f"{prefix}.overlay").items()}
        index._adjacency[adjacency.key] = adjacency
    if values["rows"]:
        index.keep_rows(snapshot.table("rows"))
    index.stale = set(snapshot.array("stale").tolist())
    if values["signs"]:
        signs = SignCodes(int(values["signs_dim"]), capacity=1)
        signs.codes = snapshot.array("signs")
        signs.center = snapshot.array("signs_center")
        if signs.codes.ndim != 2 or signs.codes.shape[0] != signs.words \
                or signs.center.shape != (signs.dim,):
            raise DamagedFile("its sign bits do not fit the vectors")
        index._signs = signs
    index.entities = _read_entities(snapshot, values["entities"])
    return index


def _arrays(row: Mapping[int, float]) -> tuple[np.ndarray, np.ndarray]:
    return (np.fromiter(row, dtype=np.int64, count=len(row)),
            np.fromiter(row.values(), dtype=np.float64, count=len(row)))


def _read_sparse_times(snapshot: SnapshotFile, name: str, n: int
                       ) -> list[tuple[datetime, ...]]:
    out: list[tuple[datetime, ...]] = [()] * n
    positions = snapshot.array(f"{name}.pos").tolist()
    counts = snapshot.array(f"{name}.count").tolist()
    micros = snapshot.array(f"{name}.us").tolist()
    at = 0
    for p, count in zip(positions, counts, strict=True):
        out[p] = tuple(_moment(us) for us in micros[at:at + count])
        at += count
    return out


def _read_rows(snapshot: SnapshotFile, name: str) -> dict[int, dict[int, float]]:
    rows = snapshot.array(f"{name}.row").tolist()
    counts = snapshot.array(f"{name}.count").tolist()
    others = snapshot.array(f"{name}.other").tolist()
    weights = snapshot.array(f"{name}.weight").tolist()
    out: dict[int, dict[int, float]] = {}
    at = 0
    for row, count in zip(rows, counts, strict=True):
        out[row] = dict(zip(others[at:at + count], weights[at:at + count], strict=True))
        at += count
    return out


def _read_bm25(snapshot: SnapshotFile, values: dict[str, Any]) -> BM25Index:
    bm25 = BM25Index(k1=float(values["k1"]), b=float(values["b"]),
                     context_weight=float(values["context_weight"]))
    tokens = snapshot.table("bm25.vocab").column("token").to_pylist()
    bm25._vocab = dict(zip(tokens, range(len(tokens)), strict=True))
    sizes = {}
    for name in ("_token", "_doc", "_tf", "_live"):
        column: _Column = getattr(bm25, name)
        column.data = snapshot.array(f"bm25.{name}")
        sizes[name] = column.size = int(values["columns"][name])
    for name in ("_start", "_end", "_lengths", "_groups", "_perm", "_offsets"):
        setattr(bm25, name, snapshot.array(f"bm25.{name}"))
    bm25._docs, bm25._dead = int(values["docs"]), int(values["dead"])
    bm25._total_length = float(values["total_length"])
    bm25._sorted = int(values["sorted"])
    bm25._group_docs = {int(g): int(c) for g, c in values["group_docs"]}
    bm25._group_length = {int(g): float(c) for g, c in values["group_length"]}
    bm25._df = snapshot.array("bm25._df").tolist()
    bm25._group_df = [{} for _ in tokens]
    for tid, group, count in snapshot.array("bm25._group_df").tolist():
        bm25._group_df[tid][group] = count
    if len(bm25._df) != len(tokens) or len(set(sizes.values())) != 1:
        raise DamagedFile("its full-text index does not hold together")
    return bm25


def _read_edges(snapshot: SnapshotFile, kind: str) -> EdgeTable:
    table = EdgeTable()
    for name in ("indptr", "indices", "weights"):
        setattr(table, name, snapshot.array(f"{kind}.{name}"))
    table.overlay = _read_rows(snapshot, f"{kind}.overlay")
    return table


def _read_entities(snapshot: SnapshotFile, values: dict[str, Any]) -> EntityIndex:
    graph = EntityIndex()
    listed = snapshot.table("entities")
    graph.ids = listed.column("id").to_pylist()
    graph.names = listed.column("name").to_pylist()
    graph.types = listed.column("type").to_pylist()
    graph.owner = listed.column("owner").to_pylist()
    graph.pos = {entity: p for p, entity in enumerate(graph.ids)}
    forms = snapshot.table("entities.forms").to_pydict()
    graph.by_form = {(o, f): list(p) for o, f, p in
                     zip(forms["owner"], forms["form"], forms["positions"], strict=True)}
    graph.of_memory = _read_rows(snapshot, "entities.of_memory")
    graph.memories_of = _read_rows(snapshot, "entities.memories_of")
    facts = _read_facts(snapshot.table("entities.facts"))
    graph.facts_of = {}
    pairs = snapshot.array("entities.facts_of").reshape(-1, 2)
    for entity, number in zip(pairs[:, 0].tolist(), pairs[:, 1].tolist(), strict=True):
        graph.facts_of.setdefault(entity, []).append(facts[number])
    # every row's spans copied out of the file at once, each row a view of that copy (a
    # copy a row: 870k arrays made one by one at 1M memories)
    counts = snapshot.array("entities.times.count")
    spans = np.split(np.array(snapshot.array("entities.times.values")),
                     np.cumsum(counts)[:-1]) if len(counts) else []
    graph.times.update(zip(snapshot.array("entities.times.row").tolist(), spans, strict=True))
    graph._count = {o: int(c) for o, c in values["count"]}
    return graph

