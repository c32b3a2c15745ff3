"""uvicorn's HTTP protocols with a deadline and a size limit on the request head.

uvicorn times out idle keep-alive connections between requests, but not a connection that
never sends a complete request head: a thousand sockets that send nothing (or half a request
line) stayed open for ever, and with uvicorn's `limit_concurrency` (which counts connections)
every request, /healthz included, got 503. Here a connection must deliver a complete head
within `header_timeout_s` of opening, or of its last response (uvicorn's keep-alive time is
the same setting), and a head may hold at most MAX_HEAD_BYTES; otherwise the connection is
closed. The deadline covers the head only: a body has its own (`body_timeout_s`, in the
guard), and a long answer is never cut.

`serve` passes PROTOCOL (an import path, so `workers` > 1 processes load it too); uvicorn
gives the protocol its config, whose `timeout_keep_alive` holds `header_timeout_s`.
"""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

# What a request line plus headers may take (uvicorn's own h11 limit is 16 KiB too).
MAX_HEAD_BYTES = 16 * 1024


class HeadDeadline(asyncio.Protocol):
    """Mixin over a uvicorn HTTP protocol (first in the bases): arms a timer when the
    connection opens and after each response, disarms it once a request is in progress."""

    # Set by the uvicorn protocol this is mixed into.
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    timeout_keep_alive: int
    cycle: Any
    _head_timer: asyncio.TimerHandle | None = None
    _head_bytes = 0

    def _in_request(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _arm(self) -> None:
        self._disarm()
        self._head_bytes = 0
        self._head_timer = self.loop.call_later(self.timeout_keep_alive, self._head_timed_out)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        # An upgraded connection (another protocol now) is not ours to close.
        if self.transport.get_protocol() is self and not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        waiting = self._head_timer is not None
        super().data_received(data)
        if self._in_request():
            self._disarm()
        elif waiting:
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES and not self.transport.is_closing():
                self.transport.close()  # a head that never ends

    def on_response_complete(self) -> None:
        # Armed first: the response's end may start a pipelined request at once, which
        # disarms it again below.
        self._arm()
        super().on_response_complete()  # type: ignore[misc]
        if self._in_request() or self.transport.is_closing():
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


class H11HeadDeadline(HeadDeadline, H11Protocol):
    pass


if importlib.util.find_spec("httptools") is not None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class HttpToolsHeadDeadline(HeadDeadline, HttpToolsProtocol):
        pass

    # uvicorn's own choice ("auto"): the faster parser where it is installed.
    PROTOCOL = "service.http_protocol:HttpToolsHeadDeadline"
else:  # pragma: no cover
    PROTOCOL = "service.http_protocol:H11HeadDeadline"
