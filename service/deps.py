"""What handlers reach through dependencies: the app's runtime parts, set up by the lifespan."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from service.batcher import QueryBatcher
from service.errors import Unavailable
from service.ingest.queue import IngestQueue
from service.metrics import Metrics
from service.readers import LoadedModel
from service.settings import Settings
from store.base import DocumentStore


@dataclass
class Runtime:
    """Everything one app instance owns; the lifespan fills it in and tears it down."""

    settings: Settings
    metrics: Metrics
    store: DocumentStore | None = None
    queue: IngestQueue | None = None
    models: dict[str, LoadedModel] = field(default_factory=dict)
    batcher: QueryBatcher | None = None
    worker_task: asyncio.Task[None] | None = None
    worker_stop: asyncio.Event | None = None
    startup_error: str | None = None


async def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


async def get_settings(runtime: RuntimeDep) -> Settings:
    return runtime.settings


async def get_metrics(runtime: RuntimeDep) -> Metrics:
    return runtime.metrics


async def get_store(runtime: RuntimeDep) -> DocumentStore:
    if runtime.store is None:
        raise Unavailable("the store is not open", code="store_unavailable")
    return runtime.store


async def get_queue(runtime: RuntimeDep) -> IngestQueue:
    if runtime.queue is None:
        raise Unavailable("the ingestion queue is not open", code="queue_unavailable")
    return runtime.queue


async def get_models(runtime: RuntimeDep) -> dict[str, LoadedModel]:
    if not runtime.models:
        message = "the models failed to load" if runtime.startup_error else "the models are loading"
        raise Unavailable(message, code="not_ready")
    return runtime.models


async def get_batcher(runtime: RuntimeDep) -> QueryBatcher:
    if runtime.batcher is None:
        raise Unavailable("the query batcher is not running", code="not_ready")
    return runtime.batcher


@dataclass(frozen=True)
class AnswerContext:
    """What the answers route needs, resolved as one dependency: FastAPI solves every
    dependency of a route on every request, and this is the route that is called most."""

    settings: Settings
    store: DocumentStore
    models: dict[str, LoadedModel]
    batcher: QueryBatcher
    metrics: Metrics


async def get_answer_context(runtime: RuntimeDep) -> AnswerContext:
    return AnswerContext(
        settings=runtime.settings,
        store=await get_store(runtime),
        models=await get_models(runtime),
        batcher=await get_batcher(runtime),
        metrics=runtime.metrics,
    )


# The getters are `async def` on purpose: FastAPI runs plain `def` dependencies in a thread
# pool, a thread hop per getter per request.
SettingsDep = Annotated[Settings, Depends(get_settings)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
StoreDep = Annotated[DocumentStore, Depends(get_store)]
QueueDep = Annotated[IngestQueue, Depends(get_queue)]
ModelsDep = Annotated[dict[str, LoadedModel], Depends(get_models)]
BatcherDep = Annotated[QueryBatcher, Depends(get_batcher)]
AnswerContextDep = Annotated[AnswerContext, Depends(get_answer_context)]
