"""Every error status the API promises, each with the one JSON envelope."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.spawn import free_port
from tests.service.conftest import AppClient, wait_status
from tests.service.helpers import build_checkpoints
from tests.service.texts import HARBOUR, ORCHARD, QUESTIONS

QUESTION = QUESTIONS["harbour"][0]


def assert_error(response: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    error: dict[str, Any] = body["error"]
    assert set(error) == {"code", "message", "detail"}
    assert isinstance(error["message"], str) and error["message"]
    if code is not None:
        assert error["code"] == code
    return error


async def test_400_and_422_bad_input(app_client: AppClient) -> None:
    async with app_client(modes=["linear"]) as client:
        await client.post("/v1/documents", json={"id": "h", "text": HARBOUR})
        await wait_status(client, "h", "indexed")
        url = "/v1/documents/h/answers"
        no_placeholder = await client.post(url, json={"queries": ["Tobias kept the light."]})
        assert "placeholder" in assert_error(no_placeholder, 400, "bad_query")["message"]
        # One bad question among good ones is reported in its own result; the rest are answered.
        two = await client.post(url, json={"queries": [QUESTION, "@placeholder @placeholder"]})
        assert two.status_code == 200, two.text
        good, bad = two.json()["results"]
        assert good["error"] is None and good["answers"]
        assert bad["answers"] == [] and bad["cloze"] == "@placeholder @placeholder"
        assert bad["error"]["code"] == "bad_query" and "exactly one" in bad["error"]["message"]
        # When none can be asked, the request is refused, each question's error in its detail.
        none = await client.post(url, json={"queries": ["Tobias kept it.", "What did he keep?"]})
        error = assert_error(none, 400, "bad_query")
        assert error["message"].startswith("query 0: ") and "; query 1: " in error["message"]
        assert len(error["detail"]["errors"]) == 2
        not_loaded = await client.post(url, json={"queries": [QUESTION], "mode": "gated"})
        assert assert_error(not_loaded, 400, "mode_not_loaded")["detail"] == {"loaded": ["linear"]}
        assert_error(
            await client.post(url, json={"queries": [QUESTION], "top_k": 1000}),
            400,
            "top_k_too_large",
        )
        blank = await client.post("/v1/documents", json={"text": "   "})
        assert_error(blank, 400, "empty_text")
        dup = await client.post(
            "/v1/documents",
            json={"documents": [{"id": "x", "text": HARBOUR}, {"id": "x", "text": ORCHARD}]},
        )
        assert_error(dup, 400, "duplicate_id")

        bodies: list[dict[str, Any]] = [
            {},
            {"text": ""},
            {"text": "hi", "colour": "blue"},
            {"documents": []},
            {"id": "bad id/with slash", "text": "hi"},
        ]
        for body in bodies:
            assert_error(await client.post("/v1/documents", json=body), 422, "validation_error")
        # A 422 says which field and why, about the form the body was written as only.
        cases = [
            (
                client.post("/v1/documents", json={"id": "bad id!", "text": "hi"}),
                "id: an id is 1 to 128 letters, digits or ._:- (starting with a letter or digit)",
            ),
            (client.post("/v1/documents", json={"text": ""}), "text: String should have at"),
            (
                client.post(
                    "/v1/documents", json={"documents": [{"text": "a"}, {"id": "b/c", "text": "b"}]}
                ),
                "documents[1].id: an id is 1 to 128",
            ),
            (client.get("/v1/documents/bad%20id"), "path parameter doc_id: an id is 1 to 128"),
            (client.get("/v1/documents?limit=0"), "query parameter limit: Input should be greater"),
        ]
        for request, message in cases:
            error = assert_error(await request, 422, "validation_error")
            assert error["message"].startswith(message) and len(error["detail"]) == 1, error
        two = await client.post(url, json={"queries": [""], "top_k": "5"})
        message = assert_error(two, 422, "validation_error")["message"]
        assert message.startswith("queries[0]: String should have at least 1 character; top_k: ")
        assert_error(await client.post(url, json={"queries": []}), 422, "validation_error")
        long_query = {"queries": ["@placeholder " + "word " * 1000]}
        assert_error(await client.post(url, json=long_query), 422, "validation_error")
        assert_error(await client.post(url, json={"queries": [QUESTION], "mode": "cosine"}), 422)
        not_json = await client.post(
            "/v1/documents", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert_error(not_json, 422, "validation_error")


async def test_401_when_api_keys_are_set(app_client: AppClient) -> None:
    async with app_client(modes=["linear"], api_keys=["k-one", "k-two"]) as client:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic k-one"}):
            response = await client.get("/v1/documents/x", headers=headers)
            assert_error(response, 401, "unauthorized")
            assert response.headers["www-authenticate"] == "Bearer"
        response = await client.post("/v1/documents", json={"text": HARBOUR})
        assert_error(response, 401)
        ok = {"Authorization": "Bearer k-two"}
        assert (await client.get("/v1/documents/x", headers=ok)).status_code == 404
        response = await client.post("/v1/documents", json={"id": "h", "text": HARBOUR}, headers=ok)
        assert response.status_code == 202
        # Indexed first: on a loaded machine the embedded store's ping can queue behind the
        # worker's write for longer than the probe's timeout.
        await wait_status(client, "h", "indexed", headers=ok)
        # Probes and scrapers need no key.
        assert (await client.get("/healthz")).status_code == 200
        assert (await client.get("/readyz")).status_code == 200
        assert (await client.get("/metrics")).status_code == 200


async def test_404_unknown_document_route_and_405(app_client: AppClient) -> None:
    async with app_client(modes=["linear"]) as client:
        assert_error(await client.get("/v1/documents/nope"), 404, "document_not_found")
        assert_error(await client.delete("/v1/documents/nope"), 404, "document_not_found")
        assert_error(
            await client.post("/v1/documents/nope/text", json={"text": "More."}),
            404,
            "document_not_found",
        )
        assert_error(await client.get("/v1/nothing-here"), 404, "not_found")
        assert_error(await client.put("/v1/documents/nope"), 405, "method_not_allowed")


async def test_409_not_yet_indexed(app_client: AppClient) -> None:
    # No worker: the document stays queued.
    async with app_client(modes=["linear"], serve_worker=False) as client:
        await client.post("/v1/documents", json={"id": "q", "text": HARBOUR})
        assert (await client.get("/v1/documents/q")).json()["status"] == "queued"
        answers = await client.post("/v1/documents/q/answers", json={"queries": [QUESTION]})
        assert assert_error(answers, 409, "not_indexed")["detail"]["status"] == "queued"
        append = await client.post("/v1/documents/q/text", json={"text": "More."})
        assert_error(append, 409, "not_indexed")


async def test_409_indexed_by_another_model(app_client: AppClient, tmp_path: Path) -> None:
    async with app_client(modes=["linear"]) as client:
        await client.post("/v1/documents", json={"id": "h", "text": HARBOUR})
        await wait_status(client, "h", "indexed")
    # Same data directory, other weights: the stored state is not this model's.
    other = build_checkpoints(tmp_path / "other-checkpoints", seed=1)
    async with app_client(modes=["linear"], checkpoint_dir=other, serve_worker=False) as client:
        answers = await client.post("/v1/documents/h/answers", json={"queries": [QUESTION]})
        error = assert_error(answers, 409, "indexed_by_another_model")
        assert error["detail"]["stored"] != error["detail"]["loaded"]
        append = await client.post("/v1/documents/h/text", json={"text": "More."})
        assert_error(append, 409, "indexed_by_another_model")
        # Posting the same text again indexes it anew, for the models now loaded.
        again = await client.post("/v1/documents", json={"id": "h", "text": HARBOUR})
        assert again.json()["documents"][0]["enqueued"] is True


async def test_413_too_large(app_client: AppClient) -> None:
    async with app_client(
        modes=["linear"], max_document_bytes=500, max_batch_documents=2, max_queries=2
    ) as client:
        big = await client.post("/v1/documents", json={"text": "word " * 200})
        assert assert_error(big, 413, "document_too_large")["detail"]["bytes"] == 1000
        batch = {"documents": [{"text": f"Text number {i}."} for i in range(3)]}
        assert_error(await client.post("/v1/documents", json=batch), 413, "batch_too_large")
        await client.post("/v1/documents", json={"id": "o", "text": ORCHARD[:480]})
        await wait_status(client, "o", "indexed")
        many = await client.post("/v1/documents/o/answers", json={"queries": [QUESTION] * 3})
        assert_error(many, 413, "too_many_queries")
        append = await client.post("/v1/documents/o/text", json={"text": "more " * 120})
        assert_error(append, 413, "document_too_large")


async def test_429_when_the_query_queue_is_full(app_client: AppClient) -> None:
    # The GRU in a thread: the first request stalls there while the queue fills on the loop.
    async with app_client(
        modes=["linear"], query_queue_size=1, query_encoder_thread=True
    ) as client:
        await client.post("/v1/documents", json={"id": "h", "text": HARBOUR})
        await wait_status(client, "h", "indexed")
        reader = client.app.state.runtime.models.by_mode["linear"].reader
        release = threading.Event()
        entered = threading.Event()
        original = reader.encode_queries

        def stalled(queries: Any) -> Any:
            entered.set()
            release.wait(10)
            return original(queries)

        reader.encode_queries = stalled  # hold the batcher inside the model
        url = "/v1/documents/h/answers"
        try:
            first = asyncio.create_task(client.post(url, json={"queries": [QUESTION]}))
            await asyncio.to_thread(entered.wait, 5)  # the batcher holds the first request
            second = asyncio.create_task(client.post(url, json={"queries": [QUESTION]}))
            await asyncio.sleep(0.05)  # the second fills the queue (size 1)
            third = await client.post(url, json={"queries": [QUESTION]})
            assert_error(third, 429, "overloaded")
        finally:
            release.set()
        assert (await first).status_code == 200
        assert (await second).status_code == 200
        metrics = (await client.get("/metrics")).text
        assert 'route="/v1/documents/{doc_id}/answers",status="429"' in metrics


async def _models_loaded(client: httpx.AsyncClient) -> None:
    """Waits (4 s at most) for the app's models: then only the store can be at fault, and no
    model loading in the background holds the event loop while a request is timed."""
    runtime = client.app.state.runtime
    for _ in range(200):
        if runtime.models.by_mode:
            return
        await asyncio.sleep(0.02)


async def test_503_when_the_store_is_unreachable(app_client: AppClient) -> None:
    closed = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    async with app_client(
        ready=False, modes=["linear"], store_url=closed, redis_timeout_s=0.5
    ) as client:
        await _models_loaded(client)
        ready = await client.get("/readyz")
        error = assert_error(ready, 503, "not_ready")
        assert error["detail"]["store"] is False and error["detail"]["models"]
        for method, url, body in (
            ("POST", "/v1/documents", {"id": "h", "text": HARBOUR}),
            ("GET", "/v1/documents/h", None),
            ("DELETE", "/v1/documents/h", None),
            ("POST", "/v1/documents/h/answers", {"queries": [QUESTION]}),
            ("POST", "/v1/documents/h/text", {"text": "More."}),
        ):
            start = time.monotonic()
            response = await client.request(method, url, json=body)
            assert time.monotonic() - start < 2 * 0.5 + 0.5  # within the Redis timeout
            assert_error(response, 503, "store_unavailable")
            assert response.headers["retry-after"] == "1"


async def test_503_within_the_timeout_when_redis_hangs(app_client: AppClient) -> None:
    # A socket that accepts connections (in the kernel backlog) but never answers.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        url = f"redis://127.0.0.1:{silent.getsockname()[1]}/0"
        async with app_client(
            ready=False, modes=["linear"], store_url=url, redis_timeout_s=0.5
        ) as client:
            await _models_loaded(client)
            for method, path, body in (
                ("GET", "/v1/documents/h", None),
                ("POST", "/v1/documents", {"id": "h", "text": HARBOUR}),
                ("GET", "/readyz", None),
            ):
                start = time.monotonic()
                response = await client.request(method, path, json=body)
                assert time.monotonic() - start < 0.5 + 0.4, path  # redis_timeout_s = 0.5
                assert response.status_code == 503, response.text
                assert_error(response, 503)


@pytest.mark.slow
async def test_503_then_recovery_when_redis_comes_back(app_client: AppClient) -> None:
    from tests.redis_server import RedisProcess

    try:
        server = RedisProcess().start()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    try:
        async with app_client(modes=["linear"], store_url=server.url, key_prefix="rec") as client:
            assert (await client.get("/v1/documents/x")).status_code == 404
            server.stop()
            assert_error(await client.get("/v1/documents/x"), 503, "store_unavailable")
            response = await client.post("/v1/documents", json={"id": "x", "text": HARBOUR})
            assert response.status_code == 503
            server.start()
            # The same app, not restarted, answers again.
            assert (await client.get("/v1/documents/x")).status_code == 404
            assert (await client.get("/readyz")).status_code == 200
            response = await client.post("/v1/documents", json={"id": "x", "text": HARBOUR})
            assert response.status_code == 202
    finally:
        server.cleanup()
