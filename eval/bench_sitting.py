"""A long sitting costs what its turns cost: ``python -m eval.bench_sitting``.

One ``add_conversation`` call of N user/assistant turns (chatty lines of words of their
own, places and days, a correction every tenth turn), against the same turns remembered
20 at a time in sittings of their own (the baseline, in the same process, on a fresh
store each). A
correction looks as far back as the user's last 40 statements (``_WITHIN_REACH``); before
that bound held within a sitting, each statement was compared with every one before it, and
8,000 turns took 325 s of CPU where 4,000 took 33. CPU seconds of this process, the hashing
embedder, an in-memory store.
"""

from __future__ import annotations

import argparse
import random
import string
import time
from collections.abc import Sequence

from graphmem import MemoryStore

CITIES = ["Lisbon", "Porto", "Lagos", "Quito", "Oslo", "Lima", "Accra", "Hanoi"]


def turns(n: int, seed: int = 7) -> list[dict[str, str]]:
    """N turns, the user's and the assistant's in turn, each of words of its own."""
    rnd = random.Random(seed)

    def word() -> str:
        return "".join(rnd.choice(string.ascii_lowercase) for _ in range(7))

    out = []
    for i in range(n):
        if i % 10 == 0:
            text = f"Actually, scratch that, I live in {rnd.choice(CITIES)} now."
        else:
            text = (f"I {word()} the {word()} on Monday with {rnd.choice(CITIES)} friends, "
                    f"it was {word()}!")
        out.append({"role": "assistant" if i % 2 else "user", "content": text})
    return out


def cpu_seconds(messages: Sequence[dict[str, str]], per_sitting: int | None) -> float:
    with MemoryStore(":memory:", embedder="hashing") as store:
        started = time.process_time()
        step = per_sitting or len(messages)
        for n, start in enumerate(range(0, len(messages), step)):
            store.add_conversation(list(messages[start:start + step]), session_id=f"s{n}",
                                   owner="pat")
        return time.process_time() - started


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,1000,2000,4000",
                        help="turns in the sitting, comma-separated")
    args = parser.parse_args(argv)
    print(f"{'turns':>6} {'one sitting s':>14} {'sittings of 20 s':>17} {'ratio':>6} "
          f"{'x per doubling':>15}")
    last = None
    for size in (int(s) for s in args.sizes.split(",")):
        messages = turns(size)
        one, baseline = cpu_seconds(messages, None), cpu_seconds(messages, 20)
        growth = f"{one / last:.2f}" if last else "-"
        print(f"{size:>6} {one:>14.2f} {baseline:>17.2f} {one / baseline:>6.2f} "
              f"{growth:>15}")
        last = one


if __name__ == "__main__":
    main()
