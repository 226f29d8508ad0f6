"""Which later statement replaces an earlier one: ``python -m eval.supersede [--set dev]``.

Each pair of ``eval/data/supersede_pairs.json`` is two statements of one owner, said a
week apart, each the user's turn of a sitting of its own (``add_conversation``, as the
README ingests chats), and labelled with whether the later one replaces the earlier (a
change of the same thing) or not (another thing about the same person). Printed: how many
of each kind graphmem gets right, beside the two trivial rules (never replace, always
replace) on the same pairs. A pair that should not replace and does hides a true fact from
recall; one that should and does not leaves a stale fact beside the new one.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from graphmem import MemoryStore

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "supersede_pairs.json"
#: When the first statement of every pair is said; the second comes a week later.
START = datetime(2026, 1, 5, 9, tzinfo=UTC)


def load(path: Path, which: str) -> list[dict[str, Any]]:
    """The pairs of set ``which`` ("all": every set) of ``path``, checked."""
    data = json.loads(path.read_text(encoding="utf-8"))
    sets = data.get("sets")
    if not isinstance(sets, dict) or (which != "all" and which not in sets):
        raise SystemExit(f"{path}: no set {which!r} (sets: {', '.join(sets or {})})")
    pairs = [p for name, rows in sets.items() if which in ("all", name) for p in rows]
    for n, pair in enumerate(pairs):
        if not (isinstance(pair.get("old"), str) and isinstance(pair.get("new"), str)
                and isinstance(pair.get("replaces"), bool)):
            raise SystemExit(f"{path}: pair {n} needs 'old', 'new' (text) and 'replaces' "
                             "(true or false)")
    return pairs


def decide(pairs: Sequence[dict[str, Any]], embedder: str = "minilm") -> list[bool]:
    """Whether graphmem lets each pair's later statement replace the earlier one."""
    out: list[bool] = []
    with tempfile.TemporaryDirectory(prefix="graphmem-supersede-") as tmp, \
            MemoryStore(Path(tmp) / "pairs.db", embedder=embedder) as store:
        for n, pair in enumerate(pairs):
            owner = f"pair-{n}"
            for step, text in enumerate((pair["old"], pair["new"])):
                result = store.add_conversation(
                    [{"role": "user", "content": text}, {"role": "assistant", "content": "Ok."}],
                    session_id=f"{owner}-{step}", owner=owner,
                    timestamp=START + timedelta(days=7 * step))
            out.append(bool(result.corrected_ids))
    return out


def score(pairs: Sequence[dict[str, Any]], decided: Sequence[bool]) -> dict[str, float]:
    """Right decisions among the pairs that should keep both and that should replace."""
    keep = [d for p, d in zip(pairs, decided, strict=True) if not p["replaces"]]
    replace = [d for p, d in zip(pairs, decided, strict=True) if p["replaces"]]
    right = sum(not d for d in keep) + sum(replace)
    return {"kept right": sum(not d for d in keep), "of keep": len(keep),
            "replaced right": sum(replace), "of replace": len(replace),
            "accuracy": round(right / max(1, len(pairs)), 3)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", default="dev", help="dev, check or all (default: dev)")
    parser.add_argument("--file", type=Path, default=DATA)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every pair")
    args = parser.parse_args(argv)
    pairs = load(args.file, args.set)
    decided = decide(pairs, args.embedder)
    rows = {"graphmem": score(pairs, decided),
            "never replace": score(pairs, [False] * len(pairs)),
            "always replace": score(pairs, [True] * len(pairs))}
    if args.verbose:
        for pair, got in zip(pairs, decided, strict=True):
            mark = "ok " if got == pair["replaces"] else "BAD"
            print(f"{mark} {'replaces' if pair['replaces'] else 'keeps   '} "
                  f"{pair['old']} -> {pair['new']}")
    print(f"{args.set} set, {len(pairs)} pairs ({args.embedder})")
    print(f"{'rule':<16} {'kept right':>11} {'replaced right':>15} {'accuracy':>9}")
    for name, row in rows.items():
        print(f"{name:<16} {row['kept right']:>6}/{row['of keep']:<4} "
              f"{row['replaced right']:>9}/{row['of replace']:<5} {row['accuracy']:>9.3f}")
    if args.json:
        command = "python -m eval.supersede " + " ".join(sys.argv[1:] if argv is None
                                                         else argv)
        args.json.write_text(json.dumps({"set": args.set, "pairs": len(pairs),
                                         "embedder": args.embedder, "rows": rows,
                                         "command": command.strip()}, indent=1) + "\n")


if __name__ == "__main__":
    main()
