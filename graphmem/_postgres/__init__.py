"""The PostgreSQL engine: the only package that talks to PostgreSQL (``_db`` alone
imports psycopg)."""

from ._db import is_postgres_url, redacted_url
from ._engine import PostgresEngine
from ._schema import SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION", "PostgresEngine", "is_postgres_url", "redacted_url"]
