"""Dashboard page load times at 10k and 100k memories: ``python -m eval.bench_ui``.

Builds (once, then reuses from ``--cache``) stores of the synthetic memories of
``eval.bench_recall`` (five owners, ~3 edges a memory) with the hashing embedder (page
loads do not depend on the model; recall's own latency with MiniLM is
``eval.bench_recall``'s), runs the lifecycle once (events, a hot set), serves each with a
real sidecar on 127.0.0.1 and opens every page in headless Chromium (Debian's, driven by
playwright), as the local user (every owner's memories) and as one owner's token (a fifth
of them). A page's load time is from the navigation to the page showing its data: cold
(the first visit after the sidecar started) and warm (the next one; the page data stays
cached until the store changes).

``--screenshots DIR`` instead writes a screenshot of every page, over the sample corpus
with a conversation, feedback and a lifecycle run, for the README.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphmem import MemoryStore, Settings

PAGES = ("overview", "quality", "review", "memory", "recall")
OWNER = "did:key:owner0"
ADMIN = "tok-bench-admin-0123456789"
TOKENS = {ADMIN: {"owner": OWNER, "scopes": ["read", "write", "admin"]}}
CHROMIUM = "/usr/bin/chromium"


def build(path: Path, n: int) -> None:
    from .bench_recall import synthetic

    records, edges = synthetic(n)
    started = time.perf_counter()
    with MemoryStore(path, embedder="hashing", settings=Settings()) as store:
        store.add_many(records, batch_size=2000)
        store.link_many(edges)
        store.run_lifecycle(apply=True)
    print(f"  built {n} memories, {len(edges)} edges, one lifecycle run in "
          f"{time.perf_counter() - started:.0f} s")


@contextmanager
def served(store: MemoryStore, tokens: dict[str, Any] | None) -> Iterator[str]:
    import socket
    import threading

    import uvicorn

    from graphmem.sidecar import Tokens, create_app, server_config

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    app = create_app(store, tokens=Tokens.from_mapping(tokens) if tokens else None)
    server = uvicorn.Server(server_config(app, host="127.0.0.1", port=port,
                                          settings=store.settings, log_level="warning",
                                          lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


class Tab:
    """One Chromium tab logged in to the dashboard."""

    def __init__(self, browser: Any, url: str, token: str | None) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.url = url
        self.page.goto(url + "/ui/#/recall")  # a page that loads no data: all stay cold
        if token:
            self.page.wait_for_selector("#login:not([hidden])")
            self.page.fill("#token", token)
            self.page.click("#login-form button[type=submit]")
        self.page.wait_for_selector("#nav:not([hidden])")
        self.page.wait_for_function("() => document.getElementById('page').dataset.ready")

    def load(self, name: str, arg: str = "", query: str = "") -> float:
        """Seconds from navigating to ``name`` (a full page load) to its data shown."""
        hash_ = f"#/{name}" + (f"/{arg}" if arg else "")
        self.page.goto("about:blank")  # what follows is a whole page load
        started = time.perf_counter()
        self.page.goto(self.url + "/ui/" + hash_)
        self.page.wait_for_function(
            "name => document.getElementById('page').dataset.ready === name", arg=name,
            timeout=300_000)
        if query:
            self.page.fill("#query", query)
            self.page.evaluate("() => { document.getElementById('page').dataset.ready = ''; }")
            self.page.click("#recall-form button[type=submit]")
            self.page.wait_for_function(
                "() => document.getElementById('page').dataset.ready === 'recall-done'",
                timeout=300_000)
        return time.perf_counter() - started

    def close(self) -> None:
        self.context.close()


def measure(browser: Any, url: str, token: str | None, some_id: str) -> dict[str, tuple]:
    tab = Tab(browser, url, token)
    out = {}
    for name in PAGES:
        arg = some_id if name == "memory" else ""
        query = "river bank account" if name == "recall" else ""
        cold = tab.load(name, arg, query)
        warm = statistics.median(tab.load(name, arg, query) for _ in range(3))
        out[name] = (cold, warm)
    tab.close()
    return out


def run_size(browser: Any, n: int, cache: Path) -> None:
    path = cache / f"ui-bench-{n}"
    if not path.exists():
        build(path, n)
    print(f"\n{n} memories ({n // 5} of them the token owner's)")
    print(f"  {'page':<10} {'who':<14} {'cold ms':>9} {'warm ms':>9}")
    for who, tokens, token in (("local user", None, None), ("one owner", TOKENS, ADMIN)):
        # A fresh store handle and sidecar each time: nothing cached before the first visit.
        with MemoryStore(path, embedder="hashing", settings=Settings()) as store, \
                served(store, tokens) as url:
            some_id = store.memories(owner=OWNER)[n // 10].id if n else ""
            times = measure(browser, url, token, some_id)
        for name, (cold, warm) in times.items():
            print(f"  {name:<10} {who:<14} {cold * 1000:>9.0f} {warm * 1000:>9.0f}")


SAMPLE_NOW = datetime(2026, 7, 15, 18, tzinfo=UTC)
NADIA = "did:key:z6MkwrenNadiaOkafor7h3kq9"


def sample_store(path: Path) -> MemoryStore:
    """The sample corpus after some use: a conversation, recalls with feedback, a lifecycle
    run."""
    from ingest.samples import build_sample
    from ingest.ump import import_ump

    store = MemoryStore(path, embedder="hashing", clock=lambda: SAMPLE_NOW,
                        settings=Settings())
    import_ump(store, build_sample.OUT)
    store.add_conversation([
        {"speaker": "Nadia", "text": "Hi!"},
        {"speaker": "Nadia", "text": "I moved the greenhouse sensors to the north bed in July."},
        {"speaker": "Nadia", "text": "I might try a Rust rewrite of the harvest importer."},
        {"speaker": "Nadia", "text": "My advisor Prof. Adeyemi wants chapter 3 by August 30."},
    ], session_id="s-2026-07-15-ui", owner=NADIA)
    queries = ["which database does orchard use?", "deploy orchard", "greenhouse moisture",
               "what does Nadia prefer for code?", "thesis chapter deadline"]
    for query in queries:
        hits = store.recall(query, k=4, owner=NADIA)
        for hit in hits[:2]:
            store.feedback(hit.memory.id, useful=True, query=query, owner=NADIA)
        store.feedback(hits[-1].memory.id, useful=False, query=query, owner=NADIA)
    store.run_lifecycle(apply=True)
    return store


def screenshots(browser: Any, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        store = sample_store(Path(tmp) / "db")
        try:
            tokens = {ADMIN: {"owner": NADIA, "scopes": ["read", "write", "admin"]}}
            with served(store, tokens) as url:
                tab = Tab(browser, url, ADMIN)
                chained = next(m for m in store.memories(owner=NADIA)
                               if m.superseded_by and len(store.links(m.id)) > 2)
                for name in PAGES:
                    arg = chained.id if name == "memory" else ""
                    query = "which database does orchard use?" if name == "recall" else ""
                    tab.load(name, arg, query)
                    if name == "review":  # a decision, to show it with its undo
                        tab.page.click("#queue button[data-decision=promote] >> nth=0")
                        tab.page.wait_for_selector("#decisions button.undo")
                    tab.page.wait_for_timeout(300)  # the drawing's frame settles
                    tab.page.screenshot(path=str(out / f"{name}.png"), full_page=True)
                    print(f"  {out / (name + '.png')}")
                tab.close()
        finally:
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "graphmem-bench")
    parser.add_argument("--screenshots", type=Path, default=None, metavar="DIR")
    parser.add_argument("--chromium", default=shutil.which("chromium") or CHROMIUM)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        try:
            if args.screenshots:
                screenshots(browser, args.screenshots)
                return
            args.cache.mkdir(parents=True, exist_ok=True)
            print("dashboard page loads: navigation to data shown, headless Chromium, "
                  "sidecar on 127.0.0.1 (hashing embedder)")
            for size in args.sizes:
                run_size(browser, size, args.cache)
            print(json.dumps({"chromium": browser.version}))
        finally:
            browser.close()


if __name__ == "__main__":
    main()
