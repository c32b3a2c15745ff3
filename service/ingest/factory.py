"""Opening the store and the ingestion queue that the settings name."""

from __future__ import annotations

from service.ingest.queue import IngestQueue
from service.settings import Settings
from store.base import DocumentStore
from store.factory import open_store

EMBEDDED_QUEUE_FILE = "ingest.sqlite3"


def uses_embedded_store(settings: Settings) -> bool:
    return settings.store_url in ("", "embedded")


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
    if uses_embedded_store(settings):
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
