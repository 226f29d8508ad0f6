"""The HTTP sidecar, served for real on 127.0.0.1: every endpoint, tokens and owners,
error bodies, and the serve command's refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from graphmem import InvalidInputError, MemoryStore
from graphmem.sidecar import Tokens, is_loopback

from ._servers import free_port, running_sidecar

ALICE, BOB, ADMIN, READER = ("tok-alice-0123456789", "tok-bob-0123456789abc",
                             "tok-admin-alice-012345", "tok-reader-alice-01234")
TOKENS = {ALICE: {"owner": "alice", "scopes": ["read", "write"]},
          BOB: {"owner": "bob", "scopes": ["read", "write"]},
          ADMIN: {"owner": "alice", "scopes": ["read", "write", "admin"]},
          READER: {"owner": "alice", "scopes": ["read"]}}


class Api(httpx.Client):
    """An HTTP client speaking as one token."""

    def __init__(self, url: str, token: str | None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        super().__init__(base_url=url, headers=headers, timeout=60)


@pytest.fixture
def served(store: MemoryStore) -> Iterator[tuple[MemoryStore, str]]:
    with running_sidecar(store, Tokens.from_mapping(TOKENS)) as url:
        yield store, url


@pytest.fixture
def alice(served: tuple[MemoryStore, str]) -> Iterator[Api]:
    api = Api(served[1], ALICE)
    yield api
    api.close()


@pytest.fixture
def bob(served: tuple[MemoryStore, str]) -> Iterator[Api]:
    api = Api(served[1], BOB)
    yield api
    api.close()


def _add(api: Api, text: str, **fields: Any) -> dict[str, Any]:
    response = api.post("/v1/memories", json={"text": text, **fields})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def _export(api: Api) -> dict[str, Any]:
    body: dict[str, Any] = api.get("/v1/export").json()
    body.pop("generated")
    return body


def test_every_endpoint(served: tuple[MemoryStore, str], alice: Api) -> None:
    _, url = served
    assert httpx.get(f"{url}/healthz").json()["status"] == "ok"
    one = _add(alice, "Nadia prefers green tea in the afternoon.", kind="episodic",
               tags=["tea"])
    assert one["owner"] == "alice" and "nadia" in one["entities"]
    many = alice.post("/v1/memories", json={"memories": [
        {"text": "The orchard deploy runs make release, then fly deploy.",
         "kind": "procedural", "subject": "Deploy orchard"},
        {"text": "Nadia's sister Amara works as a nurse in Lagos.", "kind": "semantic"}]})
    assert many.status_code == 201 and many.json()["count"] == 2
    conversation = alice.post("/v1/conversations", json={
        "session_id": "s1", "messages": [
            {"speaker": "Nadia", "text": "Hi!"},
            {"speaker": "Nadia", "text": "I moved the greenhouse sensors to bed-07 today."}]})
    assert conversation.status_code == 201
    assert conversation.json()["memories_created"] == 1
    hits = alice.post("/v1/memories/retrieve", json={"query": "what tea does Nadia like",
                                                     "k": 3}).json()
    assert hits["hits"][0]["memory"]["id"] == one["id"]
    assert set(hits["hits"][0]["explanation"]["channels"]) >= {"fulltext", "vector"}
    assert hits["hits"][0]["why"][0].startswith("preset default")
    plain = alice.post("/v1/memories/retrieve", json={"query": "tea", "explain": False,
                                                      "preset": "fulltext"}).json()
    assert "explanation" not in plain["hits"][0]
    assert alice.get(f"/v1/memories/{one['id']}").json()["text"].startswith("Nadia prefers")
    patched = alice.patch(f"/v1/memories/{one['id']}", json={"importance": 0.9})
    assert patched.status_code == 200 and patched.json()["importance"] == 0.9
    history = alice.get(f"/v1/memories/{one['id']}/history").json()["versions"]
    assert [v["change_type"] for v in history] == ["created", "manual_edit"]
    newer = alice.post(f"/v1/memories/{one['id']}/supersede",
                       json={"text": "Nadia switched to black tea.", "reason": "conflict_update"})
    assert newer.status_code == 201 and newer.json()["owner"] == "alice"
    assert alice.get(f"/v1/memories/{one['id']}").json()["superseded_by"] == [newer.json()["id"]]
    target = _add(alice, "Ran the greenhouse irrigation test on bed-03.")
    useful = alice.post("/v1/feedback", json={"memory_id": target["id"], "useful": True})
    assert useful.json()["useful_count"] == 1
    promoted = alice.post(f"/v1/memories/{target['id']}/promote", json={"reason": "manual"})
    assert promoted.status_code == 200 and promoted.json()["newType"] == "semantic"
    restored = alice.post(f"/v1/memories/{target['id']}/restore")
    assert restored.status_code == 200 and restored.json()["undone"] == "promote"
    archived = alice.post(f"/v1/memories/{target['id']}/archive", json={"reason": "manual"})
    assert archived.status_code == 200
    assert alice.get(f"/v1/memories/{target['id']}").json()["status"] == "archived"
    again = alice.post(f"/v1/memories/{target['id']}/archive")
    assert again.status_code == 409 and again.json()["error"] == "conflict"
    soft = alice.delete(f"/v1/memories/{target['id']}")
    assert soft.json()["status"] == "tombstoned"
    hard = alice.delete(f"/v1/memories/{target['id']}", params={"hard": "true"})
    assert hard.status_code == 403 and "admin" in hard.json()["detail"]
    with Api(url, ADMIN) as admin:
        gone = admin.delete(f"/v1/memories/{target['id']}", params={"hard": "true"})
        assert gone.status_code == 200 and gone.json()["status"] == "forgotten"
        run = admin.post("/v1/lifecycle/run", json={"apply": False})
        assert run.status_code == 200 and run.json()["applied"] is False
    assert alice.post("/v1/lifecycle/run", json={"apply": True}).status_code == 403
    exported = _export(alice)
    assert exported["owner"] == "alice"
    assert [f["id"] for f in exported["forgotten"]] == [target["id"]]
    assert "irrigation" not in json.dumps(exported)
    report = alice.get("/v1/lifecycle/report").json()
    assert report["evaluated"] == len(exported["memories"]) == 5
    markdown = alice.get("/v1/lifecycle/report", params={"format": "markdown"}).json()
    assert markdown["markdown"].startswith("# Archivist Lifecycle Report")
    paths = httpx.get(f"{url}/openapi.json").json()["paths"]
    assert {"/v1/memories", "/v1/conversations", "/v1/memories/retrieve",
            "/v1/memories/{memory_id}", "/v1/memories/{memory_id}/history",
            "/v1/memories/{memory_id}/supersede", "/v1/feedback",
            "/v1/memories/{memory_id}/promote", "/v1/memories/{memory_id}/archive",
            "/v1/memories/{memory_id}/restore", "/v1/export", "/v1/lifecycle/run",
            "/v1/lifecycle/report", "/healthz"} <= set(paths)


def test_tokens_401_and_scopes(served: tuple[MemoryStore, str]) -> None:
    _, url = served
    for headers in ({}, {"Authorization": "Bearer nope-nope-nope-nope"},
                    {"Authorization": "Basic abc"}):
        response = httpx.post(f"{url}/v1/memories/retrieve", json={"query": "x"},
                              headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert set(response.json()) == {"error", "detail"}
    with Api(url, READER) as reader:
        assert reader.post("/v1/memories/retrieve", json={"query": "x"}).status_code == 200
        refused = reader.post("/v1/memories", json={"text": "a new memory"})
        assert refused.status_code == 403 and refused.json()["error"] == "forbidden"


@pytest.mark.parametrize(("body", "field"), [
    ({"text": "x", "importance": 2}, "importance"),
    ({"text": "x", "colour": "red"}, "colour"),
    ({"txt": "x"}, "text"),
    ({"text": ""}, "text"),
    ({"text": "x", "kind": "dream"}, "kind"),
    ({"memories": [{"text": "ok"}, {"text": "x", "importance": -1}]}, "memories.1.importance"),
    ({"text": "x", "owner": "bob"}, "owner"),
])
def test_422_names_the_field(alice: Api, body: dict[str, Any], field: str) -> None:
    before = _export(alice)
    response = alice.post("/v1/memories", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field and field.split(".")[-1] in response.json()["detail"]
    assert _export(alice) == before


def test_bad_json_and_unknown_routes(alice: Api) -> None:
    bad = alice.post("/v1/memories", content=b"{not json", headers={
        "content-type": "application/json"})
    assert bad.status_code == 422 and bad.json() == {
        "error": "invalid_input", "detail": "body: not valid JSON", "field": "body"}
    assert alice.post("/v1/memories/retrieve", json={"query": "x", "k": 0}).json()["field"] == "k"
    missing = alice.get("/v1/nothing-here")
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"


def test_unexpected_errors_never_leak_a_traceback(served: tuple[MemoryStore, str],
                                                 alice: Api,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    store, _ = served

    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("secret internals /etc/passwd")

    monkeypatch.setattr(store, "recall", broken)
    response = alice.post("/v1/memories/retrieve", json={"query": "x"})
    assert response.status_code == 500
    assert response.json() == {"error": "internal",
                               "detail": "internal error; the server log has the details"}
    assert "secret" not in response.text and "Traceback" not in response.text


def test_owner_isolation(served: tuple[MemoryStore, str], alice: Api, bob: Api) -> None:
    mine, theirs = [], []
    for n in range(6):  # interleaved writes and reads by two owners
        mine.append(_add(alice, f"Alice's private note {n}: the vault code is 44{n}7.")["id"])
        theirs.append(_add(bob, f"Bob's private note {n}: his vault code is 91{n}3.")["id"])
        hits = bob.post("/v1/memories/retrieve", json={"query": "vault code note",
                                                       "k": 20}).json()["hits"]
        assert {h["memory"]["owner"] for h in hits} == {"bob"}
        hits = alice.post("/v1/memories/retrieve", json={"query": "Bob's vault code",
                                                         "k": 20}).json()["hits"]
        assert {h["memory"]["owner"] for h in hits} == {"alice"}
    alice_before = _export(alice)
    secret = mine[0]
    unknown = bob.get("/v1/memories/urn:graphmem:doesnotexist").json()
    attempts = [bob.get(f"/v1/memories/{secret}"),
                bob.get(f"/v1/memories/{secret}/history"),
                bob.patch(f"/v1/memories/{secret}", json={"text": "pwned"}),
                bob.post(f"/v1/memories/{secret}/supersede", json={"text": "pwned"}),
                bob.post(f"/v1/memories/{theirs[0]}/supersede", json={"new_id": secret}),
                bob.post("/v1/feedback", json={"memory_id": secret, "useful": True}),
                bob.post(f"/v1/memories/{secret}/promote"),
                bob.post(f"/v1/memories/{secret}/archive"),
                bob.post(f"/v1/memories/{secret}/restore"),
                bob.delete(f"/v1/memories/{secret}")]
    for response in attempts:
        assert response.status_code == 404, response.text
        assert response.json()["detail"] == f"no memory {secret}"  # as for any unknown id
    assert set(unknown) == {"error", "detail"}
    bob_export = _export(bob)
    assert {m["owner"] for m in bob_export["memories"]} == {"bob"}
    assert "Alice" not in json.dumps(bob_export)
    assert {m["id"] for m in bob_export["memories"]} == set(theirs)
    assert _export(alice) == alice_before
    assert {m["id"] for m in alice_before["memories"]} == set(mine)


def test_lifecycle_run_is_scoped_to_the_owner(store: MemoryStore) -> None:
    store.add("Alice's first note", owner="alice", importance=0.1)
    bobs = store.add("Bob's first note", owner="bob", importance=0.1)
    with running_sidecar(store, Tokens.from_mapping(TOKENS)) as url, Api(url, ADMIN) as admin:
        report = admin.post("/v1/lifecycle/run", json={"apply": True}).json()
    assert report["applied"] is True and report["evaluated"] == 1
    assert store.get(bobs.id).hot is False and store.get(bobs.id).status.value == "active"
    assert all(e.memory_id != bobs.id for e in store.events(event_type="hot"))


def test_tokens_file_errors_name_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"short": {"owner": "a"}}))
    with pytest.raises(InvalidInputError, match="token #1"):
        Tokens.load(path)
    path.write_text(json.dumps({"x" * 20: {"owner": "a", "scopes": ["root"]}}))
    with pytest.raises(InvalidInputError, match="scopes"):
        Tokens.load(path)
    with pytest.raises(InvalidInputError, match="cannot read"):
        Tokens.load(tmp_path / "missing.json")
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")


def _graphmem(*args: str, db: Path, **kwargs: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "GRAPHMEM_EMBEDDER": "hashing"}
    env.pop("GRAPHMEM_TOKENS_FILE", None)
    return subprocess.Popen([sys.executable, "-m", "graphmem.cli", "--db", str(db), *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kwargs)


def test_serve_command(tmp_path: Path) -> None:
    refused = _graphmem("serve", "--host", "0.0.0.0", db=tmp_path / "db")
    _, err = refused.communicate(timeout=60)
    assert refused.returncode == 1 and "refusing to listen on 0.0.0.0 without tokens" in err
    assert "Traceback" not in err
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    port = free_port()
    server = _graphmem("serve", "--port", str(port), "--tokens", str(tokens),
                       "--log-level", "warning", db=tmp_path / "db")
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz").json()["auth"] == "tokens":
                    break
            except httpx.TransportError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise AssertionError(server.stderr.read() if server.stderr else "") from None
                time.sleep(0.1)
        with Api(url, ALICE) as alice:
            assert _add(alice, "Served by the command line.")["owner"] == "alice"
        assert httpx.get(f"{url}/v1/export").status_code == 401
    finally:
        server.terminate()
        server.wait(timeout=30)
    with MemoryStore(tmp_path / "db", read_only=True) as reopened:  # closed cleanly
        assert reopened.stats().memories == 1


def test_lone_surrogates_are_refused(alice: Api) -> None:
    """JSON can escape a lone surrogate; such text is refused (it once made a 500)."""
    headers = {"Content-Type": "application/json"}
    bad = alice.post("/v1/memories/retrieve", content=b'{"query": "x \\ud800"}', headers=headers)
    assert bad.status_code == 422 and "lone surrogate (U+D800)" in bad.json()["detail"]
    added = alice.post("/v1/memories", content=b'{"text": "a \\ud83d\\ude00 pair is fine"}',
                       headers=headers)
    assert added.status_code == 201, added.text
