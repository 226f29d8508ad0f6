"""Every hit carries when it was said (a conversation turn: its session's time) and the
times its text names, resolved against that time: in the library, the CLI, the HTTP
sidecar and the MCP tools."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import httpx
from click.testing import CliRunner

from graphmem import MemoryStore
from graphmem.cli import cli
from graphmem.mcpserver._backends import EmbeddedBackend

from ._servers import running_sidecar

SESSION = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday
YESTERDAY = ["2023-05-07T00:00:00Z", "2023-05-08T00:00:00Z"]


def _conversation(store: MemoryStore) -> str:
    """A turn of a session held on 8 May 2023, remembered (created) later."""
    turn = store.add("Caroline: I went to a LGBTQ support group yesterday.",
                     observed=SESSION, session="conv:S1")
    store.add("Caroline: the support group meets every month.",
              created=datetime(2023, 6, 1, tzinfo=UTC), session="conv:S2")
    return turn.id


def _iso(value: str) -> str:
    return value.replace("+00:00", "Z")


def test_a_hit_is_dated_by_its_session_and_reads_yesterday_against_it(
        store: MemoryStore) -> None:
    turn = _conversation(store)
    hits = store.recall("when did Caroline go to the LGBTQ support group yesterday", k=2)
    by_id = {h.memory.id: h for h in hits}
    assert by_id[turn].when == SESSION
    assert [(a.isoformat(), b.isoformat()) for a, b in by_id[turn].speaks_of] == [
        ("2023-05-07T00:00:00+00:00", "2023-05-08T00:00:00+00:00")]
    other = next(h for h in hits if h.memory.id != turn)
    assert other.when == datetime(2023, 6, 1, tzinfo=UTC) and other.speaks_of == ()


def test_every_face_shows_the_date_of_a_hit(tmp_path: Path) -> None:
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        turn = _conversation(store)
        with running_sidecar(store) as url:
            body = httpx.post(f"{url}/v1/memories/retrieve", timeout=60,
                              json={"query": "LGBTQ support group yesterday", "k": 1,
                                    "explain": False}).json()
    [served] = body["hits"]
    assert served["memory"]["id"] == turn and "explanation" not in served
    assert _iso(served["when"]) == "2023-05-08T13:56:00Z"
    assert [[_iso(t) for t in span] for span in served["speaks_of"]] == [YESTERDAY]

    runner = CliRunner()
    listed = runner.invoke(cli, ["--db", str(db), "--json", "recall",
                                 "LGBTQ support group yesterday", "-k", "1"])
    [printed] = json.loads(listed.output)
    assert _iso(printed["when"]) == "2023-05-08T13:56:00Z"
    table = runner.invoke(cli, ["--db", str(db), "recall", "LGBTQ support group yesterday",
                                "-k", "1"]).output
    assert "when" in table.splitlines()[0] and "2023-05-08" in table

    tools = EmbeddedBackend(db, embedder="hashing")
    try:
        [answered] = tools.recall("LGBTQ support group yesterday", 1, "default", False, False)
    finally:
        tools.close()
    assert answered["id"] == turn and _iso(answered["when"]) == "2023-05-08T13:56:00Z"
    assert [[_iso(t) for t in span] for span in answered["speaks_of"]] == [YESTERDAY]
