"""Indexing, inspecting, extending and deleting documents."""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request, Response

from encoder.state import DocumentState
from service.auth import require_api_key
from service.deps import ModelsDep, QueueDep, RuntimeDep, SettingsDep, StoreDep
from service.documents import anonymise, appended_hash, derived_id, text_hash
from service.errors import (
    BadRequest,
    Conflict,
    IndexedByAnotherModel,
    NotFound,
    NotIndexed,
    TooLarge,
    error_responses,
)
from service.ingest.queue import IngestJob
from service.schemas import (
    AppendIn,
    DocumentAccepted,
    DocumentBatchIn,
    DocumentIn,
    DocumentInfo,
    DocumentsAccepted,
)
from store.base import DocumentStore
from store.record import DocumentRecord, Status, now

router = APIRouter(prefix="/v1", tags=["documents"], dependencies=[Depends(require_api_key)])

DocId = Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")]


def document_info(record: DocumentRecord) -> DocumentInfo:
    return DocumentInfo(
        id=record.id,
        status=record.status,
        tokens=record.tokens,
        entities=len(record.entities),
        modes=sorted(record.model_ids if record.status == Status.INDEXED else {}),
        bytes_stored=dict(record.state_bytes),
        model_ids=dict(record.model_ids),
        text_hash=record.text_hash,
        error=record.error,
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def built_by_other_models(record: DocumentRecord, loaded: dict[str, str]) -> bool:
    """Whether a state of a mode this server serves was built by another model."""
    return any(record.model_ids.get(mode) not in (None, mid) for mode, mid in loaded.items())


async def indexed_record(
    store: DocumentStore, doc_id: str, modes: Collection[str] | None
) -> DocumentRecord:
    """The document with the states of `modes`; 404 when unknown, 409 until it is indexed."""
    record = await store.get(doc_id, modes=modes)
    if record is None:
        raise NotFound(f"no document {doc_id!r}", {"id": doc_id}, code="document_not_found")
    if record.status != Status.INDEXED:
        raise NotIndexed(
            f"document {doc_id!r} is {record.status}, not indexed",
            {"status": str(record.status), "error": record.error},
        )
    return record


def _check_limits(documents: list[DocumentIn], max_batch: int, max_bytes: int) -> None:
    if len(documents) > max_batch:
        raise TooLarge(
            f"a batch holds at most {max_batch} documents, got {len(documents)}",
            {"max_batch_documents": max_batch},
            code="batch_too_large",
        )
    for i, doc in enumerate(documents):
        size = len(doc.text.encode())
        if size > max_bytes:
            raise TooLarge(
                f"document {i} is {size} bytes; the limit is {max_bytes}",
                {"index": i, "id": doc.id, "bytes": size, "max_document_bytes": max_bytes},
                code="document_too_large",
            )
        if not doc.text.strip():
            raise BadRequest(f"document {i} has no text", {"index": i}, code="empty_text")


@router.post(
    "/documents",
    status_code=202,
    response_model=DocumentsAccepted,
    operation_id="index_documents",
    summary="Index one document or a batch",
    responses=error_responses(400, 401, 413, 422, 503),
)
async def index_documents(
    body: DocumentIn | DocumentBatchIn,
    request: Request,
    settings: SettingsDep,
    store: StoreDep,
    queue: QueueDep,
    runtime: RuntimeDep,
) -> DocumentsAccepted:
    """Records each document as `queued` and puts it on the ingestion queue.

    The same id with the same text is the same document (nothing is re-encoded); the same id
    with other text is indexed again. A document posted without an id gets one derived from
    its text. A document indexed by other models than this server's is indexed again.
    """
    documents = body.documents if isinstance(body, DocumentBatchIn) else [body]
    _check_limits(documents, settings.max_batch_documents, settings.max_document_bytes)
    hashes = [text_hash(doc.text) for doc in documents]
    ids = [doc.id or derived_id(h) for doc, h in zip(documents, hashes, strict=True)]
    seen: dict[str, str] = {}
    for i, (doc_id, h) in enumerate(zip(ids, hashes, strict=True)):
        if seen.setdefault(doc_id, h) != h:
            raise BadRequest(
                f"id {doc_id!r} appears twice in the batch with different text",
                {"index": i, "id": doc_id},
                code="duplicate_id",
            )
    unique_ids = list(dict.fromkeys(ids))
    records = await store.get_many(unique_ids, modes=())
    existing = dict(zip(unique_ids, records, strict=True))
    # A queued record older than the claim timeout may have lost its queue entry (the
    # enqueue failed after the record was written): enqueue it again.
    stale_before = now() - settings.ingest_claim_idle_ms / 1000.0
    loaded = {mode: m.model_id for mode, m in runtime.models.items()}  # empty while loading
    accepted: dict[str, DocumentAccepted] = {}
    for doc, doc_id, h in zip(documents, ids, hashes, strict=True):
        if doc_id in accepted:
            continue
        old = existing.get(doc_id)
        status_url = str(request.url_for("get_document", doc_id=doc_id))
        if (
            old is not None
            and old.text_hash == h
            and (
                (old.status == Status.INDEXED and not built_by_other_models(old, loaded))
                or (old.status == Status.QUEUED and old.updated_at > stale_before)
            )
        ):
            accepted[doc_id] = DocumentAccepted(
                id=doc_id, status=old.status, status_url=status_url, text_hash=h, enqueued=False
            )
            continue
        record = DocumentRecord(
            id=doc_id,
            text_hash=h,
            status=Status.QUEUED,
            created_at=old.created_at if old is not None else 0.0,
        )
        # The record first: the worker drops entries whose hash the store does not hold.
        await store.put(record)
        await queue.enqueue(IngestJob(doc_id, doc.text, h, doc.candidates))
        accepted[doc_id] = DocumentAccepted(
            id=doc_id, status=Status.QUEUED, status_url=status_url, text_hash=h, enqueued=True
        )
    return DocumentsAccepted(documents=list(accepted.values()))


@router.get(
    "/documents/{doc_id}",
    response_model=DocumentInfo,
    operation_id="get_document",
    summary="Status, size and model of a document",
    responses=error_responses(401, 404, 422, 503),
)
async def get_document(doc_id: DocId, store: StoreDep) -> DocumentInfo:
    record = await store.get(doc_id, modes=())
    if record is None:
        raise NotFound(f"no document {doc_id!r}", {"id": doc_id}, code="document_not_found")
    return document_info(record)


@router.delete(
    "/documents/{doc_id}",
    status_code=204,
    operation_id="delete_document",
    summary="Remove a document and its states",
    responses=error_responses(401, 404, 422, 503),
)
async def delete_document(doc_id: DocId, store: StoreDep) -> Response:
    if not await store.delete(doc_id):
        raise NotFound(f"no document {doc_id!r}", {"id": doc_id}, code="document_not_found")
    return Response(status_code=204)


@router.post(
    "/documents/{doc_id}/text",
    response_model=DocumentInfo,
    operation_id="append_text",
    summary="Append text to an indexed document without re-reading it",
    responses=error_responses(400, 401, 404, 409, 413, 422, 503),
)
async def append_text(
    doc_id: DocId, body: AppendIn, settings: SettingsDep, store: StoreDep, models: ModelsDep
) -> DocumentInfo:
    """Continues every stored state with the new tokens (`extend`): the result equals
    indexing the whole text at once, at the cost of the new text only."""
    size = len(body.text.encode())
    if size > settings.max_document_bytes:
        raise TooLarge(
            f"appended text is {size} bytes; the limit is {settings.max_document_bytes}",
            {"bytes": size, "max_document_bytes": settings.max_document_bytes},
            code="document_too_large",
        )
    record = await indexed_record(store, doc_id, modes=None)
    for mode in record.states:
        model = models.get(mode)
        if model is None or record.model_ids.get(mode) != model.model_id:
            raise IndexedByAnotherModel(
                f"the {mode} state of {doc_id!r} was built by a model this server has not loaded",
                {"mode": mode, "stored": record.model_ids.get(mode),
                 "loaded": model.model_id if model else None},
            )  # fmt: skip
    try:
        anon = await asyncio.to_thread(anonymise, models, body.text, None, record.entities)
    except ValueError as exc:
        raise BadRequest(str(exc), code="empty_text") from exc

    def extend_all() -> dict[str, DocumentState]:
        return {
            mode: models[mode].reader.extend(state, models[mode].token_ids(anon.tokens))
            for mode, state in record.states.items()
        }

    states = await asyncio.to_thread(extend_all)
    extended = DocumentRecord(
        id=record.id,
        text_hash=appended_hash(record.text_hash, body.text),
        status=Status.INDEXED,
        tokens=record.tokens + len(anon.tokens),
        entities=anon.entities,
        model_ids=dict(record.model_ids),
        created_at=record.created_at,
        states=states,
    )
    if not await store.put(extended, expect_text_hash=record.text_hash):
        raise Conflict(
            f"document {doc_id!r} changed while the text was appended; retry",
            code="concurrent_update",
        )
    updated = await store.get(doc_id, modes=())
    if updated is None:
        raise NotFound(f"no document {doc_id!r}", {"id": doc_id}, code="document_not_found")
    return document_info(updated)
