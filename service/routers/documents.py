"""Indexing, inspecting, extending and deleting documents."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.exceptions import RequestValidationError

from cheapqa_client.schemas import DocumentEntities, DocumentInfo, DocumentList, DocumentsAccepted
from service.deps import IndexingDep
from service.errors import error_responses
from service.guard import API_KEY_SCHEME
from service.schemas import AppendIn, DocumentBatchIn, DocumentIdPath, DocumentPosting

router = APIRouter(prefix="/v1", tags=["documents"], dependencies=[API_KEY_SCHEME])


@router.post(
    "/documents",
    status_code=202,
    response_model=DocumentsAccepted,
    operation_id="index_documents",
    summary="Index one document or a batch",
    responses=error_responses(400, 401, 408, 413, 422, 429, 503),
)
async def index_documents(body: DocumentPosting, indexing: IndexingDep) -> DocumentsAccepted:
    """Records each document as `queued` and puts it on the ingestion queue.

    The same id with the same text is the same document (nothing is re-encoded); the same id
    with other text is indexed again. A document posted without an id gets one derived from
    its text. A document indexed by other models than this server's is indexed again.
    """
    return await indexing.index(body.documents if isinstance(body, DocumentBatchIn) else [body])


@router.get(
    "/documents",
    response_model=DocumentList,
    operation_id="list_documents",
    summary="The documents, paged, with their status",
    responses=error_responses(401, 422, 503),
)
async def list_documents(
    request: Request,
    indexing: IndexingDep,
    limit: Annotated[int, Query(ge=1, le=500, description="Documents per page.")] = 50,
    cursor: Annotated[
        str | None, Query(max_length=200, description="`next_cursor` of the page before.")
    ] = None,
) -> DocumentList:
    """In id order, so paging is stable while documents come and go."""
    for name in ("limit", "cursor"):  # each is one value: which of several was meant?
        given = request.query_params.getlist(name)
        if len(given) > 1:
            raise RequestValidationError(
                [{"type": "repeated", "loc": ("query", name), "msg": "given more than once",
                  "input": given}]
            )  # fmt: skip
    return await indexing.list(limit, cursor)


@router.get(
    "/documents/{doc_id}/entities",
    response_model=DocumentEntities,
    operation_id="get_document_entities",
    summary="The entities a document's answers can name, with their mention counts",
    responses=error_responses(401, 404, 409, 422, 503),
)
async def get_document_entities(doc_id: DocumentIdPath, indexing: IndexingDep) -> DocumentEntities:
    """Whole names in order of first mention; names beyond the models' entity slots are
    listed as `unplaced` (they are never answers). 409 until the document is indexed."""
    return await indexing.entities(doc_id)


@router.get(
    "/documents/{doc_id}",
    response_model=DocumentInfo,
    operation_id="get_document",
    summary="Status, size and model of a document",
    responses=error_responses(401, 404, 422, 503),
)
async def get_document(doc_id: DocumentIdPath, indexing: IndexingDep) -> DocumentInfo:
    return await indexing.info(doc_id)


@router.delete(
    "/documents/{doc_id}",
    status_code=204,
    operation_id="delete_document",
    summary="Remove a document and its states",
    responses=error_responses(401, 404, 422, 503),
)
async def delete_document(doc_id: DocumentIdPath, indexing: IndexingDep) -> Response:
    await indexing.delete(doc_id)
    return Response(status_code=204)


@router.post(
    "/documents/{doc_id}/text",
    response_model=DocumentInfo,
    operation_id="append_text",
    summary="Append text to an indexed document without re-reading it",
    responses=error_responses(400, 401, 404, 408, 409, 412, 413, 422, 503),
)
async def append_text(
    doc_id: DocumentIdPath, body: AppendIn, indexing: IndexingDep
) -> DocumentInfo:
    """Continues every stored state with the new tokens (`extend`): the result equals
    indexing the whole text at once, at the cost of the new text only. With
    `expected_text_hash`, a retry of an append that happened answers 412."""
    return await indexing.append(doc_id, body.text, body.expected_text_hash)
