"""Progress on stderr for long commands: a bar over items when the command loops over
them, else the operation's name and the time it has taken, ticking until it ends."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["bar", "phases", "working"]


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


def bar(total: int | None, label: str, *, enabled: bool, unit: str = " memories") -> Any:
    """A tqdm bar on stderr (``update(n)``, ``close()``), or one that shows nothing."""
    if not enabled:
        return _Silent()
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit=unit, file=sys.stderr, leave=False,
                dynamic_ncols=True)


@contextmanager
def working(label: str, *, enabled: bool) -> Iterator[Any]:
    """While the block runs: ``label: 0:03`` on stderr, its time ticking every quarter of a
    second (for one long call that reports nothing on its way), then cleared."""
    if not enabled:
        yield _Silent()
        return
    from tqdm import tqdm

    shown = tqdm(total=None, desc=label, file=sys.stderr, leave=False,
                 bar_format="{desc}: {elapsed}{postfix}")
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(0.25):
            shown.refresh()

    thread = threading.Thread(target=tick, name="graphmem-progress", daemon=True)
    thread.start()
    try:
        yield shown
    finally:
        stop.set()
        thread.join()
        shown.close()


@contextmanager
def phases(label: str, *, enabled: bool, unit: str = " items"
           ) -> Iterator[Callable[[str, int, int | None], None]]:
    """A ``progress(phase, done, total)`` callback that shows one bar per phase (``phase
    label: done/total``, with a rate and the time left once the total is known), each
    replaced by the next; cleared when the block ends."""
    shown: dict[str, Any] = {}
    counted: dict[str, int] = {}

    def report(phase: str, done: int, total: int | None) -> None:
        current = shown.get(phase)
        if current is None or (total is not None and getattr(current, "total", total) is None):
            for old in shown.values():
                old.close()
            shown.clear()
            current = shown[phase] = bar(total, f"{phase} {label}", enabled=enabled,
                                         unit=unit)
            counted[phase] = 0
        current.update(done - counted[phase])
        counted[phase] = done

    try:
        yield report
    finally:
        for old in shown.values():
            old.close()
