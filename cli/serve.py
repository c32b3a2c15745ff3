"""`cheapqa serve`: the HTTP API (with the embedded store, also the ingestion worker)."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from service.settings import Settings

LOG_LEVELS = ["debug", "info", "warning", "error"]


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from service.app import serve

    configure_logging(args.log_level)
    updates = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    serve(settings.model_copy(update=updates), args.log_level)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("serve", help="serve the HTTP API (embedded store: also index documents)")
    p.add_argument("--host", default=None, help="bind address (default: settings.host)")
    p.add_argument("--port", type=int, default=None, help="port (default: settings.port)")
    p.add_argument("--log-level", default="info", choices=LOG_LEVELS)
    p.set_defaults(handler=_run)
