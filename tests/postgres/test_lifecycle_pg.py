"""``tests/test_lifecycle.py`` on PostgreSQL (see ``conftest``)."""

from tests.test_lifecycle import *  # noqa: F403
