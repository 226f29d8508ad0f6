"""Writing a run's outputs: results.json, the per-query results, the Markdown report, plots."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .locomo import QueryResult

__all__ = ["markdown", "plot", "write_outputs"]

REFERENCES = {
    "locomo": ("Reference points quoted for this file, not measured by this run (turn level, "
               "fractional recall@10): BM25 over lowercase whitespace tokens 0.404, BM25 "
               "0.526, MiniLM alone 0.414, RRF of those two 0.535; the LoCoMo paper's DRAGON "
               "retriever 0.675 on its 50-conversation version. The rows above are this "
               "run's own."),
}


def write_outputs(results: dict[str, Any], rows: Sequence[QueryResult], out: Path, *,
                  command: str, plots: bool = True) -> list[Path]:
    """``results.json`` and ``queries.jsonl`` (the per-query results), and the report as
    ``<corpus>.md`` / ``<corpus>.json`` with ``<corpus>_*.png`` plots, in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    corpus = results["corpus"]
    results = {**results, "command": command,
               "date": datetime.now(UTC).strftime("%Y-%m-%d")}
    text = json.dumps(results, indent=2) + "\n"
    written = [out / "results.json", out / f"{corpus}.json", out / "queries.jsonl",
               out / f"{corpus}.md"]
    written[0].write_text(text, encoding="utf-8")
    written[1].write_text(text, encoding="utf-8")
    with written[2].open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(asdict(row)) + "\n")
    written[3].write_text(markdown(results), encoding="utf-8")
    if plots:
        written += plot(results, out)
    return written


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _splits(by_split: dict[str, Any], corpus: str) -> list[str]:
    """The table per half of the run's file (no claim of what was tuned on it)."""
    lme = corpus == "longmemeval"
    keys = ["recall_all@5", "recall_all@10", "mrr"] if lme else ["recall@5", "recall@10", "mrr"]
    heads = ["R_all@5", "R_all@10", "MRR"] if lme else ["R@5", "R@10", "MRR"]
    part = ("questions at even positions (tune) and odd positions (test)" if lme
            else "conversations 1-5 (tune) and 6-10 (test)")
    lines = ["", "## Tune and test halves", "",
             f"This run's file in two halves: {part}. What graphmem's presets were chosen "
             "on is stated in `graphmem/_recall/_config.py`; this run does not know "
             "whether its file is that one.", "",
             "| half | preset | " + " | ".join(heads) + " |", "|---|---|" + "---|" * len(heads)]
    for half, presets in by_split.items():
        for name, m in presets.items():
            if m:
                lines.append(f"| {half} | `{name}` | "
                             + " | ".join(_fmt(m.get(k, "-")) for k in keys) + " |")
    return lines


def _protocols(results: dict[str, Any]) -> list[str]:
    """LongMemEval under the official protocol first, then under graphmem's own ingest
    (the rest of the report is graphmem's)."""
    official = results.get("official")
    if not official:
        return [f"Protocol: {results.get('protocol', 'graphmem own ingest')}.", ""]
    lines = ["## Two protocols", "",
             f"- **official**: {official['protocol']} ({official['questions']} questions, "
             f"{official['skipped']} skipped).",
             f"- **graphmem**: {results['protocol']} ({results['questions']} questions; "
             "the tables after this one are of this protocol).", "",
             "| preset | protocol | n | R_all@5 | R_all@10 | MRR |", "|---|---|---|---|---|---|"]
    for name, m in results["presets"].items():
        strict = official["presets"].get(name) or {}
        if strict:
            lines.append(f"| `{name}` | official | {strict['n']} | "
                         f"{_fmt(strict['recall_all@5'])} | {_fmt(strict['recall_all@10'])} | "
                         f"{_fmt(strict['mrr'])} |")
        lines.append(f"| `{name}` | graphmem | {m['n']} | {_fmt(m['recall_all@5'])} | "
                     f"{_fmt(m['recall_all@10'])} | {_fmt(m['mrr'])} |")
    return [*lines, ""]


