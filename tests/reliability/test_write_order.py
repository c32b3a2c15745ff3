"""Nothing acknowledged is lost or overwritten by an older write (issue 26: HIGH 1 and 2, and
identical re-POSTs while indexing).

Each test builds one interleaving on purpose: a step of one request is held at a gate (a
store or queue call of the running app, wrapped) while another request or the worker runs to
its end, then released. A document accepted with 202 `enqueued: true` must end as that text,
unless a later write replaced it: the outcome is always one of the serial orders.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from service.ingest.worker import IngestWorker
from store.base import DocumentStore
from store.queue.base import IngestQueue
from tests.service.conftest import wait_status
from tests.service.texts import APPENDIX, HARBOUR, ORCHARD


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def parts(client: httpx.AsyncClient) -> tuple[Any, DocumentStore, IngestQueue, dict[str, Any]]:
    """(settings, store, queue, models) of the app behind the test client."""
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    return runtime.settings, runtime.store, runtime.queue, runtime.models.by_mode


class Gate:
    """Holds the first call that reaches it until `open()`; `reached` says a call waits."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self._open = asyncio.Event()
        self._used = False

    async def hold(self) -> None:
        if self._used:
            return
        self._used = True
        self.reached.set()
        await asyncio.wait_for(self._open.wait(), 30)

    def open(self) -> None:
        self._open.set()

    async def wait_reached(self) -> None:
        await asyncio.wait_for(self.reached.wait(), 20)


def hold_before(
    target: Any, name: str, gate: Gate, when: Callable[..., bool]
) -> Callable[[], None]:
    """Wraps target.name so that the first call `when` picks waits at the gate first;
    returns the undo."""
    real = getattr(target, name)

    async def wrapped(*args: Any, **kw: Any) -> Any:
        if when(*args, **kw):
            await gate.hold()
        return await real(*args, **kw)

    setattr(target, name, wrapped)
    return lambda: setattr(target, name, real)


def hold_after(target: Any, name: str, gate: Gate, when: Callable[..., bool]) -> Callable[[], None]:
    """As hold_before, but the call runs first and its caller waits at the gate after it."""
    real = getattr(target, name)

    async def wrapped(*args: Any, **kw: Any) -> Any:
        result = await real(*args, **kw)
        if when(*args, **kw):
            await gate.hold()
        return result

    setattr(target, name, wrapped)
    return lambda: setattr(target, name, real)


def always(*args: Any, **kw: Any) -> bool:
    return True


async def post(client: httpx.AsyncClient, doc_id: str, text: str) -> httpx.Response:
    return await client.post("/v1/documents", json={"id": doc_id, "text": text})


async def drain(client: httpx.AsyncClient, timeout_s: float = 20.0) -> None:
    """A worker of the test's own indexes what the queue holds, until it is empty."""
    settings, store, queue, models = parts(client)
    worker = IngestWorker(settings, store, queue, models, consumer="drain")
    deadline = asyncio.get_running_loop().time() + timeout_s
    while await queue.depth() > 0:
        assert asyncio.get_running_loop().time() < deadline, "the queue never drained"
        deliveries = await queue.read("drain", 16, 50)
        if deliveries:
            await worker.process(deliveries)


@asynccontextmanager
async def indexed(app_client: Any, store_url: str, doc_id: str, text: str, **settings: Any):
    """The app, without a worker of its own, with `doc_id` indexed as `text`."""
    async with app_client(
        modes=["linear"], store_url=store_url, serve_worker=False, **settings
    ) as client:
        assert (await post(client, doc_id, text)).status_code == 202
        await drain(client)
        await wait_status(client, doc_id, "indexed", timeout_s=1)
        yield client


# --- HIGH 1: an append racing a re-POST ---------------------------------------------------


@pytest.mark.parametrize("held", ["before_enqueue", "after_enqueue"])
async def test_append_landing_inside_a_repost_keeps_the_repost(
    app_client: Any, store_url: str, held: str
) -> None:
    """The re-POST of B has read the indexed record A; the append (over A's hash) lands
    before the re-POST enqueues its job, or between the enqueue and the marking of the
    record. Serial order: append, then POST: the document must end as B, indexed."""
    async with indexed(app_client, store_url, "d", HARBOUR) as client:
        _, _, queue, _ = parts(client)
        gate = Gate()
        hold = hold_before if held == "before_enqueue" else hold_after
        undo = hold(queue, "enqueue", gate, always)
        try:
            repost = asyncio.create_task(post(client, "d", ORCHARD))
            await gate.wait_reached()
            appended = await client.post(
                "/v1/documents/d/text", json={"text": APPENDIX, "expected_text_hash": sha(HARBOUR)}
            )
            assert appended.status_code == 200, appended.text
            gate.open()
            accepted = await repost
        finally:
            undo()
        assert accepted.status_code == 202, accepted.text
        assert accepted.json()["documents"][0]["enqueued"] is True
        await drain(client)
        info = await wait_status(client, "d", "indexed", timeout_s=1)
        assert info["text_hash"] == sha(ORCHARD), "the acknowledged re-POST was dropped"


