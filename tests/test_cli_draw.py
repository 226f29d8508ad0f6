"""Drawings people can read: titles in words, every version labelled apart, a legend
that explains colours, shapes, sizes, outlines and lines and stays clear of the graph,
and an HTML page whose sidebar wraps long ids and whose nodes stay in view."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem import MemoryStore
from graphmem.cli import cli
from ingest.ump import SAMPLE_PATH, import_ump
from queries.draw import _layout, drawing_title, neighbourhood, neighbourhood_figure

CHAIN = "urn:ump:3jighsckhkmbv7f34lg4y3rk5c"  # "Orchard database", its third version


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    db = tmp_path_factory.mktemp("draw") / "sample"
    with MemoryStore(db, embedder="hashing") as store:
        import_ump(store, SAMPLE_PATH)
    yield db


def test_the_png_reads_as_words_and_its_legend_is_clear(sample: Path) -> None:
    import matplotlib.pyplot as plt

    with MemoryStore(sample, read_only=True) as store:
        graph = neighbourhood(store, CHAIN, depth=2)
    title = drawing_title(graph, CHAIN, 2)
    assert title.startswith("“Orchard database” (semantic) and what it connects to within 2")
    assert "urn:" not in title
    positions = _layout(graph, 0)
    fig = neighbourhood_figure(graph, positions, CHAIN, 2)
    try:
        fig.canvas.draw()
        ax = fig.axes[0]
        legend = ax.get_legend()
        texts = [t.get_text() for t in legend.get_texts()]
        assert {"large: the memory drawn around", "thick black outline: hot (most activated)",
                "supersedes (replaces)", "colour: kind", "shape: status"} <= set(texts)
        box = legend.get_window_extent()
        for x, y in positions.values():  # no node under the legend
            px, py = ax.transData.transform((x, y))
            assert not (box.x0 - 15 <= px <= box.x1 + 15 and box.y0 - 15 <= py <= box.y1 + 15)
        labels = [t.get_text() for t in ax.texts]
        versions = [label for label in labels if label.startswith("Orchard database")]
        assert len(versions) == 3 == len(set(versions))  # three versions told apart
        assert sum(label.endswith(", replaced") for label in versions) == 2
        assert ax.get_title() == title
    finally:
        plt.close(fig)


def test_the_html_page(sample: Path, tmp_path: Path) -> None:
    out = tmp_path / "n.html"
    result = CliRunner().invoke(cli, ["--db", str(sample), "draw", CHAIN, "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    title = re.search(r"<title>(.*?)</title>", page).group(1)  # type: ignore[union-attr]
    assert title.startswith("“Orchard database” (semantic)") and "urn:" not in title
    side = re.search(r"#side\{([^}]*)\}", page).group(1)  # type: ignore[union-attr]
    assert "overflow-wrap:anywhere" in side  # a long id wraps instead of widening it
    for words in ("size and outline", "thick black outline: hot", "shape: status",
                  "dashed: co-occurs"):
        assert words in page
    data = json.loads(re.search(r"const DATA = (.*);\n", page).group(1))  # type: ignore[union-attr]
    shown = [n["shown"] for n in data["nodes"] if n["label"] == "Orchard database"]
    assert len(shown) == 3 == len(set(shown))
    assert all(-1.0 <= n["x"] <= 1.0 and -1.0 <= n["y"] <= 1.0 for n in data["nodes"])
    # [-1, 1] maps inside a margin of the canvas, so no node is drawn at its edge
    assert "const px = n => MX + (n.x + 1) / 2 * (W() - 2 * MX - 120);" in page
