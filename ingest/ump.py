"""UMP (Universal Memory Protocol) files in and out of a store, losslessly.

A UMP file is a JSON array of records::

    {"ump": "0.1", "id": "urn:ump:...", "kind": "procedural",
     "body": {"subject": "...", "text": "...", "context": "..."},
     "scope": {"owner": "did:key:...", "project": "...", "visibility": "private", "tags": [],
               "session": "..."},
     "time": {"created": "...Z", "modified": ..., "observed": ..., "valid_from": ...,
              "valid_to": null},
     "lifecycle": {"status": "active", "confidence": 0.6},
     "superseded_by": [], "provenance": {...}, "integrity": {...}}

``import_ump`` validates every record before writing anything (an error names the record's
index, id and field) and writes all of them in one transaction; importing the same file
again changes nothing. ``superseded_by`` becomes SUPERSEDES edges (new -> old).
``body.context`` and ``scope.session`` are graphmem's own (``Memory.context``, the text a
memory is indexed with besides its own, and ``Memory.session``), written when set. Whatever
graphmem does not model (unknown keys, absent versus null, the original spelling of
timestamps) is kept in ``Memory.extra`` so that ``export_ump`` gives the file back, up to
key order.
"""

from __future__ import annotations

import codecs
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from graphmem import (
    Edge,
    InvalidInputError,
    Kind,
    Memory,
    MemoryInput,
    MemoryStore,
    MergeResult,
    RecordError,
    Status,
    format_iso,
    parse_iso,
)

__all__ = [
    "SAMPLE_PATH",
    "UMP_STATUSES",
    "export_ump",
    "import_ump",
    "iter_records",
    "json_type",
    "memory_to_record",
    "record_to_input",
    "ump_records",
]

UMP_VERSION = "0.1"
UMP_STATUSES = ("active", "candidate", "archived", "tombstoned")
_SECTIONS = {
    "body": ("subject", "text", "context"),
    "scope": ("owner", "project", "visibility", "tags", "session"),
    "time": ("created", "modified", "observed", "valid_from", "valid_to"),
    "lifecycle": ("status", "confidence"),
}
_TOP = ("ump", "id", "kind", "body", "scope", "time", "lifecycle", "superseded_by",
        "provenance", "integrity", "graph")
# Paths whose exported default is not null: when the file had null there, remember it.
_NON_NULL_DEFAULTS = {"scope.tags", "superseded_by", "provenance", "integrity",
                      "scope.visibility", "lifecycle.status", "lifecycle.confidence"}
# graphmem's own keys beside the protocol's: the text a memory is indexed with besides its
# own (``Memory.context``) and its conversation (``Memory.session``). Written only when
# set, or when the file had them as null.
_OPTIONAL = {"body.context", "scope.session"}

#: The shipped sample corpus: 301 memories of a research engineer's agent.
SAMPLE_PATH = Path(__file__).resolve().parent / "samples" / "agent_memories.ump.json"


#: A record larger than this (serialised) is refused: the longest text graphmem takes is
#: 200,000 characters, and a payload ten times that.
MAX_RECORD_BYTES = 16 * 2**20
_BLOCK = 1 << 20


def _open(path: str | Path, source: str) -> BinaryIO:
    try:
        return Path(path).open("rb")
    except OSError as exc:
        raise RecordError(f"cannot read the file: {exc.strerror or exc}", source=source) from None


