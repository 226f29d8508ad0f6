"""``MemoryStore``: the one entry object, assembled from the store's layers."""

from __future__ import annotations

import os

from ._backup import BackupInfo, backup, restore
from ._extract._mixin import ConversationMixin
from ._lifecycle._mixin import LifecycleMixin
from ._settings import Settings
from ._views import ViewsMixin

__all__ = ["MemoryStore"]


class MemoryStore(ConversationMixin, LifecycleMixin, ViewsMixin):
    """An agent's memories in an embedded Kuzu graph.

    Parameters
    ----------
    path : str or os.PathLike
        A database directory (created when missing), or ``":memory:"``.
    settings : Settings, optional
        Configuration; ``Settings.from_env()`` when omitted.
    embedder : Embedder or str, optional
        The embedding model: an ``Embedder`` or a spec (``"minilm"``, ``"hashing"``,
        ``"ollama:MODEL"``). By default the one the store was created with, or
        ``settings.embedder`` (the bundled MiniLM) for a new store. A model other than
        the store's is refused; ``reembed`` switches.
    read_only : bool
        Open without write access (several read-only processes may share a database).
    clock : callable, optional
        Returns the current time; tests and replays pass their own.

    Examples
    --------
    >>> from graphmem import MemoryStore
    >>> with MemoryStore(":memory:", embedder="hashing") as store:
    ...     memory = store.add("The user prefers TypeScript over JavaScript", kind="semantic")
    ...     store.get(memory.id).kind.value
    'semantic'
    """

    def backup(self, directory: str | os.PathLike[str]) -> BackupInfo:
        """Write a consistent snapshot of the store to ``directory`` (new or empty).

        Writers wait while it is taken; readers go on. ``MemoryStore.restore_backup``
        makes a new database from it.
        """
        return backup(self, directory)

    @staticmethod
    def restore_backup(directory: str | os.PathLike[str], target: str | os.PathLike[str],
                       *, settings: Settings | None = None) -> BackupInfo:
        """Create the database ``target`` (a new or empty directory) from a backup, after
        checking its manifest and checksums; an older schema is migrated."""
        return restore(directory, target, settings=settings)

