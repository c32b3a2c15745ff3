"""The store and the ingestion queue that the settings name, for the app and the worker.

Which backend a URL means is the store's rule (`store.factory`); this only passes settings on.
"""

from __future__ import annotations

from service.ingest.queue import IngestQueue
from service.settings import Settings
from store.base import DocumentStore
from store.factory import is_embedded, open_store

EMBEDDED_QUEUE_FILE = "ingest.sqlite3"


def open_settings_store(settings: Settings) -> DocumentStore:
    """The document store of settings.store_url (Redis connects lazily: no I/O here)."""
    return open_store(
        settings.store_url,
        data_dir=settings.data_dir,
        key_prefix=settings.key_prefix,
        dtype=settings.state_dtype,
        timeout_s=settings.redis_timeout_s,
    )


def open_queue(settings: Settings) -> IngestQueue:
    """Redis Stream beside a Redis store; a SQLite queue in data_dir beside the embedded one."""
    if is_embedded(settings.store_url):
        from service.ingest.embedded import EmbeddedQueue

        return EmbeddedQueue(
            settings.data_dir / EMBEDDED_QUEUE_FILE, claim_idle_ms=settings.ingest_claim_idle_ms
        )
    from service.ingest.redis_stream import RedisStreamQueue

    return RedisStreamQueue(
        settings.store_url,
        key_prefix=settings.key_prefix,
        timeout_s=settings.redis_timeout_s,
        claim_idle_ms=settings.ingest_claim_idle_ms,
    )
