import time
from pathlib import Path

import pytest
import redis
from redis.crc import key_slot

from bench.spawn import free_port
from connections.redis_client import split_cluster
from encoder.model.modes import MODES
from store.errors import StateCodecError, StoreUnavailable
from store.factory import open_store
from store.redis_store import RedisDocumentStore
from tests.store.test_contract import make_record


async def test_a_documents_keys_share_one_cluster_slot(redis_url: str, tmp_path: Path) -> None:
    store = open_store(redis_url, data_dir=tmp_path, key_prefix="px")
    assert isinstance(store, RedisDocumentStore)
    try:
        doc_id = "odd.id:with:colons"
        await store.put(make_record(doc_id))
        raw = redis.Redis.from_url(redis_url)
        every: list[bytes] = sorted(raw.keys("*"))  # type: ignore[arg-type]
        # Beside the document's own keys, only the listing's index of ids (its own slot).
        assert store.ids_key == b"px:doc-ids" and store.ids_key in every
        assert raw.zrange(store.ids_key, 0, -1) == [doc_id.encode()]
        keys = [key for key in every if key != store.ids_key]
        assert keys == sorted(
            [store.doc_key(doc_id, "meta")] + [store.doc_key(doc_id, f"state:{m}") for m in MODES]
        )
        assert all(key.startswith(b"px:doc:{odd.id%3Awith%3Acolons}:") for key in keys)
        assert len({key_slot(key) for key in keys}) == 1
    finally:
        await store.close()


async def test_corrupted_value_raises_instead_of_returning_numbers(
    redis_url: str, tmp_path: Path
) -> None:
    store = open_store(redis_url, data_dir=tmp_path)
    assert isinstance(store, RedisDocumentStore)
    try:
        await store.put(make_record("doc-1"))
        key = store.doc_key("doc-1", "state:softmax")
        raw = redis.Redis.from_url(redis_url)
        raw.set(key, raw.get(key)[:-3])  # type: ignore[index]
        with pytest.raises(StateCodecError, match="truncated"):
            await store.get("doc-1")
    finally:
        await store.close()


async def test_unreachable_redis_is_unavailable_and_fast(tmp_path: Path) -> None:
    store = open_store(f"redis://127.0.0.1:{free_port()}/0", data_dir=tmp_path, timeout_s=0.5)
    started = time.monotonic()
    try:
        with pytest.raises(StoreUnavailable):
            await store.ping()
        with pytest.raises(StoreUnavailable):
            await store.get_many(["a", "b"])
        with pytest.raises(StoreUnavailable):
            await store.put(make_record("a"))
    finally:
        await store.close()
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    ("url", "cluster", "plain"),
    [
        ("redis://h:6379/2", False, "redis://h:6379/2"),
        ("redis+cluster://h:7000", True, "redis://h:7000"),
        (
            "rediss+cluster://u:p@h:7000?ssl_cert_reqs=none",
            True,
            "rediss://u:p@h:7000?ssl_cert_reqs=none",
        ),
        (
            "redis://h:7000?cluster=true&health_check_interval=5",
            True,
            "redis://h:7000?health_check_interval=5",
        ),
        ("redis://h:7000?cluster=false", False, "redis://h:7000"),
    ],
)
def test_cluster_urls(url: str, cluster: bool, plain: str) -> None:
    assert split_cluster(url) == (cluster, plain)


def test_bad_urls_and_prefixes_are_refused(tmp_path: Path) -> None:
    for url in ("http://h", "redis+sentinel://h", "sqlite:///x"):
        with pytest.raises(ValueError):
            open_store(url, data_dir=tmp_path)
    with pytest.raises(ValueError, match="key_prefix"):
        open_store("redis://127.0.0.1:1/0", data_dir=tmp_path, key_prefix="a{b}")
