"""`cheapqa loadtest`: drive a running service (--url) or one it starts itself (--spawn).
The work is in `bench/load_generator.py` and `bench/load_orchestrator.py`."""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import DEFAULT_DATA, parse_modes, write_json
from service.settings import Settings


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from bench.corpus import CorpusError, load_corpus
    from bench.load_generator import LoadError, LoadPlan, LoadReport, run_load
    from bench.load_orchestrator import load_spawned
    from bench.report import format_phases
    from bench.spawn import ServerError

    if (args.url is None) == (not args.spawn):
        print("error: give exactly one of --url URL and --spawn", file=sys.stderr)
        return 2
    if args.random_init and not args.spawn:
        print("error: --random-init only applies to a server started with --spawn", file=sys.stderr)
        return 2
    if args.server_workers > 1 and not args.spawn:
        print("error: --server-workers applies to a server started with --spawn", file=sys.stderr)
        return 2
    run_id = f"{int(time.time())}-{secrets.token_hex(3)}"
    try:
        corpus = load_corpus(args.data, args.text_file)
        docs = corpus.documents(args.documents, args.tokens, prefix=f"lt-{run_id}")
    except (CorpusError, ValueError) as exc:
        hint = "" if args.text_file else " (build it with `cheapqa data build`, or --text-file)"
        print(f"error: {exc}{hint}", file=sys.stderr)
        return 2
    plan = LoadPlan(
        duration_s=args.duration,
        max_requests=args.max_requests,
        concurrency=args.concurrency,
        rate=args.rate,
        warmup_s=args.warmup,
        top_k=args.top_k,
    )

    def load(url: str, server_pid: int | None = None) -> LoadReport:
        return asyncio.run(
            run_load(
                url,
                docs,
                args.modes,
                args.queries,
                plan,
                trivial_path=args.trivial,
                timeout_s=args.timeout,
                index_timeout_s=args.index_timeout,
                api_key=args.api_key,
                progress=None if args.quiet else sys.stderr,
                server_pid=server_pid,
            )
        )

    try:
        if args.spawn:
            report = load_spawned(
                load,
                docs,
                args.modes,
                args.queries,
                run_id,
                store_url=args.store_url or "",
                checkpoint_dir=args.checkpoint_dir,
                random_init=args.random_init,
                workers=args.server_workers,
            )
        else:
            report = load(args.url)
    except (LoadError, ServerError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    report.setup["corpus"] = corpus.source
    report.setup["tokens_requested"] = args.tokens
    print(
        f"{len(docs)} documents of ~{args.tokens} tokens "
        f"(service counts {sorted({d['tokens'] for d in report.documents})[:4]}...) "
        f"indexed in {report.setup['indexing_s']:.1f}s; {report.plan.loop}, "
        f"{report.plan.duration_s:g}s per phase"
    )
    print(format_phases(report.phases))
    if args.json is not None:
        print(f"wrote {write_json(args.json, report.to_json())}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "loadtest",
        help="load the HTTP service: index documents, then drive the answers endpoint",
        description="Index D documents of about N tokens of real text, wait until they are "
        "indexed, then send `answers` requests of Q queries each, closed loop (--concurrency) or "
        "open loop (--rate), for --duration seconds or --max-requests requests per mode.",
    )
    target = p.add_argument_group("target")
    target.add_argument("--url", default=None, help="base URL of a running service")
    target.add_argument(
        "--spawn",
        action="store_true",
        help="start `cheapqa serve` on loopback, then stop it",
    )
    target.add_argument("--store-url", default="", help="--spawn: Redis URL (default embedded)")
    target.add_argument("--checkpoint-dir", type=Path, default=None, help="--spawn: checkpoints")
    target.add_argument(
        "--random-init",
        action="store_true",
        help="--spawn: random-init readers of the default size (timing does not need training)",
    )
    target.add_argument(
        "--server-workers",
        type=int,
        default=1,
        help="--spawn: server processes (CHEAPQA_WORKERS)",
    )
    target.add_argument("--api-key", default=None, help="Bearer key, when the service needs one")
    text = p.add_argument_group("documents")
    text.add_argument("--data", type=Path, default=DEFAULT_DATA, help="data set JSONL (real text)")
    text.add_argument("--text-file", type=Path, default=None, help="plain text instead of --data")
    text.add_argument("--documents", type=int, default=8, help="documents indexed (D)")
    text.add_argument("--tokens", type=int, default=5000, help="tokens per document (n)")
    text.add_argument("--index-timeout", type=float, default=300.0, help="seconds to index them")
    load = p.add_argument_group("load")
    load.add_argument("--modes", type=parse_modes, default=["linear"], help="e.g. linear,softmax")
    load.add_argument("--queries", type=int, default=32, help="queries per request (Q)")
    load.add_argument("--top-k", type=int, default=5)
    load.add_argument("--concurrency", type=int, default=8, help="closed-loop workers (C)")
    load.add_argument("--rate", type=float, default=None, help="open loop at R requests/s")
    load.add_argument("--duration", type=float, default=20.0, help="seconds per phase")
    load.add_argument("--max-requests", type=int, default=100_000, help="requests per phase")
    load.add_argument("--warmup", type=float, default=2.0, help="seconds before each phase")
    load.add_argument("--timeout", type=float, default=30.0, help="per-request timeout (s)")
    load.add_argument(
        "--trivial",
        nargs="?",
        const="/healthz",
        default=None,
        help="also drive a trivial endpoint (default /healthz) as the framework's ceiling",
    )
    out = p.add_argument_group("output")
    out.add_argument("--json", type=Path, default=None, help="also write the figures here")
    out.add_argument("--quiet", action="store_true", help="no progress line")
    p.set_defaults(handler=_run)
