"""Liveness, readiness and Prometheus metrics (no API key: probes and scrapers call them)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from cheapqa_client.schemas import Health, Readiness
from service.deps import Runtime, RuntimeDep
from service.errors import error_response, error_responses
from service.indexing import queue_readers
from store.errors import StoreError
from store.queue.base import QueueUnavailable

log = logging.getLogger(__name__)

router = APIRouter(tags=["health"])


@router.get(
    "/healthz",
    response_model=Health,
    operation_id="healthz",
    summary="Liveness: 503 once loading the models has failed (restart the process)",
    responses=error_responses(503),
)
async def healthz(runtime: RuntimeDep) -> Health | JSONResponse:
    if runtime.models.error is not None:
        return error_response(503, "startup_failed", "loading the models failed; see the log")
    return Health(status="ok")


async def _workers(runtime: Runtime) -> int | None:
    """Workers that read the ingestion queue lately, this process's own included; None when
    unknown (the queue cannot tell, or did not answer within the timeout)."""
    own = int(runtime.worker_task is not None)
    others = None
    if runtime.queue is not None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(runtime.settings.redis_timeout_s):
                others = await queue_readers(runtime.settings, runtime.queue)
    if others is None:
        return own or None
    return max(own, others)


async def _store_answers(runtime: Runtime) -> bool:
    if runtime.store is None:
        return False
    try:
        async with asyncio.timeout(runtime.settings.redis_timeout_s):
            await runtime.store.ping()
        return True
    except (StoreError, TimeoutError) as exc:
        # The cause (an address, a file path) goes to the log, not into the answer.
        log.warning("readyz: store: %s", str(exc) or type(exc).__name__)
        return False


@router.get(
    "/readyz",
    response_model=Readiness,
    operation_id="readyz",
    summary="Readiness: the store answers and the models are loaded",
    responses=error_responses(503),
)
async def readyz(runtime: RuntimeDep) -> Readiness | JSONResponse:
    problem = "loading the models failed; see the log" if runtime.models.error else None
    # At once: the answer comes within one timeout when Redis hangs.
    store_ok, workers = await asyncio.gather(_store_answers(runtime), _workers(runtime))
    if not store_ok and runtime.store is not None:
        problem = problem or "store unavailable"
    readiness = Readiness(
        status="ready" if store_ok and runtime.models.by_mode else "not_ready",
        store=store_ok,
        models={mode: m.model_id for mode, m in runtime.models.by_mode.items()},
        worker=runtime.worker_task is not None,
        workers=workers,
    )
    if readiness.status != "ready":
        message = problem or ("models are loading" if store_ok else "store unavailable")
        return error_response(503, "not_ready", message, readiness.model_dump())
    return readiness


@router.get(
    "/metrics",
    operation_id="metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text"}},
)
async def metrics(runtime: RuntimeDep) -> Response:
    if runtime.queue is not None:
        # A scrape must not fail because the queue is down: the gauge keeps its last value.
        with contextlib.suppress(QueueUnavailable, TimeoutError):
            async with asyncio.timeout(runtime.settings.redis_timeout_s):
                runtime.metrics.ingest_queue_depth.set(await runtime.queue.depth())
    if runtime.batcher is not None:
        runtime.metrics.query_queue_depth.set(runtime.batcher.depth)
    return Response(runtime.metrics.render(), media_type=CONTENT_TYPE_LATEST)
