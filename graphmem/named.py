"""Named queries: read-only queries kept as files, each declared by a header, that a
store runs with typed parameters bound (``MemoryStore.named_query``, ``graphmem query
NAME``, the sidecar's ``/v1/queries/{name}``).

A library is a directory of ``NAME.cypher`` files, each with a header, and beside each
its SQL text (``NAME.sql``) for the PostgreSQL engine::

    // name: most_referenced
    // description: The memories the most other memories point to.
    // param: limit INT64 = 10
    // param: kind STRING = ""
    // param: owner STRING = ""

Parameter types: STRING, INT64, DOUBLE, BOOLEAN, TIMESTAMP (ISO 8601). A parameter
without a default is required. A default may come from the store: ``now`` (its clock) or
``settings.NAME`` (its configuration, e.g. ``settings.archive_age_days``;
``settings.half_life.KIND`` for a decay half-life), so a query applies the same rules as
the store. Values are always bound by the database, never pasted into the query, and the
queries run read-only.

One query, two texts. The header is written once, in the ``.cypher`` file; the ``.sql``
file is the same query over the PostgreSQL engine's tables, with the same parameters as
``%(name)s`` (a Cypher keyword keeps its ``_``: ``%(end_)s``) and the same columns. A
store runs the text of its engine (``MemoryStore.query_language``); the rows come back in
one form (timestamps as naive UTC, as Kuzu gives them).

A column the Cypher text returns as JSON text (Kuzu keeps a fact's sources so) is named
in a ``// json: COLUMN[, COLUMN]`` line: on Kuzu its values come back decoded (a fact's
sources as a list of memory ids), as the SQL text gives them.

A query with an ``owner`` parameter is *owner-scoped*: given an owner it sees only that
owner's memories, entities and facts, so a sidecar can run it for a token of that owner.
A query without one reads across owners.

Libraries are found through the ``graphmem.named_queries`` entry point group: each entry
names a directory (a ``pathlib.Path``). graphmem's distribution registers the analyst's
library, ``queries/``; another package can add its own the same way.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from ._errors import InvalidInputError, UnsupportedError
from ._time import parse_iso

__all__ = ["ENTRY_POINTS", "NamedQuery", "Param", "cypher_name", "find_query", "libraries",
           "load_queries", "parse", "run"]

#: The entry point group that names the directories of named queries.
ENTRY_POINTS = "graphmem.named_queries"
TYPES = ("STRING", "INT64", "DOUBLE", "BOOLEAN", "TIMESTAMP")
_HEADER = re.compile(r"^//\s*(name|description|param|json):\s*(.*)$")
_PARAM = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s+([A-Z0-9]+)(?:\s*=\s*(.*))?$")
#: a whole number as text ("5", "-3", "+12")
_WHOLE = re.compile(r"[+-]?\d+")
#: A parameter that sets a row count: Kuzu refuses a negative one with a database error.
_COUNT_PARAM = re.compile(r"\b(?:LIMIT|SKIP)\s+\$([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    default: Any = None
    required: bool = True
    #: the smallest value allowed (0 for a parameter used as LIMIT or SKIP)
    minimum: int | None = None
    #: where the default comes from when it is the store's: "now" or "settings.NAME"
    default_from: str | None = None

    def describe(self) -> str:
        """``name: TYPE``, and its default (``= value`` or ``= settings.NAME``)."""
        default = "" if self.required else f" = {self.default_from or repr(self.default)}"
        return f"{self.name}: {self.type}{default}"

    def convert(self, value: Any, query: str) -> Any:
        """A value (a string from the command line, or already typed) as this type."""
        where = f"{query}: parameter {self.name} ({self.type})"
        if value is None:
            raise InvalidInputError(f"{where} has no value", field=self.name)
        try:
            if self.type == "STRING":
                if not isinstance(value, str) or "\x00" in value:
                    raise ValueError("expected text")
                return value
            if self.type == "INT64":
                if isinstance(value, bool) or (isinstance(value, str) and not _WHOLE.fullmatch(
                        value.strip())) or (isinstance(value, float) and not value.is_integer()):
                    raise ValueError("expected a whole number")
                number = int(value)
                if not -(2 ** 63) <= number < 2 ** 63:
                    raise ValueError("out of range")
                if self.minimum is not None and number < self.minimum:
                    raise ValueError(f"must be at least {self.minimum}")
                return number
            if self.type == "DOUBLE":
                if isinstance(value, bool):
                    raise ValueError("expected a number")
                try:
                    real = float(value)
                except ValueError:
                    raise ValueError("expected a number") from None
                if not math.isfinite(real):
                    raise ValueError("expected a finite number")
                return real
            if self.type == "BOOLEAN":
                if isinstance(value, bool):
                    return value
                lowered = str(value).lower()
                if lowered not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError("expected true or false")
                return lowered in ("true", "1", "yes")
            return value if hasattr(value, "isoformat") else parse_iso(str(value))
        except (ValueError, TypeError, OverflowError) as exc:
            raise InvalidInputError(f"{where}: {exc} (got {str(value)[:80]!r})",
                                    field=self.name) from None


@dataclass(frozen=True)
class NamedQuery:
    name: str
    description: str
    #: the Cypher text (with its header), for Kuzu
    text: str
    path: Path
    params: tuple[Param, ...] = field(default_factory=tuple)
    #: the SQL text, for PostgreSQL (None: the query has none yet)
    sql: str | None = None
    #: columns the Cypher text returns as JSON text, decoded on Kuzu
    json_columns: tuple[str, ...] = ()

    @property
    def owner_scoped(self) -> bool:
        """Whether the query confines itself to one owner's memories when given one."""
        return any(p.name == "owner" for p in self.params)

    def signature(self) -> str:
        parts = [p.name if p.required else f"{p.name}={p.default_from or repr(p.default)}"
                 for p in self.params]
        return f"{self.name}({', '.join(parts)})"

    def bind(self, values: Mapping[str, Any], store: Any = None) -> dict[str, Any]:
        """Typed values for every parameter: given ones converted, defaults filled in
        (those of the store's clock and settings from ``store``), keyed by their Cypher
        names (a Cypher keyword such as ``end`` is ``$end_``)."""
        known = {p.name for p in self.params}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InvalidInputError(
                f"{self.name}: unknown parameter(s) {', '.join(unknown)}; it takes "
                f"{', '.join(sorted(known)) or 'none'}", field=unknown[0])
        out = {}
        for param in self.params:
            key = cypher_name(param.name)
            if param.name in values:
                out[key] = param.convert(values[param.name], self.name)
            elif param.required:
                raise InvalidInputError(f"{self.name}: parameter {param.name} "
                                        f"({param.type}) is required", field=param.name)
            elif param.default_from is not None:
                out[key] = param.convert(_store_default(param.default_from, store), self.name)
            else:
                out[key] = param.default
        return out


