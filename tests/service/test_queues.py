"""One contract for both ingestion queues: the SQLite file and the Redis Stream."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from bench.spawn import free_port
from store.queue.base import IngestJob, QueueUnavailable
from store.queue.embedded import EmbeddedQueue
from store.queue.redis_stream import RedisStreamQueue

CLAIM_MS = 600  # long enough that a loaded machine does not see a lease lapse early
QueueFactory = Callable[[], Any]


@pytest.fixture(params=["embedded", "redis"])
async def open_queue(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[QueueFactory]:
    """Opens queues on one backing store (several, as several processes would)."""
    opened: list[Any] = []
    if request.param == "embedded":

        def make() -> Any:
            return EmbeddedQueue(tmp_path / "ingest.sqlite3", claim_idle_ms=CLAIM_MS)
    else:
        url = request.getfixturevalue("redis_url")
        prefix = f"t-{uuid.uuid4().hex[:8]}"

        def make() -> Any:
            return RedisStreamQueue(url, key_prefix=prefix, timeout_s=1.0, claim_idle_ms=CLAIM_MS)

    def tracked() -> Any:
        queue = make()
        opened.append(queue)
        return queue

    yield tracked
    for queue in opened:
        await queue.close()


def job(i: int) -> IngestJob:
    return IngestJob(f"doc-{i}", f"Text number {i}.", f"hash-{i}", ["Ada"] if i % 2 else None)


async def read_until(
    read: Callable[[], Awaitable[list[Any]]], n: int, timeout_s: float = 5.0
) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < n and time.monotonic() < deadline:
        got += await read()
    return got


async def test_enqueue_read_ack(open_queue: QueueFactory) -> None:
    queue = open_queue()
    for i in range(5):
        await queue.enqueue(job(i))
    assert await queue.depth() == 5
    first = await queue.read("c1", 3, 50)
    assert [d.job for d in first] == [job(0), job(1), job(2)]
    assert all(d.deliveries == 1 for d in first)
    rest = await queue.read("c1", 10, 50)
    assert [d.job for d in rest] == [job(3), job(4)]
    await queue.ack([d.entry_id for d in first + rest])
    assert await queue.depth() == 0
    assert await queue.read("c1", 10, 50) == []


async def test_unacked_entries_are_delivered_again_to_another_consumer(
    open_queue: QueueFactory,
) -> None:
    dead_consumer, survivor = open_queue(), open_queue()
    await dead_consumer.enqueue(job(1))
    taken = await dead_consumer.read("dies", 10, 50)
    assert len(taken) == 1
    await dead_consumer.close()  # it never acks
    assert await survivor.read("lives", 10, 50) == []  # leased, not yet idle long enough
    await asyncio.sleep(CLAIM_MS / 1000 + 0.05)
    again = await read_until(lambda: survivor.read("lives", 10, 50), 1)
    assert [d.job for d in again] == [job(1)]
    assert again[0].entry_id == taken[0].entry_id and again[0].deliveries == 2
    await survivor.ack([again[0].entry_id])
    assert await survivor.depth() == 0


async def test_dead_letter_removes_the_entry_and_keeps_the_error(
    open_queue: QueueFactory,
) -> None:
    queue = open_queue()
    await queue.enqueue(job(7))
    [delivery] = await queue.read("c", 10, 50)
    await queue.dead_letter(delivery, "encoder exploded")
    assert await queue.depth() == 0
    await asyncio.sleep(CLAIM_MS / 1000 + 0.05)
    assert await read_until(lambda: queue.read("c", 10, 50), 1, timeout_s=0.3) == []
    [dead] = await queue.dead_letters()
    assert dead["doc_id"] == "doc-7" and dead["error"] == "encoder exploded"
    assert dead["deliveries"] == 1 and dead["entry_id"] == delivery.entry_id


async def test_a_blocked_read_wakes_up_for_new_entries(open_queue: QueueFactory) -> None:
    reader, writer = open_queue(), open_queue()
    await reader.read("c", 1, 10)  # creates the group on Redis
    start = time.monotonic()
    pending = asyncio.create_task(reader.read("c", 1, 3000))
    await asyncio.sleep(0.1)
    await writer.enqueue(job(2))
    got = await pending
    assert [d.job for d in got] == [job(2)]
    assert time.monotonic() - start < 1.5


async def test_embedded_queue_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "q.sqlite3"
    queue = EmbeddedQueue(path, claim_idle_ms=CLAIM_MS)
    await queue.enqueue(job(1))
    await queue.enqueue(job(2))
    await queue.close()
    reopened = EmbeddedQueue(path, claim_idle_ms=CLAIM_MS)
    try:
        assert [d.job for d in await reopened.read("c", 10, 10)] == [job(1), job(2)]
    finally:
        await reopened.close()


async def test_redis_queue_down_is_unavailable_quickly() -> None:
    queue = RedisStreamQueue(
        f"redis://127.0.0.1:{free_port()}/0", key_prefix="x", timeout_s=0.3, claim_idle_ms=100
    )
    try:
        for call in (lambda: queue.enqueue(job(1)), queue.depth, lambda: queue.read("c", 1, 50)):
            start = time.monotonic()
            with pytest.raises(QueueUnavailable):
                await call()
            assert time.monotonic() - start < 1.0
    finally:
        await queue.close()


async def test_redis_queue_recreates_a_lost_group(redis_url: str) -> None:
    queue = RedisStreamQueue(redis_url, key_prefix="lost", timeout_s=1.0, claim_idle_ms=CLAIM_MS)
    try:
        await queue.enqueue(job(1))
        assert len(await queue.read("c", 10, 10)) == 1
        client = redis.Redis.from_url(redis_url)
        client.flushdb()  # a Redis restarted without its data: the group is gone
        client.close()
        with pytest.raises(QueueUnavailable):
            await queue.read("c", 10, 10)
        await queue.enqueue(job(2))
        assert [d.job for d in await queue.read("c", 10, 10)] == [job(2)]
    finally:
        await queue.close()


async def test_a_redis_queue_knows_whether_a_worker_reads_it(redis_url: str) -> None:
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    queue = RedisStreamQueue(redis_url, key_prefix=prefix, timeout_s=1.0, claim_idle_ms=CLAIM_MS)
    try:
        assert await queue.readers(60_000) == 0  # nothing ever read it: no group
        await queue.enqueue(job(1))
        await queue.enqueue(job(2))
        assert await queue.readers(60_000) == 0  # enqueued, and still no worker
        await queue.read("worker-a", 1, 10)
        await queue.read("worker-b", 1, 10)
        assert await queue.readers(60_000) == 2
        time.sleep(0.05)
        assert await queue.readers(1) == 0  # not within the last millisecond
    finally:
        await queue.close()


async def test_an_embedded_queue_cannot_tell_its_readers(tmp_path: Path) -> None:
    queue = EmbeddedQueue(tmp_path / "ingest.sqlite3", claim_idle_ms=CLAIM_MS)
    try:
        assert await queue.readers(60_000) is None
    finally:
        await queue.close()


async def test_a_document_no_worker_will_take_says_so(
    redis_url: str, app_client: Any, make_settings: Any
) -> None:
    # Redis, and no worker anywhere: the API accepts documents that nothing indexes.
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    settings = {"store_url": redis_url, "key_prefix": prefix, "serve_worker": False}
    async with app_client(**settings) as client:
        assert (await client.get("/readyz")).json()["workers"] == 0
        await client.post("/v1/documents", json={"id": "lonely", "text": "Anna met Tom."})
        first = (await client.get("/v1/documents/lonely")).json()
        assert first["status"] == "queued" and first["waiting"] is None  # too soon to say
        window_s = 4 * make_settings().ingest_block_ms / 1000 + 0.2
        await asyncio.sleep(max(window_s, make_settings().ingest_claim_idle_ms / 2000 + 0.2))
        later = (await client.get("/v1/documents/lonely")).json()
        assert later["status"] == "queued"
        assert later["waiting"].startswith("no worker has read the ingestion queue")
        # Once a worker reads the queue, nothing says there is none.
        queue = RedisStreamQueue(
            redis_url, key_prefix=prefix, timeout_s=1.0, claim_idle_ms=CLAIM_MS
        )
        try:
            await queue.read("worker-a", 10, 10)
            assert (await client.get("/readyz")).json()["workers"] == 1
            assert (await client.get("/v1/documents/lonely")).json()["waiting"] is None
        finally:
            await queue.close()
