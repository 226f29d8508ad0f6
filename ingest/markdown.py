"""Markdown daily files (``workspace*/memory/YYYY-MM-DD.md``) as memories.

Each bullet becomes an episodic memory dated by its file, with its section; a
``→ see [wiki/...]`` pointer (``->`` works too) becomes a REFERENCES edge to a semantic
memory standing for that wiki page; ``[keep]`` becomes the tag ``keep``. Ids derive from
the workspace, date, section and text, so importing again changes nothing.

Files are read only inside the root: every folder on the way is opened without following
a link (``O_NOFOLLOW`` from the root's descriptor), so a planted symbolic link is
refused, never followed, and the compact sweep writes through the same descriptors.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from graphmem import (
    Edge,
    InvalidInputError,
    Kind,
    MemoryInput,
    MemoryStore,
    MergeResult,
    RecordError,
)

__all__ = ["Bullet", "Daily", "DailyFile", "Scan", "UnsafePathError", "bullet_id",
           "import_markdown", "open_dir", "parse_daily", "read_at", "read_inside", "refusal",
           "scan", "scan_memory_dir"]

DAILY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\.md$")
POINTER = re.compile(r"(?:→|->)\s*see\s*\[(wiki/[^\]\s]+)\]", re.IGNORECASE)
KEEP = re.compile(r"\[keep\]", re.IGNORECASE)
_BULLET = re.compile(r"^(\s*)[-*]\s+(.*)$")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


@dataclass
class Bullet:
    """One bullet (with its continuation lines) of a section."""

    section: str
    lines: list[str]
    line_no: int

    @property
    def text(self) -> str:
        """The bullet's text; sub-bullets join with "; ", continuation lines with a space."""
        parts: list[str] = []
        for n, line in enumerate(self.lines):
            match = _BULLET.match(line)
            piece = match.group(2) if match else line.strip()
            if n and match:
                parts.append("; " + piece)
            else:
                parts.append((" " if n else "") + piece)
        return " ".join(_COMMENT.sub("", "".join(parts)).split())

    @property
    def wiki(self) -> list[str]:
        return POINTER.findall(" ".join(self.lines))

    @property
    def keep(self) -> bool:
        return bool(KEEP.search(" ".join(self.lines)))


@dataclass
class Section:
    name: str
    lines: list[str] = field(default_factory=list)
    line_no: int = 0

    def bullets(self) -> list[Bullet]:
        out: list[Bullet] = []
        for offset, line in enumerate(self.lines):
            match = _BULLET.match(line)
            if match and not match.group(1):  # a top-level bullet starts a new one
                out.append(Bullet(self.name, [line], self.line_no + 1 + offset))
            elif out and line.strip() and (line.startswith((" ", "\t")) or match):
                out[-1].lines.append(line)
        return out


@dataclass
class Daily:
    """A parsed daily file: title, the lines before the first section, the sections."""

    day: date
    title: str | None
    preamble: list[str]
    sections: list[Section]
    line_count: int
    #: the lines of the top-level bullets before the first section (not memories: a
    #: memory is a bullet of a section)
    stray: list[int] = field(default_factory=list)

    @property
    def compacted(self) -> bool:
        return any("<!-- mc:compacted" in line for line in self.preamble) or any(
            "<!-- mc:compacted" in line for s in self.sections for line in s.lines)


def parse_daily(text: str, day: date) -> Daily:
    """Sections are ``## Header`` lines at the start of a line (a byte order mark
    before the first is not part of it).

    >>> daily = parse_daily("\\ufeff## Notes\\n- met Ana", date(2026, 3, 1))
    >>> [b.text for s in daily.sections for b in s.bullets()], daily.stray
    (['met Ana'], [])
    >>> parse_daily("# Title\\n- before any section\\n## Notes", date(2026, 3, 1)).stray
    [2]
    """
    lines = text.removeprefix("\ufeff").splitlines()
    title = None
    preamble: list[str] = []
    sections: list[Section] = []
    stray: list[int] = []
    for no, line in enumerate(lines, start=1):
        if line.startswith("## "):
            sections.append(Section(line[3:].strip(), [], no))
        elif sections:
            sections[-1].lines.append(line)
        elif line.startswith("# ") and title is None:
            title = line.rstrip()
        else:
            preamble.append(line)
            match = _BULLET.match(line)
            if match and not match.group(1) and match.group(2).strip():
                stray.append(no)
    return Daily(day, title, preamble, sections, len(lines), stray)


# -- files under the root: read only inside it, never through a link ---------------------
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePathError(RecordError):
    """A path under the root that import and compact refuse: a symbolic link, or a
    daily file that is not a regular file. Nothing is read or written through it."""


