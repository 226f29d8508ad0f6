"""The eval command: graphmem eval run."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from .._recall import PRESETS
from ._app import Context, cli, echo_json, pass_ctx, usage


@cli.group(name="eval")
def eval_group() -> None:
    """Reproduce the retrieval experiments on public benchmarks."""


@eval_group.command(name="run")
@click.option("--corpus", type=click.Choice(["locomo", "longmemeval", "ump", "conversations"]),
              required=True,
              help="conversations: a chat file (eval/data/everyday_*.json), ingested as the "
                   "README says and measured beside plain BM25, MiniLM and RRF over the "
                   "user's turns.")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--qrels", type=click.Path(dir_okay=False), default=None,
              help="For --corpus ump: JSON object query -> [relevant ids].")
@click.option("--presets", default=",".join(["fulltext", "vector", "hybrid", "graph_hybrid",
                                             "default"]), show_default=True,
              help="Comma-separated presets (the rows of the table).")
@click.option("--limit", type=click.IntRange(1), default=None,
              help="At most N questions (a quick run; LongMemEval takes them evenly "
                   "spaced, so that every question type is in).")
@click.option("--out", type=click.Path(file_okay=False), default="eval-out", show_default=True,
              help="Where results.json, the per-query results, the report and plots go.")
@click.option("--ablations", is_flag=True,
              help="Also run the ablations (LoCoMo, LongMemEval).")
@click.option("--ablation-groups", default=None, metavar="G1,G2",
              help="Run only these ablation groups (implies --ablations); "
                   "`--ablation-groups list` names them.")
@click.option("--split", type=click.Choice(["all", "tune", "test"]), default="all",
              show_default=True,
              help="One half of the corpus: tune on one, report on the other (LoCoMo: "
                   "conversations 1-5 / 6-10; LongMemEval: questions at even / odd "
                   "positions).")
@click.option("--no-plots", is_flag=True, help="Skip the PNG plots.")
@pass_ctx
def eval_run(ctx: Context, corpus: str, file: str | None, qrels: str | None, presets: str,
             limit: int | None, out: str, ablations: bool, ablation_groups: str | None,
             split: str, no_plots: bool) -> None:
    """Run the experiment table (and the ACT-R protocol) on a corpus.

    LongMemEval is reported under its official protocol (user turns alone as keys,
    `noans` answer sessions, questions without a user answer turn skipped) and under
    graphmem's own ingest, each row labelled.
    """
    from eval.report import write_outputs
    from eval.runs import ablation_groups as known_groups
    from eval.runs import run_locomo, run_longmemeval, run_ump

    chosen: bool | list[str] = ablations
    if ablation_groups is not None:
        if ablation_groups.strip() == "list":
            click.echo("\n".join(known_groups()))
            return
        chosen = [g.strip() for g in ablation_groups.split(",") if g.strip()]
        unknown_groups = [g for g in chosen if g not in known_groups()]
        if unknown_groups:
            usage(f"unknown ablation group(s) {', '.join(unknown_groups)}; groups are "
                  f"{', '.join(known_groups())}")

    names = [p.strip() for p in presets.split(",") if p.strip()]
    unknown = [p for p in names if p not in PRESETS]
    if unknown:
        usage(f"unknown preset(s) {', '.join(unknown)}; presets are {', '.join(PRESETS)}")
    embedder = ctx.embedder or "minilm"
    progress = not ctx.json
    if corpus == "conversations":
        _run_conversations(ctx, file, names, embedder, Path(out), split)
        return
    if corpus == "locomo":
        results, rows = run_locomo(file, presets=names, limit=limit, embedder=embedder,
                                   ablations=chosen, progress=progress, split=split)
    elif corpus == "longmemeval":
        results, rows = run_longmemeval(file, presets=names, limit=limit, embedder=embedder,
                                        progress=progress, split=split, ablations=chosen)
    else:
        if split != "all":
            usage("--split applies to --corpus locomo and longmemeval")
        if file is None or qrels is None:
            usage("--corpus ump needs a UMP FILE and --qrels FILE")
        results, rows = run_ump(file, qrels, presets=names, limit=limit, embedder=embedder,
                                now=ctx.now, progress=progress)
    command = "graphmem " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    written = write_outputs(results, rows, Path(out), command=command, plots=not no_plots)
    presets_out = results["presets"]
    if ctx.json:
        echo_json({"corpus": corpus, "recall@10": {n: m["recall@10"]
                                                   for n, m in presets_out.items()},
                   **({"official": {n: m["recall_all@5"] for n, m in
                                    results["official"]["presets"].items() if m}}
                      if results.get("official") else {}),
                   "written": [str(p) for p in written]})
        return
    official = results.get("official")
    if official:  # LongMemEval: the official protocol first, each row labelled
        click.echo(f"{corpus}, official protocol ({official['questions']} questions): "
                   + ", ".join(f"{n} R_all@5 {m['recall_all@5']:.3f}"
                               for n, m in official["presets"].items() if m))
        click.echo(f"{corpus}, graphmem's ingest ({results['questions']} questions): "
                   + ", ".join(f"{n} R_all@5 {m['recall_all@5']:.3f}"
                               for n, m in presets_out.items()))
    else:
        click.echo(f"{corpus}: " + ", ".join(f"{n} R@10 {m['recall@10']:.3f}"
                                             for n, m in presets_out.items()))
    click.echo("wrote " + ", ".join(str(p) for p in written))


def _run_conversations(ctx: Context, file: str | None, presets: list[str], embedder: str,
                       out: Path, split: str) -> None:
    from eval.conversations import format_table, run_chats, write_outputs

    if file is None:
        usage("--corpus conversations needs a chat FILE (e.g. eval/data/everyday_dev.json)")
    if split != "all":
        usage("--split applies to --corpus locomo and longmemeval")
    run = run_chats(file, presets=presets, embedder=embedder,
                    progress=None if ctx.json else lambda line: click.echo(line, err=True))
    command = "graphmem " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    written = write_outputs(run, out, source=file, embedder=embedder, command=command)
    if ctx.json:
        echo_json({"corpus": "conversations", "arms": {arm: run.table(arm) for arm in run.arms},
                   "written": [str(p) for p in written]})
        return
    click.echo(format_table(run))
    click.echo("wrote " + ", ".join(str(p) for p in written))
