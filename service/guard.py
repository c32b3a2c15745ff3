"""What every request passes before any of its body is read (pure ASGI middleware).

0. The concurrency limit: past `limit_concurrency` requests in flight, 503 with Retry-After.
   It counts requests, not connections: a socket that has not sent a complete head is not a
   request yet (service/http_protocol.py drops it after `header_timeout_s`).
1. The API key: on /v1 when `api_keys` are set, and on /metrics, /readyz, /docs and
   /openapi.json too with `protect_ops_routes`. A request without a valid key gets its 401
   before a byte of its body is read. This is the one check; the routers only declare the
   scheme (`API_KEY_SCHEME`) so that the OpenAPI document shows it.
2. The body's size: a `Content-Length` past `max_body_bytes` is 413 at once; a body without
   one (chunked) is counted as it arrives and refused once the count passes the limit.
3. The body's pace: a body that has not arrived within `body_timeout_s` is 408, so a client
   that trickles bytes does not hold a connection and its buffer for ever.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import time

from fastapi import Depends, HTTPException
from fastapi.security import HTTPBearer
from pydantic import SecretStr
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.errors import error_response
from service.settings import Settings

# The routers' dependency on it declares `Authorization: Bearer <key>` in the OpenAPI
# document and checks nothing (auto_error=False): the guard below has checked already.
API_KEY_SCHEME = Depends(
    HTTPBearer(auto_error=False, description="One of the configured API keys.")
)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def check_exposure(settings: Settings) -> None:
    """Refuses to serve on a non-loopback address without API keys, unless the settings say
    that is intended (`allow_open_bind`: e.g. behind a gateway that authenticates)."""
    if not is_loopback(settings.host) and not settings.api_keys and not settings.allow_open_bind:
        raise ValueError(
            f"refusing to serve on {settings.host} without API keys: set CHEAPQA_API_KEYS, "
            "or CHEAPQA_ALLOW_OPEN_BIND=true (allow_open_bind) if that is intended"
        )


OPS_PATHS = ("/metrics", "/readyz", "/docs", "/redoc", "/openapi.json")


def key_is_valid(given: str, keys: list[SecretStr]) -> bool:
    # compare_digest against every key, so timing does not tell which prefix matched.
    secret = given.encode()
    matches = [hmac.compare_digest(secret, key.get_secret_value().encode()) for key in keys]
    return any(matches)


def needs_key(path: str, settings: Settings) -> bool:
    if not settings.api_keys:
        return False
    if path == "/v1" or path.startswith("/v1/"):
        return True
    return settings.protect_ops_routes and path.startswith(OPS_PATHS)


def bearer_token(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else None
    return None


def declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class RequestGuard:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self.in_flight = 0  # requests whose head is in and whose answer is not yet sent

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.settings.limit_concurrency:
            response = error_response(
                503, "overloaded", "too many requests in flight; retry later",
                {"limit_concurrency": self.settings.limit_concurrency}, {"Retry-After": "1"},
            )  # fmt: skip
            await response(scope, receive, send)
            return
        self.in_flight += 1
        try:
            await self._checked(scope, receive, send)
        finally:
            self.in_flight -= 1

    async def _checked(self, scope: Scope, receive: Receive, send: Send) -> None:
        settings = self.settings
        if needs_key(scope["path"], settings):
            token = bearer_token(scope)
            if token is None or not key_is_valid(token, settings.api_keys):
                message = "missing API key: send 'Authorization: Bearer <key>'"
                if token is not None:
                    message = "invalid API key"
                response = error_response(
                    401, "unauthorized", message, None, {"WWW-Authenticate": "Bearer"}
                )
                await response(scope, receive, send)
                return
        length = declared_length(scope)
        if length is not None and length > settings.max_body_bytes:
            response = error_response(
                413, "body_too_large",
                f"the body is {length} bytes; the limit is {settings.max_body_bytes}",
                {"bytes": length, "max_body_bytes": settings.max_body_bytes},
            )  # fmt: skip
            await response(scope, receive, send)
            return
        await self.app(scope, self._bounded(receive), send)

    def _bounded(self, receive: Receive) -> Receive:
        """`receive`, counting the body's bytes and its time (errors are raised inside the
        app, where FastAPI reads the body, and become the one error envelope)."""
        limit, timeout_s = self.settings.max_body_bytes, self.settings.body_timeout_s
        received = 0
        deadline: float | None = None
        done = False

        async def receive_bounded() -> Message:
            nonlocal received, deadline, done
            if done:
                return await receive()
            if deadline is None:
                deadline = time.monotonic() + timeout_s
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    message = await receive()
            except TimeoutError:
                raise HTTPException(408, f"the body did not arrive within {timeout_s} s") from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise HTTPException(413, f"the body passed {limit} bytes (max_body_bytes)")
                done = not message.get("more_body", False)
            return message

        return receive_bounded
