"""What routes ask FastAPI for: the caller the gate authenticated, with the scopes a
route needs (the gate reads them too, to refuse before a body is read), and memory ids
decoded from their path segment."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import unquote

from fastapi import Depends, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from .._errors import InvalidInputError
from .._input import check_owner
from ._auth import Principal
from ._guard import PRINCIPAL, Refusal

__all__ = ["Admin", "AllOwners", "Caller", "MemoryId", "OwnerParam", "Reader", "Writer",
           "scoped_owner"]

_BEARER = HTTPBearer(
    scheme_name="bearer", auto_error=False,
    description="A token from the sidecar's tokens file (--tokens / GRAPHMEM_TOKENS_FILE): "
                "it sees only its owner's memories, within its scopes (read, write, "
                "admin; all_owners for ad-hoc Cypher and backups, which cover every "
                "owner). A sidecar without tokens serves loopback clients, with no token, "
                "as the local user.")


class _Need:
    """A dependency: the caller the gate authenticated, who must hold ``needs`` (the gate
    reads ``needs`` too, to refuse before a body is read)."""

    def __init__(self, needs: str | None) -> None:
        self.needs = needs

    def __call__(self, request: Request, _: Annotated[HTTPAuthorizationCredentials | None,
                                                      Depends(_BEARER)]) -> Principal:
        principal = request.scope.get(PRINCIPAL)
        if not isinstance(principal, Principal):  # the gate always sets one
            raise Refusal(401, "unauthorized", "send 'Authorization: Bearer <token>'",
                          headers=[("www-authenticate", "Bearer")])
        if self.needs and not principal.allows(self.needs):
            raise Refusal(403, "forbidden", f"this token lacks the {self.needs} scope")
        return principal


def _memory_id(memory_id: Annotated[str, Path(
        description="The memory's id as one path segment, percent-encoded: every reserved "
                    "character, '/' included (urllib.parse.quote(id, safe='')).")]) -> str:
    # The gate re-encoded each raw segment, so this decodes exactly once.
    return unquote(memory_id, errors="strict")


def scoped_owner(principal: Principal, owner: str | None) -> str | None:
    """The owner a call works on: the token's own (another one is refused), or for the
    local user the one asked for (None: every owner)."""
    if owner is not None:  # "?owner=" asks about no one: said, not answered with nothing
        check_owner(owner)
    if principal.owner is None:
        return owner
    if owner is not None and owner != principal.owner:
        raise InvalidInputError("owner must be left out (or be the token's own)",
                                field="owner")
    return principal.owner


# FastAPI resolves these annotations by name in the modules that use them.
Caller = Annotated[Principal, Depends(_Need(None))]
Reader = Annotated[Principal, Depends(_Need("read"))]
Writer = Annotated[Principal, Depends(_Need("write"))]
Admin = Annotated[Principal, Depends(_Need("admin"))]
#: A second dependency of routes that read every owner's memories (Cypher, backups).
AllOwners = Annotated[Principal, Depends(_Need("all_owners"))]
MemoryId = Annotated[str, Depends(_memory_id)]
#: ``?owner=``: for the local user, one owner's memories only; a token may repeat its own.
OwnerParam = Annotated[str | None, Query(description="Only this owner's memories (the local "
                                                     "user); a token may only give its own.")]
