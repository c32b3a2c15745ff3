"""The one way cheapqa connects to Redis: binary-safe, with socket timeouts, plain or Cluster.

The document store and the ingestion queue both take their clients from here, so a URL that
works for one works for the other.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

RedisClient = aioredis.Redis | RedisCluster
REDIS_SCHEMES = ("redis", "rediss", "unix")


def redis_client(url: str, timeout_s: float) -> RedisClient:
    """A binary-safe client with socket timeouts, retrying once (a dropped idle connection).
    `redis+cluster://…` or `redis://…?cluster=true` is a Redis Cluster."""
    cluster, plain_url = split_cluster(url)
    options: dict[str, Any] = {
        "decode_responses": False,
        "socket_timeout": timeout_s,
        "socket_connect_timeout": timeout_s,
        "retry": Retry(ExponentialBackoff(cap=0.1, base=0.01), retries=1),
    }
    if cluster:
        return RedisCluster.from_url(plain_url, **options)
    return aioredis.Redis.from_url(plain_url, **options)


def split_cluster(url: str) -> tuple[bool, str]:
    """(whether the URL names a Redis Cluster, the URL redis-py understands)."""
    parts = urlsplit(url)
    scheme, plus, flavour = parts.scheme.partition("+")
    if scheme not in REDIS_SCHEMES or (plus and flavour != "cluster"):
        raise ValueError(
            f"store URL must be empty, 'embedded' or redis[s]://…, got {redacted_url(url)!r}"
        )
    query = parse_qsl(parts.query, keep_blank_values=True)
    flag = [value for key, value in query if key == "cluster"]
    cluster = bool(plus) or (bool(flag) and flag[-1].lower() in ("1", "true", "yes"))
    rest = urlencode([(key, value) for key, value in query if key != "cluster"])
    return cluster, urlunsplit((scheme, parts.netloc, parts.path, rest, parts.fragment))


def redacted_url(url: str) -> str:
    """The URL with its password (or a lone credential) masked, for printing and logs."""
    parts = urlsplit(url)
    credentials, at, host = parts.netloc.rpartition("@")
    if not at:
        return url
    user, colon, _ = credentials.partition(":")
    masked = f"{user}:**********" if colon else "**********"
    return urlunsplit(parts._replace(netloc=f"{masked}@{host}"))
