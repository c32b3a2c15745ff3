"""Answering cloze questions about an indexed document."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from service import answering
from service.auth import require_api_key
from service.deps import AnswerContextDep
from service.errors import error_responses
from service.schemas import AnswersIn, AnswersOut, DocumentIdPath

router = APIRouter(prefix="/v1", tags=["answers"], dependencies=[Depends(require_api_key)])


@router.post(
    "/documents/{doc_id}/answers",
    response_model=AnswersOut,
    operation_id="answer_queries",
    summary="Answer cloze questions about a document",
    responses=error_responses(400, 401, 404, 409, 413, 422, 429, 503),
)
async def answer_queries(
    doc_id: DocumentIdPath,
    body: AnswersIn,
    ctx: AnswerContextDep,
) -> Response:
    """Each question is a sentence with one `@placeholder`; the answers are the document's
    entities most likely to fill it, with their probabilities over the document's entities."""
    # The JSON is written by answering (an AnswersOut's bytes); returned as a Response,
    # FastAPI does not validate and serialise it a second time.
    content = await answering.answer_queries(
        doc_id, body, ctx.settings, ctx.store, ctx.models, ctx.batcher, ctx.metrics
    )
    return Response(content, media_type="application/json")
