"""A purge in a process of its own: ``python -m graphmem._kuzu._apart DIRECTORY POOL_MB``.

``KuzuEngine.close`` runs it when a store's files still hold bytes of a text purged
while it was open (Kuzu can write a page's unused bytes from the process's freed
memory); this process never held the text, so its pages cannot carry it.
"""

from __future__ import annotations

import sys

from ._engine import KuzuEngine


def main(argv: list[str]) -> int:
    directory, pool = argv
    engine = KuzuEngine(directory, buffer_pool_mb=int(pool))
    try:
        engine.purge()
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
