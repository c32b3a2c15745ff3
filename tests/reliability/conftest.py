"""The reliability tests reuse the service tests' fixtures: tiny random checkpoints, settings
and the app with its lifespan running."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

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


@pytest.fixture(params=["embedded", "redis"])
async def store_url(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A test that takes it runs twice: on the embedded store ("") and on a redis-server of
    its own (its URL)."""
    if request.param == "embedded":
        yield ""
        return
    server = RedisProcess().start()
    try:
        yield server.url
    finally:
        server.cleanup()
