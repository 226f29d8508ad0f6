"""The ``graphmem`` command line: thin commands over ``MemoryStore``."""

from __future__ import annotations

from . import (  # noqa: F401
    _analyst,
    _backup,
    _core,
    _eval,
    _faces,
    _ingest,
    _learn,
    _lifecycle,
    _recall,
    _ui,
)
from ._app import add_global_options, cli

add_global_options(cli)  # --db, --json ... after the subcommand too

__all__ = ["cli", "main"]


def main() -> None:
    """Entry point of the ``graphmem`` console script."""
    cli(prog_name="graphmem")
