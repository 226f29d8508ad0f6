"""Arrow tables to Python rows without pyarrow's own timestamp conversion, which imports
pandas on first use (~0.25 s: a quarter of what a one-shot ``recall`` may take).

Timestamps without a zone or in UTC (what the engines return) are converted here,
column by column; any other column, or zone, is left to pyarrow.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import IO, Any

import numpy as np
import pyarrow as pa

from ._errors import StoreError

__all__ = ["RowReader", "array_of", "blank_rows", "column_values", "indices", "numbers",
           "offsets", "parquet_batches", "strings", "to_pylist", "validity_bits",
           "vector_array", "vector_matrix"]

_EPOCH = datetime(1970, 1, 1)
_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=UTC)


def _array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    if not isinstance(column, pa.ChunkedArray):
        return column
    if column.num_chunks == 0:  # combine_chunks() of no chunks imports pandas
        return pa.nulls(0, column.type)
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _plain_timestamp(kind: pa.DataType) -> bool:
    return bool(pa.types.is_timestamp(kind) and kind.tz in (None, "UTC"))


#: A timestamp unit in microseconds (``array.cast`` would load ``pyarrow.compute``, 0.2 s of
#: a fresh process).
_MICROS = {"s": 1_000_000, "ms": 1_000, "us": 1}


def _timestamps(array: pa.Array) -> list[datetime | None]:
    kind = array.type
    ticks = array.view(pa.int64()).to_pylist()
    base = _EPOCH if kind.tz is None else _EPOCH_UTC
    if kind.unit == "ns":
        return [None if v is None else base + timedelta(microseconds=v // 1000)
                for v in ticks]
    scale = _MICROS[kind.unit]
    return [None if v is None else base + timedelta(microseconds=v * scale) for v in ticks]


def _present(array: pa.Array) -> np.ndarray:
    """Whether each entry of ``array`` is set (its validity bitmap, read with numpy)."""
    bitmap = array.buffers()[0]
    if bitmap is None or array.null_count == 0:
        return np.ones(len(array), dtype=bool)
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    return bits[array.offset:array.offset + len(array)].astype(bool)


#: How a column's values are made (``_way``): as pyarrow gives them, as timestamps made
#: here, as lists of timestamps made here.
_AS_IS, _TIMES, _TIME_LISTS = 0, 1, 2


def _way(kind: pa.DataType) -> int:
    if _plain_timestamp(kind):
        return _TIMES
    if pa.types.is_list(kind) and _plain_timestamp(kind.value_type):
        return _TIME_LISTS
    return _AS_IS


def column_values(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """The Python values of one column (as ``to_pylist``, datetimes made here), chunk by
    chunk: the strings of a column's chunks joined into one array overflowed its offsets
    past 2 GiB (the sentence vectors of a 1M-memory store, as text)."""
    if isinstance(column, pa.ChunkedArray) and column.num_chunks > 1:
        return [value for chunk in column.chunks for value in column_values(chunk)]
    array = _array(column)
    way = _way(array.type)
    if way == _TIMES:
        return _timestamps(array)
    if way == _TIME_LISTS:
        # From the offsets and the validity bits: ``flatten`` and ``value_lengths`` would
        # load pyarrow.compute (0.2 s of a one-shot recall).
        bounds = array.offsets.to_pylist()
        values = _timestamps(array.values.slice(bounds[0], bounds[-1] - bounds[0]))
        valid = _present(array)
        base = bounds[0]
        return [values[a - base:b - base] if ok else None
                for a, b, ok in zip(bounds[:-1], bounds[1:], valid, strict=True)]
    return array.to_pylist()


class RowReader:
    """Rows of one record batch, one at a time, as ``to_pylist`` gives them: for one row, a
    scalar a column took ~1 us against ~3 us for a column of one row converted (a write's
    row from the recall index's snapshot, 38 columns: ~40 us against ~106)."""

    def __init__(self, batch: pa.RecordBatch) -> None:
        self._columns = list(zip(batch.schema.names, batch.columns, strict=True))
        self._ways = [_way(c.type) for _, c in self._columns]

    def row(self, offset: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for (name, column), way in zip(self._columns, self._ways, strict=True):
            scalar = column[offset]
            if way == _AS_IS:
                out[name] = scalar.as_py()
            elif not scalar.is_valid:
                out[name] = None
            elif way == _TIMES:
                out[name] = _timestamps(column.slice(offset, 1))[0]
            else:
                out[name] = _timestamps(scalar.values)
        return out


def to_pylist(table: pa.Table | pa.RecordBatch) -> list[dict[str, Any]]:
    """``table.to_pylist()``, the same values, without importing pandas."""
    names = table.column_names
    columns = [column_values(c) for c in table.columns]
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


def numbers(column: pa.ChunkedArray | pa.Array, dtype: Any = np.float64) -> np.ndarray:
    """A numeric column as a numpy array of ``dtype`` (nulls as 0), read from its buffer:
    pyarrow's ``to_numpy`` imports pandas too."""
    wanted = np.dtype(dtype)
    array = _array(column).cast(pa.from_numpy_dtype(wanted))
    if len(array) == 0:
        return np.zeros(0, dtype=wanted)
    values = np.frombuffer(array.buffers()[1], dtype=wanted, count=len(array),
                           offset=array.offset * wanted.itemsize).copy()
    if array.null_count:  # (pc.fill_null imports pandas as well)
        valid = np.unpackbits(np.frombuffer(array.buffers()[0], dtype=np.uint8),
                              bitorder="little")[array.offset:array.offset + len(array)]
        values[valid == 0] = 0
    return values


def indices(positions: Any) -> pa.Array:
    """Row positions as an int64 Arrow array for ``take``, made from a numpy buffer:
    ``take`` of a Python list (or ``pa.array`` of one) imports pandas."""
    values = np.ascontiguousarray(positions, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def blank_rows(table: pa.Table, rows: np.ndarray, *, keep: Sequence[str] = ()) -> pa.Table:
    """``table`` with the ``rows`` (a boolean mask) null in every column but ``keep``.

    >>> t = pa.table({"id": strings(["a", "b"]), "text": strings(["x", "y"])})
    >>> to_pylist(blank_rows(t, np.array([False, True]), keep=["id"]))
    [{'id': 'a', 'text': 'x'}, {'id': 'b', 'text': None}]
    """
    import pyarrow.compute as pc  # lazily: 0.2 s of every start

    mask = pa.Array.from_buffers(pa.bool_(), len(rows), [
        None, pa.py_buffer(np.packbits(np.asarray(rows, dtype=bool), bitorder="little"))])
    columns = [column if name in keep else pc.if_else(mask, pa.nulls(len(rows), column.type),
                                                      column)
               for name, column in zip(table.column_names, table.columns, strict=True)]
    return pa.Table.from_arrays(columns, schema=table.schema)


#: The largest offset of a string or list array (Arrow's offsets are int32).
_MAX_OFFSET = np.iinfo(np.int32).max


def offsets(lengths: Sequence[int] | np.ndarray) -> np.ndarray:
    """The int32 offsets of an Arrow string or list array whose values have these
    lengths. A batch whose values exceed 2 GiB (or 2**31 - 1 items) is an error naming
    the size: the offsets would wrap, and the array silently read other values.

    >>> offsets([2, 0, 3]).tolist()
    [0, 2, 2, 5]
    >>> offsets([2**30, 2**30])
    Traceback (most recent call last):
    ...
    graphmem._errors.StoreError: an Arrow batch of 2147483648 bytes or items is over ...
    """
    ends = np.cumsum(np.asarray(lengths, dtype=np.int64))
    total = int(ends[-1]) if len(ends) else 0
    if total > _MAX_OFFSET:
        raise StoreError(f"an Arrow batch of {total} bytes or items is over the "
                         f"{_MAX_OFFSET} its int32 offsets hold; write it in smaller batches")
    out = np.zeros(len(ends) + 1, dtype=np.int32)
    out[1:] = ends
    return out


def strings(values: list[str | None]) -> pa.Array:
    """Python strings (None: null) as an Arrow string array, built from buffers:
    ``pa.array`` of a Python list imports pandas.

    >>> strings(["ab", None, "", "é"]).to_pylist()
    ['ab', None, '', 'é']
    """
    encoded = [b"" if v is None else v.encode("utf-8") for v in values]
    ends = offsets([len(e) for e in encoded])
    return pa.Array.from_buffers(pa.string(), len(encoded), [
        validity_bits([v is not None for v in values]), pa.py_buffer(ends),
        pa.py_buffer(b"".join(encoded))])


_NUMBERS = {pa.int64(): np.int64, pa.int32(): np.int32, pa.float64(): np.float64,
            pa.float32(): np.float32}


def validity_bits(present: Sequence[bool] | np.ndarray) -> pa.Buffer | None:
    """The validity bits of an array whose values are ``present`` (None: all are)."""
    bits = np.asarray(present, dtype=bool)
    return None if bits.all() else pa.py_buffer(np.packbits(bits, bitorder="little"))


def _micros(value: datetime) -> int:
    base = _EPOCH if value.tzinfo is None else _EPOCH_UTC
    return (value - base) // timedelta(microseconds=1)


def array_of(values: list[Any], kind: pa.DataType) -> pa.Array:
    """Python values (None: null) as an Arrow array of ``kind``: strings, int64, float64,
    booleans, timestamps in microseconds (naive ones are UTC), and lists of these; built
    from buffers, as ``pa.array`` would make it but without importing pandas.

    >>> array_of([[1.5], None, []], pa.list_(pa.float64())).to_pylist()
    [[1.5], None, []]
    >>> array_of([True, None, False], pa.bool_()).to_pylist()
    [True, None, False]
    """
    n = len(values)
    present = [v is not None for v in values]
    if pa.types.is_list(kind):
        ends = offsets([len(v) if v is not None else 0 for v in values])
        child = array_of([x for v in values if v is not None for x in v], kind.value_type)
        return pa.Array.from_buffers(kind, n, [validity_bits(present), pa.py_buffer(ends)],
                                     children=[child])
    if pa.types.is_string(kind):
        return strings(values)
    if pa.types.is_boolean(kind):
        data = np.packbits(np.array([bool(v) for v in values], dtype=bool), bitorder="little")
    elif pa.types.is_timestamp(kind):
        data = np.array([_micros(v) if v is not None else 0 for v in values], dtype=np.int64)
    elif kind in _NUMBERS:
        data = np.array([v if v is not None else 0 for v in values], dtype=_NUMBERS[kind])
    else:
        raise TypeError(f"no conversion to {kind}")
    return pa.Array.from_buffers(kind, n, [validity_bits(present), pa.py_buffer(data)])


def parquet_batches(handle: IO[bytes], *, where: str, table: str, names: Sequence[str],
                    types: Sequence[pa.DataType], batch_rows: int) -> Iterator[pa.RecordBatch]:
    """The rows of the Parquet file ``handle`` (named ``where`` in messages) a batch at a
    time, once its columns are found to be ``names`` with ``types`` (those of ``table``;
    ``StoreError`` otherwise). Each batch is checked whole (strings must be UTF-8:
    Parquet readers do not check); reading one may raise ``pa.ArrowException``,
    ``OSError`` or ``ValueError``."""
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(handle)
        schema = parquet.schema_arrow
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise StoreError(f"{where} is not a readable Parquet file: {exc}") from None
    if schema.names != list(names):
        raise StoreError(f"{where} has the columns {schema.names}, not those of table "
                         f"{table}: {list(names)}")
    for column, got, want in zip(names, schema.types, types, strict=True):
        if got != want:
            raise StoreError(f"{where}: column {column} has type {got}, expected {want}")
    return _checked(parquet.iter_batches(batch_size=batch_rows))


def _checked(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        batch.validate(full=True)
        yield batch


def vector_array(matrix: np.ndarray | None, present: np.ndarray | None, n: int) -> pa.Array:
    """Rows of ``matrix`` as a list<float32> array of ``n`` entries, null where not
    ``present`` (all null without a matrix), built from buffers.

    >>> vector_array(np.array([[1, 2], [0, 0]]), np.array([True, False]), 2).to_pylist()
    [[1.0, 2.0], None]
    """
    kind = pa.list_(pa.float32())
    if matrix is None or present is None or not n:
        return pa.nulls(n, kind)
    dim = matrix.shape[1]
    ends = offsets(np.where(present, dim, 0))
    values = np.ascontiguousarray(matrix[present], dtype=np.float32).ravel()
    child = pa.Array.from_buffers(pa.float32(), len(values), [None, pa.py_buffer(values)])
    return pa.Array.from_buffers(kind, n, [validity_bits(present), pa.py_buffer(ends)],
                                 children=[child])


def vector_matrix(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A list<float32> column of vectors of one width as (float32 matrix with zero rows
    where null, presence); ``ValueError`` when the present ones differ in width.

    >>> m, p = vector_matrix(pa.array([[1.0, 2.0], None], pa.list_(pa.float32())))
    >>> m.tolist(), p.tolist()
    ([[1.0, 2.0], [0.0, 0.0]], [True, False])
    """
    array = _array(column)
    n = len(array)
    present = _present(array)
    bounds = np.frombuffer(array.buffers()[1], dtype=np.int32, count=n + 1,
                           offset=array.offset * 4)
    lengths = np.diff(bounds)
    widths = set(np.unique(lengths[present]).tolist())
    if len(widths) > 1:
        raise ValueError(f"vectors of widths {sorted(widths)[:5]}")
    dim = widths.pop() if widths else 0
    child = array.values
    if child.null_count:
        raise ValueError("a vector holds an empty value")
    flat = np.frombuffer(child.buffers()[1], dtype=np.float32, count=len(child),
                         offset=child.offset * 4) if len(child) else np.zeros(0, np.float32)
    matrix = np.zeros((n, dim), dtype=np.float32)
    if dim and not lengths[~present].any():  # the vectors lie one after another
        matrix[present] = flat[bounds[0]:bounds[-1]].reshape(-1, dim)
    elif dim:
        matrix[present] = flat[bounds[:-1][present][:, None] + np.arange(dim)]
    return matrix, present
