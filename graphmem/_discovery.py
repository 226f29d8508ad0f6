"""How a command finds the sidecar that holds a database: ``graphmem serve`` writes
``<db>.sidecar.json`` beside the database directory while it serves it, and removes it
when it stops.

The file says where the sidecar listens (a loopback URL: the file is for clients on this
machine), which store it serves, and its process id. A sidecar started for a store
(``serve --auto``: what ``graphmem mcp`` and ``graphmem.connect(path)`` start) also
writes the secret it wants from its clients, and then the file is readable by its user
alone: whoever may open the database may use its sidecar, and nobody else on the
machine. A client trusts the file only when it belongs to the user running the client
and nobody else may write it (a planted file could otherwise send that user's token
elsewhere), when its URL is a loopback one, and, once it asks, when the sidecar there
serves the same ``store_id``.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["Discovery", "discover", "discovery_path", "forget_discovery", "held_by",
           "process_alive", "write_discovery"]

_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class Discovery:
    """What a serving sidecar wrote about itself."""

    url: str
    store_id: str | None
    pid: int
    auth: str
    #: the bearer token a sidecar started for this store wants (``auth == "secret"``)
    secret: str | None = None


def discovery_path(db: str | os.PathLike[str]) -> Path:
    """``<db>.sidecar.json``, beside the database directory, its symbolic links followed:
    a database named through a link is found by whoever names it otherwise."""
    path = Path(os.path.realpath(db))
    if not path.name:
        from ._errors import StoreError

        raise StoreError(f"{db} is the filesystem's root: a database goes into a directory "
                         "of its own; choose another --db")
    return path.with_name(path.name + ".sidecar.json")


def write_discovery(db: str | os.PathLike[str], found: Discovery) -> Path | None:
    """Write the discovery file of ``db`` (atomically; only its user may read it when it
    holds a secret); None when the directory beside the database is not writable
    (clients then need --sidecar)."""
    target = discovery_path(db)
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    data = {k: v for k, v in asdict(found).items() if k != "secret" or v is not None}
    mode = 0o600 if found.secret else 0o644
    try:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(json.dumps(data, indent=2) + "\n")
        os.chmod(tmp, mode)
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
    if found is None or not process_alive(found.pid):
        return None
    if found.secret and info.st_mode & (stat.S_IRGRP | stat.S_IROTH):
        return None  # a secret others could read is no secret: not this sidecar's file
    return found


def _read(path: Path) -> Discovery | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        secret = data.get("secret")
        found = Discovery(url=str(data["url"]), store_id=data.get("store_id"),
                          pid=int(data["pid"]), auth=str(data.get("auth", "local")),
                          secret=str(secret) if secret else None)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    parts = urlsplit(found.url)
    if parts.scheme != "http" or parts.hostname not in _LOOPBACK or parts.path not in ("", "/"):
        return None
    return found


def process_alive(pid: int) -> bool:
    """Whether a process of this id exists (another user's counts: it is not ours to judge)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # someone else's process (a discovery file's store_id check decides)
    return True


def held_by(db: str | os.PathLike[str]) -> str:
    """Who holds the locked database ``db`` and how to share it, as a sentence for the
    lock error: the sidecar serving it (its URL), else a process that does not serve it."""
    found = discover(db)
    if found is not None:
        return (f"the graphmem sidecar at {found.url} (process {found.pid}) holds it: work "
                f"through it with graphmem.connect({str(db)!r}) (the same API) or `graphmem "
                f"--db {db} COMMAND`")
    return ("no sidecar serves it: a process holds it alone (a MemoryStore in a notebook or "
            "script, `graphmem mcp --embedded`, a running command). Close it there, or open "
            f"it there with graphmem.connect({str(db)!r}) so that others can share it")
