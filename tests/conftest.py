"""Shared fixtures. `redis_url` gives a flushed, dedicated Redis database per test."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis
import torch

from bench.spawn import CheapqaProcess
from tests.redis_server import find_or_start

IN_CI = os.environ.get("CI", "").lower() == "true"


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    # The tests' models are tiny: extra torch threads only contend with each other (and with
    # the servers the tests start) on a 2-core machine.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def processes() -> Iterator[list[CheapqaProcess]]:
    started: list[CheapqaProcess] = []
    yield started
    for p in started:  # always stopped, whatever the test did
        p.stop()


@pytest.fixture(scope="session")
def redis_server_url() -> Iterator[str]:
    url, proc, reason = find_or_start()
    if url is None:
        if IN_CI:
            pytest.fail(f"CI=true but no Redis could be had: {reason}")
        pytest.skip(f"no Redis: {reason}")
    try:
        yield url
    finally:
        if proc is not None:
            proc.cleanup()


@pytest.fixture
def redis_url(redis_server_url: str) -> Iterator[str]:
    """A Redis URL whose database is empty at the start and end of the test."""
    client = redis.Redis.from_url(redis_server_url)
    client.flushdb()
    try:
        yield redis_server_url
    finally:
        client.flushdb()
        client.close()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "redis_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.redis)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    # Under CI=true a skipped Redis test means Redis was not really tested: make it a failure.
    outcome = yield
    report = outcome.get_result()
    if IN_CI and report.skipped and item.get_closest_marker("redis") is not None:
        report.outcome = "failed"
        report.longrepr = f"Redis test skipped under CI=true: {report.longrepr}"
