"""`cheapqa evaluate`: accuracy of a checkpoint on a JSONL data set, beside the baselines."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cli.progress import bar
from encoder.model.modes import MODES
from service.settings import SUPPORT_WEIGHT, Settings


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from encoder.model.checkpoint import CheckpointError, default_checkpoint_path
    from encoder.training.data.questions import DataError
    from encoder.training.evaluate import evaluate

    path = args.checkpoint or default_checkpoint_path(args.mode)
    try:
        progress = bar("batches", args.json, unit="batch")
        result = evaluate(
            path,
            args.data,
            device=settings.device,
            progress=progress,
            exclude_named=not args.keep_question_entities,
            support_weight=args.support_weight,
        )
    except (CheckpointError, DataError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result.as_dict()))
        return 0
    print(f"{result.model_id} on {result.data}: {result.count} questions")
    weight = args.support_weight
    how = "the reader alone" if weight == 0 else f"support_weight {weight:g}"
    print(f"  accuracy        {result.accuracy:.4f}  ({how})")
    print(f"  random          {result.random:.4f}")
    print(f"  most frequent   {result.most_frequent:.4f}")
    print(f"  most recent     {result.most_recent:.4f}")
    print(f"  context match   {result.context_match:.4f}")
    print(f"  bag of words    {result.bag_of_words:.4f}")
    if result.answers_not_entities:
        print(
            f"  ({result.answers_not_entities} answers the service cannot give: no entity of "
            "their document, or named in their own question)"
        )
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("evaluate", help="accuracy of a checkpoint on a JSONL data set")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--checkpoint", type=Path, help="a checkpoint file")
    which.add_argument("--mode", choices=MODES, help="the shipped checkpoint")
    p.add_argument(
        "--data",
        type=Path,
        required=True,
        help="a JSONL file: a data set's questions or your own in plain text (document, "
        "query, answer, candidates?), prepared as the API prepares them",
    )
    p.add_argument(
        "--keep-question-entities",
        action="store_true",
        help="answer with the entities a question names too (the service leaves them out "
        "unless a request says exclude_question_entities: false)",
    )
    p.add_argument(
        "--support-weight",
        type=float,
        default=0.0,
        help="rank answers by the reader and their support as the service does with this "
        f"support_weight (it serves {SUPPORT_WEIGHT:g} by default); 0, the default, measures the "
        "reader alone",
    )
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(handler=_run)
