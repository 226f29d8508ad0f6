"""``tests/test_store.py`` on PostgreSQL (see ``conftest``)."""

from tests.test_store import *  # noqa: F403
