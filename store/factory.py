"""Opening the store a URL names: the embedded SQLite file, Redis, or a Redis Cluster."""

from __future__ import annotations

from pathlib import Path

from connections.redis_client import redis_client
from store.base import DocumentStore
from store.codec import Dtype
from store.embedded import SqliteDocumentStore
from store.redis_store import RedisDocumentStore

EMBEDDED_FILE = "store.sqlite3"


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
) -> DocumentStore:
    """`""` or `"embedded"`: SQLite in data_dir; `redis://…`: Redis; `redis+cluster://…` or
    `redis://…?cluster=true`: Redis Cluster. Redis connects lazily, on the first call."""
    if is_embedded(url):
        return SqliteDocumentStore(data_dir / EMBEDDED_FILE, dtype=dtype, timeout_s=timeout_s)
    return RedisDocumentStore(redis_client(url, timeout_s), key_prefix=key_prefix, dtype=dtype)
