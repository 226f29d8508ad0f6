"""Start a worker, kill -9 it at a random moment, and report what it had acknowledged."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_and_kill(mode: str, db: Path, *, rng: random.Random, max_acks: int = 6,
                 extra: list[str] | None = None,
                 delay: tuple[float, float] = (0.0, 0.08)) -> list[str]:
    """Run ``tests.faults.worker MODE DB``, SIGKILL it after a random number of
    acknowledgements plus a random ``delay`` (seconds), and return the ACK lines it
    printed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.faults.worker", mode, str(db), *(extra or [])],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    acks: list[str] = []
    wanted = rng.randint(0, max_acks)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            line = line.strip()
            if line.startswith("ACK"):
                acks.append(line)
            if (line == "READY" or line.startswith("ACK")) and len(acks) >= wanted:
                time.sleep(rng.uniform(*delay))  # land inside the next write
                break
        proc.send_signal(signal.SIGKILL)
        rest, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    acks += [x.strip() for x in rest.splitlines() if x.startswith("ACK")]
    assert proc.returncode == -signal.SIGKILL, err[-2000:]
    return acks
