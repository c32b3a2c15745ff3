"""The Redis backend: binary values, one hash-tagged key family per document.

Keys: `{prefix}:doc:{<id>}:meta` (JSON) and `{prefix}:doc:{<id>}:state:<mode>` (codec bytes).
`{<id>}` is a Redis Cluster hash tag, so all of one document's keys share a slot: the atomic
write (one Lua script) and the read (one MGET) touch a single slot and work on a cluster.
The id inside the tag is percent-encoded: the id rule (store/record.py) admits `:`, and
encoding keeps any id from ending the tag or faking a key suffix.

`{prefix}:versions` is the counter `new_versions` takes version numbers from (INCRBY).

`{prefix}:doc-ids` is a sorted set of every id (all scores 0, so in id order) that pages the
listing. It lives in its own slot, so it cannot join a document's atomic write: an id is
added before an unconditional write and after a conditional one that wrote, and removed
after a delete. An id whose document is gone, or whose metadata is unreadable, is skipped
when listing; a document whose id a racing delete removed is added back by its next
conditional write (the worker's).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Collection, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any
from urllib.parse import quote

from redis.exceptions import RedisError

from connections.redis_client import RedisClient
from encoder.model.modes import MODES
from store.base import (
    DocumentPage,
    check_expectation,
    encode_states,
    queued_before,
    readable_metas,
    wanted_modes,
    with_states,
)
from store.codec import Dtype
from store.errors import StoreMisconfigured, StoreUnavailable
from store.record import (
    DocumentRecord,
    Status,
    check_doc_id,
    meta_from_json,
    meta_to_json,
    now,
)

log = logging.getLogger(__name__)

# KEYS: meta, then one state key per mode in MODES order.
# ARGV: check flag ("1" or "0"), expected version, expected status ("" any), meta JSON, then
# one value per mode ("" deletes that mode's state: an encoded state is never empty).
# Metadata that does not decode (a corrupt record) never matches an expectation.
_PUT_SCRIPT = """
if ARGV[1] == '1' then
  local old = redis.call('GET', KEYS[1])
  if not old then
    return 0
  end
  local ok, meta = pcall(cjson.decode, old)
  if not ok or type(meta) ~= 'table' then
    return 0
  end
  local version = tonumber(meta['version']) or 0
  if version ~= tonumber(ARGV[2]) or (ARGV[3] ~= '' and meta['status'] ~= ARGV[3]) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[4])
for i = 2, #KEYS do
  local value = ARGV[i + 3]
  if value == '' then
    redis.call('DEL', KEYS[i])
  else
    redis.call('SET', KEYS[i], value)
  end
