"""`cheapqa soak`: closed-loop mixed load on a `cheapqa serve` it starts, for a fixed time;
prints the errors (goal 0) and the server's memory growth (goal under 10%). The work is in
`bench/soak.py`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from bench.common import DEFAULT_DATA, write_json
from encoder.model.modes import MODES
from service.settings import Settings


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from bench.corpus import CorpusError, load_corpus
    from bench.load_generator import LoadError
    from bench.soak import soak_spawned
    from bench.spawn import ServerError

    try:
        corpus = load_corpus(args.data, args.text_file)
        docs = corpus.documents(args.documents, args.tokens, prefix="soak-doc")
    except (CorpusError, ValueError) as exc:
        hint = "build the data with `cheapqa data build`, or give --text-file"
        print(f"error: {exc} ({hint})", file=sys.stderr)
        return 2
    try:
        report = soak_spawned(
            docs,
            args.mode,
            duration_s=args.duration,
            concurrency=args.concurrency,
            warmup_s=args.warmup,
            sample_every_s=args.sample_every,
            store_url=args.store_url,
            checkpoint_dir=args.checkpoint_dir,
            progress=None if args.quiet else sys.stderr,
        )
    except (LoadError, ServerError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(
        f"{len(docs)} documents of ~{args.tokens} tokens from {corpus.source}; mode {args.mode}; "
        f"store {args.store_url or 'embedded'}; checkpoints "
        f"{args.checkpoint_dir or 'random-init, default size'}"
    )
    print(report.format())
    if args.json is not None:
        write_json(args.json, report.to_json())
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "soak",
        help="mixed closed-loop load on a server it starts; prints errors and memory growth",
    )
    p.add_argument("--duration", type=float, default=60.0, help="seconds of load after warm-up")
    p.add_argument("--concurrency", type=int, default=64, help="closed-loop clients")
    p.add_argument("--warmup", type=float, default=5.0, help="seconds before the RSS baseline")
    p.add_argument("--sample-every", type=float, default=5.0, help="RSS sample interval (s)")
    p.add_argument("--mode", choices=MODES, default="linear")
    p.add_argument("--documents", type=int, default=32, help="documents indexed first")
    p.add_argument("--tokens", type=int, default=400, help="tokens per document")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="data set JSONL (real text)")
    p.add_argument("--text-file", type=Path, default=None, help="plain text instead of --data")
    p.add_argument("--checkpoint-dir", type=Path, default=None, help="default: random-init")
    p.add_argument("--store-url", default="", help="Redis URL (default: the embedded store)")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.set_defaults(handler=_run)
