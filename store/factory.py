"""Opening the store a URL names: the embedded SQLite file, Redis, or a Redis Cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from store.base import DocumentStore
from store.codec import Dtype
from store.embedded import SqliteDocumentStore
from store.redis_store import RedisClient, RedisDocumentStore

EMBEDDED_FILE = "store.sqlite3"
_REDIS_SCHEMES = ("redis", "rediss", "unix")


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
    if url in ("", "embedded"):
        return SqliteDocumentStore(data_dir / EMBEDDED_FILE, dtype=dtype, timeout_s=timeout_s)
    return RedisDocumentStore(redis_client(url, timeout_s), key_prefix=key_prefix, dtype=dtype)


def redis_client(url: str, timeout_s: float) -> RedisClient:
    """A binary-safe client with socket timeouts, retrying once (a dropped idle connection)."""
    cluster, plain_url = _split_cluster(url)
    options: dict[str, Any] = {
        "decode_responses": False,
        "socket_timeout": timeout_s,
        "socket_connect_timeout": timeout_s,
        "retry": Retry(ExponentialBackoff(cap=0.1, base=0.01), retries=1),
    }
    if cluster:
        return RedisCluster.from_url(plain_url, **options)
    return aioredis.Redis.from_url(plain_url, **options)


def _split_cluster(url: str) -> tuple[bool, str]:
    parts = urlsplit(url)
    scheme, plus, flavour = parts.scheme.partition("+")
    if scheme not in _REDIS_SCHEMES or (plus and flavour != "cluster"):
        raise ValueError(f"store URL must be empty, 'embedded' or redis[s]://…, got {url!r}")
    query = parse_qsl(parts.query, keep_blank_values=True)
    flag = [value for key, value in query if key == "cluster"]
    cluster = bool(plus) or (bool(flag) and flag[-1].lower() in ("1", "true", "yes"))
    rest = urlencode([(key, value) for key, value in query if key != "cluster"])
    return cluster, urlunsplit((scheme, parts.netloc, parts.path, rest, parts.fragment))
