"""The Kuzu engine: the only package that talks to Kuzu (``_db`` alone imports kuzu)."""

from ._db import Database, query_parameters
from ._engine import KuzuCypher, KuzuEngine
from ._guard import LIMITS as CYPHER_LIMITS
from ._guard import check_user_query
from ._schema import SCHEMA_VERSION, SCHEMAS

__all__ = [
    "CYPHER_LIMITS",
    "SCHEMAS",
    "SCHEMA_VERSION",
    "Database",
    "KuzuCypher",
    "KuzuEngine",
    "check_user_query",
    "query_parameters",
]