def iter_records(path: str | Path) -> Iterator[tuple[int, Any]]:
    """The records of a UMP file (a JSON array), one at a time, with their index.

    The file is read in blocks and each record decoded alone, so memory holds one block
    and one record, however large the file. Anything that is not a JSON array of values
    is a ``RecordError`` naming the file and the line and column.
    """
    source = str(path)
    decoder = json.JSONDecoder()
    utf8 = codecs.getincrementaldecoder("utf-8-sig")()  # a byte order mark is no record
    with _open(path, source) as handle:
        text = ""
        pos = 0  # where the unread part of ``text`` starts
        consumed_lines = consumed_cols = 0  # lines before ``text``, for messages
        done = False

        def fill() -> bool:
            nonlocal text, pos, consumed_lines, consumed_cols, done
            if done:
                return False
            try:
                block = handle.read(_BLOCK)
            except OSError as exc:
                raise RecordError(f"cannot read the file: {exc.strerror or exc}",
                                  source=source) from None
            try:
                piece = utf8.decode(block, final=not block)
            except UnicodeDecodeError as exc:
                raise RecordError(f"not UTF-8 (near byte {handle.tell() - len(block) + exc.start}"
                                  "); UMP files are UTF-8 JSON", source=source) from None
            gone = text[:pos]
            consumed_lines += gone.count("\n")
            consumed_cols = len(gone) - gone.rfind("\n") - 1 if "\n" in gone \
                else consumed_cols + len(gone)
            text, pos = text[pos:] + piece, 0
            done = not block
            return bool(block)

        def where(offset: int) -> str:
            before = text[:offset]
            line = consumed_lines + before.count("\n") + 1
            column = (offset - before.rfind("\n")) if "\n" in before \
                else consumed_cols + offset + 1
            return f"line {line} column {column}"

        def skip_space() -> None:
            nonlocal pos
            while True:
                while pos < len(text) and text[pos] in " \t\r\n":
                    pos += 1
                if pos < len(text) or not fill():
                    return

        skip_space()
        if text[pos:pos + 1] != "[":
            while len(text) - pos <= MAX_RECORD_BYTES and fill():
                pass  # what the file holds instead, to say so
            try:
                value, _ = decoder.raw_decode(text, pos)
            except json.JSONDecodeError as broken:
                raise RecordError(
                    "the file is empty; a UMP file is a JSON array of records"
                    if pos >= len(text) else
                    f"not valid JSON: {broken.msg} at {where(broken.pos)}",
                    source=source) from None
            except ValueError as huge:  # a number of more than 4,300 digits
                raise RecordError(f"not valid JSON: {huge}", source=source) from None
            except RecursionError:
                raise RecordError("JSON nested too deeply", source=source) from None
            raise RecordError("a UMP file is a JSON array of records; this one holds a JSON "
                              f"{json_type(value)}", source=source)
        pos += 1
        index = 0
        skip_space()
        if text[pos:pos + 1] == "]":
            return
        while True:
            while True:
                try:
                    record, end = decoder.raw_decode(text, pos)
                except json.JSONDecodeError:
                    if len(text) - pos > MAX_RECORD_BYTES:
                        raise RecordError(f"larger than {MAX_RECORD_BYTES // 2**20} MB",
                                          source=source, index=index) from None
                    if fill():
                        continue
                    try:  # the whole rest of the file is in: say where it breaks
                        decoder.raw_decode(text, pos)
                    except json.JSONDecodeError as final:
                        exc = final
                    raise RecordError(f"not valid JSON: {exc.msg} at {where(exc.pos)}",
                                      source=source) from None
                except ValueError as huge:  # a number of more than 4,300 digits
                    raise RecordError(f"not valid JSON: {huge}", source=source,
                                      index=index) from None
                except RecursionError:
                    raise RecordError("JSON nested too deeply", source=source,
                                      index=index) from None
                # a number or a literal cut at the block's end decodes too early
                if end == len(text) and not done and fill():
                    continue
                break
            yield index, record
            index += 1
            pos = end
            skip_space()
            mark = text[pos:pos + 1]
            if mark == "]":
                pos += 1
                skip_space()
                if pos < len(text):
                    raise RecordError(f"not valid JSON: extra data at {where(pos)}",
                                      source=source)
                return
            if mark != ",":
                raise RecordError("not valid JSON: expected ',' or ']' at "
                                  f"{where(pos)}" if mark else
                                  "not valid JSON: the array is not closed", source=source)
            pos += 1
            skip_space()


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type.

    >>> [json_type(v) for v in ({}, [], "a", True, 1, 1.5, None)]
    ['object', 'array', 'string', 'boolean', 'number', 'number', 'null']
    """
    kinds = ((dict, "object"), (list, "array"), (str, "string"), (bool, "boolean"),
             (int, "number"), (float, "number"))
    return next((name for kind, name in kinds if isinstance(value, kind)), "null")


def _fail(message: str, *, source: str, index: int, record: Any, field: str) -> RecordError:
    record_id = record.get("id") if isinstance(record, Mapping) else None
    return RecordError(message, source=source, index=index,
                       record_id=record_id if isinstance(record_id, str) else None, field=field)


def record_to_input(record: Any, *, index: int = 0, source: str = "<records>") -> MemoryInput:
    """Validate one UMP record and map it to a ``MemoryInput`` (with round-trip hints)."""

    def fail(message: str, field: str) -> RecordError:
        return _fail(message, source=source, index=index, record=record, field=field)

    if not isinstance(record, Mapping):
        raise fail(f"a record is a JSON object, got {type(record).__name__}", "record")
    memory_id = record.get("id")
    if memory_id is not None and not isinstance(memory_id, str):
        raise fail(f"id must be a string, got {type(memory_id).__name__}", "id")
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise fail("missing or empty id", "id")
    kind = record.get("kind")
    if kind not in {k.value for k in Kind}:
        raise fail(f"unknown kind {kind!r}; one of {', '.join(k.value for k in Kind)}", "kind")
    sections: dict[str, Mapping[str, Any]] = {}
    absent: list[str] = []
    nulls: list[str] = []
    unknown: dict[str, Any] = {"top": {k: v for k, v in record.items() if k not in _TOP}}
    for name, known in _SECTIONS.items():
        value = record.get(name)
        if name not in record:
            absent.append(name)
            value = {}
        elif value is None:
            nulls.append(name)
            value = {}
        elif not isinstance(value, Mapping):
            raise fail(f"{name} must be an object", name)
        sections[name] = value
        unknown[name] = {k: v for k, v in value.items() if k not in known}
        for key in known:
            path = f"{name}.{key}"
            if key not in value:
                absent.append(path)
            elif value[key] is None and path in _NON_NULL_DEFAULTS | _OPTIONAL:
                nulls.append(path)
    for key in ("superseded_by", "provenance", "integrity", "ump"):
        if key not in record:
            absent.append(key)
        elif record[key] is None and key in _NON_NULL_DEFAULTS:
            nulls.append(key)

    body, scope, times, life = (sections[n] for n in ("body", "scope", "time", "lifecycle"))
    for key in ("subject", "text", "context"):
        if body.get(key) is not None and not isinstance(body.get(key), str):
            raise fail("must be a string", f"body.{key}")
    subject = body.get("subject")
    text = body.get("text")
    if not (text or "").strip():
        if not (subject or "").strip():
            raise fail("a memory needs body.text or body.subject", "body.text")
        text = subject
    tags = scope.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags):
        raise fail("must be a list of non-empty strings", "scope.tags")
    for key in ("owner", "project", "visibility", "session"):
        if scope.get(key) is not None and not isinstance(scope.get(key), str):
            raise fail("must be a string", f"scope.{key}")
    status = life.get("status") or "active"
    if status not in UMP_STATUSES:
        raise fail(f"unknown status {status!r}; one of {', '.join(UMP_STATUSES)}",
                   "lifecycle.status")
    confidence = life.get("confidence")
    if confidence is None:
        confidence = 1.0
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) \
            or not math.isfinite(confidence) or not 0.0 <= confidence <= 1.0:
        raise fail(f"confidence must be a number in [0, 1], got {confidence!r}",
                   "lifecycle.confidence")
    parsed_times: dict[str, datetime | None] = {}
    raw_times: dict[str, str] = {}
    for key in _SECTIONS["time"]:
        value = times.get(key)
        if value is None:
            parsed_times[key] = None
            continue
        try:
            parsed_times[key] = parse_iso(value)
        except ValueError as exc:
            problem = str(exc) if "falls outside" in str(exc) \
                else f"not an ISO 8601 timestamp: {str(value)[:60]!r}"
            raise fail(problem, f"time.{key}") from None
        raw_times[key] = value
    superseded_by = record.get("superseded_by") or []
    if not isinstance(superseded_by, list) or not all(isinstance(s, str) and s
                                                      for s in superseded_by):
        raise fail("must be a list of ids or null", "superseded_by")
    for key in ("provenance", "integrity"):
        value = record.get(key)
        if value is not None and not isinstance(value, Mapping):
            raise fail("must be an object or null", key)
    if "ump" in record and record["ump"] is not None and not isinstance(record["ump"], str):
        raise fail("must be a string", "ump")

    extra: dict[str, Any] = {"ump": record.get("ump")}
    if absent:
        extra["_absent"] = sorted(absent)
    if nulls:
        extra["_null"] = sorted(nulls)
    if raw_times:
        extra["_raw_time"] = raw_times
    unknown = {k: v for k, v in unknown.items() if v}
    if unknown:
        extra["_unknown"] = unknown
    try:
        return MemoryInput.parse({
            "id": memory_id,
            "kind": kind,
            "status": status,
            "subject": subject,
            "text": text,
            "context": body.get("context"),
            "session": scope.get("session"),
            "tags": tags,
            "owner": scope.get("owner"),
            "project": scope.get("project"),
            "visibility": scope.get("visibility") or "private",
            "confidence": float(confidence),
            **parsed_times,
            "superseded_by": superseded_by,
            "provenance": record.get("provenance") or {},
            "integrity": record.get("integrity") or {},
            "extra": extra,
            "graph": record.get("graph"),
        })
    except InvalidInputError as exc:
        raise fail(str(exc).split(": ", 1)[-1], exc.field or "record") from None


def import_ump(store: MemoryStore, path: str | Path, *, actor: str | None = None,
               chunk: int = 2000,
               progress: Callable[[str, int, int | None], None] | None = None) -> MergeResult:
    """Import a UMP file: all records or none; a second import of the same file is a no-op.

    The file is read twice, one record at a time: first every record is validated (an
    error names the record's index, id and field, and nothing is written), then the
    records are merged ``chunk`` at a time into one transaction. Memory holds a chunk,
    not the file. ``progress(phase, done, total)`` is told how far each phase is:
    ``checking`` (the total is not known yet), ``importing`` and ``linking``.
    """
    source = str(path)
    index_of: dict[str | None, int] = {}
    edges: list[Edge] = []
    versions: dict[str, int] = {}  # versions this reader does not know: their first record
    tell = progress or (lambda phase, done, total: None)
    for index, record in iter_records(path):
        if index % 1000 == 0:
            tell("checking", index, None)
        item = record_to_input(record, index=index, source=source)
        said = record.get("ump")
        if isinstance(said, str) and said != UMP_VERSION:
            versions.setdefault(said, index)
        if item.id in index_of:
            raise _fail(f"duplicate id (also record {index_of[item.id]})", source=source,
                        index=index, record=record, field="id")
        index_of[item.id] = index
        edges += [Edge("supersedes", src=new, dst=item.id or "", reason="superseded_by")
                  for new in item.superseded_by]

    total = len(index_of)
    tell("checking", total, total)

    def chunks() -> Iterator[list[MemoryInput]]:
        batch: list[MemoryInput] = []
        done = 0
        tell("importing", 0, total)
        for index, record in iter_records(path):
            item = record_to_input(record, index=index, source=source)
            # a file's entity lists are not kept: a memory's entities are its knowledge
            # graph's, found in its text
            batch.append(item.model_copy(update={"entities": ()}))
            if len(batch) >= chunk:
                yield batch
                done += len(batch)  # asked for the next one: this one is merged
                tell("importing", done, total)
                batch = []
        if batch:
            yield batch

    result = store.merge_chunks(chunks(), edges=edges, index_of=index_of,
                                reason=f"ump import {Path(path).name}", actor=actor,
                                source=source)
    tell("importing", total, total)
    # Id and subject mentions, rare shared entities. Over every record of the file, not
    # only the new ones: an import interrupted between its two transactions is completed
    # by running it again (existing edges are skipped).
    tell("linking", 0, total)
    store.derive_links([i for i in index_of if i])
    tell("linking", total, total)
    result.skipped += _dangling(store, edges, index_of, source=source)
    result.skipped += [f"{source}: record {index} (and any other) says ump {said!r}, a version "
                       f"this reader does not know: read as {UMP_VERSION}, and kept as said"
                       for said, index in versions.items()]
    return result


def _dangling(store: MemoryStore, edges: Sequence[Edge], index_of: Mapping[str | None, int],
              *, source: str) -> list[str]:
    """A note per ``superseded_by`` id that is neither a record of the file nor a memory of
    the store (or was forgotten): the record keeps the id, but no SUPERSEDES edge joins it
    and it is recalled as current."""
    outside = {e.src for e in edges if e.src not in index_of}
    found = {m.id for m in store.get_many(sorted(outside))} if outside else set()
    return [f"{source}: record {index_of[e.dst]} ({e.dst}): superseded_by names {e.src}, "
            "which is neither in the file nor in the store: no supersede edge was made"
            for e in edges if e.src in outside and e.src not in found]


def _time_value(memory: Memory, key: str) -> str | None:
    value = getattr(memory, key)
    if value is None:
        return None
    raw = memory.extra.get("_raw_time", {}).get(key)
    if raw is not None:
        try:
            if parse_iso(raw) == value:
                return str(raw)
        except ValueError:
            pass
    return format_iso(value)


def memory_to_record(memory: Memory, graph: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One memory as a UMP record (the inverse of ``record_to_input``); ``graph`` is its
    knowledge-graph section (``MemoryStore.graph_sections``), written as ``graph``."""
    extra = memory.extra
    absent = set(extra.get("_absent", ()))
    nulls = set(extra.get("_null", ()))
    unknown = extra.get("_unknown", {})
    values: dict[str, Any] = {
        "body.subject": memory.subject,
        "body.text": memory.text,
        "body.context": memory.context,
        "scope.owner": memory.owner,
        "scope.session": memory.session,
        "scope.project": memory.project,
        "scope.visibility": memory.visibility,
        "scope.tags": list(memory.tags),
        "lifecycle.status": memory.status.value,
        "lifecycle.confidence": memory.confidence,
        **{f"time.{k}": _time_value(memory, k) for k in _SECTIONS["time"]},
    }
    record: dict[str, Any] = dict(unknown.get("top", {}))
    record.update({"ump": extra.get("ump", UMP_VERSION), "id": memory.id,
                   "kind": memory.kind.value})
    for name, keys in _SECTIONS.items():
        if name in absent:
            continue
        if name in nulls:
            record[name] = None
            continue
        section = dict(unknown.get(name, {}))
        for key in keys:
            path = f"{name}.{key}"
            if path in absent or (path in _OPTIONAL and values[path] is None
                                  and path not in nulls):
                continue
            section[key] = None if path in nulls else values[path]
        record[name] = section
    record["superseded_by"] = list(memory.superseded_by)
    record["provenance"] = dict(memory.provenance)
    record["integrity"] = dict(memory.integrity)
    for key in ("superseded_by", "provenance", "integrity"):
        if key in nulls and not record[key]:
            record[key] = None
    for key in ("superseded_by", "provenance", "integrity", "ump"):
        if key in absent:
            record.pop(key, None)
    if graph is not None and (graph.get("mentions") or graph.get("facts")):
        record["graph"] = dict(graph)
    return record


def ump_records(store: MemoryStore, *, owner: str | None = None) -> list[dict[str, Any]]:
    """The store (or ``owner``'s memories) as UMP records, what a UMP file holds, each with
    its knowledge-graph section. Forgotten memories are left out: nothing of them
    remains to export.
    """
    memories = [m for m in store.memories(owner=owner) if m.status is not Status.FORGOTTEN]
    graph = store.graph_sections([m.id for m in memories], owner=owner)
    return [memory_to_record(m, graph.get(m.id)) for m in memories]


def export_ump(store: MemoryStore, path: str | Path, *, owner: str | None = None) -> int:
    """Write the store (or ``owner``'s memories) as a UMP file; returns the record count.

    Forgotten memories are left out: nothing of them remains to export. Each record
    carries its knowledge graph (``graph``: the entities it mentions, with their forms
    and merges, and the facts it states, with their validity), so that an import gives
    back the same graph instead of extracting it again.
    """
    records = ump_records(store, owner=owner)
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(records, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    tmp.replace(target)
    return len(records)
