"""The Python client of the HTTP API (v1): `Client` (sync) and `AsyncClient` (asyncio).

    with Client("http://127.0.0.1:8000", api_key=None) as qa:
        qa.index(text, id="d1")                       # waits until indexed (or failed)
        qa.ask("d1", "Who drove Anna home?").results[0].answers

Both share one core: every operation is a generator that yields `ApiRequest`s (and `Sleep`s)
and receives responses, so building requests, parsing answers, polling, retrying on 429/503
(honouring Retry-After) and the error type live here once; the two classes only send and
sleep. Every failure is a `CheapqaError` with the HTTP status and the error envelope.
Answers are parsed into the service's own response models (`cheapqa_client.schemas`).
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import ValidationError

from cheapqa_client.schemas import (
    AnswersOut,
    DocumentAccepted,
    DocumentEntities,
    DocumentInfo,
    DocumentList,
    DocumentsAccepted,
    DocumentSummary,
    ErrorBody,
    ModelInfo,
    ModelsOut,
)

DEFAULT_URL = "http://127.0.0.1:8000"
FINAL_STATUSES = ("indexed", "failed")
RETRY_STATUSES = (429, 503)


def _installed_version() -> str:
    # The light distribution, or the full one that ships this package too.
    for distribution in ("cheapqa-client", "cheapqa"):
        try:
            return version(distribution)
        except PackageNotFoundError:
            continue
    return "unknown (not installed)"  # a source tree that was never installed


__version__ = _installed_version()


class CheapqaError(Exception):
    """Every failure of a client call. `status_code` is the HTTP status (None when no answer
    came: connection refused, timed out waiting for indexing); `code`, `message` and `detail`
    are the service's error envelope."""

    def __init__(
        self, status_code: int | None, code: str, message: str, detail: Any = None
    ) -> None:
        super().__init__(f"{message} ({code}" + (f", HTTP {status_code})" if status_code else ")"))
        self.status_code = status_code
        self.code = code
        self.message = message
        self.detail = detail

    @classmethod
    def from_response(cls, response: httpx.Response) -> CheapqaError:
        try:
            error = ErrorBody.model_validate_json(response.content).error
            return cls(response.status_code, error.code, error.message, error.detail)
        except ValidationError:  # not our envelope: a proxy's page, say
            text = response.text.strip()[:200] or response.reason_phrase
            return cls(response.status_code, f"http_{response.status_code}", text)


# --- what the client sends, and what it adds to an answer ---------------------------------


@dataclass(frozen=True)
class NewDocument:
    text: str
    id: str | None = None
    candidates: Sequence[str] | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"text": self.text}
        if self.id is not None:
            body["id"] = self.id
        if self.candidates is not None:
            body["candidates"] = list(self.candidates)
        return body


class Answers(AnswersOut):
    """The answers body, with the server's time from its Server-Timing header."""

    server_ms: float | None = None


# --- the core: requests, retries, parsing ------------------------------------------------


@dataclass(frozen=True)
class ApiRequest:
    method: str
    path: str
    json: Any = None
    params: dict[str, Any] | None = None


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Retry:
    """429 and 503 are tried again, `attempts` times in all; the wait is the answer's
    Retry-After when it has one, else `backoff_s` doubled each time, at most `max_wait_s`."""

    attempts: int = 4
    backoff_s: float = 0.5
    max_wait_s: float = 30.0

    def wait_s(self, response: httpx.Response, attempt: int) -> float:
        after = retry_after_s(response.headers.get("retry-after"))
        if after is None:
            after = self.backoff_s * 2 ** (attempt - 1)
        return min(after, self.max_wait_s)


NO_RETRY = Retry(attempts=1)