def _ablations(ablations: dict[str, Any], corpus: str) -> list[str]:
    """The ablation table: overall metrics, then the per-category (question type) figure."""
    keys = (["recall_all@5", "recall_all@10", "mrr"] if corpus == "longmemeval"
            else ["recall@5", "recall@10", "mrr"])
    heads = {"recall@5": "R@5", "recall@10": "R@10", "mrr": "MRR", "recall_all@5": "R_all@5",
             "recall_all@10": "R_all@10"}
    cats = sorted({c for vs in ablations.values() for m in vs.values()
                   for c in m.get("per_category", {})})
    per = "R_all@5" if corpus == "longmemeval" else "R@10"
    lines = ["", "## Ablations (the `default` preset, one change at a time)", "",
             f"Per-category columns are {per}.", "",
             "| group | variant | " + " | ".join(heads[k] for k in keys) + " | "
             + " | ".join(cats) + " |", "|---|---|" + "---|" * (len(keys) + len(cats))]
    for group, variants in ablations.items():
        for name, m in variants.items():
            lines.append(f"| {group} | {name} | " + " | ".join(_fmt(m.get(k, "-")) for k in keys)
                         + (" | " + " | ".join(_fmt(m.get("per_category", {}).get(c, "-"))
                                               for c in cats) if cats else "") + " |")
    main = keys[1]
    best = max(((m[main], f"{g} / {n}") for g, vs in ablations.items()
                for n, m in vs.items() if main in m), default=None)
    if best:
        lines += ["", f"Best variant by {heads[main]}: {best[1]} ({best[0]:.3f})."]
    return lines


