"""The FastAPI app: `create_app(settings)`; nothing heavy happens at import time.

The lifespan opens the store and the ingestion queue, starts the query batcher, loads the
models in a thread (so /healthz answers at once and /readyz says 503 until they are in), and,
with the embedded store (or `serve_worker`), runs the ingestion worker in this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator

from fastapi import FastAPI
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.answering import AnswerService
from service.batcher import QueryBatcher
from service.deps import Runtime
from service.errors import install_error_handlers
from service.guard import RequestGuard, check_exposure
from service.http_protocol import MAX_HEAD_BYTES, PROTOCOL
from service.indexing import IndexingService
from service.ingest.worker import IngestWorker
from service.metrics import Metrics
from service.readers import load_models
from service.routers import answers, documents, health, models, page
from service.settings import Settings
from store.base import DocumentStore
from store.bounded import BoundedStore
from store.errors import StoreUnavailable
from store.factory import is_embedded, open_queue, open_settings_store
from store.queue.base import IngestQueue

log = logging.getLogger(__name__)


class LatencyMiddleware:
    """Observes each request's latency under its route template, and tells the client the
    time so far in a `Server-Timing` header (pure ASGI: no extra task per request, unlike
    BaseHTTPMiddleware)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_and_note_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                # The server's own time, for clients that show it (the demo page does).
                elapsed_ms = (time.perf_counter() - start) * 1000.0
                MutableHeaders(scope=message).append("server-timing", f"app;dur={elapsed_ms:.2f}")
            await send(message)

        try:
            await self.app(scope, receive, send_and_note_status)
        finally:
            # The router writes the matched route into the scope it shares with us.
            template = getattr(scope.get("route"), "path", "unmatched")
            self.metrics.request_seconds.labels(
                method=scope["method"], route=template, status=str(status)
            ).observe(time.perf_counter() - start)


def runs_worker(settings: Settings) -> bool:
    if settings.serve_worker is not None:
        return settings.serve_worker
    return is_embedded(settings.store_url)


async def _load_models_then_start_worker(
    runtime: Runtime, store: DocumentStore, queue: IngestQueue
) -> None:
    settings = runtime.settings
    try:
        runtime.models.by_mode = await asyncio.to_thread(load_models, settings)
    except Exception as exc:
        runtime.models.error = f"loading the models failed: {type(exc).__name__}: {exc}"
        log.error(runtime.models.error)
        return
    if runs_worker(settings):
        runtime.worker_stop = asyncio.Event()
        worker = IngestWorker(settings, store, queue, runtime.models.by_mode, runtime.metrics)
        runtime.worker_task = asyncio.create_task(
            worker.run(runtime.worker_stop), name="ingest-worker"
        )


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    runtime: Runtime = app.state.runtime
    settings = runtime.settings
    # Requests answer within redis_timeout_s even when Redis hangs (Redis connects lazily, so
    # one that is down now does not stop the app starting).
    store = runtime.store = open_settings_store(settings, bounded=True)
    try:
        await store.check_setup()  # an evicting Redis: the app refuses to start
    except StoreUnavailable as exc:
        log.warning("could not check the store's setup at start-up: %s", exc)
    except BaseException:
        await store.close()
        raise
    queue = runtime.queue = open_queue(settings)
    batcher = runtime.batcher = QueryBatcher(
        settings.query_max_batch,
        settings.query_max_wait_ms,
        settings.query_queue_size,
        runtime.metrics,
        in_thread=settings.query_encoder_thread,
    )
    batcher.start()
    # The serving objects, built once: the routes reach them through service/deps.py.
    app.state.indexing = IndexingService(
        settings, store, queue, runtime.models, runs_worker=runs_worker(settings)
    )
    app.state.answering = AnswerService(settings, store, runtime.models, batcher, runtime.metrics)
    # The worker keeps the store without the deadline: writing a large state may rightly
    # take longer.
    worker_store = store.inner if isinstance(store, BoundedStore) else store
    loader = asyncio.create_task(
        _load_models_then_start_worker(runtime, worker_store, queue), name="load-models"
    )
    try:
        if settings.workers > 1:
            # Processes share the port: one still loading would take connections from the
            # kernel and answer them 503 while a sibling is ready. Loading before uvicorn
            # listens leaves every connection to the processes that can answer it.
            await loader
        yield
    finally:
        loader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loader
        if runtime.worker_task is not None and runtime.worker_stop is not None:
            # Finish the batch in hand, then stop; un-acked work is delivered again later.
            runtime.worker_stop.set()
            with contextlib.suppress(Exception):
                await runtime.worker_task
        await batcher.stop()
        await asyncio.to_thread(app.state.answering.close)
        await queue.close()
        await store.close()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    app = FastAPI(
        title="cheapqa",
        version="1",
        summary="Cloze question answering over documents kept as fixed-size states.",
        lifespan=lifespan,
    )
    runtime = Runtime(settings=settings, metrics=Metrics())
    app.state.runtime = runtime
    install_error_handlers(app)
    app.include_router(documents.router)
    app.include_router(answers.router)
    app.include_router(models.router)
    app.include_router(health.router)
    app.include_router(page.router)
    app.mount("/static", page.static_files(), name="static")

    # The guard (key, body size and pace) runs before any body is read; the latency
    # middleware, outermost, sees its answers too. Inside both, the answers fast lane.
    app.add_middleware(answers.AnswersFastLane)
    app.add_middleware(RequestGuard, settings=settings)
    app.add_middleware(LatencyMiddleware, metrics=runtime.metrics)
    return app


def serve(settings: Settings, log_level: str = "info") -> None:
    """Serves the API until SIGTERM or SIGINT (`cheapqa serve`). With `workers` > 1, uvicorn
    starts that many processes, each building its app from the environment (`create_app()`
    reads CHEAPQA_*), so the settings in force here are written back to it first."""
    import uvicorn

    check_exposure(settings)
    if settings.workers > 1:
        os.environ.update(CHEAPQA_HOST=settings.host, CHEAPQA_PORT=str(settings.port))
    uvicorn.run(
        create_app(settings) if settings.workers == 1 else "service.app:create_app",
        factory=settings.workers > 1,
        workers=settings.workers,
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        # A connection must deliver its request head within header_timeout_s of opening or
        # of its last response (the protocol's deadline; uvicorn's keep-alive time is the
        # same), so idle sockets are dropped. The concurrency limit is the guard's: requests
        # in flight, not connections (uvicorn's limit_concurrency counted idle sockets too).
        http=PROTOCOL,
        timeout_keep_alive=settings.header_timeout_s,
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        # SIGTERM: stop accepting, finish requests, then the lifespan lets the worker finish
        # its batch.
        timeout_graceful_shutdown=30,
    )
