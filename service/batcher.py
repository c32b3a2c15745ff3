"""Dynamic batching of query encoding, shared by every request of the app.

Requests put their questions on a bounded queue and await a future. One loop gathers jobs
until it holds `max_batch` questions or `max_wait_ms` has passed since the first, runs each
mode's query GRU once over them (on the event loop, or in a worker thread with `in_thread`:
on 2 cores the thread hop cost more than the freed loop gave, BENCHMARKS.md), and resolves
the futures. It waits for
company only while some request is on its way (announced with `coming()`: between its
arrival and its `encode`); with none, a batch runs at once instead of idling out the wait.
A full queue raises Overloaded (429) instead of growing without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch

from service.errors import Overloaded, Unavailable
from service.metrics import Metrics
from service.readers import LoadedModel

log = logging.getLogger(__name__)


@dataclass
class _Job:
    model: LoadedModel
    queries: Sequence[torch.Tensor | Sequence[int]]  # each question's token ids
    future: asyncio.Future[torch.Tensor] = field(repr=False)


class QueryBatcher:
    def __init__(
        self,
        max_batch: int,
        max_wait_ms: float,
        queue_size: int,
        metrics: Metrics | None = None,
        in_thread: bool = False,
    ) -> None:
        self.max_batch = max_batch
        self.in_thread = in_thread
        self.max_wait_s = max_wait_ms / 1000.0
        self._queue: asyncio.Queue[_Job] = asyncio.Queue(maxsize=queue_size)
        self._metrics = metrics
        self._task: asyncio.Task[None] | None = None
        self._coming = 0  # requests between arrival and encode (event-loop only, no lock)

    @property
    def depth(self) -> int:
        return self._queue.qsize()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="query-batcher")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        while not self._queue.empty():
            job = self._queue.get_nowait()
            if not job.future.done():
                job.future.set_exception(Unavailable("the service is shutting down"))

    @contextlib.contextmanager
    def coming(self) -> Iterator[None]:
        """Marks a request that will call `encode` soon (fetching its state, tokenising): a
        batch gathered meanwhile waits for it, up to max_wait_ms. Leave the block before
        calling encode."""
        self._coming += 1
        try:
            yield
        finally:
            self._coming -= 1

    async def encode(
        self, model: LoadedModel, queries: Sequence[torch.Tensor | Sequence[int]]
    ) -> torch.Tensor:
        """Query token ids -> their query vectors Q (m, k), batched with other requests."""
        if self._task is None:
            raise Unavailable("the query batcher is not running")
        future: asyncio.Future[torch.Tensor] = asyncio.get_running_loop().create_future()
        try:
            self._queue.put_nowait(_Job(model, queries, future))
        except asyncio.QueueFull:
            raise Overloaded(
                "too many queries waiting; retry later", {"queue_size": self._queue.maxsize}
            ) from None
        self._observe_depth()
        return await future

    def _observe_depth(self) -> None:
        if self._metrics is not None:
            self._metrics.query_queue_depth.set(self._queue.qsize())

    async def _gather(self) -> list[_Job]:
        jobs = [await self._queue.get()]
        size = len(jobs[0].queries)
        deadline = asyncio.get_running_loop().time() + self.max_wait_s
        while size < self.max_batch:
            if self._queue.empty():
                if self._coming == 0:  # nobody on the way: waiting would only add latency
                    break
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    break
                try:
                    job = await asyncio.wait_for(self._queue.get(), remaining)
                except TimeoutError:
                    break
            else:
                job = self._queue.get_nowait()
            jobs.append(job)
            size += len(job.queries)
        return jobs

    async def _loop(self) -> None:
        while True:
            jobs = await self._gather()
            self._observe_depth()
            # A client that went away leaves a cancelled future: skip its work.
            jobs = [j for j in jobs if not j.future.done()]
            if not jobs:
                continue
            if self._metrics is not None:
                self._metrics.query_batch_size.observe(sum(len(j.queries) for j in jobs))
            by_mode: dict[str, list[_Job]] = {}
            for job in jobs:
                by_mode.setdefault(job.model.mode, []).append(job)
            for group in by_mode.values():
                try:
                    if self.in_thread:
                        vectors = await asyncio.to_thread(_encode_group, group)
                    else:  # on the loop: a bounded batch, cheaper than two thread hops
                        vectors = _encode_group(group)
                except Exception as exc:  # the error belongs to these requests, not the loop
                    log.exception("query encoding failed")
                    for job in group:
                        if not job.future.done():
                            job.future.set_exception(exc)
                    continue
                for job, q in zip(group, vectors, strict=True):
                    if not job.future.done():
                        job.future.set_result(q)


def _encode_group(jobs: list[_Job]) -> list[torch.Tensor]:
    """Runs one mode's query GRU once over every question of the jobs; splits per job."""
    model = jobs[0].model
    flat = [q for job in jobs for q in job.queries]
    # Inference mode: the query vectors are only ever read by rank_answers (inference mode
    # too), so the reader hands them over without a copy; each job gets a view of its rows.
    with torch.inference_mode():
        Q = model.reader.encode_queries(flat)  # (sum m, k)
    return list(torch.split(Q, [len(job.queries) for job in jobs]))
