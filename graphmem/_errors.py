"""graphmem's exceptions: one base class, a small tree, each message saying what to do.

    GraphmemError
    ├── StoreError                   the database cannot be opened or used
    │   ├── StoreLockedError         another process (or handle) holds the database
    │   ├── SchemaVersionError       the database was written by a newer graphmem
    │   ├── ReadOnlyStoreError       a write on a store opened read-only
    │   └── UnsupportedError         the store's engine does not offer the operation
    ├── InvalidInputError            a value the caller passed is wrong (names the field)
    │   └── RecordError              a record of a file is wrong (names file, index, id, field)
    ├── NotFoundError                no such memory (for this owner)
    ├── ConflictError                the operation does not fit the memory's state
    ├── ConfirmationRequiredError    a destructive operation without confirm=True
    ├── EmbedderMismatchError        the store was embedded with another model
    └── BackendUnavailableError      an optional service (Ollama, a sidecar) did not answer

Foreign errors (Kuzu's bare ``RuntimeError``, I/O errors) are mapped to these at the
boundary that meets them, with ``raise ... from exc``.
"""

from __future__ import annotations

__all__ = [
    "CODES",
    "BackendUnavailableError",
    "ConfirmationRequiredError",
    "ConflictError",
    "EmbedderMismatchError",
    "GraphmemError",
    "InvalidInputError",
    "NotFoundError",
    "ReadOnlyStoreError",
    "RecordError",
    "SchemaVersionError",
    "StoreError",
    "StoreLockedError",
    "UnsupportedError",
    "error_code",
]


class GraphmemError(Exception):
    """Base class of every error graphmem raises on purpose."""


class StoreError(GraphmemError):
    """The database could not be opened or used."""


class StoreLockedError(StoreError):
    """Another process holds the database's write lock (or, with ``here`` true, this
    process has it open already)."""

    def __init__(self, message: str, *, here: bool = False) -> None:
        super().__init__(message)
        self.here = here


class SchemaVersionError(StoreError):
    """The database's schema is newer than this graphmem understands."""


class ReadOnlyStoreError(StoreError):
    """A write was attempted on a store opened read-only, or in read-only Cypher.

    ``reason`` is what was refused without the library's way to ask for a write
    (``write=True``, ``--write``), for a face that offers none (the sidecar)."""

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class UnsupportedError(StoreError):
    """The store's engine does not offer the operation (Cypher is Kuzu's)."""


class InvalidInputError(GraphmemError, ValueError):
    """A value passed by the caller is not acceptable.

    ``field`` names the offending parameter or record field when known.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def short_id(identifier: str) -> str:
    """An id as a message names it: whole up to 120 characters, else its start and length.

    >>> short_id("urn:a"), short_id("x" * 200)[-16:]
    ('urn:a', '(200 characters)')
    """
    if len(identifier) <= 120:
        return identifier
    return f"{identifier[:100]}... ({len(identifier):,} characters)"


class RecordError(InvalidInputError):
    """A record of an input file is malformed; nothing was written."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        index: int | None = None,
        record_id: str | None = None,
        field: str | None = None,
    ) -> None:
        where = []
        if source:
            where.append(source)
        if index is not None:
            where.append(f"record {index}")
        if record_id:  # a crafted id of 10,000 characters made a 10 KB error line
            where.append(f"id {short_id(record_id)}")
        if field:
            where.append(f"field {field}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message, field=field)
        self.source = source
        self.index = index
        self.record_id = record_id


class NotFoundError(GraphmemError, LookupError):
    """No memory with this id is visible to the caller."""


class ConflictError(GraphmemError):
    """The operation does not fit the memory's current state."""


class ConfirmationRequiredError(GraphmemError):
    """A destructive operation was called without ``confirm=True``."""


class EmbedderMismatchError(GraphmemError):
    """The store's vectors come from another embedding model."""


class BackendUnavailableError(GraphmemError):
    """An optional backend (Ollama, a sidecar) could not be reached."""


#: Each error's stable code, most specific first: the ``error`` of the sidecar's error
#: bodies and of the command line's with --json; a client maps the codes back.
CODES: tuple[tuple[type[GraphmemError], str], ...] = (
    (NotFoundError, "not_found"),
    (InvalidInputError, "invalid_input"),
    (ConfirmationRequiredError, "confirmation_required"),
    (ConflictError, "conflict"),
    (EmbedderMismatchError, "embedder_mismatch"),
    (ReadOnlyStoreError, "read_only"),
    (StoreLockedError, "store_locked"),
    (UnsupportedError, "unsupported"),
    (BackendUnavailableError, "backend_unavailable"),
    (GraphmemError, "store_error"),
)


def error_code(exc: BaseException) -> str:
    """The code of an error: its own ``code`` when it carries one (a sidecar's answer),
    else its class's in ``CODES``.

    >>> error_code(NotFoundError("no memory m1")), error_code(RecordError("bad"))
    ('not_found', 'invalid_input')
    """
    code = getattr(exc, "code", None)
    if isinstance(code, str):
        return code
    return next((name for kind, name in CODES if isinstance(exc, kind)), "error")
