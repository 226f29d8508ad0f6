"""``tests/test_recall.py`` on PostgreSQL (see ``conftest``)."""

from tests.test_recall import *  # noqa: F403
