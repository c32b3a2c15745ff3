"""`cheapqa serve`: the HTTP API (with the embedded store, also the ingestion worker)."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from service.settings import Settings


def _run(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )

    from service.app import create_app

    updates = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    settings = settings.model_copy(update=updates)
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=args.log_level,
        # SIGTERM: stop accepting, finish requests, then the lifespan lets the worker finish
        # its batch.
        timeout_graceful_shutdown=30,
    )
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("serve", help="serve the HTTP API (embedded store: also index documents)")
    p.add_argument("--host", default=None, help="bind address (default: settings.host)")
    p.add_argument("--port", type=int, default=None, help="port (default: settings.port)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.set_defaults(handler=_run)