def _store_default(source: str, store: Any) -> Any:
    """The value a ``now`` or ``settings.NAME`` default stands for in ``store``."""
    if store is None:
        raise InvalidInputError(f"the default {source} needs a store", field="store")
    if source == "now":
        return store.now()
    name = source.removeprefix("settings.")
    if name.startswith("half_life."):
        return store.settings.half_life(name.removeprefix("half_life."))
    return getattr(store.settings, name)


#: Words Kuzu 0.11's parser refuses as ``$name`` (measured): such a parameter is bound as
#: ``$<name>_`` in the query text.
RESERVED = {"all", "and", "asc", "case", "create", "desc", "distinct", "else", "end", "ends",
            "exists", "false", "group", "in", "not", "null", "optional", "or", "order",
            "starts", "table", "then", "true", "union", "unwind", "when", "where", "with",
            "xor"}


def cypher_name(name: str) -> str:
    return f"{name}_" if name.lower() in RESERVED else name


def parse(path: Path) -> NamedQuery:
    """Read one ``.cypher`` file and its header."""
    text = path.read_text(encoding="utf-8")
    name = description = None
    params: list[Param] = []
    json_columns: tuple[str, ...] = ()
    for line in text.splitlines():
        match = _HEADER.match(line.strip())
        if not match:
            if line.strip() and not line.strip().startswith("//"):
                break
            continue
        key, value = match.group(1), match.group(2).strip()
        if key == "name":
            name = value
        elif key == "description":
            description = value
        elif key == "json":
            json_columns += tuple(c.strip() for c in value.split(",") if c.strip())
        else:
            spec = _PARAM.match(value)
            if not spec or spec.group(2) not in TYPES:
                raise ValueError(f"{path}: bad param line {value!r}")
            pname, ptype, default = spec.groups()
            if default is None:
                params.append(Param(pname, ptype))
                continue
            raw = default.strip().strip('"')
            if raw == "now" or raw.startswith("settings."):
                _check_store_default(raw, path)
                params.append(Param(pname, ptype, required=False, default_from=raw))
            else:
                params.append(Param(pname, ptype, Param(pname, ptype).convert(raw, str(path))
                                    if ptype != "STRING" else raw, required=False))
    if not name or not description:
        raise ValueError(f"{path}: a named query needs '// name:' and '// description:'")
    counts = set(_COUNT_PARAM.findall(text))
    params = [replace(p, minimum=0) if cypher_name(p.name) in counts else p for p in params]
    sql_path = path.with_suffix(".sql")
    sql = sql_path.read_text(encoding="utf-8") if sql_path.is_file() else None
    return NamedQuery(name, description, text, path, tuple(params), sql, json_columns)


