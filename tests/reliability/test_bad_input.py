"""Hand-written hostile input, at the default limits: every answer is a 4xx with the one
error envelope (never a 5xx, never a hang), and concurrent re-indexing of one id ends in a
consistent document."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import httpx
import pytest

from service.readers import load_models
from service.settings import Settings
from store.record import text_hash
from tests.redis_server import RedisProcess
from tests.reliability.corpus import encode_alone, make_documents, state_difference
from tests.service.conftest import wait_status
from tests.service.test_errors import assert_error
from tests.service.texts import HARBOUR, QUESTIONS

QUESTION = QUESTIONS["harbour"][0]
JSON = {"content-type": "application/json"}
TEN_MB = 10 * 1024 * 1024


async def indexed_harbour(client: httpx.AsyncClient) -> str:
    await client.post("/v1/documents", json={"id": "h", "text": HARBOUR})
    await wait_status(client, "h", "indexed")
    return "h"


async def test_empty_and_textless_documents(app_client: Any) -> None:
    async with app_client(modes=["linear"]) as client:
        assert_error(await client.post("/v1/documents", json={"text": ""}), 422)
        for blank in (" ", "\n\t \r\n", "\u3000"):
            response = await client.post("/v1/documents", json={"text": blank})
            assert_error(response, 400, "empty_text")
        # Text that is not blank but holds no words: accepted, then failed with a reason;
        # never stuck in `queued`.
        for i, text in enumerate(["\u200b\u200b", "...", "\x00", "@placeholder"]):
            response = await client.post("/v1/documents", json={"id": f"t{i}", "text": text})
            assert response.status_code == 202, response.text
        for i in range(4):
            deadline = time.monotonic() + 20
            while (info := (await client.get(f"/v1/documents/t{i}")).json())["status"] == "queued":
                assert time.monotonic() < deadline, info
                await asyncio.sleep(0.02)
            if info["status"] == "failed":
                assert info["error"]
                answer = await client.post(
                    f"/v1/documents/t{i}/answers", json={"queries": [QUESTION]}
                )
                assert_error(answer, 409, "not_indexed")
            else:
                assert info["status"] == "indexed"


async def test_ten_megabytes_is_refused_quickly_and_not_echoed(app_client: Any) -> None:
    async with app_client(modes=["linear"]) as client:
        doc_id = await indexed_harbour(client)
        huge = "word " * (TEN_MB // 5)
        cases = [
            ("/v1/documents", {"text": huge}, 413),
            ("/v1/documents", {"documents": [{"text": "Short."}, {"text": huge}]}, 413),
            (f"/v1/documents/{doc_id}/text", {"text": huge}, 413),
            (f"/v1/documents/{doc_id}/answers", {"queries": ["@placeholder " + huge]}, 422),
            ("/v1/documents", {"text": "Short.", "candidates": [huge]}, 422),
            # An extra field: the 422 repeats the input, but not 10 MB of it.
            ("/v1/documents", {"text": huge, "colour": "blue"}, 422),
        ]
        for path, body, status in cases:
            start = time.monotonic()
            response = await client.post(path, json=body)
            assert_error(response, status)
            assert len(response.content) < 10_000, (path, len(response.content))
            assert time.monotonic() - start < 10, path
        # Still serving.
        response = await client.post(
            f"/v1/documents/{doc_id}/answers", json={"queries": [QUESTION]}
        )
        assert response.status_code == 200


async def test_invalid_utf8_binary_junk_and_unencodable_json(app_client: Any) -> None:
    rng = random.Random(5)
    async with app_client(modes=["linear"]) as client:
        doc_id = await indexed_harbour(client)
        paths = ["/v1/documents", f"/v1/documents/{doc_id}/answers", f"/v1/documents/{doc_id}/text"]
        bodies = [
            b'{"text": "caf\xe9 \xff\xfe"}',  # invalid UTF-8 inside a JSON string
            b"\xff\xfe\x00{\x00",
            b'{"text": "\\ud800 lone surrogate"}',
            b'{"queries": ["@placeholder \\udc00"], "top_k": 1}',
            b'{"text": NaN}',
            b'{"queries": ["@placeholder"], "top_k": Infinity}',
            b'{"queries": ["@placeholder"], "top_k": 1e400}',
            b"[" * 50_000 + b"]" * 50_000,
            b"",
            b"null",
            *(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 4096))) for _ in range(10)),
        ]
        content_types = [
            "application/json",
            "application/octet-stream",
            "text/plain; charset=utf-8",
        ]
        for path in paths:
            for body in bodies:
                for content_type in content_types:
                    response = await client.post(
                        path, content=body, headers={"content-type": content_type}
                    )
                    assert 400 <= response.status_code < 500, (path, body[:40], response.text)
                    assert set(response.json()) == {"error"}, response.text
        # Junk in the path and the query string.
        for path in ("/v1/documents/%FF%FE", "/v1/documents/%ED%A0%80", "/v1/documents/a%00b"):
            assert_error(await client.get(path), 422)
        assert (await client.get(f"/v1/documents/{doc_id}?x=%FF")).status_code == 200


async def test_oversized_batches_and_query_lists(app_client: Any) -> None:
    async with app_client(modes=["linear"]) as client:
        settings = Settings()
        doc_id = await indexed_harbour(client)
        texts = list(make_documents(settings.max_batch_documents + 1, seed=2).values())
        too_many = {"documents": [{"text": t} for t in texts]}
        error = assert_error(await client.post("/v1/documents", json=too_many), 413)
        assert error["code"] == "batch_too_large"
        just_fits = {"documents": [{"text": t} for t in texts[:-1]]}
        assert (await client.post("/v1/documents", json=just_fits)).status_code == 202
        over = "x" * (settings.max_document_bytes + 1)
        one_over = {"documents": [{"text": "Fine."}, {"text": over}]}
        error = assert_error(await client.post("/v1/documents", json=one_over), 413)
        assert error["detail"]["index"] == 1
        queries = {"queries": [QUESTION] * (settings.max_queries + 1)}
        response = await client.post(f"/v1/documents/{doc_id}/answers", json=queries)
        assert_error(response, 413, "too_many_queries")


async def test_unknown_mode_bad_queries_and_top_k_out_of_range(app_client: Any) -> None:
    async with app_client(modes=["linear", "none"]) as client:
        url = f"/v1/documents/{await indexed_harbour(client)}/answers"
        for mode in ("cubic", "", "LINEAR", 3, ["linear"]):
            assert_error(await client.post(url, json={"queries": [QUESTION], "mode": mode}), 422)
        assert_error(
            await client.post(url, json={"queries": [QUESTION], "mode": "softmax"}),
            400,
            "mode_not_loaded",
        )
        for query in (
            "Tobias kept the lighthouse.",
            "@placeholder and @placeholder",
            "@place holder",
        ):
            assert_error(await client.post(url, json={"queries": [query]}), 400, "bad_query")
        for top_k in (0, -1, 1.5, "many", "5", True, None, [5]):
            assert_error(await client.post(url, json={"queries": [QUESTION], "top_k": top_k}), 422)
        for top_k in (Settings().max_top_k + 1, 10**30):
            response = await client.post(url, json={"queries": [QUESTION], "top_k": top_k})
            assert_error(response, 400, "top_k_too_large")
        ok = await client.post(url, json={"queries": [QUESTION], "top_k": Settings().max_top_k})
        assert ok.status_code == 200, ok.text


async def test_append_to_unknown_document(app_client: Any) -> None:
    async with app_client(modes=["linear"]) as client:
        response = await client.post("/v1/documents/nobody/text", json={"text": "More words."})
        assert_error(response, 404, "document_not_found")
        assert (await client.get("/v1/documents/nobody")).status_code == 404  # not created


@pytest.mark.parametrize("backend", ["embedded", "redis"])
async def test_concurrent_reindex_of_one_id_ends_consistent(
    app_client: Any, make_settings: Any, backend: str, tmp_path: Any
) -> None:
    """40 concurrent POSTs of one id (30 texts, some posted twice): all accepted; the document
    ends indexed with one of the texts, its state that text's, and the queue drained."""
    server = RedisProcess().start() if backend == "redis" else None
    url = server.url if server else ""
    try:
        # What is tested is the end state, not the store's deadline: with the worker encoding
        # in the same process on two busy cores, a 0.5 s Redis deadline was once missed (503).
        async with app_client(store_url=url, serve_worker=True, redis_timeout_s=5.0) as client:
            texts = list(make_documents(30, seed=9).values())
            posts = texts + texts[:10]
            random.Random(1).shuffle(posts)
            responses = await asyncio.gather(
                *(client.post("/v1/documents", json={"id": "same", "text": t}) for t in posts)
            )
            assert [r.status_code for r in responses] == [202] * len(posts)
            runtime = client.app.state.runtime
            deadline = time.monotonic() + 30
            while (await runtime.queue.depth()) > 0:
                assert time.monotonic() < deadline, "the queue never drained"
                await asyncio.sleep(0.05)
            info = await wait_status(client, "same", "indexed")
            by_hash = {text_hash(t): t for t in texts}
            assert info["text_hash"] in by_hash
            record = await runtime.store.get("same")
            want = encode_alone(load_models(make_settings()), by_hash[info["text_hash"]])
            for mode, state in record.states.items():
                assert state_difference(state, want[mode]) < 1e-5, mode
            # The same id and text again: already known, nothing enqueued.
            again = await client.post(
                "/v1/documents", json={"id": "same", "text": by_hash[info["text_hash"]]}
            )
            assert again.json()["documents"][0]["enqueued"] is False
    finally:
        if server is not None:
            server.cleanup()