def retry_after_s(value: str | None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date (RFC 9110)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def server_ms(response: httpx.Response) -> float | None:
    """The `dur` of the first Server-Timing metric, in milliseconds."""
    for part in response.headers.get("server-timing", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == "dur":
            try:
                return float(value)
            except ValueError:
                return None
    return None


Step = ApiRequest | Sleep
T = TypeVar("T")
Op = Generator[Step, Any, T]


def call(request: ApiRequest, retry: Retry) -> Op[httpx.Response]:
    """Sends `request`, again on 429/503 while attempts last; a non-2xx answer raises."""
    attempt = 1
    while True:
        response: httpx.Response = yield request
        if response.is_success:
            return response
        if response.status_code in RETRY_STATUSES and attempt < retry.attempts:
            yield Sleep(retry.wait_s(response, attempt))
            attempt += 1
            continue
        raise CheapqaError.from_response(response)


def document_path(doc_id: str) -> str:
    return f"/v1/documents/{quote(doc_id, safe='')}"


def answers_request(
    doc_id: str,
    questions: Sequence[str],
    mode: str | None,
    top_k: int,
    support_weight: float | None = None,
    reading: bool = True,
) -> ApiRequest:
    body: dict[str, Any] = {"queries": list(questions), "top_k": top_k}
    if mode is not None:
        body["mode"] = mode
    if support_weight is not None:
        body["support_weight"] = support_weight
    if not reading:  # sent only when off: a server without the field takes the default
        body["reading"] = False
    return ApiRequest("POST", f"{document_path(doc_id)}/answers", body)


def index_request(documents: Sequence[NewDocument]) -> ApiRequest:
    return ApiRequest("POST", "/v1/documents", {"documents": [d.to_json() for d in documents]})


def status_request(doc_id: str) -> ApiRequest:
    return ApiRequest("GET", document_path(doc_id))


def submit_op(
    documents: Sequence[NewDocument], batch: int, retry: Retry
) -> Op[list[DocumentAccepted]]:
    accepted: list[DocumentAccepted] = []
    for start in range(0, len(documents), batch):
        response = yield from call(index_request(documents[start : start + batch]), retry)
        accepted += DocumentsAccepted.model_validate_json(response.content).documents
    return accepted


def wait_op(
    ids: Sequence[str],
    timeout_s: float,
    poll_s: float,
    on_final: Callable[[DocumentInfo], None] | None,
    retry: Retry,
) -> Op[list[DocumentInfo]]:
    """Polls each document's status until it is indexed or failed; a CheapqaError with code
    `timeout` after `timeout_s`, or `no_worker` as soon as the service says no worker reads
    its queue (the document would wait for ever)."""
    deadline = time.monotonic() + timeout_s
    final: dict[str, DocumentInfo] = {}
    while True:
        for doc_id in ids:
            if doc_id in final:
                continue
            status = yield from status_op(doc_id, retry)
            if status.waiting:
                raise CheapqaError(None, "no_worker", f"{doc_id} is still queued: {status.waiting}")
            if status.status in FINAL_STATUSES:
                final[doc_id] = status
                if on_final is not None:
                    on_final(status)
        if len(final) == len(set(ids)):
            return [final[doc_id] for doc_id in ids]
        if time.monotonic() > deadline:
            waiting = [doc_id for doc_id in ids if doc_id not in final]
            raise CheapqaError(
                None, "timeout", f"not indexed after {timeout_s:g}s: {', '.join(waiting)}"
            )
        yield Sleep(poll_s)


def index_op(
    documents: Sequence[NewDocument],
    timeout_s: float,
    poll_s: float,
    batch: int,
    on_final: Callable[[DocumentInfo], None] | None,
    retry: Retry,
) -> Op[list[DocumentInfo]]:
    accepted = yield from submit_op(documents, batch, retry)
    return (yield from wait_op([a.id for a in accepted], timeout_s, poll_s, on_final, retry))


def status_op(doc_id: str, retry: Retry) -> Op[DocumentInfo]:
    response = yield from call(status_request(doc_id), retry)
    return DocumentInfo.model_validate_json(response.content)


def append_op(doc_id: str, text: str, retry: Retry) -> Op[DocumentInfo]:
    # The hash the text is expected to have now: if a retry finds the text already appended,
    # the server answers 412 instead of appending it twice.
    current = yield from status_op(doc_id, retry)
    body = {"text": text, "expected_text_hash": current.text_hash}
    response = yield from call(ApiRequest("POST", f"{document_path(doc_id)}/text", body), retry)
    return DocumentInfo.model_validate_json(response.content)


def ask_op(
    doc_id: str,
    questions: str | Sequence[str],
    mode: str | None,
    top_k: int,
    retry: Retry,
    support_weight: float | None = None,
    reading: bool = True,
) -> Op[Answers]:
    asked = [questions] if isinstance(questions, str) else list(questions)
    request = answers_request(doc_id, asked, mode, top_k, support_weight, reading)
    response = yield from call(request, retry)
    return Answers.model_validate(response.json() | {"server_ms": server_ms(response)})


def entities_op(doc_id: str, retry: Retry) -> Op[DocumentEntities]:
    response = yield from call(ApiRequest("GET", f"{document_path(doc_id)}/entities"), retry)
    return DocumentEntities.model_validate_json(response.content)


def delete_request(doc_id: str) -> ApiRequest:
    return ApiRequest("DELETE", document_path(doc_id))


def delete_op(doc_id: str, retry: Retry) -> Op[None]:
    yield from call(delete_request(doc_id), retry)
    return None


def documents_page_op(limit: int, cursor: str | None, retry: Retry) -> Op[DocumentList]:
    params: dict[str, Any] = {"limit": limit} | ({"cursor": cursor} if cursor else {})
    response = yield from call(ApiRequest("GET", "/v1/documents", params=params), retry)
    return DocumentList.model_validate_json(response.content)


def models_op(retry: Retry) -> Op[list[ModelInfo]]:
    response = yield from call(ApiRequest("GET", "/v1/models"), retry)
    return ModelsOut.model_validate_json(response.content).models


def _headers(api_key: str | None) -> dict[str, str]:
    # The service's scheme (service/guard.py): `Authorization: Bearer <key>`.
    headers = {"user-agent": f"cheapqa-client/{__version__}"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers


def _transport_error(request: ApiRequest, exc: httpx.HTTPError) -> CheapqaError:
    return CheapqaError(
        None, "connection_error", f"{request.method} {request.path}: {type(exc).__name__} {exc}"
    )


class _Base:
    """What both clients hold: the httpx client's settings and the retry policy."""

    def __init__(
        self, base_url: str, api_key: str | None, retry: Retry | None, poll_s: float
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry or Retry()
        self.poll_s = poll_s
        self.headers = _headers(api_key)


class Client(_Base):
    """The synchronous client. `transport` replaces the network (tests, in-process apps);
    `sleep` is what waits between retries and polls."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        api_key: str | None = None,
        *,
        timeout_s: float = 30.0,
        retry: Retry | None = None,
        poll_s: float = 0.2,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(base_url, api_key, retry, poll_s)
        self._sleep = sleep
        self.http = httpx.Client(
            base_url=self.base_url,
            headers=self.headers,
            timeout=timeout_s,
            transport=transport,
            trust_env=False,
        )

    def send(self, request: ApiRequest) -> httpx.Response:
        """One request as it is: no retry, no error raised for a non-2xx answer."""
        return self.http.request(
            request.method, request.path, json=request.json, params=request.params
        )

    def _run(self, op: Op[T]) -> T:
        try:
            step = next(op)
            while True:
                if isinstance(step, Sleep):
                    self._sleep(step.seconds)
                    step = op.send(None)
                    continue
                try:
                    response = self.send(step)
                except httpx.HTTPError as exc:
                    raise _transport_error(step, exc) from exc
                step = op.send(response)
        except StopIteration as stop:
            return stop.value

    def index(
        self,
        text: str,
        id: str | None = None,
        candidates: Sequence[str] | None = None,
        wait: bool = True,
        timeout: float = 300.0,
    ) -> DocumentAccepted | DocumentInfo:
        """Index one document; with `wait`, its status once indexed or failed, else what
        the service accepted."""
        document = [NewDocument(text, id, candidates)]
        if not wait:
            return self.submit(document)[0]
        return self.index_many(document, timeout)[0]

    def submit(self, documents: Sequence[NewDocument], batch: int = 16) -> list[DocumentAccepted]:
        """Post documents, `batch` per request, without waiting for them to be indexed."""
        return self._run(submit_op(documents, batch, self.retry))

    def index_many(
        self,
        documents: Sequence[NewDocument],
        timeout: float = 300.0,
        batch: int = 16,
        on_final: Callable[[DocumentInfo], None] | None = None,
    ) -> list[DocumentInfo]:
        """Post documents and wait until each is indexed or failed (`on_final` sees each)."""
        return self._run(index_op(documents, timeout, self.poll_s, batch, on_final, self.retry))

    def status(self, id: str) -> DocumentInfo:
        return self._run(status_op(id, self.retry))

    def append(self, id: str, text: str) -> DocumentInfo:
        return self._run(append_op(id, text, self.retry))

    def ask(
        self,
        id: str,
        questions: str | Sequence[str],
        mode: str | None = None,
        top_k: int = 5,
        support_weight: float | None = None,
        reading: bool = True,
    ) -> Answers:
        """support_weight: λ of the answers' ranking (0: the reader alone; None: the
        server's setting); reading: False answers without the pair reader (faster)."""
        return self._run(ask_op(id, questions, mode, top_k, self.retry, support_weight, reading))

    def entities(self, id: str) -> DocumentEntities:
        return self._run(entities_op(id, self.retry))

    def delete(self, id: str) -> None:
        self._run(delete_op(id, self.retry))

    def documents(self, page_size: int = 100) -> Iterator[DocumentSummary]:
        """Every document, page after page."""
        cursor: str | None = None
        while True:
            page = self._run(documents_page_op(page_size, cursor, self.retry))
            yield from page.documents
            if not (cursor := page.next_cursor):
                return

    def models(self) -> list[ModelInfo]:
        return self._run(models_op(self.retry))

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Base):
    """The asyncio client: the same methods as `Client`, awaited."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        api_key: str | None = None,
        *,
        timeout_s: float = 30.0,
        retry: Retry | None = None,
        poll_s: float = 0.2,
        transport: httpx.AsyncBaseTransport | None = None,
        limits: httpx.Limits | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        super().__init__(base_url, api_key, retry, poll_s)
        self._sleep = sleep
        self.http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=self.headers,
            timeout=timeout_s,
            transport=transport,
            limits=limits or httpx.Limits(),
            trust_env=False,
        )

    async def send(self, request: ApiRequest) -> httpx.Response:
        """One request as it is: no retry, no error raised for a non-2xx answer."""
        return await self.http.request(
            request.method, request.path, json=request.json, params=request.params
        )

    async def _run(self, op: Op[T]) -> T:
        try:
            step = next(op)
            while True:
                if isinstance(step, Sleep):
                    await self._sleep(step.seconds)
                    step = op.send(None)
                    continue
                try:
                    response = await self.send(step)
                except httpx.HTTPError as exc:
                    raise _transport_error(step, exc) from exc
                step = op.send(response)
        except StopIteration as stop:
            return stop.value

    async def index(
        self,
        text: str,
        id: str | None = None,
        candidates: Sequence[str] | None = None,
        wait: bool = True,
        timeout: float = 300.0,
    ) -> DocumentAccepted | DocumentInfo:
        document = [NewDocument(text, id, candidates)]
        if not wait:
            return (await self.submit(document))[0]
        return (await self.index_many(document, timeout))[0]

    async def submit(
        self, documents: Sequence[NewDocument], batch: int = 16
    ) -> list[DocumentAccepted]:
        return await self._run(submit_op(documents, batch, self.retry))

    async def index_many(
        self,
        documents: Sequence[NewDocument],
        timeout: float = 300.0,
        batch: int = 16,
        on_final: Callable[[DocumentInfo], None] | None = None,
    ) -> list[DocumentInfo]:
        return await self._run(
            index_op(documents, timeout, self.poll_s, batch, on_final, self.retry)
        )

    async def status(self, id: str) -> DocumentInfo:
        return await self._run(status_op(id, self.retry))

    async def append(self, id: str, text: str) -> DocumentInfo:
        return await self._run(append_op(id, text, self.retry))

    async def ask(
        self,
        id: str,
        questions: str | Sequence[str],
        mode: str | None = None,
        top_k: int = 5,
        support_weight: float | None = None,
        reading: bool = True,
    ) -> Answers:
        """As `Client.ask`."""
        return await self._run(
            ask_op(id, questions, mode, top_k, self.retry, support_weight, reading)
        )

    async def entities(self, id: str) -> DocumentEntities:
        return await self._run(entities_op(id, self.retry))

    async def delete(self, id: str) -> None:
        await self._run(delete_op(id, self.retry))

    async def documents(self, page_size: int = 100) -> AsyncIterator[DocumentSummary]:
        cursor: str | None = None
        while True:
            page = await self._run(documents_page_op(page_size, cursor, self.retry))
            for document in page.documents:
                yield document
            if not (cursor := page.next_cursor):
                return

    async def models(self) -> list[ModelInfo]:
        return await self._run(models_op(self.retry))

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
