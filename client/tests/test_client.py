"""The client alone: parsing, errors and retries against httpx.MockTransport. It runs where
only cheapqa-client is installed; tests/service/test_client.py drives a real service."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from cheapqa_client.client import (
    Answers,
    AsyncClient,
    CheapqaError,
    Client,
    Retry,
    retry_after_s,
)

STATUS = {
    "id": "d1",
    "status": "indexed",
    "tokens": 12,
    "entities": 2,
    "modes": ["linear"],
    "bytes_stored": {"linear": 400},
    "model_ids": {"linear": "linear-abc"},
    "text_hash": "h0",
    "error": None,
    "created_at": 1.0,
    "updated_at": 2.0,
    "entity_slots": 64,
    "entities_unplaced": 3,
    "candidates_not_found": [],
}

Handler = Callable[[httpx.Request], httpx.Response]


def envelope(status: int, code: str, message: str, **headers: str) -> httpx.Response:
    body = {"error": {"code": code, "message": message, "detail": {"why": "test"}}}
    return httpx.Response(status, json=body, headers=headers)


def mock_client(handler: Handler, sleeps: list[float] | None = None, **kw: Any) -> Client:
    sleep = (lambda s: sleeps.append(s)) if sleeps is not None else (lambda s: None)
    return Client(
        "http://cheapqa.test", "k3y", transport=httpx.MockTransport(handler), sleep=sleep, **kw
    )


def test_entities_documents_and_models_are_parsed() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        path, params = request.url.path, request.url.params
        if path == "/v1/documents/d1/entities":
            return httpx.Response(
                200,
                json={
                    "id": "d1",
                    "entities": [
                        {"entity": "Pervez Musharraf", "mentions": 3},
                        {"entity": "Zardari", "mentions": None},  # counted before counts were
                    ],
                    "entity_slots": 256,
                    "unplaced": ["Zia"],
                },
            )
        if path == "/v1/documents":
            if "cursor" not in params:
                docs = [{"id": "a", "status": "indexed"}, {"id": "b", "status": "queued"}]
                return httpx.Response(200, json={"documents": docs, "next_cursor": "c2"})
            assert params["cursor"] == "c2"
            return httpx.Response(
                200, json={"documents": [{"id": "c", "status": "failed"}], "next_cursor": None}
            )
        if path == "/v1/models":
            model = {
                "mode": "linear",
                "model_id": "linear-abc",
                "k": 256,
                "entity_slots": 256,
                "vocabulary": 30000,
                "trained_on": {"recipes": ["para-400"], "stages": 1, "data_sets": ["data/p"]},
                "test_accuracy": 0.41,
            }
            return httpx.Response(200, json={"models": [model]})
        return envelope(404, "not_found", "no route")

    with mock_client(handler) as client:
        entities = client.entities("d1")
        assert entities.entities[0].entity == "Pervez Musharraf"
        assert [e.mentions for e in entities.entities] == [3, None]
        assert (entities.entity_slots, entities.unplaced) == (256, ["Zia"])
        assert [(d.id, d.status) for d in client.documents(page_size=2)] == [
            ("a", "indexed"),
            ("b", "queued"),
            ("c", "failed"),
        ]
        [model] = client.models()
        assert (model.mode, model.k, model.test_accuracy) == ("linear", 256, 0.41)
        assert (model.trained_on.recipes, model.trained_on.stages) == (["para-400"], 1)
    assert seen[1].url.params["limit"] == "2"
    # The service's scheme (service/guard.py), on every request.
    assert {r.headers["authorization"] for r in seen} == {"Bearer k3y"}


def test_an_error_envelope_becomes_one_exception_with_its_fields() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return envelope(409, "not_indexed", "document d1 is queued")

    with mock_client(handler) as client, pytest.raises(CheapqaError) as raised:
        client.ask("d1", "@placeholder came.")
    error = raised.value
    assert (error.status_code, error.code) == (409, "not_indexed")
    assert error.message == "document d1 is queued"
    assert error.detail == {"why": "test"}
    assert "document d1 is queued" in str(error)


def test_an_answer_without_the_envelope_is_still_a_cheapqa_error() -> None:
    with (
        mock_client(lambda r: httpx.Response(502, text="bad gateway")) as client,
        pytest.raises(CheapqaError) as raised,
    ):
        client.status("d1")
    assert (raised.value.status_code, raised.value.code) == (502, "http_502")
    assert "bad gateway" in raised.value.message


def test_a_refused_connection_is_a_cheapqa_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with mock_client(handler) as client, pytest.raises(CheapqaError) as raised:
        client.status("d1")
    assert raised.value.status_code is None
    assert raised.value.code == "connection_error"


def test_429_then_200_waits_as_long_as_retry_after_says() -> None:
    answers = iter(
        [
            envelope(429, "overloaded", "query queue full", **{"Retry-After": "7"}),
            envelope(503, "store_unavailable", "store down"),  # no Retry-After: backoff
            httpx.Response(200, json=STATUS),
        ]
    )
    sleeps: list[float] = []
    with mock_client(lambda r: next(answers), sleeps, retry=Retry(backoff_s=0.25)) as client:
        status = client.status("d1")
    assert (status.status, status.entities_unplaced) == ("indexed", 3)
    assert sleeps == [7.0, 0.5]  # Retry-After; then backoff_s * 2 for the second retry


def test_retries_are_bounded() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return envelope(429, "overloaded", "full", **{"Retry-After": "1"})

    sleeps: list[float] = []
    with (
        mock_client(handler, sleeps, retry=Retry(attempts=3)) as client,
        pytest.raises(CheapqaError) as raised,
    ):
        client.status("d1")
    assert raised.value.status_code == 429
    assert len(calls) == 3 and sleeps == [1.0, 1.0]


def test_other_errors_are_not_retried() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return envelope(400, "bad_query", "no placeholder")

    with mock_client(handler, []) as client, pytest.raises(CheapqaError):
        client.ask("d1", "no blank here")
    assert len(calls) == 1


def test_retry_after_as_an_http_date() -> None:
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: at once
    assert retry_after_s("2.5") == 2.5
    assert retry_after_s("soon") is None


def test_the_async_client_retries_through_its_own_sleep() -> None:
    answers = iter(
        [
            envelope(429, "overloaded", "full", **{"Retry-After": "3"}),
            httpx.Response(
                200,
                json={
                    "id": "d1",
                    "mode": "linear",
                    "model_id": "m",
                    "results": [
                        {
                            "query": "Who came?",
                            "cloze": "@placeholder came .",
                            "answers": [{"entity": "Anna", "score": 0.9}],
                        }
                    ],
                },
                headers={"server-timing": "app;dur=1.75"},
            ),
        ]
    )
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async def ask() -> Answers:
        transport = httpx.MockTransport(lambda r: next(answers))
        async with AsyncClient("http://t", transport=transport, sleep=sleep) as client:
            return await client.ask("d1", "Who came?", mode="linear", top_k=1)

    answers_out = asyncio.run(ask())
    assert sleeps == [3.0]
    [result] = answers_out.results
    assert result.cloze == "@placeholder came ."
    assert result.answers[0].entity == "Anna"
    assert answers_out.server_ms == 1.75


def test_append_sends_the_current_text_hash_and_a_mismatch_raises_412() -> None:
    posted: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json=STATUS)
        posted.append(json.loads(request.content))
        if len(posted) == 1:
            return httpx.Response(200, json=STATUS | {"text_hash": "h1", "tokens": 20})
        return envelope(412, "precondition_failed", "the text changed")

    with mock_client(handler) as client:
        assert client.append("d1", "More text.").text_hash == "h1"
        with pytest.raises(CheapqaError) as raised:
            client.append("d1", "More text.")
    assert posted[0] == {"text": "More text.", "expected_text_hash": "h0"}
    assert raised.value.status_code == 412


def test_waiting_for_indexing_times_out_with_a_cheapqa_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            accepted = {"id": "d1", "status": "queued", "status_url": "", "text_hash": "h0"}
            return httpx.Response(202, json={"documents": [accepted | {"enqueued": True}]})
        return httpx.Response(200, json=STATUS | {"status": "queued"})

    with mock_client(handler, []) as client, pytest.raises(CheapqaError) as raised:
        client.index("text", id="d1", timeout=0.0)
    assert raised.value.code == "timeout"
