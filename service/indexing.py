"""Indexing policy: what a POST of documents, an append, and a read of a document do.

`IndexingService`, built once by the app's lifespan, is what the documents routes call: they
parse, call one of its methods, and return its result. The decisions live here, once:
- idempotency: the same id with the same text and candidates is the same document, nothing
  is re-encoded (other candidates index it again);
- record and queue entry together: a `queued` record whose queue entry is gone (the enqueue
  failed, or answered too late) is enqueued again by a retry; an indexed record keeps its
  states until the job that replaces it is enqueued; a record built by other models than the
  loaded ones is indexed again;
- versions: every accepted POST and append takes a new version from the store, and every
  write of a record that exists is conditional on the version (and status) it was read with.
  A write that finds the record changed meanwhile (an append, another POST, the worker, a
  delete) is not ignored: the decision is taken again on the record as it now is, so each
  outcome is that of one serial order of the requests, and an acknowledged POST's job is
  the one the record waits for;
- backpressure: past `ingest_max_queue_depth` entries or `ingest_max_queue_bytes` a POST is
  429 with Retry-After;
- `is_current`: whether a record's states were built by the loaded models (the worker asks
  too, before it skips a redelivered entry);
- append preconditions: indexed, every stored state from a loaded model, the client's
  `expected_text_hash` (412 on a mismatch: a retried append is never applied twice), the
  document within `max_document_tokens`, and the version unchanged while the new tokens
  were read (else it is tried again on the new record, where the hash check decides).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from urllib.parse import quote

from cheapqa_client.schemas import (
    DocumentAccepted,
    DocumentEntities,
    DocumentInfo,
    DocumentList,
    DocumentsAccepted,
    DocumentSummary,
    EntityMentions,
)
from encoder.text.tokens import TOKEN_RE, plain_text, raw_tokens
from service.errors import (
    BadRequest,
    Conflict,
    IndexedByAnotherModel,
    NotFound,
    NotIndexed,
    Overloaded,
    PreconditionFailed,
    TooLarge,
    Unavailable,
    Unprocessable,
)
from service.readers import LoadedModel, ServedModels, anonymise, entity_slots
from service.schemas import DocumentIn
from service.settings import Settings
from service.support import (
    NOT_MEANT,
    appended_where_meant,
    appended_where_named,
    shifted_spans,
)
from store.base import DocumentStore, readable_records
from store.queue.base import IngestJob, IngestQueue, QueueUnavailable
from store.record import (
    DocumentRecord,
    Status,
    appended_hash,
    derived_id,
    now,
    posting_hash,
    text_hash,
)


def is_current(record: DocumentRecord, models: Mapping[str, LoadedModel]) -> bool:
    """Whether the record holds a state of every one of these models' modes, each built by
    that very model (the id it was built by is the loaded model's id)."""
    return all(record.model_ids.get(mode) == m.model_id for mode, m in models.items())


def require_current(
    record: DocumentRecord, models: Mapping[str, LoadedModel], modes: Collection[str]
) -> None:
    """409 unless each of `modes` has a state (the record was read with them) built by the
    loaded model of that mode."""
    for mode in modes:
        model = models.get(mode)
        if model is None or mode not in record.states or not is_current(record, {mode: model}):
            raise IndexedByAnotherModel(
                f"document {record.id!r} has no {mode} state from a loaded model",
                {"mode": mode, "stored": record.model_ids.get(mode),
                 "loaded": model.model_id if model else None},
            )  # fmt: skip


def status_url(settings: Settings) -> Callable[[str], str]:
    """doc id -> its status URL: under `public_base_url`, else relative; never built from the
    request's Host header, which the client controls."""
    base = (settings.public_base_url or "").rstrip("/")
    return lambda doc_id: f"{base}/v1/documents/{quote(doc_id, safe='')}"


def document_info(record: DocumentRecord, waiting: str | None = None) -> DocumentInfo:
    return DocumentInfo(
        id=record.id,
        status=record.status,
        tokens=record.tokens,
        entities=len(record.entities),
        entity_slots=record.entity_slots,
        entities_unplaced=len(record.unplaced),
        candidates_not_found=list(record.candidates_not_found),
        modes=sorted(record.model_ids if record.status == Status.INDEXED else {}),
        bytes_stored=dict(record.state_bytes),
        model_ids=dict(record.model_ids),
        text_hash=record.text_hash,
        error=record.error,
        created_at=record.created_at,
        updated_at=record.updated_at,
        waiting=waiting,
    )


def worker_window_ms(settings: Settings) -> int:
    """How long without a worker reading the queue means none runs: a live one takes a
    queued document within its blocking read's time (INGEST_BLOCK_MS), and one busy with a
    batch renews its lease every third of INGEST_CLAIM_IDLE_MS (each resets its idle time)."""
    return max(4 * settings.ingest_block_ms, settings.ingest_claim_idle_ms // 2)


async def queue_readers(settings: Settings, queue: IngestQueue) -> int | None:
    """Workers that read the queue recently; None when the queue cannot tell or is down."""
    try:
        return await queue.readers(worker_window_ms(settings))
    except QueueUnavailable:
        return None


def document_entities(record: DocumentRecord) -> DocumentEntities:
    # A format-1 record kept no counts: its mentions are unknown (None), not zero.
    counts: list[int | None] = (
        list(record.mentions)
        if len(record.mentions) == len(record.entities)
        else [None] * len(record.entities)
    )
    return DocumentEntities(
        id=record.id,
        entities=[
            EntityMentions(entity=name, mentions=n)
            for name, n in zip(record.entities, counts, strict=True)
        ],
        entity_slots=record.entity_slots,
        unplaced=list(record.unplaced),
    )


async def known_record(
    store: DocumentStore, doc_id: str, modes: Collection[str] | None = ()
) -> DocumentRecord:
    """The document (with the states of `modes`); 404 when unknown."""
    record = await store.get(doc_id, modes=modes)
    if record is None:
        raise NotFound(f"no document {doc_id!r}", {"id": doc_id}, code="document_not_found")
    return record


async def indexed_record(
    store: DocumentStore, doc_id: str, modes: Collection[str] | None
) -> DocumentRecord:
    """The document with the states of `modes`; 404 when unknown, 409 until it is indexed."""
    record = await known_record(store, doc_id, modes)
    if record.status != Status.INDEXED:
        raise NotIndexed(
            f"document {doc_id!r} is {record.status}, not indexed",
            {"status": str(record.status), "error": record.error},
        )
    return record


def check_text_size(text: str, max_bytes: int, what: str, **detail: object) -> None:
    size = len(text.encode())
    if size > max_bytes:
        raise TooLarge(
            f"{what} is {size} bytes; the limit is {max_bytes}",
            {**detail, "bytes": size, "max_document_bytes": max_bytes},
            code="document_too_large",
        )


def _check_batch(documents: Sequence[DocumentIn], max_batch: int, max_bytes: int) -> None:
    if len(documents) > max_batch:
        raise TooLarge(
            f"a batch holds at most {max_batch} documents, got {len(documents)}",
            {"max_batch_documents": max_batch},
            code="batch_too_large",
        )
    for i, doc in enumerate(documents):
        check_text_size(doc.text, max_bytes, f"document {i}", index=i, id=doc.id)
        if not doc.text.strip():
            raise BadRequest(f"document {i} has no text", {"index": i}, code="empty_text")


def _check_tokens(documents: Sequence[DocumentIn]) -> None:
    """422 for a document with no tokens at all: it could never be indexed."""
    for i, doc in enumerate(documents):
        if TOKEN_RE.search(doc.text) is None:
            raise Unprocessable(
                f"document {i} holds no tokens (no words, numbers or punctuation)",
                {"index": i, "id": doc.id},
                code="no_tokens",
            )


def _past_token_limit(
    documents: Sequence[DocumentIn], models: Mapping[str, LoadedModel], limit: int
) -> tuple[int, int] | None:
    """(index, tokens) of the first document past `limit` tokens, else None (blocking: run
    it in a thread). The words and punctuation of the text bound the reader's tokens from
    above (a marker stands for one or more words), so only a document past the limit in
    words is anonymised to count exactly; while the models load, only the worker can tell."""
    for i, doc in enumerate(documents):
        words = len(raw_tokens(plain_text(doc.text)))
        if words <= limit or not models:
            continue
        tokens = len(anonymise(doc.text, doc.candidates).tokens)
        if tokens > limit:
            return i, tokens
    return None


def _document_ids(documents: Sequence[DocumentIn], hashes: Sequence[str]) -> list[str]:
    """Each document's id (given, or derived from its text alone); one id, one posting (text
    and candidates) per batch."""
    ids = [doc.id or derived_id(text_hash(doc.text)) for doc in documents]
    seen: dict[str, str] = {}
    for i, (doc_id, h) in enumerate(zip(ids, hashes, strict=True)):
        if seen.setdefault(doc_id, h) != h:
            raise BadRequest(
                f"id {doc_id!r} appears twice in the batch with different text or candidates",
                {"index": i, "id": doc_id},
                code="duplicate_id",
            )
    return ids


async def needs_indexing(
    old: DocumentRecord, h: str, models: Mapping[str, LoadedModel], queue: IngestQueue
) -> bool:
    """False when the stored record already is, or will be, this text indexed by these
    models: indexed by them, or queued with its queue entry still there."""
    if old.text_hash != h:
        return True
    if old.status == Status.INDEXED:
        return not is_current(old, models)
    if old.status == Status.QUEUED and old.entry_id is not None:
        return not await queue.is_pending(old.entry_id)
    return True


async def check_backlog(settings: Settings, queue: IngestQueue) -> None:
    """429 while the ingestion queue holds more than the settings allow."""
    depth, size = await queue.backlog()
    if depth >= settings.ingest_max_queue_depth or size >= settings.ingest_max_queue_bytes:
        raise Overloaded(
            "the ingestion queue is full; retry later",
            {"depth": depth, "max_depth": settings.ingest_max_queue_depth},
            code="ingest_queue_full",
        )


# A conditional write that lost its race is decided again this many times, then 409: each
# loss means another write landed, so more than a few means the document is written to
# without pause.
WRITE_ATTEMPTS = 5


def _write_conflict(doc_id: str) -> Conflict:
    return Conflict(
        f"document {doc_id!r} kept changing while it was written; retry",
        {"id": doc_id},
        code="concurrent_update",
    )


async def _enqueue(
    store: DocumentStore, queue: IngestQueue, job: IngestJob, old: DocumentRecord | None
) -> bool:
    """The record `queued` (at the job's version) and its queue entry, so that a failure at
    any step leaves nothing a retry cannot mend: a `queued` record without a live entry is
    enqueued again, and an indexed record keeps its states until the job that replaces it is
    in the queue. False: the record was no longer `old` when it was to be written (nothing
    of this job will be indexed: the caller decides again)."""
    record = DocumentRecord(
        id=job.doc_id,
        text_hash=job.text_hash,
        status=Status.QUEUED,
        created_at=old.created_at if old is not None else 0.0,
        version=job.version,
    )
    if old is not None and old.status == Status.INDEXED:
        # Enqueue first; the worker indexes a job whose `replaces` the record still holds.
        entry_id = await queue.enqueue(dataclasses.replace(job, replaces=old.version))
        if old.text_hash == job.text_hash:
            # The same text, indexed by other models: the record stays as it is until the
            # worker rewrites it (marking it queued could clobber that rewrite). A write that
            # lands meanwhile replaces the document: this job is then rightly stale.
            return True
        record.entry_id = entry_id
        # Only over the version it replaces: if an append, another POST or the worker came
        # first, this job is stale, and the caller decides again.
        return await store.put(record, expect_version=old.version, expect_status=Status.INDEXED)
    # No state to keep: the record first (the worker skips entries the store does not hold),
    # then the entry, then the entry's id into the record.
    if old is None:
        await store.put(record)  # new (or unreadable): any write racing this one is as new
    elif not await store.put(record, expect_version=old.version, expect_status=old.status):
        return False
    record.entry_id = await queue.enqueue(job)
    # Only while still queued for this job: a fast worker may have indexed it already, and a
    # later POST replaced it (then this job is stale, and that POST's is the one to index).
    await store.put(record, expect_version=job.version, expect_status=Status.QUEUED)
    return True


async def _post_one(
    store: DocumentStore,
    queue: IngestQueue,
    models: Mapping[str, LoadedModel],
    doc: DocumentIn,
    doc_id: str,
    h: str,
    old: DocumentRecord | None,
    version: int,
) -> DocumentRecord | None:
    """Enqueues the document over `old`; when the record changed first, decides again on
    the record as it is now. None: enqueued; a record: nothing to do, it already is (or will
    be) this posting."""
    for _ in range(WRITE_ATTEMPTS):
        job = IngestJob(doc_id, doc.text, h, doc.candidates, version=version)
        if await _enqueue(store, queue, job, old):
            return None
        [old] = await readable_records(store, [doc_id])
        if old is not None and not await needs_indexing(old, h, models, queue):
            return old
        [version] = await store.new_versions(1)
    raise _write_conflict(doc_id)


def _added_mentions(record: DocumentRecord, appended: list[int]) -> list[int]:
    """The record's mention counts plus the appended text's (which cover the known entities
    first, then the new ones); unknown (empty) stays unknown."""
    if len(record.mentions) != len(record.entities):
        return []
    return [old + new for old, new in zip(record.mentions, appended, strict=False)] + appended[
        len(record.mentions) :
    ]


class IndexingService:
    """What the documents routes call, built once by the app's lifespan: each method is one
    route's whole work after parsing."""

    def __init__(
        self,
        settings: Settings,
        store: DocumentStore,
        queue: IngestQueue,
        models: ServedModels,
        runs_worker: bool = False,
    ) -> None:
        self.settings = settings
        self.store = store
        self.queue = queue
        self.models = models
        self.runs_worker = runs_worker  # an ingestion worker runs in this process
        self.status_url = status_url(settings)

    async def index(self, documents: Sequence[DocumentIn]) -> DocumentsAccepted:
        """Records each document as `queued` and puts it on the ingestion queue, unless it is
        already indexed (or queued) with the same text and candidates. Documents are accepted
        while the models load, but not once loading them failed (503)."""
        if self.models.error is not None:
            raise Unavailable("the models failed to load: nothing can be indexed", code="not_ready")
        settings, store, queue = self.settings, self.store, self.queue
        models = self.models.by_mode  # empty while loading
        _check_batch(documents, settings.max_batch_documents, settings.max_document_bytes)
        _check_tokens(documents)
        limit = settings.max_document_tokens
        too_long = await asyncio.to_thread(_past_token_limit, documents, models, limit)
        if too_long is not None:
            i, tokens = too_long
            raise TooLarge(
                f"document {i} holds {tokens} tokens; the limit is {limit}",
                {"index": i, "id": documents[i].id, "tokens": tokens,
                 "max_document_tokens": limit},
                code="document_too_long",
            )  # fmt: skip
        hashes = [posting_hash(doc.text, doc.candidates) for doc in documents]
        ids = _document_ids(documents, hashes)
        unique_ids = list(dict.fromkeys(ids))
        # A record whose metadata is unreadable counts as absent: this POST writes it anew.
        existing = dict(zip(unique_ids, await readable_records(store, unique_ids), strict=True))
        todo: list[tuple[DocumentIn, str, str]] = []
        accepted: dict[str, DocumentAccepted] = {}
        for doc, doc_id, h in zip(documents, ids, hashes, strict=True):
            if doc_id in accepted:
                continue
            old = existing.get(doc_id)
            if old is not None and not await needs_indexing(old, h, models, queue):
                accepted[doc_id] = DocumentAccepted(
                    id=doc_id, status=old.status, status_url=self.status_url(doc_id),
                    text_hash=h, enqueued=False,
                )  # fmt: skip
                continue
            todo.append((doc, doc_id, h))
            accepted[doc_id] = DocumentAccepted(
                id=doc_id, status=Status.QUEUED, status_url=self.status_url(doc_id),
                text_hash=h, enqueued=True,
            )  # fmt: skip
        if todo:
            await check_backlog(settings, queue)
            versions = await store.new_versions(len(todo))
        for (doc, doc_id, h), version in zip(todo, versions if todo else (), strict=True):
            old = existing.get(doc_id)
            known = await _post_one(store, queue, models, doc, doc_id, h, old, version)
            if known is not None:
                accepted[doc_id] = accepted[doc_id].model_copy(
                    update={"status": known.status, "enqueued": False}
                )
        return DocumentsAccepted(documents=list(accepted.values()))

    async def list(self, limit: int, cursor: str | None) -> DocumentList:
        page = await self.store.list_documents(limit, cursor)
        return DocumentList(
            documents=[DocumentSummary(id=i, status=status) for i, status in page.documents],
            next_cursor=page.next_cursor,
        )

    async def info(self, doc_id: str) -> DocumentInfo:
        record = await known_record(self.store, doc_id)
        return document_info(record, await self._waiting(record))

    async def _waiting(self, record: DocumentRecord) -> str | None:
        """Why a document is still queued, when the queue can tell: no worker has read it
        for longer than a live one would leave it (and this document waited that long)."""
        window_s = worker_window_ms(self.settings) / 1000.0
        if record.status != Status.QUEUED or self.runs_worker:
            return None
        if now() - record.updated_at < window_s:
            return None
        if await queue_readers(self.settings, self.queue) != 0:
            return None
        return (
            f"no worker has read the ingestion queue in the last {window_s:g} s: the document "
            "stays queued until one does (start `cheapqa worker` with this service's "
            "CHEAPQA_STORE_URL)"
        )

    async def entities(self, doc_id: str) -> DocumentEntities:
        return document_entities(await indexed_record(self.store, doc_id, modes=()))

    async def delete(self, doc_id: str) -> None:
        if not await self.store.delete(doc_id):
            raise NotFound(f"no document {doc_id!r}", {"id": doc_id}, code="document_not_found")

    async def append(
        self, doc_id: str, text: str, expected_text_hash: str | None = None
    ) -> DocumentInfo:
        """Continues every stored state with the new tokens (`extend`): the result equals
        indexing the whole text at once, at the cost of the new text only. With
        `expected_text_hash`, only if the document's text hash is that one (else 412).
        Written over the version it was read at; if another write came first, done again on
        the new record (whose hash then decides)."""
        settings, store = self.settings, self.store
        models = self.models.ready()
        check_text_size(text, settings.max_document_bytes, "appended text")
        for _ in range(WRITE_ATTEMPTS):
            record = await indexed_record(store, doc_id, modes=None)
            if expected_text_hash is not None and record.text_hash != expected_text_hash:
                raise PreconditionFailed(
                    f"document {doc_id!r} has text hash {record.text_hash}, not the expected "
                    "one (already appended?)",
                    {"text_hash": record.text_hash, "expected_text_hash": expected_text_hash},
                )
            require_current(record, models, record.states)
            extended = await asyncio.to_thread(_extended, record, text, settings, models)
            [extended.version] = await store.new_versions(1)
            if await store.put(
                extended, expect_version=record.version, expect_status=Status.INDEXED
            ):
                return await self.info(doc_id)
        raise _write_conflict(doc_id)


def _extended(
    record: DocumentRecord, text: str, settings: Settings, models: Mapping[str, LoadedModel]
) -> DocumentRecord:
    """The record with `text` appended: states extended, entities and counts merged
    (blocking: tokenizing and merging thousands of names is no work for the event loop)."""
    # The readers of the stored states extend them; new names take the next entity indices.
    readers = {mode: models[mode] for mode in record.states} or dict(models)
    try:
        anon = anonymise(text, None, record.entities)
    except ValueError as exc:
        raise BadRequest(str(exc), code="empty_text") from exc
    tokens = record.tokens + len(anon.tokens)
    if tokens > settings.max_document_tokens:
        raise TooLarge(
            f"the document would hold {tokens} tokens; the limit is "
            f"{settings.max_document_tokens}",
            {"tokens": record.tokens, "appended": len(anon.tokens),
             "max_document_tokens": settings.max_document_tokens},
            code="document_too_long",
        )  # fmt: skip
    placed = set(anon.entities)
    spans, contexts = appended_where_named(record, anon)
    meant = (
        appended_where_meant(record, text, shifted_spans(anon, record.chars))
        if settings.meaning
        else NOT_MEANT
    )
    return DocumentRecord(
        id=record.id,
        text_hash=appended_hash(record.text_hash, text),
        status=Status.INDEXED,
        tokens=tokens,
        entities=anon.entities,
        mentions=_added_mentions(record, anon.mentions),
        unplaced=list(dict.fromkeys([*record.unplaced, *anon.unplaced])),
        candidates_not_found=[n for n in record.candidates_not_found if n not in placed],
        entity_slots=entity_slots(readers),
        model_ids=dict(record.model_ids),
        created_at=record.created_at,
        states={
            mode: readers[mode].extend(state, anon.tokens) for mode, state in record.states.items()
        },
        chars=record.chars + len(text),
        spans=spans,
        contexts=contexts,
        sentences=meant.sentences,
        sentence_vectors=meant.sentence_vectors,
        named=meant.named,
        mention_vectors=meant.mention_vectors,
        sentence_texts=meant.texts,
        sentence_starts=meant.starts,
    )
