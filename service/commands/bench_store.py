"""`cheapqa bench store [--json]`: bytes per document state and store latency, both backends."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from service.settings import Settings

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def redis_url_and_source(args: argparse.Namespace, settings: Settings) -> tuple[str, str]:
    if args.redis_url:
        return args.redis_url, "from --redis-url"
    if settings.store_url.startswith(("redis", "rediss", "unix")):
        return settings.store_url, "from settings.store_url"
    return DEFAULT_REDIS_URL, "default: no --redis-url and settings.store_url is not Redis"


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from store.bench import LatencyPlan, format_report, run_store_bench

    url, source = redis_url_and_source(args, settings)
    plan = LatencyPlan(
        k=args.k, repeats=args.repeats, batch=args.batch_size, batch_repeats=args.batches
    )
    report = asyncio.run(run_store_bench(url, source, plan))
    print(json.dumps(report.to_json(), indent=2) if args.json else format_report(report))
    return 0


def register(bench_sub: Any) -> None:
    p = bench_sub.add_parser("store", help="state bytes per document; get/put latency")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--redis-url", default=None, help="Redis to measure (default: settings)")
    p.add_argument("--k", type=int, default=100, help="hidden size (default 100)")
    p.add_argument("--repeats", type=int, default=200, help="single-document calls timed")
    p.add_argument("--batch-size", type=int, default=32, help="documents per batch")
    p.add_argument("--batches", type=int, default=20, help="batches timed")
    p.set_defaults(handler=_run)
