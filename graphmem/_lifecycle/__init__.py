"""The lifecycle's algorithms: the archivist's rules, centrality, summaries, and the
results they report (``_results``, whose names this package gives). The lifecycle
manager that applies them to a store is ``graphmem._store._lifecycle``."""

from . import _results
from ._results import *  # noqa: F403
from ._rules import ARCHIVE_REASONS, PROMOTE_REASONS, evaluate_memory_lifecycle

__all__ = ["ARCHIVE_REASONS", "PROMOTE_REASONS", "evaluate_memory_lifecycle"]
__all__ += _results.__all__
