"""``tests/test_knowledge.py`` on PostgreSQL (see ``conftest``)."""

from tests.test_knowledge import *  # noqa: F403
