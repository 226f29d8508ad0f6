"""``tests/test_sidecar.py`` on PostgreSQL (see ``conftest``)."""

from tests.test_sidecar import *  # noqa: F403
