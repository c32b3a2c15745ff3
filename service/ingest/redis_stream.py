"""The ingestion queue on a Redis Stream with one consumer group.

    enqueue      XADD <prefix>:ingest * job <json>
    read         XAUTOCLAIM (every claim interval: entries idle longer than claim_idle_ms,
                 from consumers that died or batches that failed), else XREADGROUP >
    ack          XACK + XDEL (the stream only holds work not yet done)
    dead_letter  XADD <prefix>:ingest:dead, then XACK + XDEL

Every call is bounded by `timeout_s` and any Redis failure becomes QueueUnavailable (503), so a
Redis outage never hangs a request; the client reconnects by itself once Redis is back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from redis.exceptions import RedisError, ResponseError

from connections.redis_client import RedisClient, redis_client
from service.ingest.queue import Delivery, IngestJob, QueueUnavailable

T = TypeVar("T")

GROUP = "workers"
DEAD_LETTER_MAXLEN = 100_000


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RedisStreamQueue:
    def __init__(
        self,
        url: str,
        *,
        key_prefix: str,
        timeout_s: float,
        claim_idle_ms: int,
    ) -> None:
        self.stream = f"{key_prefix}:ingest"
        self.dead_stream = f"{key_prefix}:ingest:dead"
        self.timeout_s = timeout_s
        self.claim_idle_ms = claim_idle_ms
        self._url = url
        # Every call is also bounded by timeout_s (see _call), whatever redis-py retries.
        self._client = self._connect(timeout_s)
        self._blocking: RedisClient | None = None  # for XREADGROUP BLOCK, made on first read
        self._group_ready = False
        self._next_claim = 0.0

    def _connect(self, socket_timeout: float) -> RedisClient:
        # The store's client: the same URLs (Redis Cluster too) and binary values.
        return redis_client(self._url, socket_timeout)

    async def _call(self, fn: Callable[[], Awaitable[T]], timeout_s: float | None = None) -> T:
        try:
            async with asyncio.timeout(timeout_s or self.timeout_s):
                return await fn()
        except (RedisError, OSError, TimeoutError) as exc:
            raise QueueUnavailable(
                f"ingestion queue unavailable: {type(exc).__name__}: {exc}"
            ) from exc

    async def enqueue(self, job: IngestJob) -> str:
        entry_id = await self._call(lambda: self._client.xadd(self.stream, {b"job": job.to_json()}))
        return _text(entry_id)

    async def _ensure_group(self) -> None:
        if self._group_ready:
            return
        try:
            # Id 0: entries added before the group existed are still delivered.
            await self._call(
                lambda: self._client.xgroup_create(self.stream, GROUP, id="0", mkstream=True)
            )
        except QueueUnavailable as exc:
            cause = exc.__cause__
            if not (isinstance(cause, ResponseError) and "BUSYGROUP" in str(cause)):
                raise
        self._group_ready = True

    async def read(self, consumer: str, count: int, block_ms: int) -> list[Delivery]:
        try:
            return await self._read(consumer, count, block_ms)
        except QueueUnavailable as exc:
            # A Redis restarted without its data lost the group too: make it again next time.
            if isinstance(exc.__cause__, ResponseError) and "NOGROUP" in str(exc.__cause__):
                self._group_ready = False
            raise

    async def _read(self, consumer: str, count: int, block_ms: int) -> list[Delivery]:
        await self._ensure_group()
        now = time.monotonic()
        if now >= self._next_claim:
            self._next_claim = now + self.claim_idle_ms / 2000.0
            claimed = await self._reclaim(consumer, count)
            if claimed:
                return claimed
        if self._blocking is None:
            # A blocking read must not trip the socket timeout of the client.
            self._blocking = self._connect(self.timeout_s + block_ms / 1000.0)
        blocking = self._blocking
        reply: Any = await self._call(
            lambda: blocking.xreadgroup(
                GROUP, consumer, {self.stream: ">"}, count=count, block=block_ms
            ),
            timeout_s=self.timeout_s + block_ms / 1000.0,
        )
        deliveries: list[Delivery] = []
        for _stream, entries in reply or []:
            for entry_id, fields in entries:
                deliveries.append(Delivery(_text(entry_id), IngestJob.from_json(fields[b"job"]), 1))
        return deliveries

    async def _reclaim(self, consumer: str, count: int) -> list[Delivery]:
        reply: Any = await self._call(
            lambda: self._client.xautoclaim(
                self.stream, GROUP, consumer, self.claim_idle_ms, start_id="0-0", count=count
            )
        )
        entries = [(eid, fields) for eid, fields in reply[1] if fields]
        if not entries:
            return []

        async def delivery_counts() -> list[Any]:
            pipe = self._client.pipeline(transaction=False)
            for eid, _ in entries:
                pipe.xpending_range(self.stream, GROUP, min=eid, max=eid, count=1)
            return await pipe.execute()

        pending = await self._call(delivery_counts)
        deliveries = []
        for (eid, fields), info in zip(entries, pending, strict=True):
            times = int(info[0]["times_delivered"]) if info else 1
            deliveries.append(Delivery(_text(eid), IngestJob.from_json(fields[b"job"]), times))
        return deliveries

    async def ack(self, entry_ids: Sequence[str]) -> None:
        if not entry_ids:
            return

        async def ack_and_delete() -> None:
            pipe = self._client.pipeline(transaction=True)
            pipe.xack(self.stream, GROUP, *entry_ids)
            pipe.xdel(self.stream, *entry_ids)
            await pipe.execute()

        await self._call(ack_and_delete)

    async def dead_letter(self, delivery: Delivery, error: str) -> None:
        letter: dict[Any, Any] = {
            b"entry_id": delivery.entry_id,
            b"doc_id": delivery.job.doc_id,
            b"deliveries": delivery.deliveries,
            b"error": error,
            b"job": delivery.job.to_json(),
        }
        # Two steps, not one transaction: on a Redis Cluster the two streams may live in
        # different slots. A crash between them leaves the entry pending, so it is dead-lettered
        # again later: a duplicate letter, never a lost one.
        await self._call(
            lambda: self._client.xadd(self.dead_stream, letter, maxlen=DEAD_LETTER_MAXLEN)
        )
        await self.ack([delivery.entry_id])

    async def dead_letters(self, count: int = 100) -> list[dict[str, Any]]:
        """The oldest dead letters: entry_id, doc_id, deliveries, error (as the SQLite queue)."""
        reply: Any = await self._call(lambda: self._client.xrange(self.dead_stream, count=count))
        letters = []
        for _eid, fields in reply:
            raw = {_text(k): _text(v) for k, v in fields.items()}
            letters.append(
                {
                    "entry_id": raw["entry_id"],
                    "doc_id": raw["doc_id"],
                    "deliveries": int(raw["deliveries"]),
                    "error": raw["error"],
                }
            )
        return letters

    async def depth(self) -> int:
        return int(await self._call(lambda: self._client.xlen(self.stream)))

    async def close(self) -> None:
        await self._client.aclose()
        if self._blocking is not None:
            await self._blocking.aclose()