@dataclass(frozen=True)
class DailyFile:
    """A ``YYYY-MM-DD.md`` file of a workspace: ``parts`` lead to it from ``root``."""

    workspace: str
    day: date
    root: Path
    parts: tuple[str, ...]

    @property
    def path(self) -> Path:
        return self.root.joinpath(*self.parts)

    @property
    def display(self) -> str:
        return "/".join(self.parts)


@dataclass
class Scan:
    """What ``scan`` found: the daily files, the refused paths, every workspace name."""

    dailies: list[DailyFile] = field(default_factory=list)
    refused: list[UnsafePathError] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    #: files named like a daily whose name is no date ("2026-02-30.md"): not read
    skipped: list[str] = field(default_factory=list)


def refusal(dir_fd: int, name: str, shown: str, exc: OSError) -> OSError | UnsafePathError:
    """The error for a failed open of ``name``: ``UnsafePathError`` when it is a link
    (``O_NOFOLLOW`` refused it), else the ``OSError`` itself."""
    try:
        mode = os.lstat(name, dir_fd=dir_fd).st_mode
    except OSError:
        return exc
    if stat.S_ISLNK(mode):
        return _link_refused(dir_fd, name, shown)
    return exc


def _link_refused(dir_fd: int, name: str, shown: str) -> UnsafePathError:
    try:
        target = os.readlink(name, dir_fd=dir_fd)
    except OSError:
        target = "?"
    return UnsafePathError(
        f"is a symbolic link (to {target[:200]!r}); links under the root are never "
        "followed: replace the link with the real file or folder", source=shown)


def open_dir(root: Path, parts: Sequence[str]) -> int:
    """A descriptor of the directory ``root/parts...`` where each part is a real
    directory, never a link (``root`` itself is the caller's choice). Raises
    ``UnsafePathError`` for a link, ``OSError`` otherwise; the caller closes it."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for n, part in enumerate(parts):
            try:
                inner = os.open(part, _DIR, dir_fd=fd)
            except OSError as exc:
                raise refusal(fd, part, "/".join(parts[:n + 1]), exc) from None
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_at(dir_fd: int, name: str, shown: str) -> bytes:
    """The bytes of the regular file ``name`` in ``dir_fd``, opened without following a
    link (and without blocking on a FIFO planted under its name)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except OSError as exc:
        raise refusal(dir_fd, name, shown, exc) from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePathError("is not a regular file", source=shown)
        os.set_blocking(fd, True)
        return handle.read()


def read_inside(root: Path, parts: Sequence[str]) -> bytes:
    """The bytes of ``root/parts...``, every part checked as ``open_dir`` and
    ``read_at`` do: nothing outside ``root`` is read, whatever links it holds."""
    fd = open_dir(root, parts[:-1])
    try:
        return read_at(fd, parts[-1], "/".join(parts))
    finally:
        os.close(fd)


def scan(root: Path, workspace: str | None = None) -> Scan:
    """The daily files of ``root/workspace*/memory/`` (or of the one workspace named),
    sorted; linked workspaces, memory folders and dailies are refused, not followed.
    Subfolders (cold-storage, dreaming, working) are not daily files."""
    found = Scan()
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        names = sorted(e.name for e in os.scandir(root_fd) if e.name.startswith("workspace"))
        for name in names:
            if workspace is not None and name != workspace:
                continue
            try:
                memory_fd = open_dir(root, (name, "memory"))
            except UnsafePathError as exc:
                found.names.append(name)
                found.refused.append(exc)
                continue
            except OSError:
                continue  # not a workspace folder, or one without memory/
            found.names.append(name)
            try:
                _scan_memory(memory_fd, name, root, (name, "memory"), found)
            finally:
                os.close(memory_fd)
    finally:
        os.close(root_fd)
    return found


def _scan_memory(memory_fd: int, workspace: str, root: Path, parts: tuple[str, ...],
                 found: Scan) -> None:
    for entry in sorted(os.scandir(memory_fd), key=lambda e: e.name):
        match = DAILY.match(entry.name)
        shown = "/".join((*parts, entry.name))
        if not match:
            if entry.name.lower().endswith(".md"):  # notes.md, 2026-11-3.md, a .MD
                found.skipped.append(f"{shown}: not imported, its name is not "
                                     "YYYY-MM-DD.md")
            continue
        try:
            day = date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError:
            found.skipped.append(f"{shown}: not imported, its name is no date")
            continue
        if entry.is_symlink():
            found.refused.append(_link_refused(memory_fd, entry.name, shown))
        elif not entry.is_file(follow_symlinks=False):
            found.refused.append(UnsafePathError("is not a regular file", source=shown))
        else:
            found.dailies.append(DailyFile(workspace, day, root, (*parts, entry.name)))


