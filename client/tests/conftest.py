"""A stand-in for the service, on a loopback port, for the client's own tests: they run where
only cheapqa-client is installed (no torch, no server code). It keeps documents in a dict,
answers with every entity of the document at equal scores, and writes its bodies through the
response models the real service declares (cheapqa_client.schemas), so what the client parses
here has the service's shape. The real service is tested with this client in tests/service."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import BaseModel

from cheapqa_client.schemas import (
    Answer,
    AnswersOut,
    DocumentAccepted,
    DocumentEntities,
    DocumentInfo,
    DocumentList,
    DocumentsAccepted,
    DocumentSummary,
    EntityMentions,
    ErrorBody,
    ErrorInfo,
    QueryAnswers,
    Status,
)

NAME = re.compile(r"\b[A-Z][a-z]+\b")


def info(doc_id: str, text: str) -> DocumentInfo:
    names = sorted(set(NAME.findall(text)))
    return DocumentInfo(
        id=doc_id,
        status=Status.INDEXED,
        tokens=len(text.split()),
        entities=len(names),
        entity_slots=64,
        entities_unplaced=0,
        candidates_not_found=[],
        modes=["linear"],
        bytes_stored={"linear": 20_200},
        model_ids={"linear": "linear-test"},
        text_hash=f"h{len(text)}",
        error=None,
        created_at=1.0,
        updated_at=2.0,
    )


class FakeService(BaseHTTPRequestHandler):
    documents: dict[str, str]  # id -> text; set per server

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: BaseModel, **headers: str) -> None:
        data = body.model_dump_json().encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, code: str, message: str) -> None:
        self._send(status, ErrorBody(error=ErrorInfo(code=code, message=message)))

    def _body(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers["content-length"])))

    def _document(self, doc_id: str) -> str | None:
        if doc_id not in self.documents:
            self._error(404, "document_not_found", f"no document {doc_id}")
            return None
        return self.documents[doc_id]

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path == "/v1/documents":
            found = [DocumentSummary(id=i, status=Status.INDEXED) for i in sorted(self.documents)]
            return self._send(200, DocumentList(documents=found, next_cursor=None))
        if m := re.fullmatch(r"/v1/documents/([^/]+)/entities", path):
            if (text := self._document(m[1])) is None:
                return None
            mentions = [
                EntityMentions(entity=n, mentions=text.count(n)) for n in NAME.findall(text)
            ]
            unique = list({e.entity: e for e in mentions}.values())
            body = DocumentEntities(id=m[1], entities=unique, entity_slots=64, unplaced=[])
            return self._send(200, body)
        if m := re.fullmatch(r"/v1/documents/([^/]+)", path):
            if (text := self._document(m[1])) is None:
                return None
            return self._send(200, info(m[1], text))
        return self._error(404, "not_found", path)

    def do_POST(self) -> None:
        body = self._body()
        if self.path == "/v1/documents":
            accepted = []
            for d in body["documents"]:
                doc_id = d.get("id") or f"doc-{len(self.documents)}"
                self.documents[doc_id] = d["text"]
                accepted.append(
                    DocumentAccepted(
                        id=doc_id,
                        status=Status.QUEUED,
                        status_url=f"/v1/documents/{doc_id}",
                        text_hash=f"h{len(d['text'])}",
                        enqueued=True,
                    )
                )
            return self._send(202, DocumentsAccepted(documents=accepted))
        if m := re.fullmatch(r"/v1/documents/([^/]+)/answers", self.path):
            if (text := self._document(m[1])) is None:
                return None
            if any("@placeholder" not in q and not q.startswith("Who") for q in body["queries"]):
                return self._error(400, "bad_query", "a question needs one @placeholder")
            names = sorted(set(NAME.findall(text)))[: body["top_k"]]
            results = [
                QueryAnswers(
                    query=q,
                    cloze=q.replace("Who", "@placeholder", 1).rstrip("?"),
                    answers=[Answer(entity=n, score=1 / len(names)) for n in names],
                    # As the service: a question in words is read unless the request says no.
                    read=q.startswith("Who") and body.get("reading", True),
                )
                for q in body["queries"]
            ]
            out = AnswersOut(
                id=m[1], mode=body.get("mode") or "linear", model_id="m-test", results=results
            )
            return self._send(200, out, **{"server-timing": "app;dur=1.25"})
        return self._error(404, "not_found", self.path)

    def do_DELETE(self) -> None:
        doc_id = self.path.rsplit("/", 1)[1]
        if self._document(doc_id) is not None:
            del self.documents[doc_id]
            self.send_response(204)
            self.end_headers()


@pytest.fixture
def service_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The fake service's URL, also as CHEAPQA_URL for the commands; stopped after the test."""
    handler = type("Handler", (FakeService,), {"documents": {}})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("CHEAPQA_URL", url)
    monkeypatch.delenv("CHEAPQA_API_KEY", raising=False)
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
