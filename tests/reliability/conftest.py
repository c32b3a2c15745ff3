"""The reliability tests reuse the service tests' fixtures: tiny random checkpoints, settings
and the app with its lifespan running."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.redis_server import RedisProcess
from tests.service.conftest import app_client, checkpoint_dir, make_settings

__all__ = ["app_client", "checkpoint_dir", "make_settings"]


@pytest.fixture
def private_redis() -> Iterator[RedisProcess]:
    """A redis-server of this test's own (port and directory): no other test's FLUSHDB or
    keys can reach it. Missing redis-server is an error, never a skip."""
    server = RedisProcess().start()
    try:
        yield server
    finally:
        server.cleanup()
