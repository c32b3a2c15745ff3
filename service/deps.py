"""What handlers reach through dependencies: the serving objects and runtime parts that the
app's lifespan builds once (vLLM-style: routes parse, call one method, return)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from service.answering import AnswerService
from service.batcher import QueryBatcher
from service.indexing import IndexingService
from service.metrics import Metrics
from service.readers import LoadedModel, ServedModels
from service.settings import Settings
from store.base import DocumentStore
from store.queue.base import IngestQueue


@dataclass
class Runtime:
    """Everything one app instance owns; the lifespan fills it in and tears it down."""

    settings: Settings
    metrics: Metrics
    models: ServedModels = field(default_factory=ServedModels)
    store: DocumentStore | None = None
    queue: IngestQueue | None = None
    batcher: QueryBatcher | None = None
    worker_task: asyncio.Task[None] | None = None
    worker_stop: asyncio.Event | None = None


# The getters are `async def` on purpose: FastAPI runs plain `def` dependencies in a thread
# pool, a thread hop per getter per request.
async def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


async def get_answering(request: Request) -> AnswerService:
    answering: AnswerService = request.app.state.answering
    return answering


async def get_indexing(request: Request) -> IndexingService:
    indexing: IndexingService = request.app.state.indexing
    return indexing


async def get_models(request: Request) -> dict[str, LoadedModel]:
    """The loaded models; 503 while they load."""
    runtime: Runtime = request.app.state.runtime
    return runtime.models.ready()


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
AnsweringDep = Annotated[AnswerService, Depends(get_answering)]
IndexingDep = Annotated[IndexingService, Depends(get_indexing)]
ModelsDep = Annotated[dict[str, LoadedModel], Depends(get_models)]
