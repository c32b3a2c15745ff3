"""What the client commands (`index`, `ask`) share: the service they talk to, read from
CHEAPQA_URL and CHEAPQA_API_KEY here (the service's settings do not read them), and the
one-line error."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from service.client import CheapqaError, Client

DEFAULT_URL = "http://127.0.0.1:8000"


def connect() -> Client:
    from service.client import Client

    return Client(
        os.environ.get("CHEAPQA_URL") or DEFAULT_URL, os.environ.get("CHEAPQA_API_KEY") or None
    )


def fail(error: CheapqaError) -> int:
    print(f"error: {error}", file=sys.stderr)
    return 1
