"""Answering cloze questions about an indexed document: the route, and its fast lane.

The fast lane is the route's common case without FastAPI's per-request machinery (pure ASGI
middleware, installed by the app). Profiling the server under load (BENCHMARKS.md) put about
a fifth of its CPU in the layers between uvicorn and the handler: Starlette's exception and
routing layers, FastAPI's request wrapper, its dependency solving and body parsing.
`POST /v1/documents/{id}/answers` is the call a service makes most, so the lane serves it
directly:

  body bytes -> AnswersIn (pydantic, from JSON, the route's own model)
             -> AnswerService.answer, the method the route calls
             -> its JSON bytes

It sits inside the guard (API key, body size and pace) and the latency middleware, so both
still see every request. A request it does not take as is (another content type, an id the
route would refuse, a body that does not validate) is handed to the app with its body
replayed: the route then gives the one canonical answer, 422 and all. An error raised while
answering goes to the app's own exception handlers, the ones the route's errors reach.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Response
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cheapqa_client.schemas import AnswersOut
from service.answering import AnswerService
from service.deps import AnsweringDep
from service.errors import error_responses
from service.guard import API_KEY_SCHEME
from service.schemas import AnswersIn, DocumentIdPath
from store.record import DOC_ID_PATTERN, MAX_DOC_ID_CHARS

router = APIRouter(prefix="/v1", tags=["answers"], dependencies=[API_KEY_SCHEME])


@router.post(
    "/documents/{doc_id}/answers",
    response_model=AnswersOut,
    operation_id="answer_queries",
    summary="Answer cloze questions about a document",
    responses=error_responses(400, 401, 404, 409, 413, 422, 429, 503),
)
async def answer_queries(
    doc_id: DocumentIdPath, body: AnswersIn, answering: AnsweringDep
) -> Response:
    """Each question is a sentence with one `@placeholder`; the answers are the document's
    entities most likely to fill it, with their probabilities over the document's entities."""
    # The JSON is written by the answering service (an AnswersOut's bytes); returned as a
    # Response, FastAPI does not validate and serialise it a second time.
    return Response(await answering.answer(doc_id, body), media_type="application/json")


_ANSWERS_PATH = re.compile(r"/v1/documents/([^/]+)/answers")
_DOC_ID = re.compile(DOC_ID_PATTERN)


class AnswersFastLane:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._route: Any = None  # the answers APIRoute, found on the first request

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = None
        if scope["type"] == "http" and scope["method"] == "POST":
            match = _ANSWERS_PATH.fullmatch(scope["path"])
        if match is None or not _takes(scope, match.group(1)):
            await self.app(scope, receive, send)
            return
        try:
            body = await _read_body(receive)
            try:
                parsed = AnswersIn.model_validate_json(body)
            except ValidationError:
                # FastAPI's route words the 422 (and its details) for this body.
                await self.app(scope, _replay(body, receive), send)
                return
            answering: AnswerService = scope["app"].state.answering
            content = await answering.answer(match.group(1), parsed)
        except Exception as exc:
            self._note_route(scope)
            await _handled(exc, scope, receive, send)
            return
        self._note_route(scope)
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(content)).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    def _note_route(self, scope: Scope) -> None:
        """The route the router would have matched, for the latency middleware's label."""
        if self._route is None:
            routes = router.routes
            self._route = next(r for r in routes if getattr(r, "endpoint", None) is answer_queries)
        scope["route"] = self._route


def _takes(scope: Scope, doc_id: str) -> bool:
    """A JSON body and an id the route accepts: anything else is the route's to answer."""
    content_type = b""
    for name, value in scope["headers"]:
        if name == b"content-type":
            content_type = value
    return (
        content_type.split(b";")[0].strip().lower() == b"application/json"
        and 1 <= len(doc_id) <= MAX_DOC_ID_CHARS
        and _DOC_ID.search(doc_id) is not None
    )


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ConnectionAbortedError("the client left before its body arrived")
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """`receive` that gives the body already read once, then what the client sends next."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def _handled(exc: Exception, scope: Scope, receive: Receive, send: Send) -> None:
    """The app's own handler for exc (as Starlette's exception layer finds it: the nearest
    class in its MRO); none: raised on, to the server-error layer, as from the route."""
    if isinstance(exc, ConnectionAbortedError):
        return  # nobody is listening
    handlers: dict[Any, Any] = scope["app"].exception_handlers
    for cls in type(exc).__mro__:
        if cls in handlers:
            response = await handlers[cls](Request(scope, receive), exc)
            await response(scope, receive, send)
            return
    raise exc