def scan_memory_dir(directory: Path) -> Scan:
    """A memory folder given directly (its workspace is its parent's name)."""
    real = Path(os.path.realpath(directory))
    found = Scan(names=[real.parent.name or "workspace"])
    fd = open_dir(real.parent, (real.name,))
    try:
        _scan_memory(fd, found.names[0], real.parent, (real.name,), found)
    finally:
        os.close(fd)
    return found


def bullet_id(workspace: str, day: date, bullet: Bullet) -> str:
    digest = hashlib.sha1(f"{bullet.section}\n{bullet.text}".encode()).hexdigest()[:16]
    return f"urn:md:{workspace}:{day.isoformat()}:{digest}"


def wiki_id(page: str) -> str:
    return f"urn:wiki:{page}"


def file_records(workspace: str, day: date, path: Path, root: Path, *, owner: str | None = None
                 ) -> tuple[list[MemoryInput], list[Edge], set[str], list[str]]:
    """The memories, edges and wiki pages of one daily file (read inside ``root``,
    never through a link), and what of it is not imported (a bullet before the first
    section), each naming the file and line."""
    try:
        text = read_inside(root, path.relative_to(root).parts).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(f"not UTF-8 (byte {exc.start})", source=str(path)) from None
    except OSError as exc:
        raise RecordError(f"cannot read: {exc.strerror}", source=str(path)) from None
    daily = parse_daily(text, day)
    when = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
    records, edges, pages = [], [], set()
    for section in daily.sections:
        for bullet in section.bullets():
            if not bullet.text:
                continue
            memory = bullet_id(workspace, day, bullet)
            try:
                records.append(MemoryInput.parse({
                    "id": memory, "text": bullet.text, "kind": Kind.EPISODIC, "owner": owner,
                    "created": when, "observed": when,
                    "tags": ("keep",) if bullet.keep else (),
                    "provenance": {"source": "markdown", "workspace": workspace,
                                   "file": str(path.relative_to(root)),
                                   "section": section.name, "line": bullet.line_no}}))
            except InvalidInputError as exc:
                message = str(exc).split(": ", 1)[-1]
                raise RecordError(f"line {bullet.line_no}: {message}", source=str(path),
                                  field=exc.field) from None
            for page in bullet.wiki:
                pages.add(page)
                edges.append(Edge("references", memory, wiki_id(page), source="wiki"))
    shown = path.relative_to(root)
    stray = [f"{shown}: line {no}: not imported, a bullet before the first ## section"
             for no in daily.stray]
    return records, edges, pages, stray


def import_markdown(store: MemoryStore, root: str | Path, *, workspace: str | None = None,
                    owner: str | None = None) -> MergeResult:
    """Import every daily file under ``root`` (all in one transaction). A symbolic link
    where a workspace, memory folder or daily file should be is refused (nothing is
    imported): the import reads nothing outside ``root``. What is not imported (a file
    whose name is no date, a bullet before the first section) is named in the
    result's ``skipped``."""
    base = Path(root)
    if not base.is_dir():
        raise RecordError("not a directory", source=str(base))
    try:
        found = scan(base, workspace)
        if not found.names and workspace is None and any(
                DAILY.match(name) for name in os.listdir(base)):
            found = scan_memory_dir(base)  # a memory dir given directly
    except OSError as exc:
        raise RecordError(f"cannot read: {exc.strerror or exc}", source=str(base)) from None
    if found.refused:
        more = len(found.refused) - 1
        first = found.refused[0]
        raise UnsafePathError(str(first) + (f" (and {more} more refused)" if more else ""))
    if not found.names:
        raise RecordError("no workspace*/memory folder found" +
                          (f" named {workspace}" if workspace else ""), source=str(base))
    records: list[MemoryInput] = []
    edges: list[Edge] = []
    pages: set[str] = set()
    skipped = list(found.skipped)
    for daily in found.dailies:
        r, e, p, stray = file_records(daily.workspace, daily.day, daily.path, daily.root,
                                      owner=owner)
        records += r
        edges += e
        pages |= p
        skipped += stray
    records += [MemoryInput(id=wiki_id(p), text=f"Wiki page {p}", subject=p, kind=Kind.SEMANTIC,
                            owner=owner, provenance={"source": "markdown", "wiki": p})
                for p in sorted(pages)]
    unique = {r.id: r for r in records}
    result = store.merge(list(unique.values()), edges=edges, reason="markdown import")
    if result.created:
        store.derive_links(result.created)
    result.skipped = skipped
    return result
