"""The ingestion worker loop, shared by `cheapqa worker` and the embedded worker of `serve`.

Each turn: read up to `ingest_max_batch` entries; drop the stale ones (the document was
deleted or re-posted with other text since) and those already done (a redelivery after the
write but before the ack); anonymise and tokenize each document once; sort by length into
groups of similar length; encode each group with every loaded mode in a thread; write each
document with `expect_text_hash` so a late or repeated write never clobbers newer text; ack.

A document that fails stays un-acked and is delivered again after `ingest_claim_idle_ms`;
on its `ingest_max_deliveries`-th failure (or when it arrives more often than that, from a
consumer that kept dying on it) it goes to the dead letters and the document becomes
`failed` with the error. Text that cannot be indexed at all fails at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from encoder.anonymise import AnonymisedText
from encoder.state import DocumentState
from service.backends import open_queue, open_settings_store
from service.indexing import is_current
from service.ingest.queue import Delivery, IngestQueue, QueueUnavailable
from service.metrics import Metrics
from service.readers import LoadedModel, load_models
from service.settings import Settings
from service.texts import anonymise, candidates_not_found, entity_budget
from store.base import DocumentStore
from store.errors import StoreError
from store.record import DocumentRecord, Status

log = logging.getLogger(__name__)

# Documents in one encoder call differ in length by at most this factor, so padding wastes
# at most about half of a group's work.
GROUP_LENGTH_RATIO = 2.0
RETRY_PAUSE_S = 0.5


def default_consumer_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


@dataclass
class _Doc:
    delivery: Delivery
    anon: AnonymisedText
    candidates_not_found: list[str]
    created_at: float


def length_groups(lengths: Sequence[int], max_group: int) -> list[list[int]]:
    """Indices sorted by length, cut into runs whose longest is at most twice the shortest."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    groups: list[list[int]] = []
    for i in order:
        if (
            groups
            and len(groups[-1]) < max_group
            and lengths[i] <= GROUP_LENGTH_RATIO * max(1, lengths[groups[-1][0]])
        ):
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def encode_group(
    models: Mapping[str, LoadedModel], token_lists: Sequence[list[str]]
) -> dict[str, list[DocumentState]]:
    """Every mode's states for a group of documents (blocking: run it in a thread)."""
    return {
        mode: model.reader.encode_documents([model.token_ids(t) for t in token_lists])
        for mode, model in models.items()
    }