async def test_repost_landing_inside_an_append_fails_the_append(
    app_client: Any, store_url: str
) -> None:
    """The append has read A and extended its state; the re-POST of B is accepted (and may be
    indexed) before the append writes. Serial order: POST, then append over A's hash: the
    append is refused (412, or 409 to retry) and the document ends as B."""
    async with indexed(app_client, store_url, "d", HARBOUR) as client:
        _, store, _, _ = parts(client)
        gate = Gate()
        # The append's write: an indexed record of neither A nor B.
        undo = hold_before(
            store, "put", gate,
            lambda record, **kw: record.status == "indexed"
            and record.text_hash not in (sha(HARBOUR), sha(ORCHARD)),
        )  # fmt: skip
        try:
            append = asyncio.create_task(
                client.post(
                    "/v1/documents/d/text",
                    json={"text": APPENDIX, "expected_text_hash": sha(HARBOUR)},
                )
            )
            await gate.wait_reached()
            accepted = await post(client, "d", ORCHARD)
            assert accepted.status_code == 202, accepted.text
            gate.open()
            appended = await append
        finally:
            undo()
        assert appended.status_code in (409, 412), appended.text
        await drain(client)
        info = await wait_status(client, "d", "indexed", timeout_s=1)
        assert info["text_hash"] == sha(ORCHARD)


# --- HIGH 2: a redelivered job after A -> B -> A --------------------------------------------


async def test_redelivered_old_job_never_overwrites_a_newer_document(
    app_client: Any, store_url: str
) -> None:
    """A indexed; B posted and taken by a worker that dies while encoding it (its entry stays
    leased); A posted again and indexed; then B's lease runs out and B is delivered again.
    The record holds A's text hash again (A -> B -> A): only a version that grows tells B's
    job is old. The document must stay A."""
    # B's lease must outlast the steps before it runs out, on a busy machine too.
    async with app_client(
        modes=["linear"], store_url=store_url, serve_worker=False, ingest_claim_idle_ms=3000
    ) as client:
        settings, store, queue, models = parts(client)
        worker = IngestWorker(settings, store, queue, models, consumer="alive")

        async def work_once(timeout_s: float = 20.0) -> list[str]:
            deadline = asyncio.get_running_loop().time() + timeout_s
            while True:
                deliveries = await queue.read("alive", 16, 50)
                if deliveries:
                    await worker.process(deliveries)
                    return [d.job.text_hash for d in deliveries]
                assert asyncio.get_running_loop().time() < deadline, "nothing delivered"

        assert (await post(client, "d", HARBOUR)).status_code == 202
        await work_once()
        await wait_status(client, "d", "indexed", timeout_s=1)
        assert (await post(client, "d", ORCHARD)).status_code == 202
        dying = await queue.read("dying", 16, 200)  # B, in the hand of a worker that dies
        assert [d.job.text_hash for d in dying] == [sha(ORCHARD)]
        again = await post(client, "d", HARBOUR)
        assert again.status_code == 202 and again.json()["documents"][0]["enqueued"] is True
        assert await work_once() == [sha(HARBOUR)]
        assert (await wait_status(client, "d", "indexed", timeout_s=1))["text_hash"] == sha(HARBOUR)
        assert await work_once() == [sha(ORCHARD)]  # B's lease ran out: delivered again
        info = await wait_status(client, "d", "indexed", timeout_s=1)
        assert info["text_hash"] == sha(HARBOUR), "an old job overwrote the newer document"
        assert await queue.depth() == 0


# --- LOW: identical re-POSTs while the document is being indexed --------------------------


async def test_identical_repost_while_indexing_keeps_the_indexed_state(
    app_client: Any, store_url: str
) -> None:
    """A re-POST of the same text reads the record `queued`; the worker indexes it and acks
    before the re-POST goes on. The re-POST must not enqueue again, nor mark the indexed
    record queued (dropping its state)."""
    async with app_client(
        modes=["linear"], store_url=store_url, serve_worker=False, ingest_claim_idle_ms=300
    ) as client:
        settings, store, queue, models = parts(client)
        worker = IngestWorker(settings, store, queue, models, consumer="alive")
        assert (await post(client, "d", HARBOUR)).status_code == 202
        gate = Gate()
        undo = hold_after(store, "get_many", gate, always)  # the re-POST's read of the record
        try:
            repost = asyncio.create_task(post(client, "d", HARBOUR))
            await gate.wait_reached()
            deliveries = await queue.read("alive", 16, 200)
            await worker.process(deliveries)
            gate.open()
            accepted = await repost
        finally:
            undo()
        assert accepted.status_code == 202, accepted.text
        assert accepted.json()["documents"][0]["enqueued"] is False
        assert (await client.get("/v1/documents/d")).json()["status"] == "indexed"
        assert await queue.depth() == 0
