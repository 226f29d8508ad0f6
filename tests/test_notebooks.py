"""The notebooks run top to bottom offline, are stored without outputs, and read well:
no warnings or progress bars among their outputs, counts shown as integers (in tables
and on axes), and the results they show explained."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from .conftest import ROOT, need_locomo

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: notebooks that replay LoCoMo (read in place: skipped, or failed, without it)
NEEDS_LOCOMO = {"learning_from_use"}

#: Run after a notebook (figures stay open under the Agg backend): the tick values of
#: every axis that counts something, which must be whole numbers.
_TICKS = """
import json as _json
import matplotlib.pyplot as _plt
_counted = {"k (memories returned)", "memories", "questions"}
_seen = []
for _num in _plt.get_fignums():
    for _ax in _plt.figure(_num).axes:
        for _axis, _label, _lim in ((_ax.xaxis, _ax.get_xlabel(), _ax.get_xlim()),
                                    (_ax.yaxis, _ax.get_ylabel(), _ax.get_ylim())):
            if _label in _counted:
                _lo, _hi = sorted(_lim)
                _seen.append([_label, [float(t) for t in _axis.get_majorticklocs()
                                       if _lo <= t <= _hi]])
print("TICKS " + _json.dumps(_seen))
"""


def test_the_three_notebooks_exist() -> None:
    assert {p.name for p in NOTEBOOKS} >= {"quickstart.ipynb", "graph_analytics.ipynb",
                                           "eval_rrf_actr.ipynb", "learning_from_use.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, path.name


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_runs_top_to_bottom_and_reads_well(path: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    if path.stem in NEEDS_LOCOMO:
        monkeypatch.setenv("GRAPHMEM_LOCOMO", str(need_locomo()))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(_TICKS))
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any(o.output_type in ("execute_result", "display_data") for o in outputs)
    noise = [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    assert noise == [], noise  # no warnings, no progress bars
    shown = "\n".join(o.get("text") or o.get("data", {}).get("text/plain", "")
                      for o in outputs)
    # a count such as n = 1982 shown as a float (1982.0)
    assert not re.search(r"\b[1-9]\d{2,}\.0\b", shown), "a count shown as a float"
    [ticks] = [o.text for o in outputs if o.output_type == "stream"
               and o.text.startswith("TICKS ")]
    for label, values in json.loads(ticks[len("TICKS "):]):
        assert values and all(v == int(v) for v in values), (label, values)


def test_the_evaluation_notebook_explains_its_results() -> None:
    text = "\n".join(c.source for c in nbformat.read(ROOT / "notebooks" / "eval_rrf_actr.ipynb",
                                                     as_version=4).cells
                     if c.cell_type == "markdown")
    for heading in ("**What ACT-R does on LoCoMo.**", "**What the graph is worth.**",
                    "**MRR**", "**recall@k**"):
        assert heading in text
    results = json.loads((ROOT / "eval" / "results" / "locomo.json").read_text())
    actr = results["actr"]  # the figures quoted are the committed ones
    for value in (actr["cold_no_actr"]["mrr"], actr["cold_actr"]["mrr"],
                  actr["warm_no_actr"]["mrr"], actr["warm_actr"]["mrr"]):
        assert f"{value:.3f}" in text
    ablations = results["ablations"]  # the groups the notebook explains
    assert {"knowledge_graph", "graph_share"} <= set(ablations)
    assert ablations["graph_share"]["default"]["recall@10"] > ablations["graph_share"][
        "two channels + ACT-R"]["recall@10"]  # the text says the graph adds recall


def test_make_notebook_installs_and_starts_jupyterlab() -> None:
    planned = subprocess.run(["make", "-n", "notebook"], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)
    assert planned.returncode == 0, planned.stderr
    assert re.search(r"pip install .*jupyterlab", planned.stdout)
    assert ".venv/bin/jupyter lab" in planned.stdout and "notebooks" in planned.stdout
