"""Answering cloze questions about an indexed document."""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, Depends

from service.answering import answers_body, query_token_ids, rank_answers
from service.auth import require_api_key
from service.deps import BatcherDep, MetricsDep, ModelsDep, SettingsDep, StoreDep
from service.errors import (
    BadRequest,
    IndexedByAnotherModel,
    TooLarge,
    error_responses,
)
from service.routers.documents import DocId, indexed_record
from service.schemas import AnswersIn, AnswersOut, QueryAnswers

# States up to this many numbers are looked up on the event loop (k = 256 gives 65,536).
INLINE_LOOKUP_MAX_NUMBERS = 65_536

router = APIRouter(prefix="/v1", tags=["answers"], dependencies=[Depends(require_api_key)])


@router.post(
    "/documents/{doc_id}/answers",
    response_model=AnswersOut,
    operation_id="answer_queries",
    summary="Answer cloze questions about a document",
    responses=error_responses(400, 401, 404, 409, 413, 422, 429, 503),
)
async def answer_queries(
    doc_id: DocId,
    body: AnswersIn,
    settings: SettingsDep,
    store: StoreDep,
    models: ModelsDep,
    batcher: BatcherDep,
    metrics: MetricsDep,
) -> AnswersOut:
    """Each question is a sentence with one `@placeholder`; the answers are the document's
    entities most likely to fill it, with their probabilities over the document's entities."""
    if len(body.queries) > settings.max_queries:
        raise TooLarge(
            f"at most {settings.max_queries} queries per request, got {len(body.queries)}",
            {"max_queries": settings.max_queries},
            code="too_many_queries",
        )
    if body.top_k > settings.max_top_k:
        raise BadRequest(
            f"top_k is at most {settings.max_top_k}",
            {"max_top_k": settings.max_top_k},
            code="top_k_too_large",
        )
    mode = body.mode or settings.default_mode
    model = models.get(mode)
    if model is None:
        raise BadRequest(
            f"mode {mode!r} is not loaded", {"loaded": sorted(models)}, code="mode_not_loaded"
        )
    record = await indexed_record(store, doc_id, modes=(mode,))
    state = record.states.get(mode)
    if state is None or record.model_ids.get(mode) != model.model_id:
        raise IndexedByAnotherModel(
            f"document {doc_id!r} has no {mode} state from the loaded model {model.model_id}",
            {"mode": mode, "stored": record.model_ids.get(mode), "loaded": model.model_id},
        )
    try:
        query_ids = query_token_ids(model, body.queries, record.entities)
    except ValueError as exc:
        raise BadRequest(str(exc), code="bad_query") from exc
    n_entities = len(record.entities)
    if n_entities == 0:
        results = [QueryAnswers(query=q, answers=[]) for q in body.queries]
        return AnswersOut(id=doc_id, mode=mode, model_id=model.model_id, results=results)

    Q = await batcher.encode(model, query_ids)  # (m, k)
    start = time.perf_counter()
    if state.memory is not None and state.memory.numel() > INLINE_LOOKUP_MAX_NUMBERS:
        # Softmax mode reads all of H (n×k): a long document would hold up the event loop.
        ranked = await asyncio.to_thread(rank_answers, model, state, Q, n_entities, body.top_k)
    else:
        # A k×k (or k) state answers in well under a millisecond: cheaper than a thread hop.
        ranked = rank_answers(model, state, Q, n_entities, body.top_k)
    metrics.lookup_seconds.labels(mode=mode).observe(time.perf_counter() - start)
    return answers_body(doc_id, mode, model.model_id, body.queries, record.entities, ranked)
