"""memory-compact: the 7-day graduation of daily files.

For each ``workspace*/memory/YYYY-MM-DD.md`` older than the window and not yet compacted:
back the original up to ``memory/cold-storage/`` (never overwriting a copy already there),
then rewrite the file to its title, ``<!-- mc:v1 -->``, ``<!-- mc:compacted <today> -->``,
the Decisions and Key Lessons bullets that carry a ``→ see [wiki/...]`` pointer or
``[keep]``, the Reference section verbatim, and a footer pointing at the cold copy. What
Happened, Carry Forward and unknown sections drop. Dry run by default.

Files stay inside the root: every folder is opened from the root's descriptor without
following a link, files are read with ``O_NOFOLLOW`` and written to a fresh temporary
file (``O_EXCL | O_NOFOLLOW``) that is renamed into place, so no write follows a link
and a link swapped in after the check is replaced, never written through. A symbolic
link where a workspace, ``memory/``, ``cold-storage/``, a daily file or its cold copy
should be is refused and reported per file (``refused: ...``); it counts as a failed file.

Exit codes: 0 all written (or at least one written when others failed, or a dry run),
1 every targeted file failed, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, TextIO

from graphmem import MemoryStore, RecordError

from .markdown import (
    DAILY,
    Daily,
    UnsafePathError,
    bullet_id,
    file_records,
    open_dir,
    parse_daily,
    read_at,
    read_inside,
    refusal,
    scan,
)

__all__ = ["Plan", "archive_in_store", "compact_text", "main", "plan_files", "sweep"]

FILTERED = ("Decisions", "Key Lessons")
VERBATIM = ("Reference",)
COLD = "cold-storage"
PREVIEW_LINES = 20


@dataclass
class Plan:
    """What compacting one file does."""

    workspace: str
    path: Path
    display: str
    day: date
    age: int
    lines_before: int
    lines_after: int
    kept: int
    dropped: int
    output: str
    kept_texts: list[str]
    dropped_texts: list[str]
    done: bool = False  # compacted by an earlier sweep (planned again from its cold copy)
    #: the root and the names that lead from it to the file (the path used for access)
    root: Path = Path(".")
    parts: tuple[str, ...] = ()
    #: the file's bytes when planned: it is rewritten only if they are still the same
    original: bytes = b""

    @property
    def cold_path(self) -> Path:
        return self.path.parent / COLD / self.path.name

    @property
    def cold_parts(self) -> tuple[str, ...]:
        return (*self.parts[:-1], COLD, self.parts[-1])

    def line(self) -> str:
        change = round(100 * (self.lines_after - self.lines_before) / max(self.lines_before, 1))
        return (f"[PLAN] {self.display}  age={self.age}d  lines {self.lines_before}→"
                f"{self.lines_after} ({change:+d}%)  bullets kept={self.kept} "
                f"dropped={self.dropped}")


def compact_text(daily: Daily, today: date, file_name: str
                 ) -> tuple[str, list[str], list[str]]:
    """The compacted file, and the texts of the bullets kept and dropped."""
    title = daily.title or f"# Memory — {daily.day.isoformat()}"
    out = [title, "<!-- mc:v1 -->", f"<!-- mc:compacted {today.isoformat()} -->"]
    kept: list[str] = []
    dropped: list[str] = []
    for name in (*FILTERED, *VERBATIM):
        for section in (s for s in daily.sections if s.name == name):
            if name in VERBATIM:
                body = list(section.lines)
                while body and not body[-1].strip():
                    body.pop()
                kept += [b.text for b in section.bullets()]
                out += ["", f"## {name}", *body]
                continue
            survivors = [b for b in section.bullets() if b.wiki or b.keep]
            kept += [b.text for b in survivors]
            dropped += [b.text for b in section.bullets() if not (b.wiki or b.keep)]
            if survivors:
                out += ["", f"## {name}"] + [line for b in survivors for line in b.lines]
    for section in daily.sections:
        if section.name not in FILTERED + VERBATIM:
            dropped += [b.text for b in section.bullets()]
    out += ["", f"_Full original in cold storage: [{COLD}/{file_name}]({COLD}/{file_name})_"]
    return "\n".join(out) + "\n", kept, dropped


def plan_files(root: Path, *, today: date, workspace: str | None = None,
               max_age_days: int = 7, include_recent: bool = False,
               include_done: bool = False) -> tuple[list[Plan], list[RecordError]]:
    """Plans for every file due for compaction (live ones skipped), and the files that
    cannot be planned (``UnsafePathError`` for a link, ``RecordError`` for a file that
    cannot be read). Files compacted before are skipped too, or with ``include_done``
    planned again from their cold copy and marked ``done`` (for work that follows the
    rewrite, such as the store's)."""
    plans: list[Plan] = []
    found = scan(root, workspace)
    problems: list[RecordError] = list(found.refused)
    for daily in found.dailies:
        age = (today - daily.day).days
        if age < max_age_days and not include_recent:
            continue
        try:
            raw = read_inside(root, daily.parts)
            parsed = parse_daily(raw.decode("utf-8", errors="replace"), daily.day)
            done = parsed.compacted
            if done:
                if not include_done:
                    continue
                cold = (*daily.parts[:-1], COLD, daily.parts[-1])
                try:
                    cold_text = read_inside(root, cold).decode("utf-8", errors="replace")
                except FileNotFoundError:
                    continue
                parsed = parse_daily(cold_text, daily.day)
        except OSError as exc:
            problems.append(RecordError(f"cannot read: {exc.strerror or exc}",
                                        source=daily.display))
            continue
        except RecordError as exc:  # named by the daily file it stops
            problems.append(exc if exc.source == daily.display else
                            type(exc)(str(exc), source=daily.display))
            continue
        output, kept, dropped = compact_text(parsed, today, daily.parts[-1])
        plans.append(Plan(daily.workspace, daily.path, daily.display, daily.day, age,
                          parsed.line_count, len(output.splitlines()), len(kept),
                          len(dropped), output, kept, dropped, done=done, root=root,
                          parts=daily.parts, original=raw))
    return plans, problems


def grows(plan: Plan) -> bool:
    """Whether compacting would only make the file longer: no line of it would go (every
    bullet is kept) and the markers and the footer would be added. Such a file is left
    as it is. (A short file that loses a bullet may still gain lines: what leaves it for
    cold storage is the point.)"""
    if plan.done or plan.lines_after < plan.lines_before:
        return False
    output = {line.strip() for line in plan.output.splitlines()}
    original = plan.original.decode("utf-8", errors="replace").splitlines()
    return all(line.strip() in output for line in original if line.strip())


def write(plan: Plan) -> None:
    """Back up (once), then replace the daily file atomically. Everything happens
    through descriptors opened from the root without following links: a link is
    refused (``UnsafePathError``), never written through."""
    memory_fd = open_dir(plan.root, plan.parts[:-1])
    try:
        name = plan.parts[-1]
        current = read_at(memory_fd, name, plan.display)
        if current != plan.original:
            raise RecordError("changed since it was planned; run the sweep again",
                              source=plan.display)
        cold_fd = _cold_dir(memory_fd, plan)
        try:
            _write_once(cold_fd, name, current, shown="/".join(plan.cold_parts))
        finally:
            os.close(cold_fd)
        tmp = _write_tmp(memory_fd, name, plan.output.encode("utf-8"))
        try:
            os.replace(tmp, name, src_dir_fd=memory_fd, dst_dir_fd=memory_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=memory_fd)
            raise
        os.fsync(memory_fd)
    finally:
        os.close(memory_fd)


def _cold_dir(memory_fd: int, plan: Plan) -> int:
    """``cold-storage/`` of the memory folder, made if missing; refused if a link."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(COLD, dir_fd=memory_fd)  # mkdir never follows a link
    try:
        return os.open(COLD, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                       dir_fd=memory_fd)
    except OSError as exc:
        raise refusal(memory_fd, COLD, "/".join(plan.cold_parts[:-1]), exc) from None


def _write_once(dir_fd: int, name: str, data: bytes, *, shown: str) -> None:
    """Create ``name`` with ``data`` unless a regular file is there already (an earlier
    backup is never overwritten); a link under the name is refused."""
    if _existing(dir_fd, name, shown):
        return
    tmp = _write_tmp(dir_fd, name, data)
    try:
        os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except FileExistsError:
        _existing(dir_fd, name, shown)  # made meanwhile: keep it, unless it is a link
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # no hard links here
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
    os.fsync(dir_fd)


def _existing(dir_fd: int, name: str, shown: str) -> bool:
    try:
        mode = os.lstat(name, dir_fd=dir_fd).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(mode):
        raise refusal(dir_fd, name, shown, OSError(errno.ELOOP, "a link"))
    if not stat.S_ISREG(mode):
        raise UnsafePathError("is not a regular file", source=shown)
    return True


def _write_tmp(dir_fd: int, name: str, data: bytes) -> str:
    """``data`` in a new file ``.NAME.tmp`` beside ``name``, synced; a stale one (from a
    crash) is removed first: ``O_EXCL | O_NOFOLLOW`` never opens an existing file or
    a link."""
    tmp = f".{name}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp, dir_fd=dir_fd)  # unlink removes a link, never its target
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o666, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    return tmp


def sweep(root: Path, *, today: date, apply: bool, workspace: str | None = None,
          max_age_days: int = 7, include_recent: bool = False, verbose: bool = False,
          out: TextIO | None = None, err: TextIO | None = None,
          on_written: Callable[[Plan], None] | None = None,
          files: list[dict[str, Any]] | None = None) -> int:
    """Plan (and with ``apply`` write) every due file; returns the exit code.

    ``on_written(plan)`` runs after each file is written (the store's archiving), and
    with ``apply`` also for files an earlier sweep compacted, so that a sweep interrupted
    between a file and its follow-up is completed by the next one. ``files`` receives
    one dict per file (what ``--json`` prints): its plan and what became of it.
    """
    stdout = out or sys.stdout
    stderr = err or sys.stderr
    record = files if files is not None else []
    found, problems = plan_files(root, today=today, workspace=workspace,
                                 max_age_days=max_age_days, include_recent=include_recent,
                                 include_done=apply and on_written is not None)
    plans = [p for p in found if not p.done and not grows(p)]
    for problem in problems:
        _report(problem, stderr)
        record.append({"file": problem.source, "status": _word(problem),
                       "problem": str(problem)})
    for plan in (p for p in found if grows(p)):
        print(f"[SKIP] {plan.display}  lines {plan.lines_before}→{plan.lines_after}: "
              "nothing would go, so it stays as it is", file=stdout)
        record.append({**_fields(plan), "status": "skipped"})
    for plan in plans:
        print(plan.line(), file=stdout)
        if verbose:
            for line in plan.output.splitlines()[:PREVIEW_LINES]:
                print(f"    {line}", file=stdout)
    if not apply:
        record += [{**_fields(plan), "status": "planned"} for plan in plans]
        before = sum(p.lines_before for p in plans)
        after = sum(p.lines_after for p in plans)
        print(f"[memory-compact] dry run: would compact {len(plans)} file"
              f"{'' if len(plans) == 1 else 's'} (lines {before}→{after}), "
              f"{len(problems)} failed; nothing written (--apply writes)", file=stdout)
        return 0
    if on_written is not None:
        for plan in found:
            if plan.done:
                on_written(plan)
    written, failed = 0, len(problems)
    for plan in plans:
        try:
            write(plan)
        except RecordError as exc:
            failed += 1
            _report(exc, stderr, about=plan.display)
            record.append({**_fields(plan), "status": _word(exc), "problem": str(exc)})
            continue
        except OSError as exc:
            failed += 1
            print(f"[memory-compact] failed: {plan.display}: {exc.strerror or exc}",
                  file=stderr)
            record.append({**_fields(plan), "status": "failed",
                           "problem": str(exc.strerror or exc)})
            continue
        written += 1
        record.append({**_fields(plan), "status": "written"})
        if on_written is not None:
            on_written(plan)
    print(f"[memory-compact] applied: written={written} failed={failed}",
          file=stdout)
    return 1 if failed and not written else 0


def _fields(plan: Plan) -> dict[str, Any]:
    return {"file": plan.display, "age_days": plan.age, "lines_before": plan.lines_before,
            "lines_after": plan.lines_after, "bullets_kept": plan.kept,
            "bullets_dropped": plan.dropped}


def _word(problem: RecordError) -> str:
    return "refused" if isinstance(problem, UnsafePathError) else "failed"


def _report(problem: RecordError, stream: TextIO, *, about: str | None = None) -> None:
    """One line per file: ``refused`` for a link, ``failed`` for anything else; a problem
    found on the way to a file (its cold-storage folder) names the file first."""
    word = _word(problem)
    where = f"{about}: " if about and problem.source != about else ""
    print(f"[memory-compact] {word}: {where}{problem}", file=stream)


def archive_in_store(store: MemoryStore, plan: Plan, root: Path) -> int:
    """After a file was compacted: its bullets are in the store (imported from the cold
    copy when missing), and those dropped from the daily file are archived, with the
    cold-storage path in their provenance. Wiki pointers stay as edges. Returns how many
    memories were archived."""
    shown = "/".join(plan.cold_parts)
    try:
        text = read_inside(plan.root, plan.cold_parts).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(f"not UTF-8 (byte {exc.start})", source=shown) from None
    except OSError as exc:
        raise RecordError(f"cannot read: {exc.strerror or exc}", source=shown) from None
    original = parse_daily(text, plan.day)
    records, edges, _, _ = file_records(plan.workspace, plan.day, plan.cold_path, root)
    present = {m.id for m in store.get_many([r.id or "" for r in records])}
    store.merge([r for r in records if r.id not in present], edges=edges,
                reason="markdown import before compact")
    cold = str(plan.cold_path.relative_to(root))
    archived = 0
    dropped = set(plan.dropped_texts)
    for section in original.sections:
        for bullet in section.bullets():
            if bullet.text not in dropped:
                continue
            memory_id = bullet_id(plan.workspace, plan.day, bullet)
            memory = store.get(memory_id)
            if memory.status.value not in ("active", "candidate"):
                continue
            store.update(memory_id, provenance={**memory.provenance, "cold_storage": cold})
            if store.archive(memory_id, reason="age").success:
                archived += 1
    return archived


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"memory-compact-sweep: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="memory-compact-sweep",
                     description="Compact daily memory files older than the active window.")
    parser.add_argument("--apply", action="store_true", help="write changes (default: dry run)")
    parser.add_argument("--workspace", metavar="NAME", help="only this workspace")
    parser.add_argument("--max-age-days", type=int, default=7, metavar="N",
                        help="the active window in days (default: 7)")
    parser.add_argument("--include-recent", action="store_true",
                        help="DESTRUCTIVE: also compact files inside the window")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="preview the first 20 lines of each planned output")
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="where the workspace*/memory folders are (default: .)")
    parser.add_argument("--now", "--today", dest="now", type=_day, default=None,
                        metavar="ISO", help="the date to compact as of, as graphmem's --now "
                        "(YYYY-MM-DD or a time; backfills, tests)")
    return parser


def _day(value: str) -> date:
    from graphmem import parse_iso

    try:
        return date.fromisoformat(value)
    except ValueError:
        pass
    try:
        return parse_iso(value).date()
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date or an ISO 8601 time: {value!r}"
                                         ) from None


def main(argv: Sequence[str] | None = None) -> int:
    """The ``memory-compact-sweep`` console script."""
    args = _parser().parse_args(argv)
    problem = check_arguments(args.root, args.workspace, args.max_age_days)
    if problem:
        print(f"memory-compact-sweep: error: {problem}", file=sys.stderr)
        return 2
    return sweep(args.root, today=args.now or date.today(), apply=args.apply,
                 workspace=args.workspace, max_age_days=args.max_age_days,
                 include_recent=args.include_recent, verbose=args.verbose)


def check_arguments(root: Path, workspace: str | None, max_age_days: int) -> str | None:
    if not root.is_dir():
        return f"--root {root} is not a directory"
    if max_age_days < 0:
        return "--max-age-days must be >= 0"
    if workspace is None:
        try:
            if not scan(root).names:
                flat = any(DAILY.match(name) for name in os.listdir(root))
                return (f"no workspace*/memory folder under --root {root}" + (
                    f": {root} holds daily files itself; --root is the folder that holds "
                    "the workspace*/memory/ folders" if flat else ""))
        except OSError as exc:
            return f"cannot read --root {root}: {exc.strerror or exc}"
    if workspace is not None:
        try:
            if workspace not in scan(root, workspace).names:
                names = ", ".join(scan(root).names) or "none"
                return f"no workspace named {workspace!r} under {root} (found: {names})"
        except OSError as exc:
            return f"cannot read --root {root}: {exc.strerror or exc}"
    return None


if __name__ == "__main__":
    raise SystemExit(main())
