"""How a command finds the sidecar that holds a database: ``graphmem serve`` writes
``<db>.sidecar.json`` beside the database directory while it serves it, and removes it
when it stops.

The file says where the sidecar listens (a loopback URL: the file is for clients on this
machine), which store it serves, and its process id. It holds no secret. A client trusts
it only when it belongs to the user running the client and nobody else may write it
(a planted file could otherwise send that user's token elsewhere), when its URL is a
loopback one, and, once it asks, when the sidecar there serves the same ``store_id``.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["Discovery", "discover", "discovery_path", "forget_discovery", "write_discovery"]

_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class Discovery:
    """What a serving sidecar wrote about itself."""

    url: str
    store_id: str | None
    pid: int
    auth: str


def discovery_path(db: str | os.PathLike[str]) -> Path:
    """``<db>.sidecar.json``, beside the database directory."""
    path = Path(db)
    return path.with_name(path.name + ".sidecar.json")


def write_discovery(db: str | os.PathLike[str], found: Discovery) -> Path | None:
    """Write the discovery file of ``db`` (atomically); None when the directory beside
    the database is not writable (clients then need --sidecar)."""
    target = discovery_path(db)
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    try:
        tmp.write_text(json.dumps(asdict(found), indent=2) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return None
    return target


def forget_discovery(db: str | os.PathLike[str], *, pid: int | None = None) -> None:
    """Remove the discovery file of ``db`` if it is this process's (or ``pid``'s)."""
    target = discovery_path(db)
    found = _read(target)
    if found is not None and found.pid == (os.getpid() if pid is None else pid):
        with contextlib.suppress(OSError):
            target.unlink()


def discover(db: str | os.PathLike[str]) -> Discovery | None:
    """The sidecar that says it serves ``db``, if its file is there, is trustworthy (see
    the module docstring) and its process is alive; else None."""
    if str(db) == ":memory:":
        return None
    target = discovery_path(db)
    try:
        info = target.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return None
    found = _read(target)
    if found is None or not _alive(found.pid):
        return None
    return found


def _read(path: Path) -> Discovery | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        found = Discovery(url=str(data["url"]), store_id=data.get("store_id"),
                          pid=int(data["pid"]), auth=str(data.get("auth", "local")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    parts = urlsplit(found.url)
    if parts.scheme != "http" or parts.hostname not in _LOOPBACK or parts.path not in ("", "/"):
        return None
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # alive, someone else's: the store_id check decides
    return True
