"""A progress bar for a long batch (``add_many``, ``reembed``, the client's ``add_many``):
tqdm's, loaded only when asked for, or a stand-in that does nothing."""

from __future__ import annotations

from typing import Any

__all__ = ["progress"]


def progress(total: int, label: str, enabled: bool) -> Any:
    """A tqdm bar, or a stand-in that does nothing."""
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit="mem")


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass
