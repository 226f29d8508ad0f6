"""The dashboard over HTTP (no browser): its files, login and sessions, CSRF, scopes,
owner isolation, review decisions recorded with their actor, archives approved together,
undo, the finder and the pages' figures. A real sidecar on 127.0.0.1 over the sample
corpus, in Kuzu and in PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from graphmem import Kind, MemoryStore, Settings, Status
from graphmem._recall._query import asks_about_intent
from graphmem.sidecar import Tokens
from graphmem.sidecar.ui import Sessions

from ._servers import raw_request, running_sidecar
from .conftest import SAMPLE, Clock

NADIA = "did:key:z6MkwrenNadiaOkafor7h3kq9"
TOMAS = "did:key:z6MkwrenTomasRuiz2p8d4m"
ADMIN, READER, WRITER, OTHER = ("tok-nadia-admin-0123456", "tok-nadia-reader-012345",
                                "tok-nadia-writer-012345", "tok-tomas-0123456789ab")
TOKENS = {ADMIN: {"owner": NADIA, "scopes": ["read", "write", "admin"]},
          READER: {"owner": NADIA, "scopes": ["read"]},
          WRITER: {"owner": NADIA, "scopes": ["read", "write"]},
          OTHER: {"owner": TOMAS, "scopes": ["read", "write", "admin"]}}
SVG_NAMESPACE = "http://www.w3.org/2000/svg"
#: The sample corpus' "today".
NOW = datetime(2026, 7, 15, 18, tzinfo=UTC)


def build_store(where: str | Path, clock: Clock) -> MemoryStore:
    """The sample corpus, with a conversation and some feedback so that every page has
    something to show, in a Kuzu directory or a PostgreSQL URL."""
    from ingest.ump import import_ump

    store = MemoryStore(where, embedder="hashing", clock=clock, settings=Settings())
    import_ump(store, SAMPLE)
    store.add_conversation([
        {"speaker": "Nadia", "text": "Hi!"},
        {"speaker": "Nadia", "text": "I moved the greenhouse sensors to the north bed in July."},
        {"speaker": "Nadia", "text": "I might try a Rust rewrite of the harvest importer."},
    ], session_id="ui-1", owner=NADIA)
    for query in ("which database does orchard use?", "deploy orchard"):
        hits = store.recall(query, k=3, owner=NADIA)
        for hit in hits[:2]:
            store.feedback(hit.memory.id, useful=True, query=query, owner=NADIA)
        store.feedback(hits[-1].memory.id, useful=False, query=query, owner=NADIA)
    return store


@pytest.fixture
def served(store_location: str) -> Iterator[tuple[MemoryStore, str, Clock]]:
    clock = Clock(NOW)
    store = build_store(store_location, clock)
    try:
        with running_sidecar(store, Tokens.from_mapping(TOKENS)) as url:
            yield store, url, clock
    finally:
        store.close()


class Browser(httpx.Client):
    """What a browser on the dashboard sends: its cookie, its origin, the CSRF token."""

    def __init__(self, url: str) -> None:
        super().__init__(base_url=url, timeout=60, headers={"Origin": url,
                                                           "Sec-Fetch-Site": "same-origin"})
        self.csrf = ""

    def login(self, token: str | None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = self.post("/ui/api/login", headers=headers)
        if response.status_code == 200:
            self.csrf = response.json()["csrf"]
        return response

    def act(self, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
        return self.post("/ui/api/" + path, json=body,
                         headers={"X-CSRF-Token": self.csrf, **headers})


def browser(url: str, token: str | None) -> Browser:
    client = Browser(url)
    assert client.login(token).status_code == 200
    return client


def owner_ids(store: MemoryStore, owner: str) -> set[str]:
    return {m.id for m in store.memories(owner=owner)}


# -- the page's files ---------------------------------------------------------------------
def test_files_are_served_without_a_token_and_reach_for_nothing_outside(
        served: tuple[MemoryStore, str, Clock]) -> None:
    _, url, _ = served
    with httpx.Client(base_url=url) as client:
        page = client.get("/ui/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY"
        assert client.get("/ui").headers["location"] == "/ui/"
        names = re.findall(r'(?:src|href)="/ui/static/([^"]+)"', page.text)
        assert {"app.js", "app.css", "icon.svg"} <= set(names)
        bodies = {name: client.get(f"/ui/static/{name}").text for name in names}
        for name, text in {"index.html": page.text, **bodies}.items():
            # The SVG namespace is a name, never fetched; anything else would be.
            body = text.replace(SVG_NAMESPACE, "")
            assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", body), name
            assert "<script>" not in body and " on" + "click=" not in body, name
        assert client.get("/ui/static/nothing.js").status_code == 404
        assert client.post("/ui/").status_code == 405


# -- sessions -------------------------------------------------------------------------------
def test_login_gives_an_httponly_strict_cookie_and_never_echoes_the_token(
        served: tuple[MemoryStore, str, Clock]) -> None:
    _, url, _ = served
    client = Browser(url)
    response = client.login(ADMIN)
    assert response.status_code == 200
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/ui" in cookie
    assert ADMIN not in response.text and ADMIN not in cookie
    assert response.json()["owner"] == NADIA
    assert client.get("/ui/api/overview").status_code == 200
    assert client.act("logout", {}).status_code == 200
    assert client.get("/ui/api/overview").status_code == 401


def test_data_needs_a_session_a_bearer_header_or_a_url_token_is_not_one(
        served: tuple[MemoryStore, str, Clock]) -> None:
    _, url, _ = served
    with httpx.Client(base_url=url) as client:
        assert client.get("/ui/api/overview").status_code == 401
        assert client.get("/ui/api/overview",
                          headers={"Authorization": f"Bearer {ADMIN}"}).status_code == 401
        assert client.get(f"/ui/api/overview?token={ADMIN}").status_code == 401
        client.cookies.set(f"graphmem_ui_{url.rsplit(':', 1)[1]}", "forged")
        assert client.get("/ui/api/overview").status_code == 401
    assert Browser(url).login("tok-unknown-0123456789").status_code == 401
    assert Browser(url).login(None).status_code == 401


def test_login_from_another_site_or_by_get_is_refused(
        served: tuple[MemoryStore, str, Clock]) -> None:
    _, url, _ = served
    auth = {"Authorization": f"Bearer {ADMIN}"}
    with httpx.Client(base_url=url) as client:
        assert client.post("/ui/api/login", headers={**auth, "Origin": "http://evil.example"}
                           ).status_code == 403
        assert client.post("/ui/api/login", headers={**auth, "Sec-Fetch-Site": "cross-site"}
                           ).status_code == 403
        assert client.get("/ui/api/login", headers=auth).status_code == 403


def test_sessions_end_when_idle_too_long_and_the_oldest_of_a_token_go_first() -> None:
    sessions = Sessions(idle_s=0.05, per_token=2)
    a = sessions.create(token=None, owner=None, scopes=frozenset({"read"}))
    assert sessions.get(a.sid) is a
    import time

    time.sleep(0.1)
    assert sessions.get(a.sid) is None
    admin = sessions.create(token=ADMIN, owner=NADIA, scopes=frozenset({"admin"}))
    b, c, d = (sessions.create(token=OTHER, owner=TOMAS, scopes=frozenset())
               for _ in range(3))
    assert sessions.get(b.sid) is None and sessions.get(d.sid) is d and len(sessions) == 3
    assert sessions.get(admin.sid) is admin  # another token's logins did not end it
    assert c.csrf != d.csrf and c.sid != d.sid
    sessions.drop(c.sid)
    assert sessions.get(c.sid) is None and len(sessions) == 2


def test_one_owner_s_logins_never_end_another_s_session(
        served: tuple[MemoryStore, str, Clock]) -> None:
    """More logins by another owner (and by the same owner's other token) than a token
    may hold sessions: the administrator's session lives on, theirs turn over."""
    _, url, _ = served
    admin = browser(url, ADMIN)
    crowd = [browser(url, OTHER) for _ in range(Sessions().per_token + 6)]
    crowd += [browser(url, READER) for _ in range(Sessions().per_token + 1)]
    assert admin.get("/ui/api/overview").status_code == 200
    assert admin.get("/ui/api/session").json()["scopes"] == ["admin", "read", "write"]
    assert crowd[0].get("/ui/api/overview").status_code == 401  # the oldest of its token
    assert crowd[-1].get("/ui/api/overview").status_code == 200
    for client in (admin, *crowd):
        client.close()


# -- CSRF -----------------------------------------------------------------------------------
def test_a_change_needs_the_csrf_token_and_the_page_origin(
        served: tuple[MemoryStore, str, Clock]) -> None:
    store, url, _ = served
    client = browser(url, ADMIN)
    item = client.get("/ui/api/review").json()["items"][0]
    body = {"memory_id": item["id"], "decision": "archive"}
    assert client.post("/ui/api/review/decide", json=body).status_code == 403
    assert client.act("review/decide", body, **{"X-CSRF-Token": "wrong"}).status_code == 403
    assert client.act("review/decide", body, Origin="http://evil.example").status_code == 403
    assert client.act("review/decide", body, **{"Sec-Fetch-Site": "same-site"}
                      ).status_code == 403
    assert store.get(item["id"]).status is Status.ACTIVE
    assert client.act("review/decide", body).status_code == 200
    assert store.get(item["id"]).status is Status.ARCHIVED


# -- scopes ---------------------------------------------------------------------------------
def test_reading_needs_read_deciding_needs_admin_feedback_needs_write(
        served: tuple[MemoryStore, str, Clock]) -> None:
    store, url, _ = served
    reader, writer = browser(url, READER), browser(url, WRITER)
    queue = reader.get("/ui/api/review").json()
    assert queue["items"] and queue["can_decide"] is False
    body = {"memory_id": queue["items"][0]["id"], "decision": "archive"}
    assert reader.act("review/decide", body).status_code == 403
    assert writer.act("review/decide", body).status_code == 403
    assert writer.act("review/undo", {"memory_id": body["memory_id"]}).status_code == 403
    hit = reader.act("recall", {"query": "orchard database"}).json()
    assert hit["record_access"] is False and hit["hits"]
    target = hit["hits"][0]["memory"]["id"]
    assert reader.act("feedback", {"memory_id": target, "useful": True}).status_code == 403
    before = store.get(target).useful_count
    assert writer.act("feedback", {"memory_id": target, "useful": True}).status_code == 200
    assert store.get(target).useful_count == before + 1


# -- owner isolation ------------------------------------------------------------------------
def test_another_owners_memories_never_appear(served: tuple[MemoryStore, str, Clock]) -> None:
    store, url, _ = served
    nadia = owner_ids(store, NADIA)
    tomas_ids = owner_ids(store, TOMAS)
    tomas = browser(url, OTHER)
    pages = [tomas.get("/ui/api/" + p) for p in ("overview", "quality", "review",
                                                 "memories", "memories?q=orchard",
                                                 "lifecycle/plan")]
    pages.append(tomas.act("recall", {"query": "orchard database postgres", "k": 50}))
    for response in pages:
        assert response.status_code == 200
        assert not nadia & set(re.findall(r"urn:[a-z]+:[a-z0-9]+", response.text))
        assert NADIA not in response.text
    overview = pages[0].json()
    assert overview["memories"] == len(tomas_ids) and overview["by_owner"] == {
        TOMAS: len(tomas_ids)}
    some = sorted(nadia)[0]
    for path in (f"memory?id={some}", f"drawing?id={some}"):
        response = tomas.get("/ui/api/" + path)
        assert response.status_code == 404 and some in response.json()["detail"]
    assert tomas.act("review/decide", {"memory_id": some, "decision": "archive"}
                     ).status_code == 404
    assert tomas.act("feedback", {"memory_id": some, "useful": True}).status_code == 404


# -- review decisions -----------------------------------------------------------------------
def test_a_decision_records_its_actor_and_undo_restores_within_the_window(
        served: tuple[MemoryStore, str, Clock]) -> None:
    store, url, clock = served
    admin = browser(url, ADMIN)
    items = admin.get("/ui/api/review").json()["items"]
    promotable = next(i for i in items if "promote" in i["choices"])
    archivable = next(i for i in items if i["id"] != promotable["id"])
    assert admin.act("review/decide", {"memory_id": promotable["id"],
                                       "decision": "promote"}).json()["success"]
    assert store.get(promotable["id"]).kind is Kind.SEMANTIC
    version, event = store.history(promotable["id"])[-1], store.events(promotable["id"])[-1]
    assert version.actor == event.agent_id == f"dashboard:{NADIA}"
    assert version.change_type.value == "promoted" and event.event_type.value == "promote"
    queue = admin.get("/ui/api/review").json()
    assert promotable["id"] not in {i["id"] for i in queue["items"]}
    assert [d["memory_id"] for d in queue["decisions"]] == [promotable["id"]]
    undone = admin.act("review/undo", {"memory_id": promotable["id"]}).json()
    assert undone["success"] and undone["undone"] == "promote"
    assert store.get(promotable["id"]).kind is Kind.EPISODIC
    assert store.history(promotable["id"])[-1].actor == f"dashboard:{NADIA}"
    assert admin.get("/ui/api/review").json()["decisions"] == []
    admin.act("review/decide", {"memory_id": archivable["id"], "decision": "archive"})
    # A later transition by someone else is what undo would reverse: no undo offered.
    admin.act("review/decide", {"memory_id": promotable["id"], "decision": "promote"})
    store.archive(promotable["id"], owner=NADIA, actor="someone-else")
    assert [d["memory_id"] for d in admin.get("/ui/api/review").json()["decisions"]] == [
        archivable["id"]]
    clock.advance(days=8)
    late = admin.act("review/undo", {"memory_id": archivable["id"]}).json()
    assert not late["success"] and "restore window" in late["error"]
    assert store.get(archivable["id"]).status is Status.ARCHIVED


def test_keep_takes_a_memory_out_of_the_queue_and_changes_nothing(
        served: tuple[MemoryStore, str, Clock]) -> None:
    store, url, _ = served
    admin = browser(url, ADMIN)
    item = admin.get("/ui/api/review").json()["items"][0]
    before = store.get(item["id"])
    kept = admin.act("review/decide", {"memory_id": item["id"], "decision": "keep"}).json()
    assert kept["decision"] == "keep" and kept["recorded"] is True
    assert store.get(item["id"]) == before
    [event] = [e for e in store.events(item["id"]) if e.event_type.value == "keep"]
    assert event.event_id == kept["event_id"] and event.agent_id.startswith("dashboard:")
    assert event.from_state == event.to_state == before.status.value
    assert item["id"] not in {i["id"] for i in admin.get("/ui/api/review").json()["items"]}
    assert admin.act("review/decide", {"memory_id": item["id"], "decision": "delete"}
                     ).status_code == 422


# -- pages' data ----------------------------------------------------------------------------
def test_pages_count_what_the_store_holds(served: tuple[MemoryStore, str, Clock]) -> None:
    store, url, _ = served
    admin = browser(url, ADMIN)
    mine = store.memories(owner=NADIA)
    overview = admin.get("/ui/api/overview").json()
    assert overview["memories"] == len(mine)
    assert overview["by_kind"] == {k: sum(m.kind.value == k for m in mine)
                                   for k in overview["by_kind"]}
    assert sum(overview["growth"]["counts"]) == len(mine)
    quality = admin.get("/ui/api/quality").json()
    conversation = [m for m in mine if m.provenance.get("source") == "conversation"]
    assert quality["conversations"]["extracted"] == len(conversation) > 0
    assert quality["feedback"]["useful"] == sum(m.useful_count for m in mine) == 4
    assert quality["feedback"]["ignored"] == sum(m.ignored_count for m in mine) == 2
    assert {m["id"] for m in quality["most_ignored"]} == {m.id for m in mine if m.ignored_count}
    assert sum(quality["feedback"]["over_time"]["useful"]) == 4
    chained = next(m for m in mine if m.superseded_by)
    view = admin.get("/ui/api/memory", params={"id": chained.id}).json()
    assert view["memory"]["id"] == chained.id and len(view["chain"]) >= 2
    assert [v["seq"] for v in view["versions"]] == [v.seq for v in store.history(chained.id)]
    assert {e["other"]["id"] for e in view["edges"]} == {
        x.other for x in store.links(chained.id, owner=NADIA)}
    assert overview["entities"]["count"] == len(store.entities(owner=NADIA)) > 0
    stating = {source for f in store.facts(owner=NADIA) for source in f.sources}
    knowing = next(m for m in mine if m.id in stating)
    view = admin.get("/ui/api/memory", params={"id": knowing.id}).json()
    assert len(view["entities"]) == len(store.mentions(knowing.id, owner=NADIA)) > 0
    assert sorted(f["id"] for f in view["facts"]) == sorted(
        f.id for f in store.facts(owner=NADIA) if knowing.id in f.sources)
    drawing = admin.get("/ui/api/drawing", params={"id": chained.id})
    assert drawing.status_code == 200 and chained.id in drawing.text
    assert "frame-ancestors 'self'" in drawing.headers["content-security-policy"]
    hits = admin.act("recall", {"query": "which database does orchard use?", "k": 5}).json()
    assert [h["memory"]["id"] for h in hits["hits"]] == [
        h.memory.id for h in store.recall("which database does orchard use?", k=5,
                                          owner=NADIA, record_access=False)]
    assert all(h["why"] and h["explanation"]["channels"] for h in hits["hits"])


# -- a sidecar without tokens ---------------------------------------------------------------
def test_without_tokens_the_local_user_logs_in_and_the_host_must_be_loopback(
        store_location: str) -> None:
    with MemoryStore(store_location, embedder="hashing") as store:
        store.add("a local memory", owner="someone")
        with running_sidecar(store) as url:
            local = browser(url, None)
            assert local.get("/ui/api/overview").json()["memories"] == 1
            assert local.post("/ui/api/review/decide", json={}).status_code == 403
            for path in (b"/ui/", b"/ui/api/login"):
                answer = raw_request(url, b"GET " + path + b" HTTP/1.1\r\n"
                                     b"Host: evil.example\r\n\r\n")
                assert answer.status == 400


# -- an operator's day ----------------------------------------------------------------------
def test_the_feedback_chart_adds_up_to_the_totals(served: tuple[MemoryStore, str, Clock]
                                                  ) -> None:
    """Every mark is dated by its feedback event, also once importance is at its top and
    a mark writes no version row (the demo's twelve useful marks on one memory)."""
    store, url, clock = served
    target = store.recall("deploy orchard", k=1, owner=NADIA)[0].memory
    clock.advance(days=1)
    for _ in range(12):
        store.feedback(target.id, useful=True, owner=NADIA)
    store.feedback(target.id, useful=False, owner=NADIA)
    assert store.get(target.id).importance == 1.0
    feedback = browser(url, ADMIN).get("/ui/api/quality").json()["feedback"]
    over_time = feedback["over_time"]
    assert feedback["useful"] == 4 + 12 and feedback["ignored"] == 2 + 1
    assert sum(over_time["useful"]) == feedback["useful"]
    assert sum(over_time["ignored"]) == feedback["ignored"]
    assert over_time["undated"] == {"useful": 0, "ignored": 0}
    assert over_time["labels"] == ["2026-07-15", "2026-07-16"]
    assert (over_time["useful"], over_time["ignored"]) == ([4, 12], [2, 1])


def test_counts_without_events_are_undated(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        memory = store.add("a note that came with its counts", owner="ann")
        store.feedback(memory.id, useful=True, owner="ann")
        store.cypher("MATCH (m:Memory {id: $id}) SET m.useful_count = 5, m.ignored_count = 2",
                     {"id": memory.id}, write=True)
        with running_sidecar(store) as url:
            feedback = browser(url, None).get("/ui/api/quality").json()["feedback"]
    assert (feedback["useful"], feedback["ignored"]) == (5, 2)
    assert sum(feedback["over_time"]["useful"]) == 1
    assert feedback["over_time"]["undated"] == {"useful": 4, "ignored": 2}


def test_the_finder_finds_every_version(served: tuple[MemoryStore, str, Clock]) -> None:
    """Words find the current version, the versions it replaced, and candidates: what
    recall alone never returns."""
    store, url, _ = served
    mine = store.memories(owner=NADIA)
    chained = next(m for m in mine if m.superseded_by and not store.get(
        m.superseded_by[0]).superseded_by)
    versions = [v for v in mine if v.subject == chained.subject]
    assert len(versions) >= 2
    admin = browser(url, ADMIN)
    found = admin.get("/ui/api/memories", params={"q": chained.subject}).json()["memories"]
    assert {v.id for v in versions} <= {m["id"] for m in found}
    assert any(m["current"] is False for m in found)
    # a word of the current version alone: the versions it replaced come with it
    current = next(v for v in versions if v.is_current)
    texts = [" ".join(m.text.lower().replace(".", " ").split()) for m in mine]
    word = min((w for w in current.text.lower().replace(".", " ").split() if len(w) > 3),
               key=lambda w: sum(w in t.split() for t in texts))
    assert sum(word in t.split() for t in texts) == 1, word
    found = admin.get("/ui/api/memories", params={"q": word}).json()["memories"]
    assert {v.id for v in versions} <= {m["id"] for m in found}, word
    candidate = next(m for m in mine if m.status is Status.CANDIDATE)
    # its words without the ones by which a question asks what someone may do ("might"),
    # for which recall gives candidates too
    words = " ".join(w for w in candidate.text.split()[:6] if not asks_about_intent(w))
    assert candidate.id not in {h.memory.id for h in store.recall(
        words, k=30, preset="fulltext", owner=NADIA, include_archived=True,
        record_access=False)}
    found = admin.get("/ui/api/memories", params={"q": words}).json()["memories"]
    assert candidate.id in {m["id"] for m in found}
    theirs = browser(url, OTHER).get("/ui/api/memories", params={"q": words}).json()
    assert not owner_ids(store, NADIA) & {m["id"] for m in theirs["memories"]}


def test_a_chain_numbers_and_dates_its_versions(served: tuple[MemoryStore, str, Clock]
                                                ) -> None:
    store, url, _ = served
    chained = next(m for m in store.memories(owner=NADIA) if m.superseded_by)
    chain = browser(url, ADMIN).get("/ui/api/memory", params={"id": chained.id}).json()["chain"]
    assert [c["version"] for c in chain] == list(range(1, len(chain) + 1))
    assert [c["created"] for c in chain] == sorted(c["created"] for c in chain)
    assert len({c["excerpt"] for c in chain}) == len(chain) > 1  # told apart by their text
    assert [c["current"] for c in chain] == [False] * (len(chain) - 1) + [True]
    assert [c["this"] for c in chain].count(True) == 1


def test_archives_are_approved_together_and_undone_one_by_one(
        served: tuple[MemoryStore, str, Clock]) -> None:
    store, url, _ = served
    admin = browser(url, ADMIN)
    queue = admin.get("/ui/api/review").json()
    archives = [i["id"] for i in queue["items"] if i["action"] == "archive"]
    review = next(i["id"] for i in queue["items"] if i["action"] == "review")
    assert len(archives) > 10
    assert all(i["text"] and i["created"] and i["owner"] == NADIA for i in queue["items"])
    theirs = sorted(owner_ids(store, TOMAS))[0]
    body = {"memory_ids": [*archives, review, theirs]}
    assert browser(url, READER).act("review/approve-archives", body).status_code == 403
    assert admin.post("/ui/api/review/approve-archives", json=body).status_code == 403  # CSRF
    before = store.get(theirs)
    answer = admin.act("review/approve-archives", body).json()
    assert answer["archived"] == archives
    assert [x["id"] for x in answer["skipped"]] == [review, theirs]
    assert "now recommends review" in answer["skipped"][0]["why"]
    assert store.get(theirs) == before and store.get(review).status is Status.ACTIVE
    for memory_id in archives:
        assert store.get(memory_id).status is Status.ARCHIVED
        assert store.events(memory_id)[-1].agent_id == f"dashboard:{NADIA}"
    queue = admin.get("/ui/api/review").json()
    assert not set(archives) & {i["id"] for i in queue["items"]}
    assert {d["memory_id"] for d in queue["decisions"]} == set(archives)
    assert admin.act("review/undo", {"memory_id": archives[0]}).json()["success"]
    assert store.get(archives[0]).status is Status.ACTIVE
    assert store.get(archives[1]).status is Status.ARCHIVED
    assert admin.act("review/approve-archives", {"memory_ids": []}).status_code == 422
