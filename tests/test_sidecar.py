"""The HTTP sidecar, served for real on 127.0.0.1: every endpoint, tokens and owners,
error bodies, and the serve command's refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

import graphmem
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
    hits = alice.post("/v1/memories/retrieve", json={"query": "green tea in the afternoon",
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
    assert promoted.status_code == 200 and promoted.json()["new_type"] == "semantic"
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
            "/v1/lifecycle/report", "/healthz", "/v1/memories/{memory_id}/links",
            "/v1/memories/{memory_id}/evaluation", "/v1/lifecycle/evaluate", "/v1/stats",
            "/v1/queries", "/v1/queries/{name}", "/v1/cypher", "/v1/backup"} <= set(paths)


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
    ({"text": "x", "created": "9999-12-31T23:00:00-05:00"}, "created"),  # year 10000 in UTC
    ({"text": "x", "observed": "9999-12-31T23:00:00-05:00"}, "observed"),
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
    # an owner no call may name is refused when the file is read, not at every request
    for owner, problem in (("a" * 2001, "2001 characters long"), ("a\x00b", "NUL"),
                           ("  ", "is empty"), (5, "must be a string")):
        path.write_text(json.dumps({"x" * 20: {"owner": owner}}))
        with pytest.raises(InvalidInputError, match=f"token #1.*owner.*{problem}"):
            Tokens.load(path)
    path.write_bytes(b'{"' + b"x" * 20 + b'": {"owner": "caf\xe9"}}')  # Latin-1
    with pytest.raises(InvalidInputError, match="not UTF-8"):
        Tokens.load(path)
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InvalidInputError, match="nested too deep"):
        Tokens.load(path)
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
    assert bad.status_code == 422 and "holds U+D800" in bad.json()["detail"]
    assert bad.json()["field"] == "query"  # named as any 422 names its field
    batch = alice.post("/v1/memories", headers=headers, content=(
        b'{"memories": [{"text": "fine"}, {"text": "ok", "tags": ["a", "\\udc00"]}]}'))
    assert batch.status_code == 422 and batch.json()["field"] == "memories.1.tags.1"
    assert batch.json()["detail"].startswith("memories.1.tags.1: holds U+DC00 at character 1")
    # the first in the document is named, whichever way the body is walked
    two = alice.post("/v1/memories", headers=headers, content=(
        b'{"memories": [{"text": "\\ud801"}, {"text": "ok", "tags": ["\\udc00"]}]}'))
    assert two.status_code == 422 and two.json()["field"] == "memories.0.text", two.text
    added = alice.post("/v1/memories", content=b'{"text": "a \\ud83d\\ude00 pair is fine"}',
                       headers=headers)
    assert added.status_code == 201, added.text
    # a query value that is not UTF-8 was read as U+FFFD: another owner, an empty answer
    listed = alice.get("/v1/memories?owner=%ED%A0%80&limit=5")
    assert listed.status_code == 422 and listed.json()["field"] == "query.owner", listed.text
    for empty in ("owner=", "owner", "owner=a%00b"):  # asked about no one: said so
        assert alice.get(f"/v1/memories?{empty}").status_code == 422, empty
    with Api(str(alice.base_url), None) as anonymous:  # the token is checked first
        assert anonymous.get("/v1/memories?owner=%ED%A0%80").status_code == 401
    assert alice.get("/v1/memories?owner=alice&limit=5").status_code == 200
    fine = alice.get("/v1/memories?owner=alice&note=%C3%A9+x")
    assert fine.status_code == 200, fine.text  # UTF-8 is fine


# -- a read token changes nothing --------------------------------------------------------
def _state(store: MemoryStore) -> str:
    """Everything stored, every owner (access counts and times included)."""
    return json.dumps({**store.export(), "generated": None}, sort_keys=True)


def test_a_read_token_changes_nothing(served: tuple[MemoryStore, str], alice: Api) -> None:
    """Every route, called with a read-only token: it is refused (403) or answers, and
    the store is exactly as it was; recall records no access even when asked to."""
    store, url = served
    first = _add(alice, "Nadia prefers green tea in the afternoon.", kind="semantic")
    for n in range(3):
        _add(alice, f"Nadia drinks tea with Amara on day {n}.")
    memory = quote(first["id"], safe="")
    calls = {  # every route the app serves, by its OpenAPI path and method
        ("post", "/v1/memories"): {"json": {"text": "x"}},
        ("post", "/v1/conversations"): {"json": {"session_id": "s", "messages": ["hi"]}},
        ("post", "/v1/memories/retrieve"): {"json": {"query": "what tea does Nadia drink",
                                                     "record_access": True}},
        ("get", "/v1/memories/{memory_id}"): {},
        ("patch", "/v1/memories/{memory_id}"): {"json": {"importance": 0.9}},
        ("delete", "/v1/memories/{memory_id}"): {},
        ("post", "/v1/forget"): {"json": {"ids": [first["id"]]}},
        ("get", "/v1/memories/{memory_id}/history"): {},
        ("post", "/v1/memories/{memory_id}/supersede"): {"json": {"text": "y"}},
        ("post", "/v1/feedback"): {"json": {"memory_id": first["id"], "useful": True}},
        ("post", "/v1/memories/{memory_id}/promote"): {},
        ("post", "/v1/memories/{memory_id}/archive"): {},
        ("post", "/v1/memories/{memory_id}/restore"): {},
        ("get", "/v1/export"): {},
        ("post", "/v1/lifecycle/run"): {"json": {"apply": True}},
        ("get", "/v1/lifecycle/report"): {"params": {"format": "markdown"}},
        ("get", "/v1/store"): {},
        ("get", "/healthz"): {},
        ("get", "/v1/memories/{memory_id}/links"): {},
        ("post", "/v1/memories/{memory_id}/links"): {"json": {"other": first["id"]}},
        ("get", "/v1/memories/{memory_id}/evaluation"): {},
        ("post", "/v1/lifecycle/evaluate"): {"json": {}},
        ("get", "/v1/stats"): {},
        ("get", "/v1/queries"): {},
        ("post", "/v1/queries/{name}"): {"json": {"params": {"limit": 3}}},
        ("post", "/v1/cypher"): {"json": {"query": "MATCH (m:Memory) RETURN count(*)"}},
        ("get", "/v1/backup"): {},
        ("get", "/v1/memories"): {},
        ("get", "/v1/events"): {"params": {"memory_id": first["id"]}},
        ("post", "/v1/memories/{memory_id}/keep"): {"json": {"reason": "still true"}},
        ("get", "/v1/entities"): {},
        ("get", "/v1/facts"): {"params": {"current": "true"}},
        ("get", "/v1/graph"): {"params": {"edge_kinds": ["references", "co_occurs"]}},
        ("post", "/v1/learn"): {"json": {}},
        ("get", "/v1/learn"): {},
    }
    served_routes = {(method, path) for path, ops in
                     httpx.get(f"{url}/openapi.json").json()["paths"].items()
                     for method in ops}
    assert served_routes == set(calls)  # a new route must be added here
    before = _state(store)
    answered = set()
    with Api(url, READER) as reader:
        for (method, path), kwargs in calls.items():
            path = path.replace("{memory_id}", memory).replace("{name}", "recent_memories")
            response = reader.request(method, path, **kwargs)
            assert response.status_code in (200, 403), (method, path, response.text)
            if response.status_code == 200:
                answered.add(path)
        hits = reader.post("/v1/memories/retrieve",
                           json={"query": "tea", "record_access": True}).json()
        assert hits["count"] == 4 and hits["record_access"] is False
    assert answered == {"/v1/memories/retrieve", f"/v1/memories/{memory}",
                        f"/v1/memories/{memory}/history", "/v1/export",
                        "/v1/lifecycle/report", "/v1/store", "/healthz",
                        f"/v1/memories/{memory}/links", f"/v1/memories/{memory}/evaluation",
                        "/v1/lifecycle/evaluate", "/v1/stats", "/v1/queries",
                        "/v1/queries/recent_memories", "/v1/memories", "/v1/events",
                        "/v1/entities", "/v1/facts", "/v1/graph"}
    assert _state(store) == before
    # the same recall with a write token does record accesses: the check above can fail
    assert alice.post("/v1/memories/retrieve",
                      json={"query": "tea", "record_access": True}).json()["count"] == 4
    assert _state(store) != before
    assert store.get(first["id"]).access_count == 1


# -- OpenAPI: the bearer scheme and the real error bodies ---------------------------------
def test_openapi_declares_bearer_and_error_bodies(served: tuple[MemoryStore, str]) -> None:
    _, url = served
    document = httpx.get(f"{url}/openapi.json").json()
    scheme = document["components"]["securitySchemes"]["bearer"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer"
    error = document["components"]["schemas"]["ErrorOut"]
    assert set(error["properties"]) == {"error", "detail", "field", "result"}
    assert set(error["required"]) == {"error", "detail"}
    assert "HTTPValidationError" not in document["components"]["schemas"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            public = path == "/healthz"
            assert operation.get("security") == (None if public else [{"bearer": []}]), path
            codes = {int(c) for c in operation["responses"] if not c.startswith("2")}
            assert codes >= ({400, 500} if public else {400, 401, 403, 500, 503}), path
            for code in codes:
                schema = operation["responses"][str(code)]["content"]["application/json"]
                assert schema["schema"] == {"$ref": "#/components/schemas/ErrorOut"}, (
                    method, path, code)


def test_every_error_status_is_declared(served: tuple[MemoryStore, str], alice: Api,
                                        bob: Api) -> None:
    """The errors actually answered, route by route, against the OpenAPI document: each
    (route, status) met here is declared there, and each body has the declared shape."""
    _, url = served
    document = httpx.get(f"{url}/openapi.json").json()["paths"]
    mine = _add(alice, "Alice's note about the orchard deploy.")["id"]
    one = quote(mine, safe="")
    anonymous = Api(url, None)
    with Api(url, READER) as reader, Api(url, ADMIN) as admin, anonymous:
        attempts = [
            (anonymous, "get", "/v1/export", {}),
            (reader, "post", "/v1/memories", {"json": {"text": "x"}}),
            (alice, "post", "/v1/memories", {"json": {"text": ""}}),
            (alice, "post", "/v1/memories", {"content": b"x" * (17 * 2**20)}),
            (alice, "post", "/v1/conversations", {"json": {"messages": []}}),
            (alice, "post", "/v1/memories/retrieve", {"json": {"query": "x", "k": 0}}),
            (bob, "get", "/v1/memories/{memory_id}", {}),
            (alice, "get", "/v1/memories/%FF", {}),
            (bob, "get", "/v1/memories/{memory_id}/history", {}),
            (alice, "patch", "/v1/memories/{memory_id}", {"json": {}}),
            (bob, "patch", "/v1/memories/{memory_id}", {"json": {"importance": 0.1}}),
            (alice, "post", "/v1/memories/{memory_id}/supersede", {"json": {}}),
            (alice, "post", "/v1/memories/{memory_id}/supersede", {"json": {"new_id": mine}}),
            (bob, "post", "/v1/feedback", {"json": {"memory_id": mine, "useful": True}}),
            (alice, "post", "/v1/memories/{memory_id}/restore", {}),
            (bob, "post", "/v1/memories/{memory_id}/promote", {}),
            (alice, "post", "/v1/memories/{memory_id}/archive", {"json": {"reason": 7}}),
            (alice, "delete", "/v1/memories/{memory_id}", {"params": {"hard": "maybe"}}),
            (alice, "delete", "/v1/memories/{memory_id}", {"params": {"hard": "true"}}),
            (alice, "post", "/v1/lifecycle/run", {"json": {"apply": True}}),
            (admin, "post", "/v1/lifecycle/run", {"json": {"apply": "often"}}),
            (alice, "get", "/v1/lifecycle/report", {"params": {"format": "pdf"}}),
            (anonymous, "get", "/v1/store", {}),
        ]
        seen = set()
        for client, method, route, kwargs in attempts:
            path = route.replace("{memory_id}", one)
            response = client.request(method, path, **kwargs)
            assert 400 <= response.status_code < 500, (method, path, response.text)
            body = response.json()
            assert set(body) <= {"error", "detail", "field", "result"} and body["error"] and \
                body["detail"], body
            template = "/v1/memories/{memory_id}" if path == "/v1/memories/%FF" else route
            declared = {int(c) for c in document[template][method]["responses"]}
            assert response.status_code in declared, (method, route, response.status_code)
            seen.add(response.status_code)
    assert seen == {400, 401, 403, 404, 409, 413, 422}


# -- the sidecar without tokens ------------------------------------------------------------
def test_without_tokens_the_local_user_sees_every_owner(store: MemoryStore) -> None:
    alices = store.add("Alice keeps the spare key under the blue pot.", owner="alice")
    bobs = store.add("Bob keeps the spare key in the mailbox.", owner="bob")
    with running_sidecar(store) as url, Api(url, None) as local:
        assert local.get("/healthz").json()["auth"] == "local"
        assert local.get("/v1/store").json() == {
            "store_id": store.store_id, "version": graphmem.__version__, "auth": "local",
            "owner": None, "scopes": ["admin", "all_owners", "read", "write"]}
        hits = local.post("/v1/memories/retrieve",
                          json={"query": "spare key", "k": 5, "record_access": True})
        assert {h["memory"]["id"] for h in hits.json()["hits"]} == {alices.id, bobs.id}
        assert hits.json()["record_access"] is True
        assert {m["owner"] for m in _export(local)["memories"]} == {"alice", "bob"}
        carol = _add(local, "Carol has no key at all.", owner="carol")
        assert carol["owner"] == "carol" and _add(local, "Nobody's note.")["owner"] is None
        assert local.get(f"/v1/memories/{bobs.id}").json()["owner"] == "bob"
        assert local.post("/v1/lifecycle/run", json={"apply": False}).status_code == 200
        gone = local.delete(f"/v1/memories/{quote(bobs.id, safe='')}", params={"hard": True})
        assert gone.json()["status"] == "forgotten"
        # a token sent anyway changes nothing: there are none to check it against
        other = Api(url, "tok-whatever-0123456789")
        assert other.get("/v1/store").json()["owner"] is None
        other.close()


def test_without_tokens_only_loopback_hosts_are_served(store: MemoryStore) -> None:
    """DNS rebinding: a page served from evil.example, its name re-pointed at 127.0.0.1,
    reaches the sidecar with ``Host: evil.example``; it is refused before anything."""
    secret = store.add("The vault code is 4471.")
    with running_sidecar(store) as url:
        port = url.rsplit(":", 1)[1]
        for host in ("127.0.0.1", f"127.0.0.1:{port}", "localhost", f"LOCALHOST:{port}",
                     "[::1]", f"[::1]:{port}"):
            answer = httpx.get(f"{url}/v1/export", headers={"Host": host})
            assert answer.status_code == 200, host
            assert secret.id in answer.text
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.2", "0.0.0.0",
                     "localhost.", "localhost.evil.example", "127.0.0.1.nip.io", "[::2]",
                     "user@127.0.0.1", "127.0.0.1:", f"127.0.0.1:{port}:1", ""):
            for method, path in (("GET", "/v1/export"), ("GET", "/healthz"),
                                 ("POST", "/v1/memories")):
                answer = httpx.request(method, f"{url}{path}", headers={"Host": host},
                                       json={"text": "planted by a web page"})
                assert answer.status_code == 400, (host, path, answer.text)
                assert answer.json()["error"] == "invalid_host", host
                assert "4471" not in answer.text
    assert [m.id for m in store.memories()] == [secret.id]


def test_without_tokens_changes_from_another_site_are_refused(store: MemoryStore) -> None:
    """A page on any site can make the browser send a POST to a loopback sidecar (a
    text/plain or form body needs no CORS preflight); the browser says where it comes
    from (Origin, Sec-Fetch-Site), and a change from anywhere but the sidecar's own pages
    is refused before its body is read, whatever the content type or the route."""
    note = store.add("The greenhouse pump runs at dusk.", owner="ann")
    with running_sidecar(store) as url:
        port = int(url.rsplit(":", 1)[1])
        path = f"/v1/memories/{quote(note.id, safe='')}"
        changes = [("POST", "/v1/memories", {"text": "planted by a web page"}),
                   ("POST", "/v1/conversations", {"session_id": "web", "messages": [
                       {"speaker": "ann", "text": "I moved the vault code to 9911."}]}),
                   ("PATCH", path, {"importance": 0.01}),
                   ("POST", f"{path}/archive", None), ("POST", f"{path}/promote", None),
                   ("POST", "/v1/feedback", {"memory_id": note.id, "useful": False}),
                   ("DELETE", path, None), ("POST", "/v1/lifecycle/run", {"apply": True}),
                   ("POST", "/ui/api/login", None)]
        elsewhere = [{"Origin": "http://evil.example"}, {"Origin": "null"},
                     {"Sec-Fetch-Site": "cross-site"},
                     {"Origin": f"http://localhost:{port + 1}", "Sec-Fetch-Site": "same-site"},
                     {"Origin": f"http://127.0.0.1:{port}.evil.example"},
                     {"Origin": url, "Sec-Fetch-Site": "cross-site"},
                     {"Sec-Fetch-Site": "same-site"}]
        before = store.export()
        for method, route, body in changes:
            for headers in elsewhere:
                for content_type in ("text/plain", "application/json",
                                     "application/x-www-form-urlencoded"):
                    answer = httpx.request(method, url + route, headers={
                        **headers, "Content-Type": content_type},
                        content=json.dumps(body) if body is not None else b"")
                    assert answer.status_code == 403, (method, route, headers, answer.text)
                    assert answer.json()["error"] in ("cross_site", "forbidden")
        after = store.export()
        assert after["memories"] == before["memories"] and after["events"] == before["events"]
        # the sidecar's own pages, and clients that are not browsers (they send neither)
        for headers in ({"Origin": url, "Sec-Fetch-Site": "same-origin"}, {"Origin": url},
                        {"Sec-Fetch-Site": "same-origin"}, {}):
            made = httpx.post(f"{url}/v1/memories", headers=headers,
                              json={"text": "The pump moved to the north bed."})
            assert made.status_code == 201, (headers, made.text)
            changed = httpx.patch(url + path, headers=headers, json={"importance": 0.7})
            assert changed.status_code == 200, (headers, changed.text)
        # reading from another site is not refused here: without CORS the page cannot
        # read the answer, and a read changes nothing
        assert httpx.get(url + path, headers={"Origin": "http://evil.example"}
                         ).status_code == 200


# -- supersede and PATCH errors --------------------------------------------------------------
@pytest.mark.parametrize(("method", "suffix", "body", "status", "field", "says"), [
    ("patch", "", {}, 422, "body", "nothing to change"),
    ("patch", "", {"reason": "manual_edit"}, 422, "body", "nothing to change"),
    ("patch", "", {"importance": 2}, 422, "importance", "less than or equal to 1"),
    ("patch", "", {"kind": "dream"}, 422, "kind", "Input should be"),
    ("patch", "", {"colour": "red"}, 422, "colour", "Extra inputs"),
    ("patch", "", {"text": ""}, 422, "text", "text"),
    ("patch", "", {"tags": "not-a-list"}, 422, "tags", "valid list"),
    ("patch", "/../missing", {"importance": 0.2}, 404, None, "no memory"),
    ("post", "/supersede", {}, 422, "text", "exactly one of text"),
    ("post", "/supersede", {"text": "new", "new_id": "urn:x"}, 422, "text",
     "exactly one of text"),
    ("post", "/supersede", {"new_id": "urn:graphmem:missing"}, 404, None,
     "no memory urn:graphmem:missing"),
    ("post", "/supersede", {"new_id": "{self}"}, 409, None, "cannot supersede itself"),
    ("post", "/supersede", {"text": "new", "importance": 5}, 422, "importance", "less than"),
    ("post", "/supersede", {"text": "new", "valid_to": "soon"}, 422, "valid_to", "Extra"),
    ("post", "/../missing/supersede", {"text": "never created"}, 404, None, "no memory"),
])
def test_supersede_and_patch_errors(alice: Api, method: str, suffix: str,
                                    body: dict[str, Any], status: int, field: str | None,
                                    says: str) -> None:
    memory = _add(alice, "Nadia lives in Lagos.")
    path = f"/v1/memories/{quote(memory['id'], safe='')}{suffix}"
    path = path.replace(f"{quote(memory['id'], safe='')}/../missing",
                        quote("urn:graphmem:missing/..", safe=""))
    body = {k: memory["id"] if v == "{self}" else v for k, v in body.items()}
    before = _export(alice)
    response = alice.request(method, path, json=body)
    assert response.status_code == status, response.text
    assert response.json().get("field") == field and says in response.json()["detail"]
    assert _export(alice) == before  # a refused change leaves nothing, not even a version


# -- retrieve filters --------------------------------------------------------------------------
def test_retrieve_filters(served: tuple[MemoryStore, str], alice: Api,
                          clock: Any) -> None:
    store, _ = served
    lagos = _add(alice, "Nadia lives in Lagos, near the lagoon.", kind="semantic",
                 valid_to=(clock.now + timedelta(days=10)).isoformat())
    started = clock.now
    clock.advance(days=20)
    accra = _add(alice, "Nadia lives in Accra now, near the sea.", kind="episodic")
    archived = _add(alice, "Nadia lived in Kumasi as a child.", kind="episodic")
    assert alice.post(f"/v1/memories/{archived['id']}/archive").status_code == 200

    def ids(**body: Any) -> list[str]:
        response = alice.post("/v1/memories/retrieve", json={"query": "where does Nadia live",
                                                             "k": 10, **body})
        assert response.status_code == 200, response.text
        return [h["memory"]["id"] for h in response.json()["hits"]]

    assert ids() == [accra["id"]]  # Lagos ended its validity; Kumasi is archived
    assert set(ids(include_archived=True)) == {accra["id"], archived["id"]}
    then = (started + timedelta(days=1)).isoformat()
    assert ids(as_of=then) == [lagos["id"]]  # valid then, and created by then
    assert ids(kinds=["semantic"]) == []
    assert ids(kinds=["semantic"], as_of=then) == [lagos["id"]]
    assert ids(kinds=["episodic", "procedural"], include_archived=True) == ids(
        include_archived=True)
    assert len(ids(k=1, include_archived=True)) == 1
    counts = store.get(accra["id"]).access_count
    ids(record_access=False)
    assert store.get(accra["id"]).access_count == counts
    ids(record_access=True)
    assert store.get(accra["id"]).access_count == counts + 1
    for body, field in [({"kinds": ["dream"]}, "kinds.0"), ({"k": 1001}, "k"),
                        ({"preset": "telepathy"}, "preset"), ({"as_of": "yesterday"}, "as_of"),
                        ({"include_archived": "sometimes"}, "include_archived")]:
        response = alice.post("/v1/memories/retrieve", json={"query": "Nadia", **body})
        assert response.status_code == 422 and response.json()["field"] == field, body


def test_a_cypher_write_over_http_says_the_route_only_reads(store: MemoryStore) -> None:
    """The library's way to ask for a write (write=True, --write) is no option of
    /v1/cypher: its refusal says the route only reads and where changes go."""
    store.add("Nadia prefers green tea")
    with running_sidecar(store) as url, httpx.Client(base_url=url, timeout=60) as http:
        for query in ("CREATE (:Entity {id: 'e-x', name: 'x'})",
                      "MATCH (m:Memory) SET m.importance = 1.0"):
            answer = http.post("/v1/cypher", json={"query": query})
            assert answer.status_code == 405, answer.text
            detail = answer.json()["detail"]
            assert detail.endswith("; /v1/cypher only reads: change memories through their "
                                   "routes (/v1/memories ...)"), detail
            assert "write=True" not in detail and "--write" not in detail
    assert store.get(store.memories()[0].id).importance == 0.5


@pytest.mark.parametrize(("method", "path", "request_args", "field"), [
    ("get", "/v1/events", {"params": {"since": "9999-12-31T23:00:00-05:00"}}, "since"),
    ("get", "/v1/events", {"params": {"until": "0001-01-01T00:00:00+00:01"}}, "until"),
    ("post", "/v1/memories/retrieve", {"json": {"query": "t",
                                                "as_of": "9999-12-31T23:00:00-05:00"}}, "as_of"),
    ("post", "/v1/conversations", {"json": {"session_id": "s", "messages": ["hi"],
                                            "timestamp": "9999-12-31T23:00:00-05:00"}},
     "timestamp"),
])
def test_a_time_outside_the_years_in_utc_is_a_422(alice: Api, method: str, path: str,
                                                   request_args: dict[str, Any],
                                                   field: str) -> None:
    # these were 500s: the time was valid in its own offset, not in UTC
    answer = getattr(alice, method)(path, **request_args)
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == field and "falls outside" in answer.json()["detail"]
