"""The load generator (what sends the load): index documents, wait for them, then drive
`answers` (and optionally a trivial endpoint) through the Python client
(`cheapqa_client.AsyncClient`: its requests, its connection pool, its headers), closed loop
or open loop, bounded by time and count. The measured requests go out once each
(`AsyncClient.send`: no retry, a 429 counts as a 429).

Closed loop: `concurrency` workers each send a request as soon as their last one ended, so the
offered load follows the server. Open loop: request i is due at start + i/rate whatever the
server does, and its latency counts from that due time, so a server that falls behind shows
the queueing its clients would see (no coordinated omission).
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import httpx

from bench.corpus import LoadDocument
from bench.report import PhaseResult, Ratio, ratios
from bench.spawn import process_cpu_seconds
from cheapqa_client.client import (
    ApiRequest,
    AsyncClient,
    CheapqaError,
    NewDocument,
    answers_request,
)


class LoadError(RuntimeError):
    """The service refused the setup (indexing, a first request) so no load could be run."""


@dataclass(frozen=True)
class LoadPlan:
    duration_s: float = 20.0  # per phase, after the warm-up
    max_requests: int = 100_000  # per phase
    concurrency: int = 8  # closed loop: workers; open loop: most requests in flight
    rate: float | None = None  # requests/s for an open loop; None: closed loop
    warmup_s: float = 2.0  # run before each phase, not counted
    top_k: int = 5

    @property
    def loop(self) -> str:
        if self.rate is None:
            return f"closed (concurrency {self.concurrency})"
        return f"open ({self.rate:g} req/s)"


@dataclass
class LoadReport:
    url: str
    plan: LoadPlan
    documents: list[dict[str, Any]]  # id, tokens as the service counted them, entities
    phases: list[PhaseResult] = field(default_factory=list)
    setup: dict[str, Any] = field(default_factory=dict)  # corpus, indexing time, server notes

    @property
    def ratios(self) -> list[Ratio]:
        return ratios(self.phases)

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "plan": {
                "duration_s": self.plan.duration_s,
                "max_requests": self.plan.max_requests,
                "concurrency": self.plan.concurrency,
                "rate": self.plan.rate,
                "warmup_s": self.plan.warmup_s,
                "loop": self.plan.loop,
            },
            "setup": self.setup,
            "documents": self.documents,
            "phases": [p.to_json() for p in self.phases],
            "ratios": {r.text: round(r.value, 3) for r in self.ratios},
        }


async def index_documents(
    client: AsyncClient, docs: Sequence[LoadDocument], timeout_s: float, batch: int = 8
) -> list[dict[str, Any]]:
    """POST the documents in batches, then poll until every one is indexed.

    Returns the service's view of each (id, tokens, entities); raises LoadError when one
    fails or the time runs out.
    """
    new = [NewDocument(d.text, d.id, d.candidates) for d in docs]
    try:
        done = await client.index_many(new, timeout_s, batch)
    except CheapqaError as exc:
        raise LoadError(f"indexing failed: {exc}") from exc
    failed = [f"{s.id}: {s.error}" for s in done if s.status != "indexed"]
    if failed:
        raise LoadError(f"documents were not indexed: {failed}")
    without = [s.id for s in done if not s.entities]
    if without:
        # The service answers such a document without a lookup: its timing would mislead.
        raise LoadError(f"no entities were found in {without}; use text with names in it")
    return [{"id": s.id, "tokens": s.tokens, "entities": s.entities} for s in done]


def answers_requests(
    docs: Sequence[LoadDocument], mode: str | None, queries_per_request: int, top_k: int
) -> Callable[[int], ApiRequest]:
    """Request i asks document i mod D the next `queries_per_request` of its questions."""
    if queries_per_request < 1:
        raise ValueError("queries_per_request must be at least 1")

    def make(i: int) -> ApiRequest:
        doc = docs[i % len(docs)]
        first = (i // len(docs)) * queries_per_request
        queries = [
            doc.questions[(first + j) % len(doc.questions)] for j in range(queries_per_request)
        ]
        return answers_request(doc.id, queries, mode, top_k)

    return make


def trivial_requests(path: str = "/healthz") -> Callable[[int], ApiRequest]:
    return lambda i: ApiRequest("GET", path)


async def probe(client: AsyncClient, request: ApiRequest) -> None:
    """One request before timing, so that a refused setup fails loudly rather than as a
    phase full of 4xx."""
    r = await client.send(request)
    if not r.is_success:
        raise LoadError(f"{request.method} {request.path} answered {r.status_code}: {r.text[:500]}")


async def _send(
    client: AsyncClient, request: ApiRequest, result: PhaseResult, since: float
) -> None:
    try:
        r = await client.send(request)
    except httpx.HTTPError as exc:  # timeouts, refused or dropped connections
        result.errors[type(exc).__name__] += 1
        return
    result.statuses[str(r.status_code)] += 1
    if r.is_success:
        result.latencies_ms.append((time.perf_counter() - since) * 1000.0)


async def _closed_loop(
    client: AsyncClient,
    make: Callable[[int], ApiRequest],
    plan: LoadPlan,
    result: PhaseResult,
    duration_s: float,
) -> None:
    start = time.perf_counter()
    deadline = start + duration_s
    counter = itertools.count()

    async def worker() -> None:
        while (now := time.perf_counter()) < deadline:
            i = next(counter)
            if i >= plan.max_requests:
                return
            await _send(client, make(i), result, now)

    await asyncio.gather(*(worker() for _ in range(plan.concurrency)))
    result.elapsed_s = time.perf_counter() - start


async def _open_loop(
    client: AsyncClient,
    make: Callable[[int], ApiRequest],
    plan: LoadPlan,
    result: PhaseResult,
    duration_s: float,
) -> None:
    assert plan.rate is not None and plan.rate > 0
    in_flight = asyncio.Semaphore(plan.concurrency)
    tasks: set[asyncio.Task[None]] = set()

    async def send(request: ApiRequest, due: float) -> None:
        try:
            await _send(client, request, result, due)
        finally:
            in_flight.release()

    start = time.perf_counter()
    for i in range(plan.max_requests):
        due = start + i / plan.rate
        if due >= start + duration_s:
            break
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        # At the cap the request waits here, and that wait is part of its latency.
        await in_flight.acquire()
        task = asyncio.create_task(send(make(i), due))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    await asyncio.gather(*tasks)
    result.elapsed_s = time.perf_counter() - start


async def _progress(result: PhaseResult, out: TextIO, every_s: float = 1.0) -> None:
    start = time.perf_counter()
    while True:
        await asyncio.sleep(every_s)
        t = time.perf_counter() - start
        recent = sorted(result.latencies_ms[-2000:])
        p50 = recent[len(recent) // 2] if recent else float("nan")
        failed = result.requests - result.ok
        out.write(
            f"\r  {result.label}: {t:5.1f}s  {result.requests} requests  "
            f"{result.ok / t:8.1f} req/s  p50 {p50:7.2f} ms  not ok {failed}   "
        )
        out.flush()


async def run_phase(
    client: AsyncClient,
    label: str,
    queries_per_request: int,
    make: Callable[[int], ApiRequest],
    plan: LoadPlan,
    progress: TextIO | None = sys.stderr,
    server_pid: int | None = None,
) -> PhaseResult:
    """Warm up, then drive `make(i)` requests for plan.duration_s or plan.max_requests."""
    drive = _closed_loop if plan.rate is None else _open_loop
    if plan.warmup_s > 0:
        warmup = PhaseResult(f"{label} (warm-up)", plan.loop, queries_per_request)
        await drive(client, make, plan, warmup, plan.warmup_s)
    result = PhaseResult(label, plan.loop, queries_per_request)
    ticker = asyncio.create_task(_progress(result, progress)) if progress else None
    client_cpu = time.process_time()
    server_cpu = None if server_pid is None else process_cpu_seconds(server_pid)
    try:
        await drive(client, make, plan, result, plan.duration_s)
        result.client_cpu_s = time.process_time() - client_cpu
        if server_pid is not None and server_cpu is not None:
            after = process_cpu_seconds(server_pid)
            result.server_cpu_s = None if after is None else after - server_cpu
    finally:
        if ticker is not None and progress is not None:
            ticker.cancel()
            progress.write("\n")
    return result


def client_for(
    url: str,
    plan: LoadPlan,
    timeout_s: float,
    api_key: str | None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> AsyncClient:
    """The Python client, with a connection pool as large as the load's concurrency."""
    limits = httpx.Limits(
        max_connections=plan.concurrency, max_keepalive_connections=plan.concurrency
    )
    return AsyncClient(url, api_key, timeout_s=timeout_s, transport=transport, limits=limits)


