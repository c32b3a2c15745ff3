"""Memory follows a budget, not the number of requests (issue 26, HIGH 4).

Answers hold decoded states: requests for the same document share one, and the states of
all answers in flight stay within `answer_states_max_bytes` (past it: 429 with Retry-After).
The worker's encoder calls stay within `ingest_max_batch_tokens` (a longer document alone).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from service.ingest import worker as worker_module
from service.ingest.worker import IngestWorker
from tests.service.conftest import wait_status
from tests.service.texts import HARBOUR, ORCHARD

QUESTION = "@placeholder kept the lighthouse on Gull Rock."
IDS = ["m0", "m1", "m2"]


async def ask(client: httpx.AsyncClient, doc_id: str) -> httpx.Response:
    return await client.post(
        f"/v1/documents/{doc_id}/answers", json={"queries": [QUESTION], "mode": "softmax"}
    )


async def softmax_state_bytes(app_client: Any) -> int:
    """Indexes the three documents (one text, so one state size) in the test's data dir."""
    async with app_client(modes=["softmax"], default_mode="softmax") as client:
        body = {"documents": [{"id": doc_id, "text": HARBOUR} for doc_id in IDS]}
        assert (await client.post("/v1/documents", json=body)).status_code == 202
        sizes = [(await wait_status(client, i, "indexed"))["bytes_stored"]["softmax"] for i in IDS]
    return max(sizes)


async def test_answers_in_flight_stay_within_the_state_budget(app_client: Any) -> None:
    size = await softmax_state_bytes(app_client)
    # One state fits, two do not; the batcher waits until all questions are in, so every
    # request holds its state at the same time.
    async with app_client(
        modes=["softmax"], default_mode="softmax", answer_states_max_bytes=int(1.5 * size),
        query_max_wait_ms=400, query_max_batch=64,
    ) as client:  # fmt: skip
        # Ten requests for one document share its state: all answer.
        same = await asyncio.gather(*(ask(client, "m0") for _ in range(10)))
        assert [r.status_code for r in same] == [200] * 10, [r.text for r in same]
        # Two for each of three documents: the budget holds one state at a time.
        mixed = await asyncio.gather(*(ask(client, doc_id) for doc_id in IDS * 2))
        statuses = sorted(r.status_code for r in mixed)
        assert set(statuses) <= {200, 429}, [r.text for r in mixed]
        assert 429 in statuses, "six answers over three states ignored the budget"
        assert 200 in statuses
        for r in mixed:
            if r.status_code == 429:
                assert r.json()["error"]["code"] == "answer_states_full"
                assert int(r.headers["retry-after"]) >= 1
        # Once those are done, the budget is free again.
        assert (await ask(client, "m1")).status_code == 200
        assert client.app.state.answering.states.bytes == 0  # type: ignore[attr-defined]


async def test_worker_encoder_calls_stay_within_the_token_budget(
    app_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[int]] = []
    real = worker_module.encode_group

    def recording(models: Any, token_lists: Any) -> Any:
        calls.append([len(tokens) for tokens in token_lists])
        return real(models, token_lists)

    monkeypatch.setattr(worker_module, "encode_group", recording)
    async with app_client(
        modes=["linear"], serve_worker=False, ingest_max_batch_tokens=300
    ) as client:
        texts = [HARBOUR, ORCHARD, HARBOUR + " " + ORCHARD, ORCHARD, HARBOUR]
        body = {"documents": [{"id": f"t{i}", "text": t} for i, t in enumerate(texts)]}
        assert (await client.post("/v1/documents", json=body)).status_code == 202
        runtime = client.app.state.runtime  # type: ignore[attr-defined]
        worker = IngestWorker(
            runtime.settings, runtime.store, runtime.queue, runtime.models.by_mode, consumer="w"
        )
        deliveries = await runtime.queue.read("w", 16, 200)
        assert len(deliveries) == len(texts)
        await worker.process(deliveries)
        for i in range(len(texts)):
            await wait_status(client, f"t{i}", "indexed", timeout_s=1)
    assert sum(len(c) for c in calls) == len(texts)
    for lengths in calls:
        assert len(lengths) == 1 or sum(lengths) <= 300, calls
