"""What a correction leaves true: ``python -m eval.remainders [--distractors]``.

Each case of ``eval/data/remainders.json`` is a statement of one owner (one message,
often of several clauses, with the assistant's reply), then a correction of it a week
later (or in the same sitting), ingested as the README ingests chats. When the correction
replaces the statement, graphmem keeps the clauses it does not speak of as a memory of
their own (``remains_of``). Group a: those clauses stay true (``keep``: words of each that
should be kept); group b: traps, the correction makes them false too (``stale``: words
that must not be kept); group c: one clause, nothing to keep.

Printed, for the cases whose statement was replaced: how many each rule gets right, for
graphmem and two trivial rules on the same cases: keep nothing (a correction hides the
whole statement) and keep every clause but the one closest to the correction (cosine);
then how often a kept memory comes first for the question about the corrected fact
(``q_fix``: a stale answer), and how often the kept clause is in the top 3 for the
question about it (``q_keep``, group a).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from graphmem import MemoryStore, embedder_from_spec
from graphmem.algorithms import clause_spans

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "remainders.json"
START = datetime(2026, 1, 5, 9, tzinfo=UTC)
_FIELDS = {"a": ("old", "reply", "fix", "keep", "q_keep", "q_fix"),
           "b": ("old", "reply", "fix", "stale", "q_keep", "q_fix"),
           "c": ("old", "reply", "fix", "q_fix")}


def load(path: Path) -> dict[str, Any]:
    """The cases of ``path``, checked."""
    data = json.loads(path.read_text(encoding="utf-8"))
    for n, case in enumerate(data.get("cases", [])):
        missing = [f for f in ("id", "group") if f not in case] or [
            f for f in _FIELDS.get(case["group"], ("group a, b or c",)) if f not in case]
        if missing:
            raise SystemExit(f"{path}: case {n} ({case.get('id', '?')}) needs "
                             f"{', '.join(missing)}")
    return data


def verdict(case: dict[str, Any], kept: Sequence[str]) -> str:
    """How a rule did on a case whose statement was replaced, by what it kept."""
    text = " | ".join(kept).lower()
    if case["group"] != "a":
        return "right" if not kept else ("stale" if case["group"] == "b" else "junk")
    if not kept:
        return "missed"
    if any(w in text for w in case.get("stale", [])):
        return "stale"
    return "right" if all(w in text for w in case["keep"]) else "partial"


def all_but_closest(embedder: Any, old: str, fix: str) -> list[str]:
    """The trivial rule: every clause of ``old`` but the one closest to ``fix``."""
    spans = clause_spans(old)
    if len(spans) < 2:
        return []
    vectors = np.asarray(embedder.embed([fix, *(old[a:b] for a, b in spans)]))
    closest = int(np.argmax(vectors[1:] @ vectors[0]))
    return [old[a:b].strip(" ,;") for n, (a, b) in enumerate(spans) if n != closest]


def _said(text: str, reply: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}, {"role": "assistant", "content": reply}]


def run(data: dict[str, Any], distractors: bool) -> list[dict[str, Any]]:
    """Each case in a store of its own owner: the filler, the statement, the correction;
    what was kept and what recall returns."""
    embedder = embedder_from_spec("minilm")
    filler = data["filler"] + (data["distractors"] if distractors else [])
    out = []
    with tempfile.TemporaryDirectory(prefix="graphmem-remainders-") as tmp, \
            MemoryStore(Path(tmp) / "cases.db", embedder=embedder) as store:
        for case in data["cases"]:
            owner = f"case-{case['id']}"

            store.add_conversation([m for f in filler for m in _said(f, "Good to know.")],
                                   session_id=f"{owner}-0", owner=owner, timestamp=START)
            first, fix = _said(case["old"], case["reply"]), _said(case["fix"], "Okay, noted.")
            sittings = [first + fix] if case.get("same") else [first, fix]
            for n, messages in enumerate(sittings, start=1):
                store.add_conversation(messages, session_id=f"{owner}-{n}", owner=owner,
                                       timestamp=START + timedelta(days=7 * n))
            memories = store.memories(owner=owner)
            kept = [m for m in memories if m.provenance.get("remains_of")]
            replaced = any(m.superseded_by for m in memories
                           if m.session == f"{owner}-1" and m.text.strip() in case["old"])
            kept_ids = {m.id for m in kept}
            hits = store.recall(case["q_fix"], owner=owner, k=3, record_access=False)
            row = {"id": case["id"], "group": case["group"], "replaced": replaced,
                   "kept": [m.text for m in kept],
                   "graphmem": verdict(case, [m.text for m in kept]),
                   "keep nothing": verdict(case, []),
                   "all but closest": verdict(case, all_but_closest(embedder, case["old"],
                                                                    case["fix"])),
                   "kept first for q_fix": bool(hits) and hits[0].memory.id in kept_ids}
            if case["group"] == "a":
                hits = store.recall(case["q_keep"], owner=owner, k=3, record_access=False)
                row["kept in top 3 for q_keep"] = any(
                    h.memory.id in kept_ids and all(w in h.memory.text.lower()
                                                     for w in case["keep"]) for h in hits)
            out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--distractors", action="store_true",
                        help="store the data's 50 distractor memories before each case too")
    parser.add_argument("--json", type=Path, default=None, help="write every case's row here")
    args = parser.parse_args()
    rows = run(load(args.data), args.distractors)
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")
    done = [r for r in rows if r["replaced"]]
    print(f"{len(rows)} cases, {len(done)} whose statement the correction replaced "
          f"(a {sum(r['group'] == 'a' for r in done)}, b {sum(r['group'] == 'b' for r in done)}"
          f", c {sum(r['group'] == 'c' for r in done)})")
    print(f"{'rule':<18}{'a: kept right':>15}{'a: missed':>11}{'b: stale':>10}{'c: junk':>9}")
    for rule in ("graphmem", "keep nothing", "all but closest"):
        count = Counter((r["group"], r[rule]) for r in done)
        print(f"{rule:<18}{count['a', 'right']:>15}{count['a', 'missed']:>11}"
              f"{count['b', 'stale']:>10}{count['c', 'junk']:>9}")
    print(f"graphmem: a kept memory first for the corrected fact's question in "
          f"{sum(r['kept first for q_fix'] for r in done)} of {len(done)}; the kept clause "
          f"in the top 3 for its own question in "
          f"{sum(r.get('kept in top 3 for q_keep', False) for r in done)} of "
          f"{sum(r['group'] == 'a' for r in done)} (group a)")


if __name__ == "__main__":
    main()
