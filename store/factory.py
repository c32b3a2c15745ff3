"""Opening what a store URL names: the document store and, beside it, the ingestion queue.

`""` or `"embedded"`: SQLite files in data_dir (no server); `redis://…`: Redis;
`redis+cluster://…` or `redis://…?cluster=true`: Redis Cluster. Redis connects lazily, on
the first call, so a Redis that is down does not stop anything from starting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from connections.redis_client import redis_client
from store.base import DocumentStore
from store.bounded import BoundedStore
from store.codec import Dtype
from store.embedded import SqliteDocumentStore
from store.queue.base import IngestQueue
from store.redis_store import RedisDocumentStore

EMBEDDED_FILE = "store.sqlite3"
EMBEDDED_QUEUE_FILE = "ingest.sqlite3"


class BackendSettings(Protocol):
    """What the openers read from the service's settings (`service.settings.Settings`)."""

    @property
    def store_url(self) -> str: ...
    @property
    def data_dir(self) -> Path: ...
    @property
    def key_prefix(self) -> str: ...
    @property
    def state_dtype(self) -> Dtype: ...
    @property
    def redis_timeout_s(self) -> float: ...
    @property
    def ingest_claim_idle_ms(self) -> int: ...


def is_embedded(url: str) -> bool:
    """Whether a store URL names the embedded store (no server) rather than Redis."""
    return url in ("", "embedded")


def open_store(
    url: str,
    *,
    data_dir: Path,
    key_prefix: str = "cheapqa",
    dtype: Dtype = "float16",
    timeout_s: float = 2.0,
    deadline_s: float | None = None,
) -> DocumentStore:
    """The document store `url` names. With `deadline_s`, every call on a Redis store answers
    within it or raises StoreUnavailable (store/bounded.py); the embedded one needs none."""
    if is_embedded(url):
        return SqliteDocumentStore(data_dir / EMBEDDED_FILE, dtype=dtype, timeout_s=timeout_s)
    store = RedisDocumentStore(redis_client(url, timeout_s), key_prefix=key_prefix, dtype=dtype)
    return store if deadline_s is None else BoundedStore(store, deadline_s)


def open_settings_store(settings: BackendSettings, *, bounded: bool = False) -> DocumentStore:
    """The document store of the settings; `bounded`: each call within `redis_timeout_s`
    (what the API promises; the worker, writing large states, may rightly take longer)."""
    return open_store(
        settings.store_url,
        data_dir=settings.data_dir,
        key_prefix=settings.key_prefix,
        dtype=settings.state_dtype,
        timeout_s=settings.redis_timeout_s,
        deadline_s=settings.redis_timeout_s if bounded else None,
    )


def open_queue(settings: BackendSettings) -> IngestQueue:
    """A Redis Stream beside a Redis store; a SQLite queue in data_dir beside the embedded one."""
    if is_embedded(settings.store_url):
        from store.queue.embedded import EmbeddedQueue

        return EmbeddedQueue(
            settings.data_dir / EMBEDDED_QUEUE_FILE, claim_idle_ms=settings.ingest_claim_idle_ms
        )
    from store.queue.redis_stream import RedisStreamQueue

    return RedisStreamQueue(
        settings.store_url,
        key_prefix=settings.key_prefix,
        timeout_s=settings.redis_timeout_s,
        claim_idle_ms=settings.ingest_claim_idle_ms,
    )
