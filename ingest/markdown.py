"""Markdown daily files (``workspace*/memory/YYYY-MM-DD.md``) as memories.

Each bullet becomes an episodic memory dated by its file, with its section; a
``→ see [wiki/...]`` pointer (``->`` works too) becomes a REFERENCES edge to a semantic
memory standing for that wiki page; ``[keep]`` becomes the tag ``keep``. Ids derive from
the workspace, date, section and text, so importing again changes nothing.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from pydantic import ValidationError

from graphmem import Edge, Kind, MemoryInput, MemoryStore, MergeResult, RecordError
from graphmem._input import validation_message

__all__ = ["Bullet", "Daily", "bullet_id", "daily_files", "import_markdown", "parse_daily",
           "workspaces"]

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

    @property
    def compacted(self) -> bool:
        return any("<!-- mc:compacted" in line for line in self.preamble) or any(
            "<!-- mc:compacted" in line for s in self.sections for line in s.lines)


def parse_daily(text: str, day: date) -> Daily:
    """Sections are ``## Header`` lines at the start of a line."""
    lines = text.splitlines()
    title = None
    preamble: list[str] = []
    sections: list[Section] = []
    for no, line in enumerate(lines, start=1):
        if line.startswith("## "):
            sections.append(Section(line[3:].strip(), [], no))
        elif sections:
            sections[-1].lines.append(line)
        elif line.startswith("# ") and title is None:
            title = line.rstrip()
        else:
            preamble.append(line)
    return Daily(day, title, preamble, sections, len(lines))


def workspaces(root: Path, name: str | None = None) -> list[tuple[str, Path]]:
    """``(workspace, memory dir)`` pairs under ``root`` (``workspace*/memory``), or the one
    called ``name``."""
    found = sorted((p.parent.name, p) for p in root.glob("workspace*/memory") if p.is_dir())
    if name is not None:
        found = [(n, p) for n, p in found if n == name]
    return found


def daily_files(memory_dir: Path) -> list[tuple[date, Path]]:
    """The ``YYYY-MM-DD.md`` files directly in a memory dir (not cold-storage, dreaming,
    working or other subfolders)."""
    out = []
    for path in sorted(memory_dir.iterdir()):
        match = DAILY.match(path.name)
        if match and path.is_file():
            try:
                out.append((date(int(match[1]), int(match[2]), int(match[3])), path))
            except ValueError:
                continue
    return out


def bullet_id(workspace: str, day: date, bullet: Bullet) -> str:
    digest = hashlib.sha1(f"{bullet.section}\n{bullet.text}".encode()).hexdigest()[:16]
    return f"urn:md:{workspace}:{day.isoformat()}:{digest}"


def wiki_id(page: str) -> str:
    return f"urn:wiki:{page}"


def file_records(workspace: str, day: date, path: Path, root: Path, *, owner: str | None = None
                 ) -> tuple[list[MemoryInput], list[Edge], set[str]]:
    """The memories, edges and wiki pages of one daily file."""
    try:
        text = path.read_text(encoding="utf-8")
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
                records.append(MemoryInput(
                    id=memory, text=bullet.text, kind=Kind.EPISODIC, owner=owner,
                    created=when, observed=when, tags=("keep",) if bullet.keep else (),
                    provenance={"source": "markdown", "workspace": workspace,
                                "file": str(path.relative_to(root)), "section": section.name,
                                "line": bullet.line_no}))
            except ValidationError as exc:
                field, message = validation_message(exc)
                raise RecordError(f"line {bullet.line_no}: {message}", source=str(path),
                                  field=field) from None
            for page in bullet.wiki:
                pages.add(page)
                edges.append(Edge("references", memory, wiki_id(page), source="wiki"))
    return records, edges, pages


def import_markdown(store: MemoryStore, root: str | Path, *, workspace: str | None = None,
                    owner: str | None = None) -> MergeResult:
    """Import every daily file under ``root`` (all in one transaction)."""
    base = Path(root)
    if not base.is_dir():
        raise RecordError("not a directory", source=str(base))
    found = workspaces(base, workspace)
    if not found and workspace is None and any(DAILY.match(p.name) for p in base.iterdir()):
        found = [(base.parent.name or "workspace", base)]  # a memory dir given directly
        base = base.parent
    if not found:
        raise RecordError("no workspace*/memory folder found" +
                          (f" named {workspace}" if workspace else ""), source=str(base))
    records: list[MemoryInput] = []
    edges: list[Edge] = []
    pages: set[str] = set()
    for name, memory_dir in found:
        for day, path in daily_files(memory_dir):
            r, e, p = file_records(name, day, path, base, owner=owner)
            records += r
            edges += e
            pages |= p
    records += [MemoryInput(id=wiki_id(p), text=f"Wiki page {p}", subject=p, kind=Kind.SEMANTIC,
                            owner=owner, provenance={"source": "markdown", "wiki": p})
                for p in sorted(pages)]
    unique = {r.id: r for r in records}
    result = store.merge(list(unique.values()), edges=edges, reason="markdown import")
    if result.created:
        store.derive_links(result.created)
    return result
