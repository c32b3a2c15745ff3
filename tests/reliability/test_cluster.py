"""Redis Cluster: a three-master cluster on loopback ports runs the store's contract suite
(the same tests as tests/store/test_contract.py, with a cluster-backed `store`) and an
index-and-answer round trip through the app, its Redis Stream queue and its worker."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from encoder.model.modes import MODES
from store.base import DocumentStore
from store.factory import open_store
from tests.cluster import RedisClusterProcesses
from tests.reliability.corpus import make_documents
from tests.service.conftest import wait_status
from tests.service.helpers import assert_matches_forward, forward_probabilities, load
from tests.service.texts import DOCUMENTS, QUESTIONS
from tests.store import test_contract

pytestmark = pytest.mark.slow

# The contract suite, collected again in this module: its `store` is the cluster one below.
for _name, _test in vars(test_contract).items():
    if _name.startswith("test_") and callable(_test):
        globals()[_name] = _test


@pytest.fixture(scope="module")
def redis_cluster() -> Iterator[RedisClusterProcesses]:
    cluster = RedisClusterProcesses().start()
    try:
        yield cluster
    finally:
        cluster.cleanup()


@pytest.fixture
async def store(
    redis_cluster: RedisClusterProcesses, tmp_path: Path
) -> AsyncIterator[DocumentStore]:
    redis_cluster.flush()
    opened = open_store(redis_cluster.url, data_dir=tmp_path, key_prefix="cheapqa-test")
    try:
        yield opened
    finally:
        await opened.close()
        redis_cluster.flush()


async def test_index_and_answer_on_the_cluster(
    redis_cluster: RedisClusterProcesses, app_client: Any, checkpoint_dir: Path
) -> None:
    redis_cluster.flush()
    filler = make_documents(30, seed=13)
    async with app_client(store_url=redis_cluster.url, serve_worker=True) as client:
        documents = [{"id": i, "text": t} for i, t in [*DOCUMENTS.items(), *filler.items()]]
        response = await client.post("/v1/documents", json={"documents": documents})
        assert response.status_code == 202, response.text
        for doc in documents:
            info = await wait_status(client, doc["id"], "indexed")
            assert info["modes"] == sorted(MODES)
        for mode in MODES:
            ckpt = load(checkpoint_dir, mode)
            for doc_id, questions in QUESTIONS.items():
                response = await client.post(
                    f"/v1/documents/{doc_id}/answers",
                    json={"queries": questions, "mode": mode, "top_k": 3},
                )
                assert response.status_code == 200, response.text
                expected = [forward_probabilities(ckpt, DOCUMENTS[doc_id], q) for q in questions]
                assert_matches_forward(response.json(), expected, top_k=3, tol=1e-3)
        # Append and delete work on the cluster too.
        response = await client.post("/v1/documents/harbour/text", json={"text": "Tobias waved."})
        assert response.status_code == 200, response.text
        assert (await client.delete("/v1/documents/orchard")).status_code == 204
        assert (await client.get("/v1/documents/orchard")).status_code == 404
        # The documents really are spread over the masters.
        per_node = redis_cluster.keys_per_node()
        assert sum(1 for n in per_node if n > 0) == 3, per_node
        deadline = time.monotonic() + 10
        while await client.app.state.runtime.queue.depth() > 0:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