async def run_load(
    url: str,
    docs: Sequence[LoadDocument],
    modes: Sequence[str | None],
    queries_per_request: int,
    plan: LoadPlan,
    *,
    trivial_path: str | None = None,
    timeout_s: float = 30.0,
    index_timeout_s: float = 300.0,
    api_key: str | None = None,
    progress: TextIO | None = sys.stderr,
    transport: httpx.AsyncBaseTransport | None = None,
    server_pid: int | None = None,
) -> LoadReport:
    """Index `docs`, then one phase per mode on the same documents, then the trivial path.

    `transport` replaces the network (tests pass httpx.ASGITransport for an in-process app);
    `server_pid`, for a local server, adds its CPU time per phase to the report.
    """
    async with client_for(url, plan, timeout_s, api_key, transport) as client:
        started = time.perf_counter()
        indexed = await index_documents(client, docs, index_timeout_s)
        report = LoadReport(url, plan, indexed)
        report.setup["indexing_s"] = round(time.perf_counter() - started, 3)
        for mode in modes:
            make = answers_requests(docs, mode, queries_per_request, plan.top_k)
            await probe(client, make(0))
            label = f"answers {mode or 'default'}"
            report.phases.append(
                await run_phase(
                    client, label, queries_per_request, make, plan, progress, server_pid
                )
            )
        if trivial_path is not None:
            make = trivial_requests(trivial_path)
            await probe(client, make(0))
            label = f"GET {trivial_path}"
            report.phases.append(
                await run_phase(client, label, 0, make, plan, progress, server_pid)
            )
    return report
