"""`cheapqa index FILE…`: index text files on a running service (CHEAPQA_URL)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.progress import shown
from cli.remote import connect, fail
from service.settings import Settings

if TYPE_CHECKING:
    from service.client import Accepted, DocumentStatus


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from tqdm import tqdm

    from service.client import CheapqaError, NewDocument

    if args.id is not None and len(args.files) > 1:
        print("error: --id names one document; give one FILE with it", file=sys.stderr)
        return 2
    try:
        documents = [NewDocument(path.read_text(encoding="utf-8"), args.id) for path in args.files]
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    bar = tqdm(
        total=len(documents),
        desc="indexed",
        unit="doc",
        disable=not (args.wait and len(documents) > 1 and shown(args.json)),
    )
    try:
        with connect() as client, bar:
            results: Sequence[Accepted | DocumentStatus] = (
                client.index_many(documents, args.timeout, on_final=lambda _: bar.update())
                if args.wait
                else client.submit(documents)
            )
    except CheapqaError as exc:
        return fail(exc)
    failed = [r for r in results if r.status == "failed"]
    if args.json:
        print(json.dumps([asdict(r) for r in results]))
    else:
        for path, r in zip(args.files, results, strict=True):
            print(f"{path}\t{r.id}\t{r.status}{_details(r)}")
    return 1 if failed else 0


def _details(result: Accepted | DocumentStatus) -> str:
    from service.client import DocumentStatus

    if not isinstance(result, DocumentStatus):
        return ""
    if result.status == "indexed":
        return f"\t{result.tokens} tokens, {result.entities} entities"
    if result.status == "failed":
        return f"\t{result.error}"
    return ""


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
    p.set_defaults(handler=_run)
