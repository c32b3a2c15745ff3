"""`cheapqa ask ID "question"`: ask a running service (CHEAPQA_URL) about a document."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from cli.remote import connect, fail
from encoder.model.modes import MODES
from service.settings import Settings


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from service.client import CheapqaError

    try:
        with connect() as client:
            answers = [
                client.ask(args.id, args.questions, mode, args.top_k)
                for mode in args.mode or [None]
            ]
    except CheapqaError as exc:
        return fail(exc)
    if args.json:
        print(json.dumps([asdict(a) for a in answers]))
        return 0
    for a in answers:
        timing = "" if a.server_ms is None else f", {a.server_ms:.1f} ms on the server"
        print(f"{a.mode} ({a.model_id}{timing})")
        for result in a.results:
            asked = (
                f"  (asked as: {result.cloze})" if result.cloze not in (None, result.query) else ""
            )
            print(f"  {result.query}{asked}")
            for answer in result.answers:
                print(f"    {answer.score:6.3f}  {answer.entity}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "ask",
        help="ask a running service (CHEAPQA_URL) about an indexed document",
        description="Questions are cloze sentences with one @placeholder, or Who/Whom/Whose "
        "questions the service turns into one.",
    )
    p.add_argument("id", help="the document's id")
    p.add_argument("questions", nargs="+", metavar="QUESTION")
    p.add_argument(
        "--mode",
        action="append",
        choices=MODES,
        help="attention mode; repeat to compare modes (default: the service's)",
    )
    p.add_argument("--top-k", type=int, default=5, help="answers per question")
    p.add_argument("--json", action="store_true", help="a JSON list (one object per mode)")
    p.set_defaults(handler=_run)
