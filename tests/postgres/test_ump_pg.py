"""``tests/test_ump.py`` on PostgreSQL (see ``conftest``)."""

from tests.test_ump import *  # noqa: F403
