"""Redis and its memory (issue 26, MEDIUM 6 to 8): an evicting policy is refused at start-up,
a brief out-of-memory spell does not fail accepted documents, and the queue's byte limit
counts every queued byte."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
import redis

from service.ingest import worker as worker_module
from service.ingest.worker import run_worker
from store.errors import StoreError
from tests.redis_server import RedisProcess
from tests.service.conftest import SettingsFactory, wait_status
from tests.service.texts import HARBOUR, OBSERVATORY, ORCHARD


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-random", "allkeys-lfu"])
async def test_an_evicting_redis_is_refused_at_startup(
    app_client: Any, make_settings: SettingsFactory, private_redis: RedisProcess, policy: str
) -> None:
    admin = redis.Redis.from_url(private_redis.url)
    admin.config_set("maxmemory-policy", policy)
    with pytest.raises(StoreError, match="noeviction"):
        async with app_client(modes=["linear"], store_url=private_redis.url, ready=False):
            pass
    settings = make_settings(modes=["linear"], store_url=private_redis.url)
    with pytest.raises(StoreError, match="noeviction"):
        await asyncio.wait_for(run_worker(settings), 30)
    # Keys without a time to live are never evicted under volatile-*: that is accepted.
    admin.config_set("maxmemory-policy", "volatile-lru")
    async with app_client(modes=["linear"], store_url=private_redis.url) as client:
        assert (await client.get("/readyz")).status_code == 200
    admin.close()


async def test_out_of_memory_spell_does_not_fail_accepted_documents(
    app_client: Any, private_redis: RedisProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis starts refusing writes (maxmemory reached under noeviction) while the worker
    encodes a batch, for about a second. One delivery is all a document gets here: a store
    outage must not spend it."""
    admin = redis.Redis.from_url(private_redis.url)
    real = worker_module.encode_group

    posted = threading.Event()

    def encode_then_fill_redis(models: Any, token_lists: Any) -> Any:
        posted.wait(20)  # all three accepted first
        admin.config_set("maxmemory", 1)  # every write from now on is refused with OOM
        return real(models, token_lists)

    monkeypatch.setattr(worker_module, "encode_group", encode_then_fill_redis)
    texts = {"o1": HARBOUR, "o2": ORCHARD, "o3": OBSERVATORY}
    try:
        async with app_client(
            modes=["linear"], store_url=private_redis.url, serve_worker=True,
            ingest_max_deliveries=1, ingest_claim_idle_ms=200,
        ) as client:  # fmt: skip
            body = {"documents": [{"id": i, "text": t} for i, t in texts.items()]}
            assert (await client.post("/v1/documents", json=body)).status_code == 202
            posted.set()
            deadline = asyncio.get_running_loop().time() + 20
            while admin.config_get("maxmemory")["maxmemory"] == "0":
                assert asyncio.get_running_loop().time() < deadline, "never encoded"
                await asyncio.sleep(0.01)
            monkeypatch.setattr(worker_module, "encode_group", real)
            await asyncio.sleep(1.0)  # several claim intervals while writes are refused
            admin.config_set("maxmemory", 0)
            for doc_id in texts:
                info = await wait_status(client, doc_id, "indexed", timeout_s=20)
                assert info["error"] is None
    finally:
        admin.config_set("maxmemory", 0)
        admin.close()


async def test_queue_byte_limit_counts_every_queued_byte(
    app_client: Any, private_redis: RedisProcess
) -> None:
    limit = 600_000
    big = (ORCHARD + " ") * 120  # ~75 KB
    async with app_client(
        modes=["linear"], store_url=private_redis.url, serve_worker=False,
        ingest_max_queue_bytes=limit,
    ) as client:  # fmt: skip
        # Many small entries first: a sample of the stream's first nodes sees only those.
        for batch in range(5):
            body = {"documents": [{"id": f"s{batch}-{i}", "text": HARBOUR} for i in range(60)]}
            assert (await client.post("/v1/documents", json=body)).status_code == 202
        queued = 300 * len(HARBOUR)
        refused = 0
        for i in range(20):
            response = await client.post("/v1/documents", json={"id": f"b{i}", "text": big})
            if response.status_code == 429:
                refused += 1
                assert response.json()["error"]["code"] == "ingest_queue_full"
                continue
            assert response.status_code == 202, response.text
            queued += len(big)
        assert refused > 0, f"{queued} bytes queued under a limit of {limit}"
        assert queued <= limit + len(big)
