"""``make demo``: import the sample corpus into ./graphmem.db and show what graphmem does with it.

Each step prints a command, quoted for a POSIX shell, and then runs that very command:
what follows it is what typing it prints, so the demo doubles as a tour.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import shutil
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from ._facade import MemoryStore
from ._settings import Settings
from ._time import format_iso, parse_iso

#: The sample corpus' "today" (its last day of activity), so ages and decay make sense.
SAMPLE_NOW = "2026-07-15T18:00:00Z"


#: The versions of one memory, oldest first, with their status (recall answers with the
#: newest active one; a candidate waits until it is confirmed).
CHAIN = ("MATCH (m:Memory) WHERE m.subject = $subject "
         "RETURN m.created AS created, m.status AS status, m.text AS text ORDER BY created")
PROCEDURES = ('MATCH (m:Memory) WHERE m.kind = $kind AND m.status = "active" '
              'RETURN m.subject AS subject, m.text AS text ORDER BY m.created LIMIT 4')
DEMO_QUERIES = ["how do I deploy orchard?", "which database does orchard use?",
                "what does Nadia prefer for code?"]


def _program() -> str:
    """How to type ``graphmem`` here: its name when it is on PATH, else the console
    script of this environment (``.venv/bin/graphmem`` after ``make demo``)."""
    script = Path(sys.prefix) / "bin" / "graphmem"
    if shutil.which("graphmem") == str(script) or not script.exists():
        return "graphmem" if shutil.which("graphmem") else "python -m graphmem"
    with contextlib.suppress(ValueError):
        return str(script.relative_to(Path.cwd()))
    return str(script)


def _step(title: str, args: list[str]) -> None:
    """Print the step and its command (quoted for a POSIX shell), then run that very
    command, so what follows is what typing it prints."""
    from .cli import cli

    print(f"\n== {title}\n$ {_program()} {shlex.join(args)}", flush=True)
    code = cli.main(args, prog_name="graphmem", standalone_mode=False)
    sys.stdout.flush()
    if code:
        raise SystemExit(code)


def simulate_use(store: MemoryStore) -> None:
    """A week of agent use: the deploy procedure recalled and marked useful 12 times."""
    for _ in range(12):
        top = store.recall("deploy orchard release", k=1, kinds=["episodic"])
        if top:
            store.feedback(top[0].memory.id, useful=True)


def run(db: str, *, now: datetime, embedder: str | None = None,
        extra: list[Callable[[MemoryStore], None]] | None = None) -> None:
    from ingest.samples import build_sample

    sample = build_sample.OUT
    shown = str(sample.relative_to(Path.cwd())) if sample.is_relative_to(Path.cwd()) \
        else str(sample)
    started = time.perf_counter()
    at = ["--db", db, "--now", format_iso(now)]
    _step("import the sample corpus (all or nothing; a second run changes nothing)",
          [*at, *(["--embedder", embedder] if embedder else []), "import", "ump", shown])
    _step("what is there", ["--db", db, "stats"])
    _step("a supersede chain: every version is kept; recall answers with the newest active "
          "one (the PostgreSQL 16 candidate waits for confirmation)",
          ["--db", db, "query", CHAIN, "--param", "subject=Orchard database"])
    _step("a few procedural memories",
          ["--db", db, "query", PROCEDURES, "--param", "kind=procedural"])
    for query in DEMO_QUERIES:
        _step("recall: full text + vectors + graph walk, fused by RRF, re-ranked by ACT-R",
              [*at, "recall", query, "-k", "4", "--explain"])
    print("\n== simulate use: the agent recalls its deploy procedure and marks it useful\n"
          "(in Python: 12 times store.recall(\"deploy orchard release\", k=1, "
          "kinds=[\"episodic\"]), then store.feedback(hit.memory.id, useful=True))")
    with MemoryStore(db, settings=Settings.from_env(), clock=lambda: now) as store:
        simulate_use(store)
        print("12 recalls with useful feedback recorded")
        for part in extra or []:
            part(store)
    _step("the lifecycle report (a dry run: nothing changes until `lifecycle run --apply`)",
          [*at, "lifecycle", "report"])
    print(f"\ndone in {time.perf_counter() - started:.1f} s; explore with "
          f"`{_program()} --db {shlex.quote(db)} --now {format_iso(now)} --help`")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", default="graphmem.db", help="database directory")
    parser.add_argument("--embedder", default=None, help="minilm (default), hashing, ...")
    parser.add_argument("--now", default=SAMPLE_NOW, help="the demo's current time")
    args = parser.parse_args(argv)
    run(args.db, now=parse_iso(args.now), embedder=args.embedder)


if __name__ == "__main__":
    main()
