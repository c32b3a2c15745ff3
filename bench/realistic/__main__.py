"""Hand-written news stories asked through the service: accuracy of the top answer per mode,
beside word matching and most frequent.

    python -m bench.realistic --set dev [--modes linear,softmax] [--json] [--misses linear]
        [--export out.jsonl]

A set kept unscored (`FROZEN`) is scored only with `--score-frozen`: once, after the change
it measures is frozen, and never by a loop over every set.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.common import parse_modes
from bench.realistic.stories import FROZEN, SETS, answerable, load_stories, set_path
from encoder.model.modes import MODES
from service.settings import Settings


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", default="dev", help=f"{' or '.join(SETS)}, or a stories JSONL path")
    p.add_argument("--modes", type=parse_modes, default=list(MODES))
    p.add_argument("--checkpoint-dir", type=Path, default=None, help="<mode>.pt files")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--misses", metavar="MODE", default=None, help="list what MODE got wrong")
    p.add_argument(
        "--keep-question-entities",
        action="store_true",
        help="answer with the entities a question names too (requests and baselines)",
    )
    p.add_argument("--export", type=Path, default=None, help="write a `cheapqa evaluate` file")
    p.add_argument(
        "--support-weight",
        type=float,
        default=None,
        help="the service's support_weight (0: the readers' own ranking; default: the setting)",
    )
    p.add_argument(
        "--score-frozen",
        action="store_true",
        help="score a set kept unscored (FROZEN): its one blind scoring",
    )


def realistic(args: argparse.Namespace, settings: Settings) -> int:
    # Here, not at the top: `cheapqa --help` reads add_arguments without loading the service.
    from bench.realistic.report import (
        evaluate_lines,
        markdown,
        misses,
        summary,
        write_evaluate_file,
    )
    from bench.realistic.score import run

    if args.set in FROZEN and not args.score_frozen:
        print(
            f"error: {args.set} is kept unscored for the next change: score it once, after that "
            "change is frozen, with --score-frozen",
            file=sys.stderr,
        )
        return 2
    stories = load_stories(set_path(args.set))
    if args.checkpoint_dir is not None:
        settings = settings.model_copy(update={"checkpoint_dir": args.checkpoint_dir})
    if args.support_weight is not None:
        settings = settings.model_copy(update={"support_weight": args.support_weight})

    def log(line: str) -> None:
        if not args.json:
            print(line, file=sys.stderr, flush=True)

    log(
        f"{len(stories)} stories, {answerable(stories)} answerable questions, "
        f"support_weight {settings.support_weight:g}"
    )
    exclude = not args.keep_question_entities
    answered = run(stories, settings, args.modes, exclude_named=exclude, progress=log)
    rows = summary(answered)
    if args.json:
        print(json.dumps({"set": args.set, "rows": rows}, indent=2))
    else:
        print(markdown(rows))
    if args.misses:
        print("\n".join(misses(answered, args.misses)))
    if args.export is not None:
        lines = evaluate_lines(stories, answered)
        write_evaluate_file(args.export, lines)
        log(f"wrote {len(lines)} questions to {args.export}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    return realistic(parser.parse_args(argv), Settings())


if __name__ == "__main__":
    raise SystemExit(main())
