"""memory-compact: the 7-day graduation of daily files.

For each ``workspace*/memory/YYYY-MM-DD.md`` older than the window and not yet compacted:
back the original up to ``memory/cold-storage/`` (never overwriting a copy already there),
then rewrite the file to its title, ``<!-- mc:v1 -->``, ``<!-- mc:compacted <today> -->``,
the Decisions and Key Lessons bullets that carry a ``→ see [wiki/...]`` pointer or
``[keep]``, the Reference section verbatim, and a footer pointing at the cold copy. What
Happened, Carry Forward and unknown sections drop. Dry run by default.

Exit codes: 0 all written (or at least one written when others failed, or a dry run),
1 every targeted file failed, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TextIO

from graphmem import MemoryStore

from .markdown import Daily, bullet_id, daily_files, file_records, parse_daily, workspaces

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

    @property
    def cold_path(self) -> Path:
        return self.path.parent / COLD / self.path.name

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
               include_done: bool = False) -> list[Plan]:
    """Plans for every file due for compaction (live ones skipped). Files compacted
    before are skipped too, or with ``include_done`` planned again from their cold copy
    and marked ``done`` (for work that follows the rewrite, such as the store's)."""
    plans = []
    for name, memory_dir in workspaces(root, workspace):
        for day, path in daily_files(memory_dir):
            age = (today - day).days
            if age < max_age_days and not include_recent:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            daily = parse_daily(text, day)
            done = daily.compacted
            if done:
                cold = path.parent / COLD / path.name
                if not include_done or not cold.is_file():
                    continue
                daily = parse_daily(cold.read_text(encoding="utf-8", errors="replace"), day)
            output, kept, dropped = compact_text(daily, today, path.name)
            plans.append(Plan(name, path, str(path.relative_to(root)), day, age,
                              daily.line_count, len(output.splitlines()), len(kept),
                              len(dropped), output, kept, dropped, done=done))
    return plans


def write(plan: Plan) -> None:
    """Back up (once), then replace the daily file atomically."""
    cold = plan.cold_path
    cold.parent.mkdir(exist_ok=True)
    if not cold.exists():
        _atomic_write(cold, plan.path.read_bytes())
    _atomic_write(plan.path, plan.output.encode("utf-8"))


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def sweep(root: Path, *, today: date, apply: bool, workspace: str | None = None,
          max_age_days: int = 7, include_recent: bool = False, verbose: bool = False,
          out: TextIO | None = None, err: TextIO | None = None,
          on_written: Callable[[Plan], None] | None = None) -> int:
    """Plan (and with ``apply`` write) every due file; returns the exit code.

    ``on_written(plan)`` runs after each file is written (the store's archiving), and
    with ``apply`` also for files an earlier sweep compacted, so that a sweep interrupted
    between a file and its follow-up is completed by the next one.
    """
    stdout = out or sys.stdout
    stderr = err or sys.stderr
    found = plan_files(root, today=today, workspace=workspace, max_age_days=max_age_days,
                       include_recent=include_recent,
                       include_done=apply and on_written is not None)
    plans = [p for p in found if not p.done]
    for plan in plans:
        print(plan.line(), file=stdout)
        if verbose:
            for line in plan.output.splitlines()[:PREVIEW_LINES]:
                print(f"    {line}", file=stdout)
    if not apply:
        if not plans:
            print("[memory-compact] nothing to compact", file=stdout)
        return 0
    if on_written is not None:
        for plan in found:
            if plan.done:
                on_written(plan)
    written = failed = 0
    for plan in plans:
        try:
            write(plan)
        except OSError as exc:
            failed += 1
            print(f"[memory-compact] failed: {plan.display}: {exc.strerror or exc}",
                  file=stderr)
            continue
        written += 1
        if on_written is not None:
            on_written(plan)
    print(f"[memory-compact] applied: written={written} failed={failed}",
          file=stdout)
    return 1 if failed and not written else 0


def archive_in_store(store: MemoryStore, plan: Plan, root: Path) -> int:
    """After a file was compacted: its bullets are in the store (imported from the cold
    copy when missing), and those dropped from the daily file are archived, with the
    cold-storage path in their provenance. Wiki pointers stay as edges. Returns how many
    memories were archived."""
    original = parse_daily(plan.cold_path.read_text(encoding="utf-8"), plan.day)
    records, edges, _ = file_records(plan.workspace, plan.day, plan.cold_path, root)
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
    parser.add_argument("--today", type=date.fromisoformat, default=None, metavar="YYYY-MM-DD",
                        help="the date to compact as of (backfills, tests)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``memory-compact-sweep`` console script."""
    args = _parser().parse_args(argv)
    problem = check_arguments(args.root, args.workspace, args.max_age_days)
    if problem:
        print(f"memory-compact-sweep: error: {problem}", file=sys.stderr)
        return 2
    return sweep(args.root, today=args.today or date.today(), apply=args.apply,
                 workspace=args.workspace, max_age_days=args.max_age_days,
                 include_recent=args.include_recent, verbose=args.verbose)


def check_arguments(root: Path, workspace: str | None, max_age_days: int) -> str | None:
    if not root.is_dir():
        return f"--root {root} is not a directory"
    if max_age_days < 0:
        return "--max-age-days must be >= 0"
    if workspace is not None and not workspaces(root, workspace):
        names = ", ".join(n for n, _ in workspaces(root)) or "none"
        return f"no workspace named {workspace!r} under {root} (found: {names})"
    return None


if __name__ == "__main__":
    raise SystemExit(main())
