"""`cheapqa worker`: an ingestion worker process (one consumer of the queue's group)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from cli.serve import LOG_LEVELS, configure_logging
from service.settings import Settings


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from service.ingest.worker import run_worker

    configure_logging(args.log_level)
    asyncio.run(run_worker(settings, args.metrics_port))
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("worker", help="index queued documents (a consumer of the ingest queue)")
    p.add_argument("--metrics-port", type=int, default=None, help="serve /metrics on this port")
    p.add_argument("--log-level", default="info", choices=LOG_LEVELS)
    p.set_defaults(handler=_run)
