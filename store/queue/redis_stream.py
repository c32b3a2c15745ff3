"""The ingestion queue on a Redis Stream with one consumer group.

    enqueue      XADD <prefix>:ingest * job <json>
    read         XAUTOCLAIM (every claim interval: entries idle longer than claim_idle_ms,
                 from consumers that died or batches that failed), else XREADGROUP >;
                 an entry that is not a job is dead-lettered there and then, alone
    extend       XCLAIM <ids> JUSTID with min-idle 0: the heartbeat of a long batch
    ack          XACK + XDEL (the stream only holds work not yet done)
    is_pending   XRANGE <id> <id>: acked entries are deleted, so present means pending
    dead_letter  XADD <prefix>:ingest:dead (id, hash, error; not the text), then XACK + XDEL
    cleanup      every claim interval, consumers idle longer than consumer_idle_ms with
                 nothing pending leave the group (one script: never one with entries)

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
from store.queue.base import (
    MALFORMED_DOC_ID,
    Delivery,
    IngestJob,
    MalformedEntry,
    QueueUnavailable,
)

T = TypeVar("T")

GROUP = "workers"
DEAD_LETTER_MAXLEN = 100_000

# KEYS: the stream. ARGV: group, idle limit in ms, the calling consumer (kept).
# Atomic: a consumer is checked and removed in one step, so one that just took entries stays.
_REMOVE_IDLE_CONSUMERS = """
local removed = 0
for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local f = {}
  for i = 1, #c, 2 do f[c[i]] = c[i + 1] end
  if f['pending'] == 0 and f['idle'] > tonumber(ARGV[2]) and f['name'] ~= ARGV[3] then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], f['name'])
    removed = removed + 1
  end
end
return removed
"""


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
        consumer_idle_ms: int = 3_600_000,
    ) -> None:
        self.stream = f"{key_prefix}:ingest"
        self.dead_stream = f"{key_prefix}:ingest:dead"
        self.timeout_s = timeout_s
        self.claim_idle_ms = claim_idle_ms
        self.consumer_idle_ms = consumer_idle_ms
        self._url = url
        # Every call is also bounded by timeout_s (see _call), whatever redis-py retries.
        self._client = self._connect(timeout_s)
        self._blocking: RedisClient | None = None  # for XREADGROUP BLOCK, made on first read
        self._group_ready = False
        self._next_claim = 0.0
        self._remove_idle = self._client.register_script(_REMOVE_IDLE_CONSUMERS)

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

    async def is_pending(self, entry_id: str) -> bool:
        reply: Any = await self._call(
            lambda: self._client.xrange(self.stream, min=entry_id, max=entry_id, count=1)
        )
        return bool(reply)

    async def extend(self, consumer: str, entry_ids: Sequence[str]) -> None:
        if not entry_ids:
            return
        await self._call(
            lambda: self._client.xclaim(
                self.stream, GROUP, consumer, 0, list(entry_ids), justid=True
            )
        )

    async def backlog(self) -> tuple[int, int]:
        async def both() -> list[Any]:
            pipe = self._client.pipeline(transaction=False)
            pipe.xlen(self.stream)
            # An estimate from a few sampled entries: exact would read the whole stream.
            pipe.memory_usage(self.stream, samples=5)
            return await pipe.execute()

        depth, used = await self._call(both)
        return int(depth), int(used or 0)

    async def remove_idle_consumers(self, consumer: str) -> int:
        """Consumers idle longer than consumer_idle_ms with nothing pending leave the group."""
        removed: Any = await self._call(
            lambda: self._remove_idle(
                keys=[self.stream], args=[GROUP, self.consumer_idle_ms, consumer]
            )
        )
        return int(removed)

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
            await self.remove_idle_consumers(consumer)
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
        entries = [(eid, fields, 1) for _stream, batch in reply or [] for eid, fields in batch]
        return await self._deliveries(entries)

    async def _deliveries(self, entries: list[tuple[Any, Any, int]]) -> list[Delivery]:
        """Each entry parsed alone; one that is not a job goes to the dead letters at once."""
        deliveries: list[Delivery] = []
        for eid, fields, times in entries:
            try:
                job = IngestJob.from_json(fields.get(b"job", b""))
            except MalformedEntry as exc:
                await self._bury(_text(eid), MALFORMED_DOC_ID, "", times, str(exc))
                continue
            deliveries.append(Delivery(_text(eid), job, times))
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
        counted = [
            (eid, fields, int(info[0]["times_delivered"]) if info else 1)
            for (eid, fields), info in zip(entries, pending, strict=True)
        ]
        return await self._deliveries(counted)

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
        job = delivery.job
        await self._bury(delivery.entry_id, job.doc_id, job.text_hash, delivery.deliveries, error)

    async def _bury(
        self, entry_id: str, doc_id: str, text_hash: str, deliveries: int, error: str
    ) -> None:
        letter: dict[Any, Any] = {
            b"entry_id": entry_id,
            b"doc_id": doc_id,
            b"text_hash": text_hash,
            b"deliveries": deliveries,
            b"error": error,
        }
        # Two steps, not one transaction: on a Redis Cluster the two streams may live in
        # different slots. A crash between them leaves the entry pending, so it is dead-lettered
        # again later: a duplicate letter, never a lost one.
        await self._call(
            lambda: self._client.xadd(self.dead_stream, letter, maxlen=DEAD_LETTER_MAXLEN)
        )
        await self.ack([entry_id])

    async def dead_letters(self, count: int = 100) -> list[dict[str, Any]]:
        """The oldest dead letters: entry_id, doc_id, text_hash, deliveries, error (as the
        SQLite queue)."""
        reply: Any = await self._call(lambda: self._client.xrange(self.dead_stream, count=count))
        letters = []
        for _eid, fields in reply:
            raw = {_text(k): _text(v) for k, v in fields.items()}
            letters.append(
                {
                    "entry_id": raw["entry_id"],
                    "doc_id": raw["doc_id"],
                    "text_hash": raw.get("text_hash", ""),
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
