"""Shared fixtures: real Kuzu databases in tmp_path, a controllable clock, the sample corpus."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from graphmem import MemoryStore, Settings
from graphmem._recall._index import RecallIndex
from graphmem._store._recall_index import IndexSync

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "ingest" / "samples" / "agent_memories.ump.json"
LOCOMO = Path(os.environ.get("GRAPHMEM_LOCOMO",
                             ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"))


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C reaches the processes the tests start as it does from a shell: a pytest-xdist
    worker ignores SIGINT, and a child inherits an ignored signal (then ``graphmem ui``
    ends on Ctrl-C as a finished command, exit 0, instead of reporting it, 130)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def locomo() -> Path:
    """The LoCoMo benchmark file (read in place, never copied into the repository)."""
    return need_locomo()


def need_locomo() -> Path:
    """The LoCoMo file. A clone without it skips the tests that need it, saying where to
    get it; where the data must be there (GRAPHMEM_REQUIRE_DATA=1, as .ci/run sets) its
    absence fails them."""
    if LOCOMO.is_file():
        return LOCOMO
    message = (f"LoCoMo is not at {LOCOMO}: get locomo10.json from "
               "https://github.com/snap-research/locomo (data/locomo10.json, CC BY-NC 4.0) "
               "and set GRAPHMEM_LOCOMO to it, or put it at ../shared/data/locomo/")
    if os.environ.get("GRAPHMEM_REQUIRE_DATA") == "1":
        pytest.fail(message + " (GRAPHMEM_REQUIRE_DATA=1: the benchmark data must be here)")
    pytest.skip(message)


#: When the ``clock`` fixture starts.
START = datetime(2026, 7, 15, 12, 0, tzinfo=UTC)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture(autouse=True, scope="session")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Where the recall indexes of PostgreSQL stores go (not the user's cache directory):
    ``settings`` names it, and ``GRAPHMEM_INDEX_DIR`` for the processes tests start.

    The cache directory itself is a temporary one too (``XDG_CACHE_HOME``), for the tests
    that open a store with ``Settings()`` (no index directory, whatever the environment
    says), except for the model's export, which is shared: a run left ~50 files of
    ~4 MB in the user's cache before."""
    from graphmem._onnx import cache_root

    exports = cache_root() / "onnx"
    exports.mkdir(parents=True, exist_ok=True)
    cache = tmp_path_factory.mktemp("cache")
    (cache / "graphmem").mkdir()
    (cache / "graphmem" / "onnx").symlink_to(exports, target_is_directory=True)
    os.environ["XDG_CACHE_HOME"] = str(cache)
    found = os.environ["GRAPHMEM_INDEX_DIR"] = str(tmp_path_factory.mktemp("recall"))
    return found


@pytest.fixture(scope="session")
def pg_server() -> str:
    """A running PostgreSQL 18 with pgvector (see ``tests/_postgres.py``)."""
    from tests._postgres import start_server

    return start_server()


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A URL of an empty schema of its own on the test server."""
    from tests._postgres import fresh_schema

    with fresh_schema(pg_server) as url:
        yield url


@pytest.fixture(params=["kuzu", "postgres"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test's store lives, once on each engine: a Kuzu directory, or an empty
    schema of the test PostgreSQL."""
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return str(tmp_path / "db")


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def settings(index_dir: str) -> Settings:
    """Defaults, independent of the environment the tests run in."""
    return Settings(index_dir=index_dir)


@pytest.fixture
def store(tmp_path: Path, clock: Clock, settings: Settings) -> Iterator[MemoryStore]:
    """A real on-disk Kuzu store with the fast hashing embedder."""
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=clock, settings=settings) as s:
        yield s


@pytest.fixture
def mem_store(clock: Clock, settings: Settings) -> Iterator[MemoryStore]:
    with MemoryStore(":memory:", embedder="hashing", clock=clock, settings=settings) as s:
        yield s


@pytest.fixture(scope="session")
def sample_template(tmp_path_factory: pytest.TempPathFactory, index_dir: str) -> Path:
    """The shipped sample corpus imported once (at the ``clock`` fixture's start) into a
    closed Kuzu store, for ``sample_store`` to copy: the import itself is tested in
    ``test_ump.py``."""
    from ingest.ump import import_ump

    path = tmp_path_factory.mktemp("sample-template") / "sample"
    with MemoryStore(path, embedder="hashing", clock=Clock(START),
                     settings=Settings(index_dir=index_dir)) as s:
        import_ump(s, SAMPLE)
    return path


@pytest.fixture
def sample_store(tmp_path: Path, clock: Clock, settings: Settings,
                 sample_template: Path) -> Iterator[MemoryStore]:
    """The shipped sample corpus imported into a store of the test's own (a copy of
    ``sample_template``, the same as importing it again: 2.5 s against 0.2)."""
    shutil.copytree(sample_template, tmp_path / "sample")
    with MemoryStore(tmp_path / "sample", embedder="hashing", clock=clock,
                     settings=settings) as s:
        yield s


@pytest.fixture
def no_build(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the builds of the index (a store that reads its file builds none)."""
    builds: list[int] = []
    original = IndexSync._build

    def counted(self: IndexSync) -> RecallIndex:
        builds.append(1)
        return original(self)

    monkeypatch.setattr(IndexSync, "_build", counted)
    return builds


def record_calls(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[Any]:
    """Wrap ``owner.name`` so that each call's first argument is listed (then the call
    goes through); the list is returned."""
    calls: list[Any] = []
    original = getattr(owner, name)

    def recorded(first: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(first)
        return original(first, *args, **kwargs)

    monkeypatch.setattr(owner, name, recorded)
    return calls
