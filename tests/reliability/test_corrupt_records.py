"""A corrupt record blocks nothing (issue 26, MEDIUM 10): listing skips it (and logs it) on
every page, the embedded sweeper goes on past it, and its own reads stay a clean 500."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from typing import Any

import httpx
import pytest
import redis

from service.ingest.worker import LOST_ENTRY_ERROR, IngestWorker
from store.record import DocumentRecord, Status
from tests.service.conftest import wait_status
from tests.service.texts import HARBOUR, OBSERVATORY, ORCHARD

IDS = {"a": HARBOUR, "b": ORCHARD, "c": OBSERVATORY}


def corrupt(client: httpx.AsyncClient, doc_id: str) -> None:
    """Writes metadata that is not JSON over the document's, behind the service's back."""
    settings = client.app.state.runtime.settings  # type: ignore[attr-defined]
    if settings.store_url:
        admin = redis.Redis.from_url(settings.store_url)
        admin.set(f"{settings.key_prefix}:doc:{{{doc_id}}}:meta", b"not json {")
        admin.close()
        return
    with sqlite3.connect(settings.data_dir / "store.sqlite3") as db:
        db.execute("UPDATE documents SET meta = 'not json {' WHERE id = ?", (doc_id,))


async def listed(client: httpx.AsyncClient, limit: int) -> list[str]:
    ids: list[str] = []
    cursor: str | None = None
    for _ in range(10):
        params: dict[str, Any] = {"limit": limit}
        if cursor is not None:
            params["cursor"] = cursor
        response = await client.get("/v1/documents", params=params)
        assert response.status_code == 200, response.text
        body = response.json()
        ids += [d["id"] for d in body["documents"]]
        cursor = body["next_cursor"]
        if cursor is None:
            return ids
    raise AssertionError("listing never ended")


async def test_a_corrupt_record_is_skipped_and_reported(
    app_client: Any, store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with app_client(modes=["linear"], store_url=store_url, serve_worker=True) as client:
        for doc_id, text in IDS.items():
            assert (
                await client.post("/v1/documents", json={"id": doc_id, "text": text})
            ).is_success
        for doc_id in IDS:
            await wait_status(client, doc_id, "indexed")
        corrupt(client, "b")
        with caplog.at_level(logging.WARNING):
            assert await listed(client, limit=1) == ["a", "c"]
            assert await listed(client, limit=10) == ["a", "c"]
        assert any("'b'" in r.getMessage() and "corrupt" in r.getMessage() for r in caplog.records)
        own = await client.get("/v1/documents/b")
        assert own.status_code == 500 and own.json()["error"]["code"] == "corrupt_record"

        # The sweeper goes past it and still fails a record whose queue entry was lost.
        runtime = client.app.state.runtime  # type: ignore[attr-defined]
        settings = runtime.settings.model_copy(update={"ingest_sweep_after_ms": 1})
        await runtime.store.put(DocumentRecord(id="lost", text_hash="h", status=Status.QUEUED))
        await asyncio.sleep(0.05)  # older than the sweep's 1 ms
        worker = IngestWorker(
            settings, runtime.store, runtime.queue, runtime.models.by_mode, consumer="s"
        )
        assert await worker.sweep() == 1
        lost = (await client.get("/v1/documents/lost")).json()
        assert lost["status"] == "failed" and lost["error"] == LOST_ENTRY_ERROR
