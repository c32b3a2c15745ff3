"""The ingestion worker loop, shared by `cheapqa worker` and the embedded worker of `serve`.

Each turn: read up to `ingest_max_batch` entries; drop the stale ones (the document was
deleted, re-posted or appended to since: the record's version is no longer the job's) and
those already done (a redelivery after the write but before the ack); anonymise and tokenize
each document once; sort by length into groups of similar length and at most
`ingest_max_batch_tokens` padded tokens; encode each group with every loaded mode in a
thread; write each document over the record version it was enqueued for (`expect_version`),
so a late or repeated write never clobbers a newer one, even of the same text; ack.

A document that fails stays un-acked and is delivered again after `ingest_claim_idle_ms`;
on its `ingest_max_deliveries`-th failure (or when it arrives more often than that, from a
consumer that kept dying on it) it goes to the dead letters and the document becomes
`failed` with the error. Text that cannot be indexed at all fails at once. A store or queue
that fails (down, or Redis out of memory) is not the document's fault: the worker keeps the
batch in hand and tries it again until the store answers, spending no delivery. While a
batch is in hand its lease is renewed every third of `ingest_claim_idle_ms` (a heartbeat),
so a long batch is not handed to another worker while it still runs.

A job whose `replaces` version the record still holds is a re-index enqueued before its
record was marked queued: it is indexed, written over that version. Every
`ingest_sweep_after_ms / 2` the worker sweeps records `queued` for longer than
`ingest_sweep_after_ms` whose queue entry is gone (an enqueue that failed, and no retry
came): they become `failed`, "post it again".
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

from encoder.model.state import DocumentState
from encoder.text.anonymise import AnonymisedText
from encoder.text.tokens import plain_text
from service.indexing import is_current
from service.metrics import Metrics
from service.readers import LoadedModel, anonymise, entity_slots, load_models
from service.settings import Settings
from service.support import NOT_MEANT, where_meant, where_named
from store.base import DocumentStore, readable_records
from store.errors import StoreError
from store.factory import open_queue, open_settings_store
from store.queue.base import Delivery, IngestJob, IngestQueue, QueueUnavailable
from store.record import DocumentRecord, Status, now

log = logging.getLogger(__name__)

# Documents in one encoder call differ in length by at most this factor, so padding wastes
# at most about half of a group's work.
GROUP_LENGTH_RATIO = 2.0
RETRY_PAUSE_S = 0.5
LOST_ENTRY_ERROR = "its queue entry was lost (the enqueue failed or timed out); post it again"
SWEEP_LIMIT = 1000  # records looked at per sweep


def default_consumer_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


@dataclass
class _Doc:
    delivery: Delivery
    anon: AnonymisedText
    candidates_not_found: list[str]
    created_at: float
    expect_version: int  # the version the record holds: the write goes over it only


def candidates_not_found(candidates: Sequence[str] | None, anon: AnonymisedText) -> list[str]:
    """Names the client gave that never occur in the text (reported, not silently dropped)."""
    placed = {*anon.entities, *anon.unplaced}
    given = dict.fromkeys(plain_text(c).strip() for c in candidates or () if c.strip())
    return [name for name in given if name not in placed]


def length_groups(
    lengths: Sequence[int], max_group: int, max_tokens: int | None = None
) -> list[list[int]]:
    """Indices sorted by length, cut into runs whose longest is at most twice the shortest
    and, with `max_tokens`, whose padded size (documents x the longest) stays within it: the
    encoder's memory follows that size. A document longer than that is a group alone."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    groups: list[list[int]] = []
    for i in order:
        if (
            groups
            and len(groups[-1]) < max_group
            and lengths[i] <= GROUP_LENGTH_RATIO * max(1, lengths[groups[-1][0]])
            and (max_tokens is None or (len(groups[-1]) + 1) * lengths[i] <= max_tokens)
        ):
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def write_over(meta: DocumentRecord | None, job: IngestJob) -> int | None:
    """The record version the job's state may be written over: the job's own (the record is
    queued for this job), or the version it `replaces` (the API enqueues a re-index of an
    indexed document before it marks the record queued); None: the job is stale. Versions
    are never used twice, so a job from before A -> B -> A is stale though the text hash is
    A's again."""
    if meta is None:
        return None  # deleted since (or a record never written: nothing asked for it)
    if meta.version == job.version and meta.text_hash == job.text_hash:
        return job.version
    if job.replaces is not None and meta.version == job.replaces:
        return job.replaces if meta.status == Status.INDEXED else None
    return None


