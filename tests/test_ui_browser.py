"""The dashboard in a real browser: Chromium (Debian's ``chromium``) driven by playwright
against a real sidecar on 127.0.0.1. Log in with a token, open every page (a screenshot
of each goes to the test's output directory), approve a review item and see the store
change, recall and mark hits, and never see another owner's memories.

Skipped, saying how to enable them, where Chromium or playwright is missing."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphmem import Kind, MemoryStore, Status
from graphmem.sidecar import Tokens

from ._servers import running_sidecar
from .conftest import Clock
from .test_ui_api import ADMIN, NADIA, NOW, OTHER, READER, TOKENS, TOMAS, build_store, owner_ids

PAGES = ("overview", "quality", "review", "memory", "recall")


def _chromium() -> str | None:
    for candidate in (os.environ.get("GRAPHMEM_CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and (found := shutil.which(candidate)):
            return found
    return None


CHROMIUM = _chromium()
try:
    from playwright.sync_api import Browser, Page, sync_playwright
except ImportError:  # pragma: no cover - the test extra installs it
    sync_playwright = None  # type: ignore[assignment]

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or sync_playwright is None,
    reason="browser tests need Chromium and playwright: `apt-get install -y chromium` "
           "(as root; .ci/run does it) and `pip install -e '.[test]'`, or point "
           "GRAPHMEM_CHROMIUM at a Chromium executable")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MemoryStore, str]]:
    store = build_store(tmp_path_factory.mktemp("ui") / "db", Clock(NOW))
    try:
        with running_sidecar(store, Tokens.from_mapping(TOKENS)) as url:
            yield store, url
    finally:
        store.close()


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def shots(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Where a test's screenshots go: its own output directory (``GRAPHMEM_UI_SHOTS``
    collects them elsewhere too)."""
    folder = Path(os.environ.get("GRAPHMEM_UI_SHOTS") or tmp_path) / request.node.name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Session:
    """One logged-in browser tab, recording every URL it requested and every error."""

    def __init__(self, browser: Browser, url: str) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page: Page = self.context.new_page()
        self.url, self.requested, self.errors = url, [], []  # type: ignore[var-annotated]
        self.page.on("request", lambda r: self.requested.append(r.url))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def login(self, token: str) -> None:
        self.page.goto(self.url + "/ui/")
        self.page.fill("#token", token)
        self.page.click("#login-form button[type=submit]")
        self.page.wait_for_selector("#nav:not([hidden])")

    def open(self, name: str, *rest: str) -> Page:
        path = "/".join((name, *rest))
        self.page.evaluate("path => { location.hash = '#/' + path; }", path)
        self.page.wait_for_function(
            "name => document.getElementById('page').dataset.ready === name && "
            "location.hash.startsWith('#/' + name)", arg=name)
        return self.page

    def close(self) -> None:
        assert not self.errors, self.errors
        self.context.close()


@pytest.fixture
def tab(chromium: Browser, served: tuple[MemoryStore, str]) -> Iterator[Session]:
    session = Session(chromium, served[1])
    yield session
    session.close()


def card(page: Page, id_: str) -> int:
    return int(page.inner_text(f"#{id_} .n"))


def test_log_in_and_open_every_page(tab: Session, served: tuple[MemoryStore, str],
                                    shots: Path) -> None:
    store, _ = served
    tab.page.goto(tab.url + "/ui/")
    tab.page.wait_for_selector("#login:not([hidden])")
    tab.page.screenshot(path=str(shots / "login.png"))
    tab.login(ADMIN)
    mine = store.memories(owner=NADIA)
    page = tab.open("overview")
    assert card(page, "count-memories") == len(mine)
    assert page.locator("svg.chart").count() >= 5
    page.screenshot(path=str(shots / "overview.png"), full_page=True)
    page = tab.open("quality")
    assert card(page, "count-useful") == sum(m.useful_count for m in mine)
    assert card(page, "count-ignored") == sum(m.ignored_count for m in mine)
    page.screenshot(path=str(shots / "quality.png"), full_page=True)
    page = tab.open("review")
    assert page.locator("#queue .item").count() > 0
    page.screenshot(path=str(shots / "review.png"), full_page=True)
    page = tab.open("memory")
    assert page.locator("#found-table tbody tr").count() == 20
    chained = next(m for m in mine if m.superseded_by)
    page = tab.open("memory", chained.id)
    assert page.inner_text("#memory-text") == chained.text
    assert page.locator("#chain span").count() >= 2
    assert page.locator("#versions-table tbody tr").count() == len(store.history(chained.id))
    drawing = page.frame_locator("#drawing")
    assert drawing.locator("svg circle, svg rect, svg polygon").first.is_visible()
    page.screenshot(path=str(shots / "memory.png"), full_page=True)
    page = tab.open("recall")
    page.fill("#query", "which database does orchard use?")
    page.click("#recall-form button[type=submit]")
    page.wait_for_selector("#hits .hit")
    page.screenshot(path=str(shots / "recall.png"), full_page=True)
    # The token went out once, in a header: never in a URL, never stored by the page.
    assert not [u for u in tab.requested if ADMIN in u]
    stored = page.evaluate("() => JSON.stringify([document.cookie, {...sessionStorage},"
                           " {...localStorage}])")
    assert ADMIN not in stored and "graphmem_ui" not in stored


