"""The ingestion queue on a Redis Stream with one consumer group.

    enqueue      XADD <prefix>:ingest * job <json>, and INCRBY of {<prefix>:ingest}:bytes by
                 the job's size (one script; the counter shares the stream's cluster slot)
    read         XAUTOCLAIM (every claim interval: entries idle longer than claim_idle_ms,
                 from consumers that died or batches that failed), else XREADGROUP >;
                 an entry that is not a job is dead-lettered there and then, alone
    extend       XCLAIM <ids> JUSTID with min-idle 0: the heartbeat of a long batch
    ack          XACK + XDEL, and DECRBY of the bytes the deleted entries held (one script:
                 an entry already gone is not counted twice)
    backlog      XLEN + GET of the bytes counter: counted, not sampled (MEMORY USAGE samples
                 the first stream nodes only, and missed most of a stream of large entries)
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


# KEYS: the stream, its bytes counter. ARGV: the job. The counter grows by the job's size.
_ENQUEUE = """
local id = redis.call('XADD', KEYS[1], '*', 'job', ARGV[1])
redis.call('INCRBY', KEYS[2], string.len(ARGV[1]))
return id
"""

# KEYS: the stream, its bytes counter. ARGV: group, then entry ids. Acks and deletes them, and
# takes from the counter the size of those still in the stream (never below 0: entries added
# before the counter existed were never counted).
_ACK = """
local freed = 0
local ids = {}
for i = 2, #ARGV do
  ids[#ids + 1] = ARGV[i]
  for _, entry in ipairs(redis.call('XRANGE', KEYS[1], ARGV[i], ARGV[i])) do
    local fields = entry[2]
    for j = 1, #fields, 2 do
      if fields[j] == 'job' then freed = freed + string.len(fields[j + 1]) end
    end
  end
end
redis.call('XACK', KEYS[1], ARGV[1], unpack(ids))
redis.call('XDEL', KEYS[1], unpack(ids))
if freed > 0 and redis.call('DECRBY', KEYS[2], freed) < 0 then
  redis.call('SET', KEYS[2], 0)
end
return freed
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
        # A hash tag of the stream's whole name: the same cluster slot as the stream.
        self.bytes_key = f"{{{self.stream}}}:bytes"
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
        self._enqueue = self._client.register_script(_ENQUEUE)
        self._ack = self._client.register_script(_ACK)

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
        keys = [self.stream, self.bytes_key]
        entry_id = await self._call(lambda: self._enqueue(keys=keys, args=[job.to_json()]))
        return _text(entry_id)

    async def readers(self, within_ms: int) -> int | None:
        """Consumers of the group that read it within `within_ms` (XINFO's idle time; before
        Redis 7.2 only a read that took entries counts); 0 when no worker ever made the
        group."""
        try:
            consumers: Any = await self._call(
                lambda: self._client.xinfo_consumers(self.stream, GROUP)
            )
        except QueueUnavailable as exc:
            if "NOGROUP" in str(exc) or "no such key" in str(exc):
                return 0
            raise
        return sum(1 for c in consumers if int(c.get("idle", within_ms)) < within_ms)

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
            pipe.get(self.bytes_key)
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

        keys = [self.stream, self.bytes_key]
        await self._call(lambda: self._ack(keys=keys, args=[GROUP, *entry_ids]))

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