def _check_store_default(raw: str, path: Path) -> None:
    from ._settings import Settings

    name = raw.removeprefix("settings.")
    known = raw == "now" or name.startswith("half_life.") or name in Settings.__dataclass_fields__
    if not known:
        raise ValueError(f"{path}: unknown default {raw!r} (now, settings.NAME or "
                         "settings.half_life.KIND)")


def libraries() -> list[Path]:
    """The directories of named queries registered under ``graphmem.named_queries``."""
    return list(_registered())


@cache
def _registered() -> tuple[Path, ...]:
    """``libraries()``, read once: scanning the installed distributions' entry points
    costs about 18 ms, which every named query paid."""
    found = []
    for entry in sorted(entry_points(group=ENTRY_POINTS), key=lambda e: e.name):
        directory = Path(entry.load())
        if not directory.is_dir():
            raise UnsupportedError(f"the named-query library {entry.name!r} ({entry.value}) "
                                   f"names {directory}, which is not a directory")
        found.append(directory)
    return tuple(found)


@cache
def _load_directory(directory: Path) -> dict[str, NamedQuery]:
    found = {}
    for path in sorted(directory.glob("*.cypher")):
        query = parse(path)
        found[query.name] = query
    return found


def load_queries(directory: Path | None = None) -> dict[str, NamedQuery]:
    """Every named query of ``directory``, by name; without one, of every registered
    library (``libraries()``), where a name given twice is an error naming both files."""
    if directory is not None:
        return _load_directory(directory)
    merged: dict[str, NamedQuery] = {}
    for library in libraries():
        for name, query in _load_directory(library).items():
            if name in merged:
                raise UnsupportedError(f"two named queries are called {name!r}: "
                                       f"{merged[name].path} and {query.path}")
            merged[name] = query
    return merged


def find_query(name: str) -> NamedQuery:
    """The named query ``name``, or an error that lists the names (the closest first)."""
    queries = load_queries()
    if name in queries:
        return queries[name]
    if not queries:
        raise UnsupportedError("no named-query library is installed (graphmem's own, "
                               "queries/, comes with `pip install graphmem`)")
    close = difflib.get_close_matches(name, list(queries), n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    raise InvalidInputError(f"no named query {name!r}; {hint}the named queries are "
                            f"{', '.join(sorted(queries))}", field="name")


def run(store: Any, name: str, values: Mapping[str, Any] | None = None, *,
        as_dataframe: bool = False, owner: str | None = None) -> Any:
    """Run a named query on ``store`` (a ``MemoryStore``: it answers ``query_language``,
    ``cypher``, ``sql``, ``now`` and ``settings``) with its parameters bound, read-only.

    With ``owner`` the query must be owner-scoped and runs for that owner alone (an
    ``owner`` among ``values`` must be the same one)."""
    query = find_query(name)
    values = dict(values or {})
    if owner is not None:
        if not query.owner_scoped:
            raise InvalidInputError(f"{name} reads across owners: it cannot be confined to "
                                    f"{owner!r}'s memories", field="name")
        if values.get("owner", owner) != owner:
            raise InvalidInputError("owner must be left out (or be the token's own)",
                                    field="owner")
        values["owner"] = owner
    bound = query.bind(values, store)
    if store.query_language == "cypher":
        return _decoded(store.cypher(query.text, bound, as_dataframe=as_dataframe),
                        query.json_columns)
    if query.sql is None:
        raise UnsupportedError(f"{name} has no SQL text ({query.path.with_suffix('.sql')}): "
                               f"it runs on Kuzu stores only")
    if as_dataframe:
        import pandas as pd

        frame = store.sql(query.sql, bound, as_dataframe=True)
        for column in frame.columns:
            if isinstance(frame[column].dtype, pd.DatetimeTZDtype):
                frame[column] = frame[column].dt.tz_convert("UTC").dt.tz_localize(None)
        return frame
    return [{k: _naive_utc(v) for k, v in row.items()} for row in store.sql(query.sql, bound)]


def _decoded(result: Any, columns: tuple[str, ...]) -> Any:
    """``result`` (rows, or a DataFrame) with the JSON text of ``columns`` decoded."""
    if not columns:
        return result
    def value(text: Any) -> Any:
        return json.loads(text) if isinstance(text, str) and text else text

    if isinstance(result, list):
        return [{k: value(v) if k in columns else v for k, v in row.items()} for row in result]
    for column in columns:
        if column in result.columns:
            result[column] = result[column].map(value)
    return result


def _naive_utc(value: Any) -> Any:
    """A timestamp as Kuzu gives it (naive UTC); anything else as it is."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value