def encode_group(
    models: Mapping[str, LoadedModel], token_lists: Sequence[list[str]]
) -> dict[str, list[DocumentState]]:
    """Every mode's states for a group of documents (blocking: run it in a thread)."""
    return {mode: model.read(token_lists) for mode, model in models.items()}


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
        self._next_sweep = time.monotonic() + settings.ingest_sweep_after_ms / 2000.0

    async def run(self, stop: asyncio.Event) -> None:
        """Reads and processes batches until `stop` is set; the batch in hand is finished."""
        log.info("worker %s started (modes %s)", self.consumer, ", ".join(self.models))
        while not stop.is_set():
            try:
                deliveries = await self.queue.read(
                    self.consumer, self.settings.ingest_max_batch, self.settings.ingest_block_ms
                )
                if deliveries:
                    await self.process(deliveries, stop)
                if time.monotonic() >= self._next_sweep:
                    self._next_sweep = time.monotonic() + self.settings.ingest_sweep_after_ms / 2000
                    await self.sweep()
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

    async def sweep(self) -> int:
        """Fails records queued longer than `ingest_sweep_after_ms` whose queue entry is gone
        (the text lived only in the entry: a client must post it again); how many."""
        before = now() - self.settings.ingest_sweep_after_ms / 1000.0
        failed = 0
        for record in await self.store.queued(before, SWEEP_LIMIT):
            if record.entry_id is not None and await self.queue.is_pending(record.entry_id):
                continue  # a long backlog, not a lost entry
            lost = DocumentRecord(
                id=record.id, text_hash=record.text_hash, status=Status.FAILED,
                error=LOST_ENTRY_ERROR, created_at=record.created_at, version=record.version,
            )  # fmt: skip
            if await self.store.put(
                lost, expect_version=record.version, expect_status=Status.QUEUED
            ):
                failed += 1
                log.warning("document %s: %s", record.id, LOST_ENTRY_ERROR)
        return failed

    async def process(
        self, deliveries: Sequence[Delivery], stop: asyncio.Event | None = None
    ) -> None:
        """Indexes a batch, renewing its lease (a heartbeat) until it is done. While the store
        or the queue fails, the batch stays in hand and is tried again (what was written is
        found written): an outage spends no delivery. Given up only when `stop` is set."""
        done = asyncio.Event()
        heartbeat = asyncio.create_task(self._heartbeat([d.entry_id for d in deliveries], done))
        try:
            while True:
                try:
                    await self._process(deliveries)
                    return
                except (QueueUnavailable, StoreError) as exc:
                    if stop is not None and stop.is_set():
                        raise
                    log.warning("worker %s: batch kept, tried again: %s", self.consumer, exc)
                    await self._pause(stop or asyncio.Event())
        finally:
            # Stopped by the event, not by cancel(): a cancellation that lands inside a Redis
            # call can come out as a connection error, which the beat would take for a failed
            # extension and carry on. Each beat is bounded (redis_timeout_s), so this ends.
            done.set()
            await heartbeat

    async def _heartbeat(self, entry_ids: list[str], done: asyncio.Event) -> None:
        interval = self.settings.ingest_claim_idle_ms / 3000.0
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), interval)
            if done.is_set():
                return
            try:
                await self.queue.extend(self.consumer, entry_ids)
            except QueueUnavailable as exc:  # the next beat tries again
                log.warning("worker %s: lease not extended: %s", self.consumer, exc)

    async def _process(self, deliveries: Sequence[Delivery]) -> None:
        limit = self.settings.ingest_max_deliveries
        done: list[str] = []
        live: list[Delivery] = []
        for d in deliveries:
            if d.deliveries > limit:
                await self._give_up(d, f"gave up after {d.deliveries - 1} failed deliveries")
            else:
                live.append(d)
        # An unreadable record counts as absent: its entry is stale, a new POST rewrites it.
        metas = await readable_records(self.store, [d.job.doc_id for d in live])
        todo: list[tuple[Delivery, DocumentRecord, int]] = []
        for d, meta in zip(live, metas, strict=True):
            expect = write_over(meta, d.job)
            if meta is None or expect is None:
                done.append(d.entry_id)  # deleted, re-posted or appended: this entry is stale
            elif (
                expect == d.job.version
                and meta.status == Status.INDEXED
                and is_current(meta, self.models)
            ):
                done.append(d.entry_id)  # a redelivery after the write
            else:
                todo.append((d, meta, expect))
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
            lengths = [len(doc.anon.tokens) for doc in docs]
            for group in length_groups(lengths, len(docs), self.settings.ingest_max_batch_tokens):
                done += await self._index_group([docs[i] for i in group])
        await self.queue.ack(done)

    def _prepare(
        self, todo: list[tuple[Delivery, DocumentRecord, int]]
    ) -> list[_Doc | tuple[Delivery, str]]:
        out: list[_Doc | tuple[Delivery, str]] = []
        limit = self.settings.max_document_tokens
        for d, meta, expect in todo:
            try:
                anon = anonymise(d.job.text, d.job.candidates)
            except ValueError as exc:
                out.append((d, str(exc)))
                continue
            if len(anon.tokens) > limit:
                out.append((d, f"{len(anon.tokens)} tokens; max_document_tokens is {limit}"))
                continue
            out.append(
                _Doc(d, anon, candidates_not_found(d.job.candidates, anon), meta.created_at, expect)
            )
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
            spans, contexts = where_named(doc.anon)
            meant = (
                await asyncio.to_thread(where_meant, job.text, spans)
                if self.settings.meaning
                else NOT_MEANT
            )
            record = DocumentRecord(
                id=job.doc_id,
                text_hash=job.text_hash,
                status=Status.INDEXED,
                tokens=len(doc.anon.tokens),
                entities=doc.anon.entities,
                mentions=doc.anon.mentions,
                unplaced=doc.anon.unplaced,
                candidates_not_found=doc.candidates_not_found,
                entity_slots=entity_slots(self.models),
                model_ids={mode: m.model_id for mode, m in self.models.items()},
                created_at=doc.created_at,
                states={mode: states[mode][i] for mode in self.models},
                version=job.version,
                chars=len(job.text),
                spans=spans,
                contexts=contexts,
                sentences=meant.sentences,
                sentence_vectors=meant.sentence_vectors,
                named=meant.named,
                mention_vectors=meant.mention_vectors,
                sentence_texts=meant.texts,
                sentence_starts=meant.starts,
            )
            written = await self.store.put(record, expect_version=doc.expect_version)
            if not written and doc.expect_version != job.version:
                # The API marked the record queued for this job meanwhile (its write raced
                # ours): write over that instead.
                written = await self.store.put(record, expect_version=job.version)
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
        [meta] = await readable_records(self.store, [job.doc_id])
        if meta is not None and write_over(meta, job) == job.version:
            failed = DocumentRecord(
                id=job.doc_id,
                text_hash=job.text_hash,
                status=Status.FAILED,
                error=error,
                created_at=meta.created_at,
                version=job.version,
            )
            await self.store.put(failed, expect_version=job.version)
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
    store = open_settings_store(settings)
    try:
        await store.check_setup()  # an evicting Redis: refused before anything is read
    except BaseException:
        await store.close()
        raise
    models = await asyncio.to_thread(load_models, settings, False)  # it answers nothing
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
