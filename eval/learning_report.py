"""``eval/results/learning.md`` from the runs of ``python -m eval.learning``
(``learning_locomo.json``, ``learning_longmemeval.json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["render", "write_report"]

TARGETS = {"locomo": ("recall@10", 0.03), "longmemeval": ("recall_all@5", 0.02)}


def _pp(a: float, b: float) -> str:
    return f"{100 * (a - b):+.1f} pp"


RULE_NOTES = {"default": "the preset, no learning",
              "newest first": "the candidates by creation time, newest first",
              "length": "the candidates by their text's length, longest first",
              "useful so far": "the candidates by times marked useful so far",
              "learned": "the ranker, trained on the other folds' feedback"}


def _cell(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def _ranker(result: dict[str, Any]) -> list[str]:
    corpus = result["corpus"]
    metric, target = TARGETS[corpus]
    d, learned = result["presets"]["default"], result["presets"]["learned"]
    gain = learned[metric] - d[metric]
    unit = "conversation" if corpus == "locomo" else \
        f"question ({result['folds']} folds, no answer session in two)"
    lines = [f"## The learned ranker on {corpus}", "",
             f"`{result.get('command', 'python -m eval.learning')}` "
             + (f"(cross-validated from the replay saved in `{result['saved_replay']}` by "
                f"`--replay`, {result.get('seconds', '?')} s)" if result.get("saved_replay")
                else f"({result.get('seconds', '?')} s)")
             + f"; embedder {result.get('embedder')}; protocol \"{result.get('protocol')}\" "
             f"(feedback on the top {result.get('shown')} hits shown); "
             f"{result['questions']} questions, cross-validated by {unit}: each fold's "
             f"ranker was trained on the other folds' feedback only. "
             f"{result['validated_folds']} of {result['folds']} fold models validated "
             "(ranked their own held-back feedback better than `default`) and were used.",
             *(["", f"Note: {result['note']}"] if result.get("note") else []), ""]
    by_use = result.get("by_use") or {}
    if by_use:
        rankings = [r for r in RULE_NOTES if r in result["presets"]]
        lines += [f"{metric} by question, each ranking re-ordering the same 50 candidates "
                  "of `default` at the moment the question was asked ("
                  + "; ".join(f"{r}: {RULE_NOTES[r]}" for r in rankings) + "). "
                  "\"Evidence used before\": the agent marked one of its evidence turns "
                  "useful for an earlier question of the same store.", "",
                  "| questions | n | " + " | ".join(f"`{r}`" if r == "default" or
                                                    r == "learned" else r
                                                    for r in rankings)
                  + " | `learned` - `default` |",
                  "|---|---|" + "---|" * (len(rankings) + 1)]
        for group, row in by_use.items():
            if not row["n"]:
                lines.append(f"| {group} | 0 |" + " |" * (len(rankings) + 1))
                continue
            values = [row[r][metric] for r in rankings]
            lines.append(f"| {group} | {row['n']} | "
                         + " | ".join(_cell(v) for v in values) + " | "
                         + _pp(row["learned"][metric], row["default"][metric]) + " |")
        lines.append("")
    lines += ["All questions, every measure:", "",
              "| ranking | R@5 | R@10 | R_all@5 | R_all@10 | MRR | p50 ms |",
              "|---|---|---|---|---|---|---|"]
    for name, p in result["presets"].items():
        lines.append(f"| {name} | {_cell(p['recall@5'])} | {_cell(p['recall@10'])} | "
                     f"{_cell(p['recall_all@5'])} | {_cell(p['recall_all@10'])} | "
                     f"{_cell(p['mrr'])} | "
                     f"{p['p50_ms'] if p.get('p50_ms') is not None else ''} |")
    bench = result.get("bench")
    if bench:
        lines += ["", f"Cost per query (`{bench['command']}`, {bench['memories']} memories, "
                      f"{bench['queries']} queries in alternation): `default` p50 "
                      f"{bench['default_p50_ms']} ms, `learned` p50 {bench['learned_p50_ms']} "
                      f"ms (ratio {bench['ratio_p50']}); the learned step alone (features "
                      f"of 50 candidates + model) p50 {bench['learned_step_p50_ms']} ms, p95 "
                      f"{bench['learned_step_p95_ms']} ms"
                      + (f" ({bench['note']})." if bench.get("note") else ".")]
    verdict = "met" if gain >= target else "missed"
    lines += ["", f"Target: {metric} >= `default` + {100 * target:.0f} pp. Measured "
                  f"{_pp(learned[metric], d[metric])}: **{verdict}**.", "",
              f"Per category ({metric}):", "",
              "| category | n | `default` | `learned` | gain |", "|---|---|---|---|---|"]
    for category, row in result["per_category"].items():
        a, b = row[f"default {metric}"], row[f"learned {metric}"]
        lines.append(f"| {category} | {row['n']} | {a:.3f} | {b:.3f} | {_pp(b, a)} |")
    ablation = result.get("ablation") or {}
    if ablation:
        lines += ["", "What the gain comes from (the same cross-validation on the stored "
                      "feedback: recall@10 and MRR of the candidates marked useful among "
                      "the 50 the ranker re-orders; only shown hits were marked):", "",
                  "| model | recall@10 | MRR |", "|---|---|---|"]
        for name, row in ablation.items():
            lines.append(f"| {name} | {row['recall@10']:.3f} | {row['mrr']:.3f} |")
    lines += ["", "Largest standardised weights (mean over folds): "
              + ", ".join(f"`{n}` {w:+.2f}" for n, w in result["top_features"]) + ".", ""]
    return lines


def _forecast(result: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for key in ("forecast", "forecast_use"):
        f = result.get(key)
        if not f:
            continue
        table = f["table"]
        target = "needed (marked useful)" if f["label"] == "need" else \
            "used (recalled or marked useful)"
        lines += [f"## Forecast of need on {result['corpus']}: {target} within "
                  f"{f['horizon_days']:g} days", "",
                  f"Cross-validated by conversation: the model was trained on the other "
                  f"conversations' histories; {f['examples']} examples (an active memory "
                  f"at a cut, every {f['horizon_days'] / 2:g} days; features from before "
                  f"the cut, the label from the horizon after it), {f['used']} positive. "
                  "Baselines scored on the same examples (`length`: the turn's words; "
                  "`useful_so_far`: times marked useful before the cut); their Brier "
                  "scores after a logistic fit of each score on the training folds.", "",
                  "| model | ROC AUC | Brier |", "|---|---|---|"]
        for name, row in table.items():
            lines.append(f"| {name} | {row['auc']:.3f} | {row['brier']:.4f} |")
        gain = table["forecast"]["auc"] - table["actr"]["auc"]
        verdict = "met" if gain >= 0.05 else "missed"
        best = max((n for n in table if n not in ("forecast", "base rate")),
                   key=lambda n: table[n]["auc"])
        margin = table["forecast"]["auc"] - table[best]["auc"]
        lines += ["", f"Target: AUC >= ACT-R + 0.05. Measured {gain:+.3f}: **{verdict}**"
                  + ("" if f["label"] == "need" else
                     " (this target is not the product's: an access is not evidence of "
                     "need; shown for comparison)") + f". Against the best trivial score "
                  f"(`{best}`, AUC {table[best]['auc']:.3f}): {margin:+.3f}.", "",
                  "Calibration (forecast probability deciles): "
                  + "; ".join(f"{c['from']:.1f}-{c['to']:.1f}: forecast {c['forecast']:.3f}, "
                              f"observed {c['observed']:.3f} (n={c['n']})"
                              for c in f["calibration"]) + ".", "",
                  "Largest standardised weights: "
                  + ", ".join(f"`{n}` {w:+.2f}" for n, w in f["top_features"]) + ".", ""]
    own = result.get("own_store") or {}
    rows = [(sid, r["forecast"]["validation"]) for sid, r in own.items()
            if isinstance(r, dict) and r.get("forecast")]
    if rows:
        lines += ["Each conversation's store alone (`store.learn()` after its replay: "
                  "trained on cuts before the last 30 days, validated on them):", "",
                  "| store | held back (needed) | forecast | ACT-R | recency | frequency | "
                  "rule | length | useful so far | validated |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for sid, v in rows:
            auc = v["auc"]
            beat = all(auc["forecast"] > auc[b] for b in auc if b != "forecast")
            lines.append(f"| {sid} | {v['held_back']} ({v['held_back_used']}) | "
                         + " | ".join(_cell(auc.get(b)) for b in (
                             "forecast", "actr", "recency", "frequency", "rule", "length",
                             "useful_so_far"))
                         + f" | {'yes' if beat else 'no'} |")
        missing = [sid for sid, r in own.items() if not (isinstance(r, dict)
                                                          and r.get("forecast"))]
        if missing:
            lines.append("")
            lines.append(f"No forecast for {', '.join(missing)}: too few memories marked "
                         "useful in the held-back horizon.")
        lines.append("")
    return lines


def _readers(results: dict[str, dict[str, Any]]) -> str:
    return ", ".join(sorted({str(r.get("reader", "unknown")) for r in results.values()}))


def render(results: dict[str, dict[str, Any]], protocol: str | None = None) -> str:
    """The report of ``results`` (corpus -> ``eval.learning``'s result); with
    ``protocol``, a result made under another replay protocol is named, not rendered."""
    older = {corpus: r.get("protocol") for corpus, r in results.items()
             if protocol is not None and r.get("protocol") != protocol}
    results = {corpus: r for corpus, r in results.items() if corpus not in older}
    made = " and ".join(f"`{r.get('command', 'python -m eval.learning')} --out "
                        "eval/results`" for r in results.values())
    lines = ["# Learning from use", "",
             f"Made by {made or '`python -m eval.learning`'} (the "
             "replay protocol is in `eval/learning.py`'s docstring). No gold label "
             "decides when a question is asked or what the agent marks: LoCoMo's "
             "questions come after every session is in, in a seeded permutation, one a "
             "day; LongMemEval (the development split) asks each question once over its "
             "own haystack, at its date. The agent recalls with `default` and gives "
             f"feedback only on the hits it was shown: the one its reader ({_readers(results)}"
             "; multilingual-e5-small is `e5`) finds closest to the question is useful, the "
             "others not useful. Every ranking is measured at the moment a question is "
             "asked, on the same store state.", ""]
    lines += [f"Not shown: the {corpus} result on file was made under an older replay "
              f"protocol ({old!r}); run `python -m eval.learning --corpus {corpus}` again."
              for corpus, old in older.items()] + ([""] if older else [])
    for corpus in ("locomo", "longmemeval"):
        if corpus in results:
            lines += _ranker(results[corpus])
    if "locomo" in results:
        lines += _forecast(results["locomo"])
    if "longmemeval" in results:
        lines += ["## Forecast of need on LongMemEval", "",
                  "Not measured: each question has its own store, asked once, so no "
                  "store has a history of use to learn from or to forecast.", ""]
    return "\n".join(lines).rstrip() + "\n"


def write_report(directory: Path, protocol: str | None = None) -> str:
    results = {}
    bench = directory / "bench_learned.json"
    for corpus in ("locomo", "longmemeval"):
        path = directory / f"learning_{corpus}.json"
        if path.exists():
            results[corpus] = json.loads(path.read_text())
            if bench.exists():
                results[corpus]["bench"] = json.loads(bench.read_text())
    text = render(results, protocol)
    (directory / "learning.md").write_text(text)
    return text