def markdown(results: dict[str, Any]) -> str:
    """The report: the experiment table, wins, categories, ACT-R, ablations."""
    corpus = results["corpus"]
    presets = results["presets"]
    lines = [f"# graphmem on {corpus}", "",
             f"Made by `{results.get('command', '?')}` on {results.get('date', '?')} "
             f"({results.get('seconds', '?')} s on this machine).", ""]
    count = results.get("questions", results.get("queries"))
    split = results.get("split", "all")
    if corpus == "locomo":
        part = ("" if split == "all" else
                f" (the {split} split: {', '.join(results.get('sample_ids', []))})")
        lines += [f"{results.get('conversations')} conversations{part}, {count} questions "
                  "with valid evidence after repair (the whole file has 1,982; published "
                  "reference figures count 1,977). Turn-level gold, fractional "
                  "recall (the official measure); one store per conversation, each turn a "
                  "memory indexed with the turn before and after it.", ""]
    elif corpus == "longmemeval":
        part = "" if split == "all" else (
            f", the {split} split (the answerable questions at "
            f"{'even' if split == 'tune' else 'odd'} positions)")
        lines += [f"{count} answerable questions of the file{part}; each question its "
                  "own haystack, session-level gold.", ""]
        lines += _protocols(results)
    elif count is not None:
        lines += [f"{count} queries.", ""]
    wins = results.get("unique_wins", {})
    lines += ["| row | preset | R@5 | R@10 | R@20 | MRR | nDCG@10 | wins / losses vs row above "
              "| p50 ms |", "|---|---|---|---|---|---|---|---|---|"]
    spec = str(results.get("embedder", "minilm"))
    model = {"minilm": "MiniLM"}.get(spec, spec)
    labels = {"fulltext": "baseline (BM25)", "vector": f"vector ({model})",
              "hybrid": "RRF of the two", "graph_hybrid": "+ graph, time, facts",
              "default": "+ sentences, lifts, ACT-R"}
    for name, m in presets.items():
        w = wins.get(name)
        lines.append(f"| {labels.get(name, name)} | `{name}` | {_fmt(m['recall@5'])} | "
                     f"{_fmt(m['recall@10'])} | {_fmt(m.get('recall@20', float('nan')))} | "
                     f"{_fmt(m['mrr'])} | {_fmt(m['ndcg@10'])} | "
                     + (f"{w['wins']} / {w['losses']}" if w else "-") + f" | {m['p50_ms']} |")
    if "fulltext" in presets:
        base = presets["fulltext"]["recall@10"]
        lines += ["", "Against the baseline (R@10): " + ", ".join(
            f"`{n}` {100 * (m['recall@10'] - base):+.1f} pp" for n, m in presets.items()
            if n != "fulltext") + "."]
    if corpus == "longmemeval":
        lines += ["", "LongMemEval's Recall@k is `recall_all@k` (every answer session in the "
                  "top k): " + ", ".join(f"`{n}` R_all@5 {_fmt(m['recall_all@5'])}, "
                                         f"R_all@10 {_fmt(m['recall_all@10'])}"
                                         for n, m in presets.items()) + "."]
    per_category = results.get("per_category") or {}
    if per_category:
        cats = sorted({c for v in per_category.values() for c in v})
        metric = "R_all@5" if corpus == "longmemeval" else "R@10"
        lines += ["", f"## Per category ({metric})", "",
                  "| preset | " + " | ".join(cats) + " |",
                  "|---|" + "---|" * len(cats)]
        for name, values in per_category.items():
            lines.append(f"| `{name}` | " + " | ".join(
                _fmt(values.get(c, {}).get("recall@10", values.get(c, {}).get("recall_all@5",
                                                                               "-")))
                for c in cats) + " |")
        lines.append("| n | " + " | ".join(
            str(next(iter(per_category.values())).get(c, {}).get("n", "-")) for c in cats)
            + " |")
    by_split = results.get("by_split")
    if by_split:
        lines += _splits(by_split, corpus)
    actr = results.get("actr")
    if actr and "queries" in actr:  # (none when no question it took was scored)
        protocol = actr.get("protocol", "half replayed, half measured, swapped")
        lines += ["", "## ACT-R", "", f"Protocol: {protocol}.", "",
                  f"- top hit changed by ACT-R: {actr['top1_changes']} of {actr['queries']} "
                  f"queries ({100 * actr['top1_change_rate']:.1f}%)",
                  f"- top-5 retention: {100 * actr['top5_retention']:.1f}%"]
        for state, label in (("warm", "warm store"), ("cold", "cold store (no history)")):
            if f"{state}_no_actr" not in actr:
                continue  # (an older run's file compared graph_hybrid: not rendered so)
            without, with_ = actr[f"{state}_no_actr"], actr[f"{state}_actr"]
            lines.append(f"- {label}, `default` without / with ACT-R: " + ", ".join(
                f"{name} {_fmt(without[key])} / {_fmt(with_[key])}"
                for key, name in (("recall@5", "R@5"), ("recall@10", "R@10"), ("mrr", "MRR"))))
    ablations = results.get("ablations")
    if ablations:
        lines += _ablations(ablations, corpus)
    if corpus in REFERENCES:
        lines += ["", REFERENCES[corpus]]
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], out: Path) -> list[Path]:
    """recall@k curves per preset, per-category bars, ablation curves (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for name, curve in results.get("curves", {}).items():
        ks = sorted(int(k) for k in curve)
        ax.plot(ks, [curve[str(k)] for k in ks], marker="o", markersize=3, label=name)
    ax.set_xlabel("k")
    ax.set_ylabel("recall@k")
    ax.set_title(f"{results['corpus']}: recall@k per preset")
    ax.grid(alpha=0.3)
    ax.legend()
    written.append(_save(fig, out / f"{results['corpus']}_recall_at_k.png"))
    per_category = results.get("per_category") or {}
    if per_category:
        cats = sorted({c for v in per_category.values() for c in v})
        fig, ax = plt.subplots(figsize=(7.2, 4.2))
        width = 0.8 / max(len(per_category), 1)
        for i, (name, values) in enumerate(per_category.items()):
            ax.bar([j + i * width for j in range(len(cats))],
                   [values.get(c, {}).get("recall@10", values.get(c, {}).get("recall_all@5", 0))
                    for c in cats], width, label=name)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(cats))])
        ax.set_xticklabels(cats, rotation=15)
        ax.set_ylabel("recall_all@5" if results["corpus"] == "longmemeval" else "recall@10")
        ax.set_title(f"{results['corpus']}: per category")
        ax.legend(fontsize=8)
        written.append(_save(fig, out / f"{results['corpus']}_per_category.png"))
    ablations = results.get("ablations") or {}
    if ablations:
        groups = list(ablations)
        metric = "recall_all@5" if results["corpus"] == "longmemeval" else "recall@10"
        columns = min(5, len(groups))
        rows = -(-len(groups) // columns)
        fig, grid = plt.subplots(rows, columns, figsize=(2.6 * columns, 2.8 * rows),
                                 sharey=True, squeeze=False)
        axes = [ax for row in grid for ax in row]
        for ax, group in zip(axes, groups, strict=False):
            names = list(ablations[group])
            ax.plot(range(len(names)), [ablations[group][n].get(metric, float("nan"))
                                        for n in names], marker="o")
            ax.set_xticks(range(len(names)))
            ax.set_xticklabels([n.split("=")[-1] for n in names], fontsize=7)
            ax.set_title(group, fontsize=8)
            ax.grid(alpha=0.3)
        for ax in axes[len(groups):]:
            ax.axis("off")
        for row in grid:
            row[0].set_ylabel(metric)
        written.append(_save(fig, out / f"{results['corpus']}_ablations.png"))
    return written


def _save(fig: Any, path: Path) -> Path:
    """Lay out, write (PNG, 110 dpi) and close a figure."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
