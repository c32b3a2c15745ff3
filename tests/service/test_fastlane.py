"""The answers fast lane gives what the FastAPI route gives: the same answers and, for every
kind of request it does not serve as is, the route's own error."""

from __future__ import annotations

from typing import Any

import pytest

import service.routers.answers
from tests.service.conftest import AppClient, wait_status
from tests.service.texts import HARBOUR, QUESTIONS

REQUESTS: list[tuple[str, dict[str, Any], dict[str, str]]] = [
    ("h", {"queries": QUESTIONS["harbour"], "top_k": 3}, {}),
    ("h", {"queries": QUESTIONS["harbour"][:1], "mode": "none"}, {}),
    ("h", {"queries": ["Who sailed to Gull Rock?"]}, {}),
    ("missing", {"queries": QUESTIONS["harbour"][:1]}, {}),  # 404
    ("h", {"queries": ["no blank here"]}, {}),  # 400 bad_query
    ("h", {"queries": QUESTIONS["harbour"][:1], "top_k": "3"}, {}),  # 422 (strict)
    ("h", {"queries": QUESTIONS["harbour"][:1], "extra": 1}, {}),  # 422
    ("h", {"queries": []}, {}),  # 422
    ("h", {"queries": QUESTIONS["harbour"][:1], "mode": "gated"}, {}),  # not loaded
    ("h", {"queries": QUESTIONS["harbour"][:1], "top_k": 10_000}, {}),  # top_k too large
    ("-bad-id", {"queries": QUESTIONS["harbour"][:1]}, {}),  # id pattern: 422
    ("h", {"queries": QUESTIONS["harbour"][:1]}, {"content-type": "text/plain"}),
]


async def _answers(client: Any) -> list[tuple[int, Any, str]]:
    out = []
    for doc_id, body, headers in REQUESTS:
        response = await client.post(f"/v1/documents/{doc_id}/answers", json=body, headers=headers)
        out.append((response.status_code, response.json(), response.headers["content-type"]))
    return out


async def test_fast_lane_answers_as_the_route_does(
    app_client: AppClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken: list[str] = []
    real_takes = service.routers.answers._takes

    def counting_takes(scope: Any, doc_id: str) -> bool:
        took = real_takes(scope, doc_id)
        if took:
            taken.append(doc_id)
        return took

    async with app_client(modes=["linear", "none"]) as client:
        await client.post("/v1/documents", json={"id": "h", "text": HARBOUR})
        await wait_status(client, "h", "indexed")
        monkeypatch.setattr(service.routers.answers, "_takes", counting_takes)
        fast = await _answers(client)
        assert len(taken) == len(REQUESTS) - 2  # all but the bad id and the text body
        monkeypatch.setattr(service.routers.answers, "_takes", lambda scope, doc_id: False)
        route = await _answers(client)
        metrics = (await client.get("/metrics")).text
    assert [status for status, _, _ in fast] == [200, 200, 200, 404, 400, 422, 422, 422, 400,
                                                  400, 422, 422]  # fmt: skip
    for request, a, b in zip(REQUESTS, fast, route, strict=True):
        assert a == b, request
    # The latency histogram labels fast-lane requests with the route's template.
    assert 'route="/v1/documents/{doc_id}/answers"' in metrics
    assert 'route="unmatched",status="200"' not in metrics


async def test_fast_lane_keeps_the_api_key_and_body_limits(app_client: AppClient) -> None:
    async with app_client(modes=["linear"], api_keys="k1", max_body_bytes=2000) as client:
        key = {"authorization": "Bearer k1"}
        await client.post("/v1/documents", json={"id": "h", "text": HARBOUR[:1500]}, headers=key)
        await wait_status(client, "h", "indexed", headers=key)
        body = {"queries": QUESTIONS["harbour"][:1]}
        no_key = await client.post("/v1/documents/h/answers", json=body)
        assert no_key.status_code == 401
        ok = await client.post("/v1/documents/h/answers", json=body, headers=key)
        assert ok.status_code == 200, ok.text
        big = {"queries": ["@placeholder " + "word " * 500]}
        too_big = await client.post("/v1/documents/h/answers", json=big, headers=key)
        assert too_big.status_code == 413
