"""The ingestion worker: grouping, idempotency, failures and dead letters, stopping."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.ingest import worker as worker_module
from service.ingest.worker import IngestWorker, length_groups
from service.metrics import Metrics
from service.readers import load_models
from service.settings import Settings
from store.base import DocumentStore
from store.factory import open_queue, open_store
from store.queue.base import IngestJob
from store.record import DocumentRecord, Status, text_hash
from tests.service.conftest import SettingsFactory
from tests.service.texts import DOCUMENTS, HARBOUR, ORCHARD


def test_length_groups_keep_similar_lengths_together() -> None:
    lengths = [100, 5, 7, 400, 190, 6, 1000]
    groups = length_groups(lengths, max_group=3)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for group in groups:
        sizes = [lengths[i] for i in group]
        assert len(group) <= 3 and max(sizes) <= 2 * min(sizes)
    assert groups[0] == [1, 5, 2]  # shortest first


@given(
    st.lists(st.integers(min_value=1, max_value=10_000), max_size=40),
    st.integers(min_value=1, max_value=16),
)
def test_length_groups_cover_every_document_once(lengths: list[int], max_group: int) -> None:
    groups = length_groups(lengths, max_group)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for group in groups:
        sizes = [lengths[i] for i in group]
        assert 1 <= len(group) <= max_group and max(sizes) <= 2 * min(sizes)


@dataclass
class Rig:
    settings: Settings
    store: DocumentStore
    queue: Any
    worker: IngestWorker
    metrics: Metrics

    async def post(self, doc_id: str, text: str) -> IngestJob:
        h = text_hash(text)
        await self.store.put(DocumentRecord(id=doc_id, text_hash=h, status=Status.QUEUED))
        job = IngestJob(doc_id, text, h)
        await self.queue.enqueue(job)
        return job

    async def drain(self, rounds: int = 1) -> None:
        for _ in range(rounds):
            deliveries = await self.queue.read(
                self.worker.consumer, self.settings.ingest_max_batch, 50
            )
            if deliveries:
                await self.worker.process(deliveries)


@pytest.fixture(params=["embedded", "redis"])
async def rig(request: pytest.FixtureRequest, make_settings: SettingsFactory) -> AsyncIterator[Rig]:
    store_url = "" if request.param == "embedded" else request.getfixturevalue("redis_url")
    settings = make_settings(
        modes=["linear", "none"],
        ingest_max_deliveries=2,
        store_url=store_url,
        key_prefix=f"w-{uuid.uuid4().hex[:8]}",
    )
    store = open_store(
        settings.store_url, data_dir=settings.data_dir, key_prefix=settings.key_prefix,
        dtype="float32", timeout_s=2.0,
    )  # fmt: skip
    queue = open_queue(settings)
    metrics = Metrics()
    worker = IngestWorker(settings, store, queue, load_models(settings), metrics, "w1")
    yield Rig(settings, store, queue, worker, metrics)
    await queue.close()
    await store.close()


async def test_indexes_a_batch_and_acks_it(rig: Rig) -> None:
    for doc_id, text in DOCUMENTS.items():
        await rig.post(doc_id, text)
    await rig.drain()
    for doc_id in DOCUMENTS:
        record = await rig.store.get(doc_id)
        assert record is not None and record.status == Status.INDEXED
        assert set(record.states) == {"linear", "none"} and record.entities
    assert await rig.queue.depth() == 0
    assert rig.metrics.documents_indexed._value.get() == 3


async def test_stale_and_repeated_entries_write_nothing(rig: Rig) -> None:
    await rig.post("d", HARBOUR)
    await rig.drain()
    indexed = await rig.store.get("d", modes=())
    assert indexed is not None
    # Redelivery of the same job after its write: acked, not written again.
    await rig.queue.enqueue(IngestJob("d", HARBOUR, text_hash(HARBOUR)))
    # A job for text the document no longer has, and one for a deleted document.
    await rig.queue.enqueue(IngestJob("d", ORCHARD, text_hash(ORCHARD)))
    await rig.queue.enqueue(IngestJob("gone", ORCHARD, text_hash(ORCHARD)))
    await rig.drain()
    again = await rig.store.get("d", modes=())
    assert again is not None and again.updated_at == indexed.updated_at
    assert again.text_hash == text_hash(HARBOUR)
    assert await rig.store.get("gone") is None
    assert await rig.queue.depth() == 0


async def test_a_failing_document_is_retried_then_dead_lettered(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = worker_module.encode_group
    calls: list[int] = []

    def explode_on_orchard(models: Any, token_lists: Any) -> Any:
        calls.append(len(token_lists))
        if any("honey" in tokens for tokens in token_lists):
            raise RuntimeError("out of memory (simulated)")
        return real(models, token_lists)

    monkeypatch.setattr(worker_module, "encode_group", explode_on_orchard)
    await rig.post("good", HARBOUR)
    await rig.post("bad", ORCHARD)
    await rig.drain()
    # The good document is not held back by the bad one.
    good = await rig.store.get("good", modes=())
    assert good is not None and good.status == Status.INDEXED
    bad = await rig.store.get("bad", modes=())
    assert bad is not None and bad.status == Status.QUEUED  # one failure: will be retried
    assert await rig.queue.depth() == 1

    await asyncio.sleep(rig.settings.ingest_claim_idle_ms / 1000 + 0.05)
    await rig.drain()  # second delivery = ingest_max_deliveries: gives up
    bad = await rig.store.get("bad", modes=())
    assert bad is not None and bad.status == Status.FAILED
    assert bad.error is not None and "out of memory" in bad.error
    assert await rig.queue.depth() == 0
    [dead] = await rig.queue.dead_letters()
    assert dead["doc_id"] == "bad" and dead["deliveries"] == 2
    assert rig.metrics.documents_failed._value.get() == 1


async def test_an_entry_delivered_too_often_is_dead_lettered_unread(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A consumer that died on it twice (e.g. killed by the OOM killer) left it at 2 deliveries.
    await rig.post("crashy", ORCHARD)
    for _ in range(2):
        assert len(await rig.queue.read("doomed", 10, 50)) == 1
        await asyncio.sleep(rig.settings.ingest_claim_idle_ms / 1000 + 0.05)
    monkeypatch.setattr(worker_module, "encode_group", None)  # must not be called
    await rig.drain()
    record = await rig.store.get("crashy", modes=())
    assert record is not None and record.status == Status.FAILED
    assert record.error is not None and "2 failed deliveries" in record.error


async def test_stop_finishes_the_batch_in_hand(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    stop = asyncio.Event()
    real = worker_module.encode_group
    loop = asyncio.get_running_loop()

    def stop_midway(models: Any, token_lists: Any) -> Any:
        loop.call_soon_threadsafe(stop.set)  # SIGTERM arrives while the batch is encoding
        return real(models, token_lists)

    monkeypatch.setattr(worker_module, "encode_group", stop_midway)
    await rig.post("a", HARBOUR)
    await asyncio.wait_for(rig.worker.run(stop), timeout=10)
    record = await rig.store.get("a", modes=())
    assert record is not None and record.status == Status.INDEXED
    assert await rig.queue.depth() == 0


async def test_the_loop_survives_an_unexpected_error(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures: list[str] = []

    class FailsOnce:
        """The worker's store, whose first get_many raises something nobody expects."""

        def __getattr__(self, name: str) -> Any:
            return getattr(rig.store, name)

        async def get_many(self, doc_ids: Any, modes: Any = None) -> Any:
            if not failures:
                failures.append("raised")
                raise RuntimeError("a bug")
            return await rig.store.get_many(doc_ids, modes)

    monkeypatch.setattr(rig.worker, "store", FailsOnce())
    await rig.post("a", HARBOUR)
    stop = asyncio.Event()
    task = asyncio.create_task(rig.worker.run(stop))
    try:
        for _ in range(200):
            record = await rig.store.get("a", modes=())
            if record is not None and record.status == Status.INDEXED:
                break
            await asyncio.sleep(0.05)
        assert record is not None and record.status == Status.INDEXED
        assert failures == ["raised"]
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
