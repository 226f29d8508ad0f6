"""Bearer tokens: a JSON file mapping each token to its owner and scopes.

    {"tok-alice-9f2c...": {"owner": "alice", "scopes": ["read", "write"]},
     "tok-admin-77aa...": {"owner": "ops", "scopes": ["read", "write", "admin"]}}

A token sees and changes only its owner's memories. ``all_owners`` is the exception,
granted explicitly: ad-hoc Cypher and backups cannot be confined to one owner, so they
need it (with ``read``, resp. ``admin``). Without a tokens file the sidecar serves
loopback clients as the local user, who sees every owner.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import InvalidInputError
from .._input import owner_problem

__all__ = ["SCOPES", "Principal", "Tokens"]

SCOPES = ("read", "write", "admin", "all_owners")

_VISIBLE = re.compile(r"[!-~]+")


@dataclass(frozen=True)
class Principal:
    """Who is calling: their owner (``None``: the local user, every owner) and scopes;
    the local user may name the actor its changes record (``X-Graphmem-Actor``: an
    agent working through the store's sidecar records itself, as it would embedded)."""

    owner: str | None
    scopes: frozenset[str]
    actor: str | None = None

    def allows(self, scope: str) -> bool:
        return scope in self.scopes

    @property
    def acting(self) -> str | None:
        """The actor of this caller's changes: the named one, else the token's owner
        (``None``: the store's agent id)."""
        return self.actor or self.owner


LOCAL = Principal(owner=None, scopes=frozenset(SCOPES))


class Tokens:
    """The configured tokens; ``lookup`` compares in constant time."""

    def __init__(self, entries: Mapping[str, Principal]) -> None:
        self._entries = dict(entries)

    def __len__(self) -> int:
        return len(self._entries)

    @classmethod
    def from_mapping(cls, data: Any, *, source: str = "<tokens>") -> Tokens:
        if not isinstance(data, dict) or not data:
            raise InvalidInputError(f"{source}: expected a JSON object mapping each token to "
                                    '{"owner": ..., "scopes": [...]}', field="tokens")
        entries = {}
        for n, (token, spec) in enumerate(data.items()):
            where = f"{source}: token #{n + 1}"
            if not isinstance(token, str) or len(token) < 16 or not _VISIBLE.fullmatch(token):
                raise InvalidInputError(f"{where}: a token must be a string of at least 16 "
                                        "visible ASCII characters, without spaces (it "
                                        "travels in an HTTP header)", field="token")
            if not isinstance(spec, dict) or set(spec) - {"owner", "scopes"}:
                raise InvalidInputError(f'{where}: expected {{"owner": ..., "scopes": [...]}}',
                                        field="token")
            owner, scopes = spec.get("owner"), spec.get("scopes", ["read"])
            problem = owner_problem(owner)  # the owner rule of every call
            if problem is not None:
                raise InvalidInputError(f"{where}: owner {problem}", field="owner")
            if not isinstance(scopes, list) or not scopes or any(s not in SCOPES
                                                                 for s in scopes):
                raise InvalidInputError(f"{where}: scopes must be a non-empty list of "
                                        f"{', '.join(SCOPES)}", field="scopes")
            entries[token] = Principal(owner=owner, scopes=frozenset(scopes))
        return cls(entries)

    @classmethod
    def load(cls, path: str | Path) -> Tokens:
        source = Path(path)
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidInputError(f"{source}: cannot read the tokens file ({exc.strerror})",
                                    field="tokens") from None
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"{source}: not UTF-8 (byte {exc.start})",
                                    field="tokens") from None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise InvalidInputError(f"{source}: not JSON ({exc})", field="tokens") from None
        except RecursionError:
            raise InvalidInputError(f"{source}: not JSON (nested too deep)",
                                    field="tokens") from None
        return cls.from_mapping(data, source=str(source))

    def lookup(self, token: str) -> Principal | None:
        found = None
        for known, principal in self._entries.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                found = principal
        return found
