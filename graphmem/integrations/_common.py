"""What the framework adapters share: the stores they accept, the error that names the
missing extra, and listing an owner's memories on either kind of store."""

from __future__ import annotations

from .._facade import MemoryStore
from .._models import Memory, Status
from ..client import Client

__all__ = ["HELD", "Memories", "held_memories", "missing_extra"]

#: A store an adapter works over: embedded, or served by ``graphmem serve``.
Memories = MemoryStore | Client

#: What a store still holds for its callers (tombstoned and forgotten ones are gone).
HELD = frozenset({Status.ACTIVE, Status.CANDIDATE, Status.ARCHIVED})


def missing_extra(module: str, extra: str, exc: ImportError) -> ImportError:
    """The ImportError of an adapter whose framework is not installed: it names the
    extra that installs it."""
    return ImportError(f"graphmem.integrations.{module} needs the {extra} extra: "
                       f"pip install 'graphmem[{extra}]' ({exc})")


def held_memories(store: Memories, owner: str | None) -> list[Memory]:
    """The memories ``store`` holds (of ``owner``; of everyone for None) that are current:
    held and not superseded. A sidecar lists them through its export."""
    if isinstance(store, MemoryStore):
        found = store.memories(owner=owner)
    else:
        found = [Memory.model_validate(m) for m in store.export(owner)["memories"]]
    return [m for m in found if m.status in HELD and not m.superseded_by]

