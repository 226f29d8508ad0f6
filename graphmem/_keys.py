"""The store's secret keys, by purpose: ``forget`` keys the digests of forgotten texts,
``ids`` keys the ids of entities and facts (so that no id is a plain hash of a name).

The engine keeps them where no query, export or backup reaches (a file beside a Kuzu
database, a table of their own in PostgreSQL); they are made on first use. A key is
named in public by its fingerprint (``key_id``), which tells nothing of it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading

from ._engine import Engine

__all__ = ["FORGET", "IDS", "StoreKeys", "key_id"]

FORGET = "forget"
IDS = "ids"


def key_id(key: str) -> str:
    """The public name of a key: 16 hex digits of an HMAC of a constant under it.

    >>> key_id("00" * 32)
    '5014d6d4e50d54ad'
    """
    return hmac.new(key.encode("ascii"), b"graphmem key id", hashlib.sha256).hexdigest()[:16]


class StoreKeys:
    """The keys of one store, read from its engine and made there when missing."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._known: list[tuple[str, str]] | None = None

    def _read(self, *, fresh: bool = False) -> list[tuple[str, str]]:
        if self._known is None or fresh:
            self._known = self._engine.secrets()
        return self._known

    def current(self, purpose: str) -> str:
        """The store's key for ``purpose`` (its first), made when there is none yet.
        Processes sharing a database make it under one lock, so they all use one."""
        with self._lock:
            found = [v for p, v in self._read() if p == purpose]
            if not found:
                with self._engine.exclusive("graphmem-keys"):
                    found = [v for p, v in self._read(fresh=True) if p == purpose]
                    if not found:
                        self._engine.add_secret(purpose, secrets.token_hex(32))
                        found = [v for p, v in self._read(fresh=True) if p == purpose]
            return found[0]

    def forget_keys(self) -> dict[str, str]:
        """Every forget key the store holds, by fingerprint (read afresh: another
        process, or a person giving back a key after a restore, may have added one)."""
        with self._lock:
            return {key_id(v): v for p, v in self._read(fresh=True) if p == FORGET}

    def id_key(self) -> bytes:
        """The key of entity and fact ids."""
        return bytes.fromhex(self.current(IDS))
