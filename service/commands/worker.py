"""`cheapqa worker`: an ingestion worker process (one consumer of the queue's group)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from typing import Any

from service.settings import Settings

log = logging.getLogger("cheapqa.worker")


async def run_worker(settings: Settings, metrics_port: int | None = None) -> None:
    """Indexes queued documents until SIGTERM or SIGINT; the batch in hand is finished."""
    from prometheus_client import start_http_server

    from service.ingest.factory import open_queue, open_settings_store
    from service.ingest.worker import IngestWorker
    from service.metrics import Metrics
    from service.models import load_models

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    models = await asyncio.to_thread(load_models, settings)
    store = open_settings_store(settings)
    queue = open_queue(settings)
    metrics = Metrics()
    if metrics_port is not None:
        # The worker has no API: its counters (indexed, failed, batch sizes) get their own port.
        start_http_server(metrics_port, addr=settings.host, registry=metrics.registry)
    try:
        await IngestWorker(settings, store, queue, models, metrics).run(stop)
    finally:
        await queue.close()
        await store.close()


def _run(args: argparse.Namespace, settings: Settings) -> int:
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    asyncio.run(run_worker(settings, args.metrics_port))
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("worker", help="index queued documents (a consumer of the ingest queue)")
    p.add_argument("--metrics-port", type=int, default=None, help="serve /metrics on this port")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.set_defaults(handler=_run)
