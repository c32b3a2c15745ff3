"""A `store` fixture that runs each contract test on every backend at hand.

Always the embedded store and Redis (the `redis_url` fixture); also a Redis Cluster when
CHEAPQA_TEST_REDIS_CLUSTER_URL names one (e.g. redis+cluster://127.0.0.1:7000), flushed
around each test.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from redis.cluster import RedisCluster

from connections.redis_client import split_cluster
from store.base import DocumentStore
from store.factory import open_store

CLUSTER_URL = os.environ.get("CHEAPQA_TEST_REDIS_CLUSTER_URL", "")
BACKENDS = ["embedded", pytest.param("redis", marks=pytest.mark.redis)]
if CLUSTER_URL:
    BACKENDS.append(pytest.param("cluster", marks=pytest.mark.redis))


def _flush_cluster() -> None:
    client = RedisCluster.from_url(split_cluster(CLUSTER_URL)[1])
    try:
        client.flushdb(target_nodes=RedisCluster.PRIMARIES)
    finally:
        client.close()


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[DocumentStore]:
    if request.param == "cluster":
        _flush_cluster()
        url = CLUSTER_URL
    elif request.param == "redis":
        url = request.getfixturevalue("redis_url")
    else:
        url = "embedded"
    opened = open_store(url, data_dir=tmp_path, key_prefix="cheapqa-test", timeout_s=2.0)
    try:
        yield opened
    finally:
        await opened.close()
        if request.param == "cluster":
            _flush_cluster()
