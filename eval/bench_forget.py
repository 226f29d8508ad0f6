"""Forgetting every statement of one long message: ``python -m eval.bench_forget
[--statements 50,100,200]``.

A sitting of one message that says N short statements is imported into a fresh store
(hashing embedder, so the time is graphmem's own), then all N statements are forgotten
twice over, each side on its own store in this process: one ``forget(purge=False)`` each
and one ``purge()`` (the baseline), and one ``forget_many`` (which cuts the words of all
of them from their neighbours' payloads and contexts in one pass and purges once). One at
a time, each forget rewrites the message in every other statement's payload, so its time
grows with N squared; the table prints both times and their ratio.

A second table: a message of one sentence said again and again (``--repeat`` characters,
with one other statement, forgotten), imported into a fresh store and then imported again
(the sitting typed again after the forget): the second import beside the first.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence

from graphmem import MemoryStore


def _seconds(statements: int, together: bool) -> float:
    message = " ".join(f"My item number {i} is called Name{i}x." for i in range(statements))
    with tempfile.TemporaryDirectory() as root, \
            MemoryStore(f"{root}/db", embedder="hashing") as store:
        result = store.add_conversation([{"speaker": "Ann", "text": message}],
                                        session_id="s1")
        ids = result.created_ids + result.candidate_ids
        start = time.perf_counter()
        if together:
            store.forget_many(ids, confirm=True)
        else:
            for memory_id in ids:
                store.forget(memory_id, confirm=True, purge=False)
            store.purge()
        return time.perf_counter() - start


def _imports(chars: int) -> tuple[float, float]:
    message = "I like tea. " + "We liked it. " * (chars // 13) + "My cat is called Zorbo."
    with tempfile.TemporaryDirectory() as root, \
            MemoryStore(f"{root}/db", embedder="hashing") as store:
        sitting = [{"speaker": "Ann", "text": message}]
        start = time.perf_counter()
        result = store.add_conversation(sitting, session_id="s1")
        first = time.perf_counter() - start
        zorbo = [m.id for m in store.get_many(result.created_ids) if "Zorbo" in m.text]
        store.forget_many(zorbo, confirm=True)
        start = time.perf_counter()
        store.add_conversation(sitting, session_id="s1")
        return first, time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--statements", default="50,100,200",
                        help="statements in the message, comma-separated")
    parser.add_argument("--repeat", default="50000",
                        help="characters of the repeated message, comma-separated")
    args = parser.parse_args(argv)
    print(f"{'statements':>10} {'one at a time s':>16} {'forget_many s':>14} {'ratio':>6}")
    for n in (int(s) for s in args.statements.split(",")):
        alone, together = _seconds(n, together=False), _seconds(n, together=True)
        print(f"{n:>10} {alone:>16.2f} {together:>14.2f} {alone / together:>6.1f}",
              flush=True)
    print(f"\n{'characters':>10} {'first import s':>16} {'again s':>14} {'ratio':>6}")
    for chars in (int(s) for s in args.repeat.split(",")):
        first, again = _imports(chars)
        print(f"{chars:>10} {first:>16.2f} {again:>14.2f} {again / first:>6.1f}", flush=True)


if __name__ == "__main__":
    main()
