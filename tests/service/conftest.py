"""Fixtures for the service tests: tiny checkpoints, settings, an app with its lifespan."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.spawn import start_serve
from service.app import create_app
from service.settings import Settings
from tests.service.helpers import base_env, build_checkpoints


@pytest.fixture(scope="session")
def checkpoint_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_checkpoints(tmp_path_factory.mktemp("checkpoints"))


@pytest.fixture(scope="session")
def live_server_url(
    checkpoint_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """One `cheapqa serve` subprocess (embedded store, the tiny checkpoints) shared by the
    tests of the client, the client commands and the demo page; each uses its own ids."""
    tmp = tmp_path_factory.mktemp("live-server")
    env = base_env(checkpoint_dir, tmp / "data")
    url, server = start_serve(env, tmp / "serve.log", inherit_settings=False)
    try:
        yield url
    finally:
        server.stop()


SettingsFactory = Callable[..., Settings]


@pytest.fixture
def make_settings(tmp_path: Path, checkpoint_dir: Path) -> SettingsFactory:
    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "store_url": "",
            "data_dir": tmp_path / "data",
            "checkpoint_dir": checkpoint_dir,
            "state_dtype": "float32",
            "ingest_block_ms": 50,
            "ingest_claim_idle_ms": 300,
            # The served default: a tighter one fails ordinary calls on a loaded CI machine;
            # the tests about timeouts set their own.
            "redis_timeout_s": 2.0,
        }
        values.update(overrides)
        return Settings(**values)

    return make


async def wait_ready(client: httpx.AsyncClient, timeout_s: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        response = await client.get("/readyz")
        if response.status_code == 200:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not ready: {response.text}")
        await asyncio.sleep(0.02)


async def wait_status(
    client: httpx.AsyncClient, doc_id: str, wanted: str, timeout_s: float = 20.0, **kw: Any
) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        response = await client.get(f"/v1/documents/{doc_id}", **kw)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        if body["status"] == wanted:
            return body
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{doc_id} still {body['status']}: {body}")
        await asyncio.sleep(0.02)


AppClient = Callable[..., Any]


@pytest.fixture
async def app_client(make_settings: SettingsFactory) -> AsyncIterator[AppClient]:
    """`async with app_client(**settings) as client`: the app with its lifespan running."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def start(ready: bool = True, **overrides: Any) -> AsyncIterator[httpx.AsyncClient]:
        app = create_app(make_settings(**overrides))
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                client.app = app  # type: ignore[attr-defined]
                if ready:
                    await wait_ready(client)
                yield client

    yield start
