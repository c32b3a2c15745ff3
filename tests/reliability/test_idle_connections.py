"""Idle connections lock nobody out (issue 26, HIGH 3).

1,100 loopback sockets connect to `cheapqa serve` and send nothing, or half a request line
(more than uvicorn's old connection limit of 1,024). `/healthz` and an authenticated request
must still answer at once, and the server must drop every one of those sockets once
`header_timeout_s` has passed without a complete request head.
"""

from __future__ import annotations

import asyncio
import resource
import selectors
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from starlette.types import Receive, Scope, Send

from bench.spawn import start_serve
from service.guard import RequestGuard
from tests.service.helpers import base_env

IDLE_SOCKETS = 1100
KEY = "idle-test-key"


def raise_fd_limit(wanted: int) -> None:
    """Enough descriptors for the sockets here and in the server (which inherits the limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def wait_all_closed(socks: list[socket.socket], timeout_s: float) -> int:
    """Waits until the server closed every socket (EOF or reset); how many are still open."""
    open_socks = {s.fileno(): s for s in socks}
    with selectors.DefaultSelector() as sel:
        for s in socks:
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout_s
        while open_socks and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=0.2):
                s = open_socks.get(key.fd)
                if s is None:
                    continue
                try:
                    data = s.recv(4096)  # an answer (a 408, say) may come before the close
                except BlockingIOError:
                    continue
                except ConnectionResetError:
                    data = b""
                if data == b"":
                    sel.unregister(s)
                    del open_socks[key.fd]
    return len(open_socks)


def test_idle_sockets_neither_block_requests_nor_stay_open(
    checkpoint_dir: Path, tmp_path: Path
) -> None:
    raise_fd_limit(4 * IDLE_SOCKETS)
    env = {
        **base_env(checkpoint_dir, tmp_path / "data"),
        "CHEAPQA_MODES": "linear",
        "CHEAPQA_API_KEYS": KEY,
        "CHEAPQA_HEADER_TIMEOUT_S": "2",
    }
    url, server = start_serve(env, tmp_path / "serve.log", inherit_settings=False)
    parts = urlsplit(url)
    socks: list[socket.socket] = []
    try:
        for i in range(IDLE_SOCKETS):
            s = socket.create_connection((parts.hostname, parts.port), timeout=5)
            if i % 2:
                s.sendall(b"GET /healthz HT")  # half a request line, never finished
            socks.append(s)
        started = time.monotonic()
        with httpx.Client(base_url=url, timeout=10, trust_env=False) as client:
            health = client.get("/healthz")
            assert health.status_code == 200, health.text
            listed = client.get("/v1/documents", headers={"Authorization": f"Bearer {KEY}"})
            assert listed.status_code == 200, listed.text
            assert client.get("/v1/documents").status_code == 401
        assert time.monotonic() - started < 5, "requests waited behind the idle sockets"
        still_open = wait_all_closed(socks, timeout_s=20)
        assert still_open == 0, f"{still_open} idle sockets still open after the header timeout"
        with httpx.Client(base_url=url, timeout=10, trust_env=False) as client:
            assert client.get("/healthz").status_code == 200
    finally:
        for s in socks:
            s.close()
        server.stop()


async def test_the_concurrency_limit_counts_requests_in_flight(make_settings: Any) -> None:
    """Past `limit_concurrency` requests in flight the guard answers 503 with Retry-After;
    once they are answered, requests pass again."""
    release = asyncio.Event()

    async def slow_app(scope: Scope, receive: Receive, send: Send) -> None:
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    guard = RequestGuard(slow_app, make_settings(limit_concurrency=2))
    transport = httpx.ASGITransport(app=guard)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        held = [asyncio.create_task(client.get("/healthz")) for _ in range(2)]
        while guard.in_flight < 2:
            await asyncio.sleep(0.01)
        refused = await client.get("/healthz")
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        assert refused.json()["error"]["code"] == "overloaded"
        release.set()
        assert [(await r).status_code for r in held] == [200, 200]
        assert (await client.get("/healthz")).status_code == 200
        assert guard.in_flight == 0
