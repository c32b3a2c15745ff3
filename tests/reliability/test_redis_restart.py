"""Redis frozen, stopped and restarted, or killed, under a running app (with its in-process
worker).

The test runs its own redis-server (temporary directory, `appendonly yes`, its own port).
While Redis is frozen (SIGSTOP: connections hang) or down (stopped: connections refused),
every route that needs it answers 503 with the error envelope within a bound set by
`redis_timeout_s`, never 500 and never a hang; the app recovers by itself once Redis is back.
After the restart every acknowledged document still answers, with the same answers, and
documents accepted just before the stop are indexed from the persisted stream.
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.redis_server import RedisProcess
from tests.reliability.corpus import make_documents

pytestmark = pytest.mark.slow

TIMEOUT_S = 0.5  # redis_timeout_s of the app under test
# A store call may retry once after a timeout (store.factory), so two timeouts plus slack.
ANSWER_WITHIN_S = 2 * TIMEOUT_S + 1.0
QUESTION = "@placeholder kept the lighthouse on Gull Rock."


async def wait_until(
    check: Any, what: str, timeout_s: float = 30.0, interval_s: float = 0.05
) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(interval_s)


async def all_indexed(client: httpx.AsyncClient, ids: list[str]) -> bool:
    for doc_id in ids:
        response = await client.get(f"/v1/documents/{doc_id}")
        if response.status_code != 200 or response.json()["status"] != "indexed":
            return False
    return True


async def answers_of(client: httpx.AsyncClient, ids: list[str]) -> dict[str, Any]:
    out = {}
    for doc_id in ids:
        response = await client.post(
            f"/v1/documents/{doc_id}/answers", json={"queries": [QUESTION], "top_k": 3}
        )
        assert response.status_code == 200, response.text
        out[doc_id] = response.json()["results"]
    return out


async def assert_unavailable_fast(client: httpx.AsyncClient, doc_id: str) -> list[float]:
    """Every route that needs Redis: 503 with the envelope, in time. Returns the latencies."""
    calls = [
        ("POST", "/v1/documents", {"id": "during-outage", "text": "Tobias lit the lamp."}),
        ("GET", f"/v1/documents/{doc_id}", None),
        ("POST", f"/v1/documents/{doc_id}/answers", {"queries": [QUESTION]}),
        ("POST", f"/v1/documents/{doc_id}/text", {"text": "Marigold waved."}),
        ("DELETE", "/v1/documents/never-existed", None),
        ("GET", "/readyz", None),
    ]
    latencies = []
    for method, path, body in calls:
        start = time.monotonic()
        response = await asyncio.wait_for(
            client.request(method, path, json=body), timeout=10 * ANSWER_WITHIN_S
        )
        elapsed = time.monotonic() - start
        latencies.append(elapsed)
        assert response.status_code == 503, (method, path, response.text)
        assert set(response.json()) == {"error"}, response.text
        assert elapsed < ANSWER_WITHIN_S, (method, path, elapsed)
    # Liveness does not depend on Redis.
    assert (await client.get("/healthz")).status_code == 200
    return latencies


async def test_redis_frozen_then_restarted(app_client: Any, tmp_path: Path) -> None:
    directory = tmp_path / "redis"
    directory.mkdir()
    server = RedisProcess(appendonly=True, directory=directory).start()
    texts = make_documents(40, seed=3)
    ids = list(texts)
    late = {f"late-{i}": text for i, text in make_documents(20, seed=4).items()}
    late_ids = list(late)
    try:
        async with app_client(
            store_url=server.url, key_prefix="restart", redis_timeout_s=TIMEOUT_S, serve_worker=True
        ) as client:
            batch = [{"id": i, "text": t} for i, t in texts.items()]
            assert (await client.post("/v1/documents", json={"documents": batch})).is_success
            await wait_until(lambda: all_indexed(client, ids), "the first documents")
            before = await answers_of(client, ids)

            # Frozen: connections open but nothing answers.
            assert server.proc is not None
            server.proc.send_signal(signal.SIGSTOP)
            try:
                frozen = await assert_unavailable_fast(client, ids[0])
            finally:
                server.proc.send_signal(signal.SIGCONT)
            await wait_until(
                lambda: ready(client), "readiness after the freeze", timeout_s=10 * TIMEOUT_S
            )

            # Accepted (202) just before the stop: must be indexed after the restart.
            late_batch = [{"id": i, "text": t} for i, t in late.items()]
            response = await client.post("/v1/documents", json={"documents": late_batch})
            assert response.status_code == 202, response.text

            # Down: a graceful stop, so Redis flushes its append-only file.
            server.stop()
            down = await assert_unavailable_fast(client, ids[0])
            server = RedisProcess(port=server.port, appendonly=True, directory=directory).start()
            restarted = time.monotonic()
            await wait_until(lambda: ready(client), "readiness after the restart")
            recovered_s = time.monotonic() - restarted

            assert await answers_of(client, ids) == before
            still_queued = [
                (await client.get(f"/v1/documents/{i}")).json()["status"] for i in late_ids
            ].count("queued")
            await wait_until(
                lambda: all_indexed(client, late_ids), "documents accepted before the stop"
            )
            response = await client.post("/v1/documents", json={"id": "after", "text": QUESTION})
            assert response.status_code == 202, response.text
            await wait_until(lambda: all_indexed(client, ["after"]), "a document after it")
            print(
                f"\nredis restart: {len(ids)} indexed documents answer the same after the "
                f"restart, {len(late_ids)} accepted before the stop ({still_queued} still queued "
                f"at the restart) all indexed; 503 "
                f"within {max(frozen):.2f} s frozen, {max(down):.2f} s down "
                f"(timeout {TIMEOUT_S} s); ready {recovered_s:.2f} s after the restart"
            )
    finally:
        if server.proc is not None:
            server.proc.send_signal(signal.SIGCONT)
        server.cleanup()


async def ready(client: httpx.AsyncClient) -> bool:
    return (await client.get("/readyz")).status_code == 200


async def test_redis_killed_mid_load_loses_nothing_acknowledged(
    app_client: Any, tmp_path: Path
) -> None:
    """SIGKILL, not a graceful stop, while clients are posting. With `appendfsync always`
    Redis writes each command to its append-only file before it replies, so every document
    the API acknowledged (202) is still there after the restart and gets indexed; a client
    that got 503 and posts again once Redis is back gets its document indexed too."""
    directory = tmp_path / "redis"
    directory.mkdir()
    fsync_always = ["--appendfsync", "always"]
    server = RedisProcess(appendonly=True, directory=directory, extra_args=fsync_always).start()
    texts = make_documents(200, seed=6)
    outcome: dict[str, int] = {}
    try:
        async with app_client(
            store_url=server.url, key_prefix="killed", redis_timeout_s=TIMEOUT_S, serve_worker=True
        ) as client:

            async def post_some(ids: list[str]) -> None:
                for doc_id in ids:
                    body = {"id": doc_id, "text": texts[doc_id]}
                    response = await client.post("/v1/documents", json=body)
                    assert response.status_code in (202, 503), response.text
                    outcome[doc_id] = response.status_code
                    await asyncio.sleep(0.005)

            ids = list(texts)
            posting = asyncio.gather(*(post_some(ids[i::4]) for i in range(4)))
            # Kill once 40 are accepted and more are under way. Counted as accepted, not as
            # answered: a post may already get 503 before the kill (a write that outlasts
            # the timeout while Redis syncs every command to disk), which is allowed.
            while sum(s == 202 for s in outcome.values()) < 40 and not posting.done():
                await asyncio.sleep(0.005)
            assert server.proc is not None
            server.proc.kill()
            server.proc.wait(5)
            await asyncio.wait_for(posting, timeout=60)
            accepted = [d for d, status in outcome.items() if status == 202]
            refused = [d for d, status in outcome.items() if status == 503]
            assert len(accepted) >= 40 and refused, outcome

            server = RedisProcess(
                port=server.port, appendonly=True, directory=directory, extra_args=fsync_always
            ).start()
            await wait_until(lambda: ready(client), "readiness after the restart")
            await wait_until(lambda: all_indexed(client, accepted), "the acknowledged documents")
            # A refused document may have its `queued` record but no queue entry (the record
            # is written first); it waits for its client to post it again.
            orphans = [
                d for d in refused if (await client.get(f"/v1/documents/{d}")).status_code == 200
            ]
            # Posted again after the claim timeout, so such a record is queued again.
            await asyncio.sleep(0.4)
            for doc_id in refused:
                body = {"id": doc_id, "text": texts[doc_id]}
                response = await client.post("/v1/documents", json=body)
                assert response.status_code == 202, response.text
            await wait_until(lambda: all_indexed(client, refused), "the re-posted documents")
            print(
                f"\nredis killed: {len(accepted)} documents acknowledged before and during "
                f"the kill all indexed after the restart; {len(refused)} refused with 503 "
                f"({len(orphans)} of them left as a record without a queue entry), posted "
                "again, indexed"
            )
    finally:
        server.cleanup()
