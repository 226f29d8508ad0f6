"""The rows of a user statement's result, read within bounds.

What Kuzu's time limit does not cover is reading the result into Python: a cross product
of three scans of 100 memories returned a million rows and took 2 GB, and 8,000 rows of
100 KB took 1.9 s past a limit of 0.3 s. So the rows are counted as they are read (their
texts' characters and list elements, and a little for each value) and the time limit
goes on while they are.

And Kuzu 0.11.3's Python binding ends the process (exit 139) when it turns a date or a
timestamp outside the years 1-9999 into Python's (``RETURN date('0001-01-01') - 1``),
a value a read can compute though no write may store one. A result with a time in it is
first read through Arrow, which never crashes, and refused when a time is out of range.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .._errors import InvalidInputError

__all__ = ["RESULT_BYTES", "read_user_rows"]

#: The most a user statement's result may hold, counted as its texts' characters, its
#: lists' elements and 16 for each value.
RESULT_BYTES = 128 * 1024 * 1024
#: The most rows of a result with a time in it and a column of no fixed width (a text,
#: a list, a node ...): such a result is read whole through Arrow before its rows are
#: counted, where a value Kuzu keeps once (a generated text, one side of a cross
#: product) is repeated on every row (a time column beside 100,000 rows of a generated
#: 100 KB text took 3 GB there); ``TIME_ROWS_LARGE`` when the statement holds a large
#: constant (``holds_large_constant``), ``TIME_ROWS_FIXED`` when every column has a
#: fixed width (16 bytes a value at most).
TIME_ROWS = 100_000
TIME_ROWS_LARGE = 100
TIME_ROWS_FIXED = 2_000_000
#: The column types of a fixed width.
_FIXED = re.compile(r"(U?INT(8|16|32|64|128)|FLOAT|DOUBLE|BOOL|DATE|TIMESTAMP\w*|INTERVAL|"
                    r"INTERNAL_ID|UUID|SERIAL|DECIMAL\(\d+, ?\d+\))")
#: How many rows are read between two looks at the clock.
_CLOCK_EVERY = 256
#: The column types that hold a time (alone, or in a list, a struct, a map or a union).
_TEMPORAL = re.compile(r"\b(DATE|TIMESTAMP\w*)\b")
#: The days (since 1970-01-01) of 0001-01-01 and 9999-12-31, and the seconds from the
#: start of the first to the end of the second: what Python's datetime can hold.
_DAYS = (-719_162, 2_932_896)
_SECONDS = (-62_135_596_800, 253_402_300_799)
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def read_user_rows(result: Any, *, deadline: float | None,
                   too_long: Callable[[], Exception],
                   large: Callable[[], bool] = lambda: True) -> list[list[Any]]:
    """Every row of ``result`` (a Kuzu query result), refused with a clear error when
    they hold more than ``RESULT_BYTES``, when reading them goes past ``deadline``
    (``time.monotonic()``; ``too_long()`` is what is raised), when a time in them is
    outside the years 1-9999 (a result with a time holds at most ``TIME_ROWS`` rows:
    ``TIME_ROWS_LARGE`` when the statement holds a large constant, ``large()``, asked only
    then; ``TIME_ROWS_FIXED`` when every column has a fixed width), or when a value
    cannot be read in Python."""
    types = result.get_column_data_types()
    if any(_TEMPORAL.search(t) for t in types):
        most = TIME_ROWS_FIXED if all(_FIXED.fullmatch(t) for t in types) else \
            TIME_ROWS_LARGE if large() else TIME_ROWS
        if result.get_num_tuples() > most:
            raise InvalidInputError(
                f"a result with dates or times and these columns holds at most {most:,} "
                "rows here; return the times as text (string(m.created)), page it (SKIP "
                "and LIMIT), or return the times in a statement of their own",
                field="query")
        _check_times(result)
        result.reset_iterator()
    rows: list[list[Any]] = []
    size = 0
    while result.has_next():
        if deadline is not None and len(rows) % _CLOCK_EVERY == 0 \
                and time.monotonic() > deadline:
            raise too_long()
        try:
            row = result.get_next()
        except (ValueError, OverflowError, SystemError, TypeError) as exc:
            raise InvalidInputError(f"row {len(rows) + 1} of the result holds a value Python "
                                    f"cannot read ({exc})", field="query") from None
        size += sum(map(_size, row))
        if size > RESULT_BYTES:
            raise _too_large()
        rows.append(row)
    return rows


def _too_large() -> InvalidInputError:
    return InvalidInputError(
        f"the result is larger than {RESULT_BYTES // 2**20} MB; return fewer rows (a LIMIT) "
        "or smaller values", field="query")


def _size(value: Any) -> int:
    """About what a value of a row holds: its characters and elements, 16 a value."""
    if isinstance(value, str | bytes):
        return 16 + len(value)
    if isinstance(value, list | tuple):
        return 16 + sum(map(_size, value))
    if isinstance(value, dict):
        return 16 + sum(_size(k) + _size(v) for k, v in value.items())
    return 16


def _check_times(result: Any) -> None:
    """Refuse a result holding a time Python cannot (read through Arrow)."""
    try:
        table = result.get_as_arrow()
    except (RuntimeError, pa.ArrowException) as exc:
        raise InvalidInputError(f"a result with times in it could not be checked ({exc})",
                                field="query") from None
    if table.nbytes > RESULT_BYTES:
        raise _too_large()
    for name, column in zip(table.column_names, table.columns, strict=True):
        for chunk in column.chunks:
            if not _in_range(chunk):
                raise InvalidInputError(
                    f"column {name!r} of the result holds a date or a time outside the years "
                    "1 to 9999, which cannot be returned", field="query")


def _in_range(array: pa.Array) -> bool:
    """Whether every time in ``array`` (at any depth) lies in the years 1-9999."""
    kind = array.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) \
            or pa.types.is_fixed_size_list(kind):
        return _in_range(array.flatten())
    if pa.types.is_map(kind):
        return _in_range(array.keys) and _in_range(array.items)
    if pa.types.is_struct(kind):
        return all(_in_range(array.field(i)) for i in range(kind.num_fields))
    if pa.types.is_union(kind):
        return all(_in_range(array.field(i)) for i in range(kind.num_fields))
    if pa.types.is_date32(kind):
        (low, high), numbers = _DAYS, array.view(pa.int32())
    elif pa.types.is_timestamp(kind):
        low, high = (bound * _PER_SECOND[kind.unit] for bound in _SECONDS)
        numbers = array.view(pa.int64())
    elif pa.types.is_date64(kind):
        low, high = (bound * 1_000 for bound in _SECONDS)
        numbers = array.view(pa.int64())
    else:
        return True
    values = pc.min_max(numbers)
    smallest, largest = values["min"].as_py(), values["max"].as_py()
    return smallest is None or (low <= smallest and largest <= high)
