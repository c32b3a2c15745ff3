"""`ask ID "question"`: ask a running service (CHEAPQA_URL) about a document."""

from __future__ import annotations

import argparse
from typing import Any

from cheapqa_client.cli.remote import connect, fail, show
from cheapqa_client.client import Answers, CheapqaError


def _lines(a: Answers) -> str:
    """One mode's answers: a heading, then each question and its answers with their scores,
    support (how much of the question the text says near the answer) and share of the
    support (near 1: the text singles it out; "-" unknown); "read" marks a question the pair
    reader ranked again."""
    timing = "" if a.server_ms is None else f", {a.server_ms:.1f} ms on the server"
    lines = [f"{a.mode} ({a.model_id}{timing}): score, support, share, answer"]
    for result in a.results:
        asked = f"  (asked as: {result.cloze})" if result.cloze not in (None, result.query) else ""
        lines.append(f"  {result.query}{asked}{'  read' if result.read else ''}")
        if result.error is not None:
            lines.append(f"    not asked: {result.error.message}")
        lines += [
            f"    {answer.score:6.3f}  {_support(answer.support)}  "
            f"{_support(answer.support_share)}  {answer.entity}"
            for answer in result.answers
        ]
    return "\n".join(lines)


def _support(value: float | None) -> str:
    return "   -" if value is None else f"{value:4.2f}"


def _run(args: argparse.Namespace) -> int:
    try:
        with connect() as client:
            answers = [
                client.ask(
                    args.id, args.questions, mode, args.top_k, args.support_weight, args.reading
                )
                for mode in args.mode or [None]
            ]
    except CheapqaError as exc:
        return fail(exc)
    show(answers, args.json, _lines)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "ask",
        help="ask a running service (CHEAPQA_URL) about an indexed document",
        description="Questions are cloze sentences with one @placeholder, or Who/Whom/Whose/"
        "Which/Where questions the service turns into one.",
    )
    p.add_argument("id", help="the document's id")
    p.add_argument("questions", nargs="+", metavar="QUESTION")
    p.add_argument(
        "--mode",
        action="append",
        help="attention mode, as GET /v1/models names them; repeat to compare modes "
        "(default: the service's)",
    )
    p.add_argument("--top-k", type=int, default=5, help="answers per question")
    p.add_argument(
        "--support-weight",
        type=float,
        default=None,
        help="how much support outweighs the reader in the ranking, 0 for the reader alone "
        "(default: the service's)",
    )
    p.add_argument(
        "--no-reading",
        dest="reading",
        action="store_false",
        help="answer without the pair reader: about a millisecond a question instead of a "
        "tenth of a second, less often right (default: read where the service serves it)",
    )
    p.add_argument("--json", action="store_true", help="a JSON list (one object per mode)")
    p.set_defaults(run=_run)
