"""The secret keys of a Kuzu store, in a file of their own beside the database
(``graphmem.keys``, mode 0600), never in a table: no Cypher, export or backup reads it.

One key a line, ``PURPOSE VALUE`` (hex), oldest first. The file is replaced whole on
each change (written beside it, synced, renamed), so a crash leaves the old or the new.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from .._errors import ReadOnlyStoreError, StoreError

__all__ = ["KEY_FILE", "KeyFile"]

KEY_FILE = "graphmem.keys"
_LINE = re.compile(r"^([a-z]{1,32}) ([0-9a-f]{32,128})$")
#: A real key file is a few lines; anything larger is not one.
_LIMIT = 1 << 16


class KeyFile:
    """The keys of one store: in ``directory``'s key file, or in memory (``None``)."""

    def __init__(self, directory: str | None, *, read_only: bool) -> None:
        self._path = Path(directory) / KEY_FILE if directory is not None else None
        self._read_only = read_only
        self._memory: list[tuple[str, str]] = []

    @property
    def where(self) -> str:
        return str(self._path) if self._path is not None else "the process (in memory)"

    def read(self) -> list[tuple[str, str]]:
        """Every key as (purpose, value), oldest first."""
        if self._path is None:
            return list(self._memory)
        try:
            fd = os.open(self._path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StoreError(f"cannot read the store's key file {self._path}: "
                             f"{exc.strerror or exc}") from None
        with os.fdopen(fd, "rb") as handle:
            raw = handle.read(_LIMIT + 1)
        keys = []
        for number, line in enumerate(raw.decode("ascii", "replace").splitlines(), 1):
            found = _LINE.match(line.strip())
            if line.strip() and (found is None or len(raw) > _LIMIT):
                raise StoreError(f"{self._path} line {number} is not a key line "
                                 "(PURPOSE HEX); restore the file from the original store")
            if found:
                keys.append((found.group(1), found.group(2)))
        return keys

    def add(self, purpose: str, value: str) -> None:
        """Keep one more key (the file is rewritten whole, mode 0600)."""
        if not _LINE.match(f"{purpose} {value}"):
            raise ValueError(f"not a key: {purpose!r}")
        if self._path is None:
            self._memory.append((purpose, value))
            return
        if self._read_only:
            raise ReadOnlyStoreError(f"the store at {self._path.parent} was opened read-only: "
                                     "it cannot make a key")
        lines = [f"{p} {v}\n" for p, v in [*self.read(), (purpose, value)]]
        tmp = self._path.with_name(f".{KEY_FILE}.{os.getpid()}")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write("".join(lines))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self._path)
            directory = os.open(self._path.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise StoreError(f"cannot write the store's key file {self._path}: "
                             f"{exc.strerror or exc}") from None