def test_approve_a_review_item_and_undo_it(tab: Session, served: tuple[MemoryStore, str],
                                           shots: Path) -> None:
    store, _ = served
    tab.login(ADMIN)
    page = tab.open("review")
    item = page.locator("#queue .item:has(button[data-decision=promote])").first
    memory_id = item.get_attribute("data-id")
    assert memory_id and store.get(memory_id).kind is Kind.EPISODIC
    item.locator("button[data-decision=promote]").click()
    page.wait_for_selector(f"#decisions button.undo[data-id='{memory_id}']")
    assert store.get(memory_id).kind is Kind.SEMANTIC
    assert store.history(memory_id)[-1].actor == f"dashboard:{NADIA}"
    assert store.events(memory_id)[-1].agent_id == f"dashboard:{NADIA}"
    assert page.locator(f"#queue .item[data-id='{memory_id}']").count() == 0
    page.screenshot(path=str(shots / "decided.png"), full_page=True)
    page.click(f"#decisions button.undo[data-id='{memory_id}']")
    page.wait_for_selector(f"#decisions button.undo[data-id='{memory_id}']", state="detached")
    assert store.get(memory_id).kind is Kind.EPISODIC
    archive = page.locator("#queue .item:has(button[data-decision=archive])").first
    archived_id = archive.get_attribute("data-id")
    assert archived_id
    archive.locator("button[data-decision=archive]").click()
    page.wait_for_selector(f"#decisions button.undo[data-id='{archived_id}']")
    assert store.get(archived_id).status is Status.ARCHIVED


def test_recall_and_mark_hits(tab: Session, served: tuple[MemoryStore, str]) -> None:
    store, _ = served
    tab.login(ADMIN)
    page = tab.open("recall")
    page.fill("#query", "deploy orchard release")
    page.select_option("#preset", "hybrid")
    page.click("#recall-form button[type=submit]")
    page.wait_for_selector("#hits .hit")
    hits = page.locator("#hits .hit")
    first, second = (hits.nth(i).get_attribute("data-id") for i in (0, 1))
    assert first and second
    before = store.get(first).useful_count, store.get(second).ignored_count
    assert "fulltext" in hits.nth(0).inner_text() and "preset hybrid" in hits.nth(0).inner_text()
    hits.nth(0).locator("button[data-mark=useful]").click()
    hits.nth(1).locator("button[data-mark=ignored]").click()
    hits.nth(1).locator(".marked").wait_for()
    hits.nth(0).locator(".marked").wait_for()
    assert store.get(first).useful_count == before[0] + 1
    assert store.get(second).ignored_count == before[1] + 1


def test_another_owners_memories_never_appear(tab: Session, served: tuple[MemoryStore, str],
                                              shots: Path) -> None:
    store, _ = served
    nadia = owner_ids(store, NADIA)
    tab.login(OTHER)
    seen: list[str] = []
    for name in PAGES:
        page = tab.open(name)
        if name == "recall":
            page.fill("#query", "orchard database postgres deploy")
            page.click("#recall-form button[type=submit]")
            page.wait_for_selector("#hits p.note")
        seen.append(page.content())
        page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
    assert card(tab.open("overview"), "count-memories") == len(owner_ids(store, TOMAS))
    asked = sorted(nadia)[0]
    page = tab.open("memory", asked)
    # Another owner's id is answered as an unknown one is: the id asked for, no more.
    assert page.inner_text("#page-error") == f"404 no memory {asked}"
    seen.append(page.content().replace(asked, ""))
    for html in seen:
        assert not nadia & set(re.findall(r"urn:[a-z]+:[a-z0-9]+", html))
        assert NADIA not in html


def test_a_read_only_token_sees_the_queue_but_cannot_decide(
        tab: Session, served: tuple[MemoryStore, str]) -> None:
    store, _ = served
    tab.login(READER)
    page = tab.open("review")
    assert page.is_visible("#read-only")
    buttons = page.locator("#queue button[data-decision]")
    assert buttons.count() > 0 and all(b.is_disabled() for b in buttons.all())
    memory_id = page.locator("#queue .item").first.get_attribute("data-id")
    before = store.get(str(memory_id))
    status: Any = page.evaluate(
        """async id => { const s = await (await fetch('/ui/api/session')).json();
           const r = await fetch('/ui/api/review/decide', {method: 'POST',
             headers: {'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf},
             body: JSON.stringify({memory_id: id, decision: 'archive'})});
           return r.status; }""", memory_id)
    assert status == 403 and store.get(str(memory_id)) == before
