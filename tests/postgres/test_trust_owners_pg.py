"""``tests/test_trust_owners.py`` on PostgreSQL (see ``conftest``)."""

from tests.test_trust_owners import *  # noqa: F403
