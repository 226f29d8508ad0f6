"""A store moved between engines (Kuzu to PostgreSQL and back) through the port: its
tables read a page at a time from one engine and loaded into the other in one
transaction of the target, checked as a backup's are (``_backup_tables.copy_tables``),
then the store's secret keys, which the target keeps its own way.
"""

from __future__ import annotations

from ._backup_tables import copy_tables
from ._engine import Engine

__all__ = ["copy_store"]


def copy_store(source: Engine, target: Engine, *, keys: bool = True) -> int:
    """Copy every row of ``source`` into ``target`` (which must hold no memory) in one
    transaction of the target, a page at a time, and its keys unless ``keys`` is false
    (a backup holds none); returns how many memories were copied. Read inside
    ``source.snapshot()`` for a consistent copy while writers go on."""
    copied = copy_tables(source, target)
    held = set(target.secrets()) if keys else set()
    for key in source.secrets() if keys else ():
        if key not in held:
            target.add_secret(*key)
    return copied.memories
