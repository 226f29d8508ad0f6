"""``tests/test_trust_forget.py`` on PostgreSQL (see ``conftest``)."""

from tests.test_trust_forget import *  # noqa: F403
