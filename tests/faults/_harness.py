"""Start a worker, kill -9 it at a chosen point of its work, and report what it had said."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Trial:
    """What a killed worker printed before it died (READY, PROGRESS and ACK lines), and
    where the kill was aimed: after ``aimed`` progress lines, plus ``delay`` seconds."""

    lines: tuple[str, ...]
    aimed: int
    delay: float

    @property
    def acks(self) -> list[str]:
        return [line for line in self.lines if line.startswith("ACK")]

    @property
    def progress(self) -> list[str]:
        """The steps the worker finished before the kill (commits, batches, files)."""
        return [line for line in self.lines if line.startswith(("PROGRESS", "ACK"))
                and line != "ACK done"]

    @property
    def interrupted(self) -> bool:
        """The kill landed before the work was done (the worker never said ACK done)."""
        return "ACK done" not in self.lines

    def describe(self) -> str:
        state = "interrupted" if self.interrupted else "finished"
        return (f"{state} after {len(self.progress)} steps (aimed after {self.aimed} "
                f"+ {self.delay * 1000:.0f} ms)")


def run_and_kill(mode: str, db: Path, *, rng: random.Random, max_acks: int = 6,
                 extra: list[str] | None = None,
                 delay: tuple[float, float] = (0.0, 0.08)) -> Trial:
    """Run ``tests.faults.worker MODE DB``, SIGKILL it once it has printed a random
    number (0..``max_acks``) of PROGRESS/ACK lines, after a random ``delay`` (seconds),
    and return what it printed. A worker that says ``ACK done`` first is killed then
    (the trial is a finished run, not an interrupted one)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.faults.worker", mode, str(db), *(extra or [])],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    lines: list[str] = []
    wanted = rng.randint(0, max_acks)
    pause = rng.uniform(*delay)
    steps = 0
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            line = line.strip()
            lines.append(line)
            if line == "ACK done":
                break
            if line.startswith(("PROGRESS", "ACK")):
                steps += 1
            if (line == "READY" or line.startswith(("PROGRESS", "ACK"))) and steps >= wanted:
                time.sleep(pause)  # land inside the next step
                break
        proc.send_signal(signal.SIGKILL)
        rest, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines += [x.strip() for x in rest.splitlines() if x.strip()]
    assert proc.returncode == -signal.SIGKILL, err[-2000:]
    return Trial(tuple(lines), wanted, pause)


#: operation -> the trials run on it (the ``tally`` fixture of ``conftest``)
Tally = dict[str, list[Trial]]