class IngestWorker:
    def __init__(
        self,
        settings: Settings,
        store: DocumentStore,
        queue: IngestQueue,
        models: Mapping[str, LoadedModel],
        metrics: Metrics | None = None,
        consumer: str | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.queue = queue
        self.models = dict(models)
        self.metrics = metrics
        self.consumer = consumer or settings.consumer_name or default_consumer_name()

    async def run(self, stop: asyncio.Event) -> None:
        """Reads and processes batches until `stop` is set; the batch in hand is finished."""
        log.info("worker %s started (modes %s)", self.consumer, ", ".join(self.models))
        while not stop.is_set():
            try:
                deliveries = await self.queue.read(
                    self.consumer, self.settings.ingest_max_batch, self.settings.ingest_block_ms
                )
                if deliveries:
                    await self.process(deliveries)
            except (QueueUnavailable, StoreError) as exc:
                # The queue or the store is down: wait, then try again; nothing is lost,
                # un-acked entries are delivered again.
                log.warning("worker %s: %s", self.consumer, exc)
                await self._pause(stop)
            except Exception:
                # Whatever went wrong, the loop must live on (inside `serve` nobody would
                # restart it); the entries in hand come back and count as failed deliveries.
                log.exception("worker %s: unexpected error", self.consumer)
                await self._pause(stop)
        log.info("worker %s stopped", self.consumer)

    @staticmethod
    async def _pause(stop: asyncio.Event) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), RETRY_PAUSE_S)

    async def process(self, deliveries: Sequence[Delivery]) -> None:
        limit = self.settings.ingest_max_deliveries
        done: list[str] = []
        live: list[Delivery] = []
        for d in deliveries:
            if d.deliveries > limit:
                await self._give_up(d, f"gave up after {d.deliveries - 1} failed deliveries")
            else:
                live.append(d)
        metas = await self.store.get_many([d.job.doc_id for d in live], modes=())
        todo: list[tuple[Delivery, float]] = []
        for d, meta in zip(live, metas, strict=True):
            if meta is None or meta.text_hash != d.job.text_hash:
                done.append(d.entry_id)  # deleted or re-posted since: this entry is stale
            elif meta.status == Status.INDEXED and is_current(meta, self.models):
                done.append(d.entry_id)  # a redelivery after the write
            else:
                todo.append((d, meta.created_at))
        # Tokenizing a long text takes a while: off the event loop, which may be serving.
        prepared = await asyncio.to_thread(self._prepare, todo)
        docs: list[_Doc] = []
        for item in prepared:
            if isinstance(item, _Doc):
                docs.append(item)
            else:
                await self._give_up(item[0], f"cannot index: {item[1]}")
        if docs:
            if self.metrics is not None:
                self.metrics.ingest_batch_size.observe(len(docs))
            for group in length_groups([len(doc.anon.tokens) for doc in docs], len(docs)):
                done += await self._index_group([docs[i] for i in group])
        await self.queue.ack(done)

    def _prepare(self, todo: list[tuple[Delivery, float]]) -> list[_Doc | tuple[Delivery, str]]:
        out: list[_Doc | tuple[Delivery, str]] = []
        for d, created_at in todo:
            try:
                anon = anonymise(self.models, d.job.text, d.job.candidates)
            except ValueError as exc:
                out.append((d, str(exc)))
                continue
            out.append(_Doc(d, anon, candidates_not_found(d.job.candidates, anon), created_at))
        return out

    async def _index_group(self, group: list[_Doc]) -> list[str]:
        """Encodes and writes a group; returns the entry ids to ack."""
        try:
            states = await self._encode([doc.anon.tokens for doc in group])
        except Exception as exc:
            if len(group) == 1:
                await self._failed(group[0].delivery, f"{type(exc).__name__}: {exc}")
                return []
            # Find the document at fault: the others should not pay for it.
            done: list[str] = []
            for doc in group:
                done += await self._index_group([doc])
            return done
        done = []
        for i, doc in enumerate(group):
            job = doc.delivery.job
            record = DocumentRecord(
                id=job.doc_id,
                text_hash=job.text_hash,
                status=Status.INDEXED,
                tokens=len(doc.anon.tokens),
                entities=doc.anon.entities,
                mentions=doc.anon.mentions,
                unplaced=doc.anon.unplaced,
                candidates_not_found=doc.candidates_not_found,
                entity_slots=entity_budget(self.models),
                model_ids={mode: m.model_id for mode, m in self.models.items()},
                created_at=doc.created_at,
                states={mode: states[mode][i] for mode in self.models},
            )
            written = await self.store.put(record, expect_text_hash=job.text_hash)
            if written and self.metrics is not None:
                self.metrics.documents_indexed.inc()
            done.append(doc.delivery.entry_id)
        return done

    async def _encode(self, token_lists: list[list[str]]) -> dict[str, list[DocumentState]]:
        start = time.perf_counter()
        states = await asyncio.to_thread(encode_group, self.models, token_lists)
        if self.metrics is not None:
            # One call encodes every mode; the time is shared out evenly among them.
            share = (time.perf_counter() - start) / len(self.models)
            for mode in self.models:
                self.metrics.encode_seconds.labels(mode=mode).observe(share)
        return states

    async def _failed(self, delivery: Delivery, error: str) -> None:
        log.warning("document %s failed (delivery %d): %s", delivery.job.doc_id,
                    delivery.deliveries, error)  # fmt: skip
        if delivery.deliveries >= self.settings.ingest_max_deliveries:
            await self._give_up(delivery, error)
        # Otherwise it stays un-acked and comes back after ingest_claim_idle_ms.

    async def _give_up(self, delivery: Delivery, error: str) -> None:
        job = delivery.job
        meta = await self.store.get(job.doc_id, modes=())
        if meta is not None and meta.text_hash == job.text_hash:
            failed = DocumentRecord(
                id=job.doc_id,
                text_hash=job.text_hash,
                status=Status.FAILED,
                error=error,
                created_at=meta.created_at,
            )
            await self.store.put(failed, expect_text_hash=job.text_hash)
        await self.queue.dead_letter(delivery, error)
        if self.metrics is not None:
            self.metrics.documents_failed.inc()
        log.error("document %s dead-lettered: %s", job.doc_id, error)


async def run_worker(settings: Settings, metrics_port: int | None = None) -> None:
    """A worker process (`cheapqa worker`): indexes queued documents until SIGTERM or SIGINT;
    the batch in hand is finished."""
    from prometheus_client import start_http_server

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    models = await asyncio.to_thread(load_models, settings)
    store = open_settings_store(settings)
    queue = open_queue(settings)
    metrics = Metrics()
    if metrics_port is not None:
        # The worker has no API: its counters (indexed, failed, batch sizes) get their own port.
        start_http_server(metrics_port, addr=settings.host, registry=metrics.registry)
    try:
        await IngestWorker(settings, store, queue, models, metrics).run(stop)
    finally:
        await queue.close()
        await store.close()
