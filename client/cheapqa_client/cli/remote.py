"""What the client commands share: the service they talk to, read from CHEAPQA_URL and
CHEAPQA_API_KEY here (the service's settings do not read them), the one-line error, and how
results are printed (a JSON list, or a line each)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

from pydantic import BaseModel

from cheapqa_client.client import DEFAULT_URL, CheapqaError, Client
from cheapqa_client.schemas import DocumentAccepted, DocumentInfo

Result = TypeVar("Result", bound=BaseModel)


def connect() -> Client:
    return Client(
        os.environ.get("CHEAPQA_URL") or DEFAULT_URL, os.environ.get("CHEAPQA_API_KEY") or None
    )


def fail(error: CheapqaError) -> int:
    print(f"error: {error}", file=sys.stderr)
    return 1


def show(results: Sequence[Result], as_json: bool, line: Callable[[Result], str]) -> None:
    """A JSON list of the results (for scripts), or `line(result)` for each."""
    if as_json:
        print(json.dumps([r.model_dump(mode="json") for r in results]))
    else:
        for result in results:
            print(line(result))


def details(document: DocumentAccepted | DocumentInfo) -> str:
    """What follows a document's status on its line: its size once indexed, or its error."""
    if not isinstance(document, DocumentInfo):
        return ""
    if document.status == "indexed":
        return f"\t{document.tokens} tokens, {document.entities} entities"
    if document.status == "failed":
        return f"\t{document.error}"
    if document.waiting:
        return f"\t{document.waiting}"
    return ""
