"""Recall's time range, cuts and (MCP) text budget on every face: the command line, the
sidecar over real HTTP on 127.0.0.1 with its OpenAPI document, ``graphmem.connect``, and
the MCP tool driven by the SDK's client over stdio; bad values named on each."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import graphmem
from graphmem import InvalidInputError, MemoryStore
from graphmem.cli import cli

from ._servers import running_sidecar

MAY, JUNE, JULY = (datetime(2026, m, 1, tzinfo=UTC) for m in (5, 6, 7))
NOW = "2026-07-15T12:00:00Z"
OFF_TOPIC = "submarine ballast tanks"


def _fill(store: MemoryStore) -> dict[str, str]:
    """A garden note on the first of May, June and July (texts of 40, 41 and 41
    characters), and an unrelated one."""
    ids = {when.strftime("%B"): store.add(f"watered the garden beds in the {when:%B} sun",
                                          created=when).id for when in (MAY, JUNE, JULY)}
    store.add("the tomato seedlings need repotting", created=MAY)
    return ids


@pytest.fixture
def db(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        return path, _fill(store)


# -- the command line ---------------------------------------------------------------------
def _cli(path: Path, *args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(cli, ["--db", str(path), "--now", NOW, *args])
    assert result.exit_code == code, (args, result.output)
    return result


def _cli_ids(path: Path, *args: str) -> set[str]:
    return {h["memory"]["id"]
            for h in json.loads(_cli(path, "--json", "recall", "garden beds", *args).stdout)}


def test_cli_recall_options(db: tuple[Path, dict[str, str]]) -> None:
    path, ids = db
    assert _cli_ids(path, "--since", "2026-06-01") == {ids["June"], ids["July"]}
    assert _cli_ids(path, "--since", "2026-05-15T00:00:00+02:00", "--until",
                    "2026-07-01T00:00:00Z") == {ids["June"]}
    assert _cli(path, "recall", OFF_TOPIC).stdout != "(no memories)\n"
    assert _cli(path, "recall", OFF_TOPIC, "--min-similarity", "0.3").stdout == \
        "(no memories)\n"
    everything = json.loads(_cli(path, "--json", "recall", "garden beds").stdout)
    best = everything[0]["score"]
    assert _cli_ids(path, "--min-relative", "0.9") == {
        h["memory"]["id"] for h in everything if h["score"] >= 0.9 * best}
    # bad values: one line naming the option or field, no traceback
    for args, named in ((("--since", "last week"), "'--since'"),
                        (("--until", "2026-02-30"), "'--until'"),
                        (("--min-similarity", "2"), "'--min-similarity'"),
                        (("--min-relative", "-1"), "'--min-relative'")):
        bad = _cli(path, "recall", "garden", *args, code=2)
        assert named in bad.output and "Traceback" not in bad.output
    reversed_range = _cli(path, "--json", "recall", "garden", "--since", "2026-07-01",
                          "--until", "2026-05-01", code=1)
    error = json.loads(reversed_range.stderr)
    assert error["field"] == "until" and "must be after since" in error["detail"]


# -- the sidecar and graphmem.connect -----------------------------------------------------
@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[MemoryStore, dict[str, str], str]]:
    with MemoryStore(tmp_path / "served", embedder="hashing") as store, \
            running_sidecar(store) as url:
        yield store, _fill(store), url


def test_sidecar_retrieve_takes_the_options(served: tuple[MemoryStore, dict[str, str], str]
                                            ) -> None:
    store, ids, url = served

    def retrieve(**body: Any) -> httpx.Response:
        return httpx.post(f"{url}/v1/memories/retrieve", json={"query": "garden beds", **body})

    got = retrieve(since="2026-06-01", until="2026-07-01T00:00:00Z").json()
    assert [h["memory"]["id"] for h in got["hits"]] == [ids["June"]]
    assert retrieve(query=OFF_TOPIC).json()["count"] > 0
    assert retrieve(query=OFF_TOPIC, min_similarity=0.3).json()["hits"] == []
    cut = retrieve(min_relative=0.9).json()["hits"]
    assert [h["memory"]["id"] for h in cut] == [
        h.memory.id for h in store.recall("garden beds", min_relative=0.9)]
    for body, field in (({"since": "last week"}, "since"),
                        ({"since": "2026-07-01", "until": "2026-05-01"}, "until"),
                        ({"min_similarity": 1.5}, "min_similarity"),
                        ({"min_relative": -0.5}, "min_relative")):
        refused = retrieve(**body)
        assert refused.status_code == 422 and refused.json()["field"] == field, refused.text
    schema = httpx.get(f"{url}/openapi.json").json()["components"]["schemas"]["RetrieveIn"]
    properties = schema["properties"]
    assert {"since", "until", "min_similarity", "min_relative"} <= set(properties)
    assert properties["min_similarity"]["anyOf"][0] == {"type": "number", "minimum": 0.0,
                                                        "maximum": 1.0}


def test_connect_recall_options(served: tuple[MemoryStore, dict[str, str], str]) -> None:
    store, ids, url = served
    with graphmem.connect(url) as client:
        assert {h.memory.id for h in client.recall("garden beds", since=JUNE)} == {
            ids["June"], ids["July"]}
        may = [h.memory.id for h in client.recall("garden beds", since="2026-05-01",
                                                  until="2026-06-01")]
        assert may[0] == ids["May"] and not {ids["June"], ids["July"]} & set(may)
        assert may == [h.memory.id for h in store.recall("garden beds", since=MAY, until=JUNE)]
        assert client.recall(OFF_TOPIC, min_similarity=0.3) == []
        assert [h.memory.id for h in client.recall("garden beds", min_relative=0.9)] == [
            h.memory.id for h in store.recall("garden beds", min_relative=0.9)]
        for options, field in (({"until": "soon"}, "until"),
                               ({"since": JULY, "until": MAY}, "until"),
                               ({"min_relative": 3}, "min_relative")):
            with pytest.raises(InvalidInputError) as caught:
                client.recall("garden", **options)  # type: ignore[arg-type]
            assert caught.value.field == field


# -- MCP ------------------------------------------------------------------------------------
def _mcp(db: Path, arguments: list[dict[str, Any]], *extra: str) -> list[Any]:
    """Call ``recall`` with each set of arguments through the SDK's client over stdio."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "graphmem.cli", "--db", str(db), "mcp", *extra],
        env={**os.environ, "GRAPHMEM_EMBEDDER": "hashing"})

    async def main() -> list[Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return [await session.call_tool("recall", a) for a in arguments]

    return asyncio.run(asyncio.wait_for(main(), timeout=180))


def _texts(result: Any) -> list[str]:
    assert not result.is_error, result.content
    return [h["text"] for h in result.structured_content["hits"]]


def test_mcp_recall_options_and_budget(db: tuple[Path, dict[str, str]]) -> None:
    path, _ = db
    query = {"query": "garden beds", "k": 5}
    (every, june_on, nothing, *budgets) = _mcp(path, [
        query, {**query, "since": "2026-06-01"}, {"query": OFF_TOPIC, "min_similarity": 0.3},
        *({**query, "max_chars": n} for n in (38 + 39, 38 + 10, 5))], "--embedded")
    texts = _texts(every)
    assert [len(t) for t in texts[:2]] == [38, 39] and len(texts) == 4
    assert "left_out" not in every.structured_content  # no budget, no cut
    assert {t.split()[-2] for t in _texts(june_on)} == {"June", "July"}
    assert _texts(nothing) == []
    # the most relevant first: whole hits while they fit, the next one cut to what is left
    fits, cut, tiny = budgets
    assert _texts(fits) == texts[:2] and fits.structured_content["left_out"] == 2
    assert "truncated" not in fits.structured_content["hits"][1]
    assert _texts(cut) == [texts[0], texts[1][:10]]
    assert cut.structured_content["hits"][1]["truncated"] is True
    assert cut.structured_content["left_out"] == 2
    assert _texts(tiny) == [texts[0][:5]] and tiny.structured_content["left_out"] == 3
    refused = _mcp(path, [{**query, "max_chars": n} for n in (-1, 0)] + [
        {**query, "since": "2026-07-01", "until": "2026-05-01"},
        {**query, "until": "next year"}, {**query, "min_similarity": 7}], "--embedded")
    messages = [str(r.content[0].text) for r in refused]
    assert all(r.is_error for r in refused)
    for message, field in zip(messages, ("max_chars", "max_chars", "until", "until",
                                         "min_similarity"), strict=True):
        assert field in message and "Traceback" not in message


def test_mcp_options_reach_a_sidecar(served: tuple[MemoryStore, dict[str, str], str],
                                     tmp_path: Path) -> None:
    _, ids, url = served
    [june, refused] = _mcp(tmp_path / "served", [
        {"query": "garden beds", "since": "2026-06-01", "until": "2026-07-01"},
        {"query": "garden beds", "until": "whenever"}], "--sidecar", url)
    assert june.structured_content["answered_by"] == "sidecar"
    assert [h["id"] for h in june.structured_content["hits"]] == [ids["June"]]
    assert refused.is_error and "until" in str(refused.content[0].text)