end
return 1
"""


class RedisDocumentStore:
    def __init__(self, client: RedisClient, *, key_prefix: str = "cheapqa", dtype: Dtype):
        if not key_prefix or any(c in key_prefix for c in "{}"):
            raise ValueError("key_prefix must be non-empty and free of '{' and '}'")
        self.client = client
        self.key_prefix = key_prefix
        self.dtype: Dtype = dtype
        self.ids_key = f"{key_prefix}:doc-ids".encode()
        self.versions_key = f"{key_prefix}:versions".encode()
        self._put_script = client.register_script(_PUT_SCRIPT)

    def doc_key(self, doc_id: str, suffix: str) -> bytes:
        check_doc_id(doc_id)
        return f"{self.key_prefix}:doc:{{{quote(doc_id, safe='')}}}:{suffix}".encode()

    def _read_keys(self, doc_id: str, modes: tuple[str, ...]) -> list[bytes]:
        return [self.doc_key(doc_id, "meta")] + [self.doc_key(doc_id, f"state:{m}") for m in modes]

    # --- reads ---

    async def get(self, doc_id: str, modes: Collection[str] | None = None) -> DocumentRecord | None:
        wanted = wanted_modes(modes)
        async with _redis_errors():
            values = await self.client.mget(self._read_keys(doc_id, wanted))
        return _record(values, wanted)

    async def get_many(
        self, doc_ids: Sequence[str], modes: Collection[str] | None = None
    ) -> list[DocumentRecord | None]:
        wanted = wanted_modes(modes)
        keys = [self._read_keys(doc_id, wanted) for doc_id in doc_ids]
        if not doc_ids:
            return []
        async with _redis_errors():
            # One MGET per document, all in one pipeline (a cluster splits it per node). A cluster
            # pipeline blocks .mget() because keys may span slots; a document's keys never do.
            pipe = self.client.pipeline(transaction=False)
            for doc_keys in keys:
                pipe.execute_command("MGET", *doc_keys)
            results = await pipe.execute()
        return [_record(values, wanted) for values in results]

    async def list_documents(self, limit: int, cursor: str | None = None) -> DocumentPage:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        found: list[tuple[str, Status]] = []
        after = cursor
        async with _redis_errors():
            while len(found) <= limit:
                want = limit + 1 - len(found)
                low = b"-" if after is None else b"(" + after.encode()
                raw = await self.client.zrangebylex(self.ids_key, low, b"+", start=0, num=want)
                ids = [i.decode() if isinstance(i, bytes) else i for i in raw]
                if not ids:
                    break
                metas = await self._metas(ids)
                records = readable_metas({i: m for i, m in zip(ids, metas, strict=True) if m})
                found += [(i, records[i].status) for i in ids if i in records]
                after = ids[-1]
                if len(ids) < want:
                    break
        page = found[:limit]
        return DocumentPage(page, page[-1][0] if len(found) > limit else None)

    async def _metas(self, doc_ids: Sequence[str]) -> list[bytes | None]:
        """The raw metadata of each document (None where there is none), one pipeline."""
        pipe = self.client.pipeline(transaction=False)
        for doc_id in doc_ids:
            pipe.get(self.doc_key(doc_id, "meta"))
        return list(await pipe.execute())

    # --- writes ---

    async def put(
        self,
        record: DocumentRecord,
        *,
        expect_version: int | None = None,
        expect_status: Status | None = None,
    ) -> bool:
        check_expectation(expect_version, expect_status)
        blobs = encode_states(record, self.dtype)
        meta = meta_to_json(record, {mode: len(b) for mode, b in blobs.items()}, now())
        keys = self._read_keys(record.id, MODES)
        args: list[Any] = [
            "0" if expect_version is None else "1",
            str(expect_version or 0),
            str(expect_status or ""),
            meta,
            *(blobs.get(mode, b"") for mode in MODES),
        ]
        async with _redis_errors():
            if expect_version is None:
                await self.client.zadd(self.ids_key, {record.id.encode(): 0})
            wrote = bool(await self._put_script(keys=keys, args=args))
            if wrote and expect_version is not None:
                await self.client.zadd(self.ids_key, {record.id.encode(): 0})
        return wrote

    async def new_versions(self, count: int) -> range:
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        async with _redis_errors():
            last = int(await self.client.incrby(self.versions_key, count))
        return range(last - count + 1, last + 1)

    async def delete(self, doc_id: str) -> bool:
        keys = self._read_keys(doc_id, MODES)
        async with _redis_errors():
            # States never exist without their metadata (puts are atomic): any key deleted
            # means the document existed.
            deleted = await self.client.delete(*keys)
            await self.client.zrem(self.ids_key, doc_id.encode())
        return deleted > 0

    async def queued(self, before: float, limit: int) -> list[DocumentRecord]:
        # SCAN over every document's metadata key (a cluster client scans every master):
        # O(documents), for a sweep every few minutes, never for a request.
        pattern = f"{self.key_prefix}:doc:*:meta".encode()
        found: list[DocumentRecord] = []
        async with _redis_errors():
            keys: list[bytes] = []
            async for key in self.client.scan_iter(match=pattern, count=1000):
                keys.append(key)
                if len(keys) >= 500:
                    found += await self._queued_among(keys, before)
                    keys = []
                if len(found) >= limit:
                    break
            if keys and len(found) < limit:
                found += await self._queued_among(keys, before)
        return found[:limit]

    async def _queued_among(self, keys: list[bytes], before: float) -> list[DocumentRecord]:
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.get(key)
        metas = await pipe.execute()
        named = {key.decode(): m for key, m in zip(keys, metas, strict=True) if m is not None}
        return queued_before(readable_metas(named).values(), before)

    # --- lifecycle ---

    async def ping(self) -> None:
        async with _redis_errors():
            await self.client.ping()

    async def check_setup(self) -> None:
        """Refuses a Redis whose maxmemory-policy may evict keys without a time to live (every
        key here has none): `allkeys-*` would silently drop states, records and the queue's
        entries once memory fills. `noeviction` (writes are refused, with a 503, instead) is
        required; `volatile-*` never touches keys without a TTL, so it is accepted."""
        try:
            reply: Any = await self.client.config_get("maxmemory-policy")
        except (RedisError, OSError) as exc:  # down now, or CONFIG disabled (managed Redis)
            log.warning(
                "could not read Redis's maxmemory-policy (%s: %s): make sure it is "
                "noeviction; an allkeys-* policy silently drops acknowledged documents",
                type(exc).__name__, exc,
            )  # fmt: skip
            return
        for policy in _policies(reply):
            if policy.startswith("allkeys"):
                raise StoreMisconfigured(
                    f"Redis maxmemory-policy is {policy}: it evicts documents, states and queue "
                    "entries once memory fills; set it to noeviction (CONFIG SET "
                    "maxmemory-policy noeviction, or in redis.conf)"
                )

    async def close(self) -> None:
        # Closing the connections of an unreachable server has nothing left to do.
        with suppress(RedisError, OSError):
            await self.client.aclose()


def _policies(reply: Any) -> list[str]:
    """Every maxmemory-policy in a CONFIG GET reply: one node's {name: value}, or a cluster
    client's {node: {name: value}}."""
    if not isinstance(reply, dict):
        return []
    found = []
    for key, value in reply.items():
        if isinstance(value, dict):
            found += _policies(value)
        elif _text(key) == "maxmemory-policy":
            found.append(_text(value))
    return found


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _record(values: list[Any], modes: tuple[str, ...]) -> DocumentRecord | None:
    meta, *states = values
    if meta is None:
        return None
    blobs = {mode: blob for mode, blob in zip(modes, states, strict=True) if blob is not None}
    return with_states(meta_from_json(meta), blobs)


@asynccontextmanager
async def _redis_errors() -> AsyncIterator[None]:
    try:
        yield
    except (RedisError, OSError) as exc:  # OSError covers TimeoutError and refused connections
        raise StoreUnavailable(f"redis: {type(exc).__name__}: {exc}") from exc
