"""`index FILE…`: index text files on a running service (CHEAPQA_URL)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cheapqa_client.cli.progress import Counter, shown
from cheapqa_client.cli.remote import connect, details, fail, show
from cheapqa_client.client import CheapqaError, NewDocument
from cheapqa_client.schemas import DocumentAccepted, DocumentInfo


def read(path: Path) -> str | None:
    """The file's text, or None after a one-line error that names it."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        print(f"error: {path} is not UTF-8 text", file=sys.stderr)
    except OSError as exc:
        print(f"error: {path}: {exc.strerror or exc}", file=sys.stderr)
    return None


def _run(args: argparse.Namespace) -> int:
    if args.id is not None and len(args.files) > 1:
        print("error: --id names one document; give one FILE with it", file=sys.stderr)
        return 2
    texts = [read(path) for path in args.files]
    if None in texts:
        return 1
    documents = [NewDocument(text, args.id) for text in texts if text is not None]
    counter = Counter(
        "indexed", len(documents), enabled=args.wait and len(documents) > 1 and shown(args.json)
    )
    try:
        with connect() as client, counter:
            results: Sequence[DocumentAccepted | DocumentInfo] = (
                client.index_many(documents, args.timeout, on_final=counter.update)
                if args.wait
                else client.submit(documents)
            )
    except CheapqaError as exc:
        return fail(exc)
    paths = iter(args.files)  # the results are in the files' order, one each
    show(results, args.json, lambda r: f"{next(paths)}\t{r.id}\t{r.status}{details(r)}")
    return 1 if any(r.status == "failed" for r in results) else 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "index",
        help="index text files on a running service (CHEAPQA_URL, CHEAPQA_API_KEY)",
        description="Post text files to the service at CHEAPQA_URL (default "
        "http://127.0.0.1:8000) with the key in CHEAPQA_API_KEY; one id per file, derived "
        "from its text unless --id is given.",
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help="UTF-8 text files")
    p.add_argument("--id", default=None, help="the document's id (one FILE only)")
    p.add_argument("--wait", action="store_true", help="wait until indexed (or failed)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds to wait (--wait)")
    p.add_argument("--json", action="store_true", help="a JSON list on stdout")
    p.set_defaults(run=_run)
