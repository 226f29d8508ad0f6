"""The fault trials of a module report to one tally, which fails the module unless, for
each operation, some kills landed before the work was done: a trial whose worker finished
first proves nothing about crashes."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator

import pytest

from tests.faults._harness import Tally


@pytest.fixture(scope="module")
def tally() -> Iterator[Tally]:
    """operation -> the trials run on it in this module."""
    trials: Tally = defaultdict(list)
    yield trials
    for operation, runs in trials.items():
        if os.environ.get("GRAPHMEM_SHOW_TRIALS"):
            print(f"\n{operation}: " + "; ".join(t.describe() for t in runs))
        if not any(t.interrupted for t in runs):
            pytest.fail(f"{operation}: no kill landed before the work was done: "
                        + "; ".join(t.describe() for t in runs), pytrace=False)
