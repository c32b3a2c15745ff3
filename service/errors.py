"""The service's exception hierarchy and its one mapping to HTTP.

Every error answer, including FastAPI's own 422 and Starlette's 404/405, has the same body:
``{"error": {"code": "...", "message": "...", "detail": ...}}``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from cheapqa_client.schemas import ErrorBody, ErrorInfo
from store.errors import CorruptRecord, StoreError, StoreUnavailable
from store.queue.base import QueueUnavailable
from store.record import DOC_ID_PATTERN, DOC_ID_RULE

log = logging.getLogger(__name__)


class ServiceError(Exception):
    """Base of every error the service raises on purpose; `status` is its HTTP status."""

    status: int = 500
    code: str = "internal_error"

    def __init__(self, message: str, detail: Any = None, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail
        if code is not None:
            self.code = code


class BadRequest(ServiceError):
    status, code = 400, "bad_request"


class NotFound(ServiceError):
    status, code = 404, "not_found"


class Conflict(ServiceError):
    status, code = 409, "conflict"


class NotIndexed(Conflict):
    code = "not_indexed"


class IndexedByAnotherModel(Conflict):
    code = "indexed_by_another_model"


class PreconditionFailed(ServiceError):
    status, code = 412, "precondition_failed"


class TooLarge(ServiceError):
    status, code = 413, "too_large"


class Unprocessable(ServiceError):
    status, code = 422, "unprocessable"


class Overloaded(ServiceError):
    status, code = 429, "overloaded"


class Unavailable(ServiceError):
    status, code = 503, "unavailable"


_DESCRIPTIONS = {
    400: "Bad input",
    401: "Missing or wrong API key",
    404: "Unknown document",
    408: "The request body did not arrive in time",
    409: "Document not yet indexed, or indexed by another model",
    412: "Precondition failed: the document's text hash is not the expected one",
    413: "Document, batch or body too large",
    422: "Request body or parameters fail validation, or the text holds no tokens",
    429: "Overloaded: the query or ingestion queue is full (see Retry-After)",
    503: "Store or queue unavailable, or the models are not loaded",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route: documents each error status with the envelope schema."""
    return {s: {"model": ErrorBody, "description": _DESCRIPTIONS[s]} for s in statuses}


MAX_ECHOED_CHARS = 200


def _echo_safe(value: Any) -> Any:
    """Client input echoed in an error detail (a 422 repeats the offending value), made
    encodable and small: JSON has no NaN or Infinity, a lone surrogate (legal as a JSON
    escape) cannot be encoded as UTF-8, and a 10 MB text need not be sent back."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        if len(value) > MAX_ECHOED_CHARS:
            value = value[:MAX_ECHOED_CHARS] + "…"
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_echo_safe(k): _echo_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_echo_safe(v) for v in value]
    return value


def error_response(
    status: int, code: str, message: str, detail: Any = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    # A body sent as text/plain or octet-stream is echoed as bytes, maybe not UTF-8.
    undecodable = {bytes: lambda b: b.decode("utf-8", "backslashreplace")}
    detail = _echo_safe(jsonable_encoder(detail, custom_encoder=undecodable))
    body = ErrorBody(error=ErrorInfo(code=code, message=message, detail=detail))
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


RETRY_AFTER_S = "1"

# How many of a 422's problems its message lists (the detail has them all).
MESSAGE_PROBLEMS = 3


def _field(loc: Sequence[Any]) -> str:
    """Where a problem is, as a client names it: "id", "documents[1].id", "queries[0]",
    "path parameter doc_id", "query parameter limit". A union's member names (capitalised,
    unlike fields) are left out."""
    where, *rest = loc or ("body",)
    path = ""
    for part in rest:
        if isinstance(part, int):
            path += f"[{part}]"
        elif not str(part)[:1].isupper():
            path += f".{part}" if path else str(part)
    if where in ("path", "query", "header"):
        return f"{where} parameter {path}"
    return path or "body"


def _problem(error: dict[str, Any]) -> str:
    if error.get("type") == "json_invalid":
        return f"the body is not JSON ({error.get('ctx', {}).get('error', 'unreadable')})"
    message = str(error.get("msg", "invalid"))
    if error.get("ctx", {}).get("pattern") == DOC_ID_PATTERN:
        message = f"an id is {DOC_ID_RULE}"
    return f"{_field(error.get('loc', ()))}: {message}"


def validation_message(errors: Sequence[dict[str, Any]]) -> str:
    """A 422's message: which fields fail and why, the first few of them."""
    problems = list(dict.fromkeys(_problem(e) for e in errors))
    shown = "; ".join(problems[:MESSAGE_PROBLEMS])
    more = len(problems) - MESSAGE_PROBLEMS
    return f"{shown} (and {more} more)" if more > 0 else shown or "request validation failed"


_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    408: "body_timeout",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    429: "overloaded",
    503: "unavailable",
}


def install_error_handlers(app: FastAPI) -> None:
    """The one place where exceptions become HTTP answers."""

    async def on_service_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ServiceError)
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        if exc.status in (429, 503):
            headers = {"Retry-After": RETRY_AFTER_S}
        return error_response(exc.status, exc.code, exc.message, exc.detail, headers)

    # Store and queue errors name addresses and file paths: they go to the log, not to the
    # client, which learns what failed and nothing of where.
    async def on_store_error(request: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, StoreUnavailable):
            log.warning("store unavailable on %s %s: %s", request.method, request.url.path, exc)
            return error_response(
                503, "store_unavailable", "store unavailable", None, {"Retry-After": RETRY_AFTER_S}
            )
        if isinstance(exc, CorruptRecord):
            log.error("corrupt record on %s %s: %s", request.method, request.url.path, exc)
            return error_response(
                500, "corrupt_record",
                "the document's stored record is unreadable; post the document again",
            )  # fmt: skip
        # A corrupt or undecodable state is a server-side fault, not the client's.
        log.exception("store error", exc_info=exc)
        return error_response(500, "store_error", "the stored document could not be read")

    async def on_queue_unavailable(request: Request, exc: Exception) -> JSONResponse:
        log.warning("queue unavailable on %s %s: %s", request.method, request.url.path, exc)
        return error_response(
            503, "queue_unavailable", "ingestion queue unavailable", None,
            {"Retry-After": RETRY_AFTER_S},
        )  # fmt: skip

    async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = exc.errors()
        return error_response(422, "validation_error", validation_message(errors), errors)

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
        return error_response(
            exc.status_code, code, str(exc.detail), None, getattr(exc, "headers", None)
        )

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(500, "internal_error", "internal server error")

    app.add_exception_handler(ServiceError, on_service_error)
    app.add_exception_handler(StoreError, on_store_error)
    app.add_exception_handler(QueueUnavailable, on_queue_unavailable)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected)
