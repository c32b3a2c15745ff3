"""`cheapqa data build`: make the entity-cloze data set (JSONL) from real text."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from service.settings import Settings

DEFAULT_TASK = "find"


def _run_build(args: argparse.Namespace, settings: Settings) -> int:
    from encoder.data.build import build_dataset
    from encoder.data.cloze import ClozeOptions
    from encoder.data.sources import (
        SourceError,
        austen_novels,
        find_wiki_sample,
        locate_janeaustenr,
    )

    started = time.perf_counter()
    try:
        stem = locate_janeaustenr(args.source_dir, args.cache_dir)
        novels = austen_novels(stem)
        wiki = None
        if args.wiki is not False:
            wiki = find_wiki_sample()
            if wiki is None and args.wiki:
                raise SourceError("--wiki needs gensim (pip install gensim) and its test data")
    except SourceError as e:
        print(f"error: {e}")
        return 1
    options = ClozeOptions(
        window_tokens=args.window_tokens,
        stride_tokens=args.stride_tokens,
        keep_query_sentence=args.task == "find",
        answer_elsewhere=args.task == "infer",
        query_tokens_before=args.query_before,
        query_tokens_after=args.query_after,
        max_questions_per_window=args.max_questions_per_window,
        max_entities=args.max_entities,
    )
    summary = build_dataset(args.out, novels, options, args.seed, wiki)
    print(f"wrote {args.out}/{{{','.join(summary['splits'])}}}.jsonl and meta.json")
    header = f"{'split':<11}{'questions':>10}{'windows':>9}{'doc tok':>9}{'cands':>7}"
    header += f"{'random':>8}{'frequent':>9}{'recent':>8}{'match':>7}"
    print(header)
    for split, s in summary["splits"].items():
        b = s["baselines"]
        print(
            f"{split:<11}{s['questions']:>10}{s['windows']:>9}{s['mean_document_tokens']:>9.0f}"
            f"{s['mean_candidates']:>7.1f}{b['random']:>8.3f}{b['most_frequent']:>9.3f}"
            f"{b['most_recent']:>8.3f}{b['context_match']:>7.3f}"
        )
    print(f"done in {time.perf_counter() - started:.1f}s")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("data", help="build the entity-cloze data set")
    data_sub = p.add_subparsers(dest="data_command", required=True, metavar="ACTION")
    b = data_sub.add_parser(
        "build",
        help="questions from Jane Austen's novels (Debian r-cran-janeaustenr), split by novel",
    )
    b.add_argument("--out", type=Path, default=Path("data/cloze"), help="output folder")
    b.add_argument(
        "--cache-dir", type=Path, default=Path("data/cache"), help="where the package is unpacked"
    )
    b.add_argument(
        "--source-dir", type=Path, default=None, help="an already unpacked r-cran-janeaustenr"
    )
    b.add_argument("--seed", type=int, default=13)
    b.add_argument("--window-tokens", type=int, default=200, help="document length target")
    b.add_argument("--stride-tokens", type=int, default=100, help="a window starts every N tokens")
    b.add_argument(
        "--task",
        choices=("find", "infer"),
        default=DEFAULT_TASK,
        help="find: the question's sentence stays in the document (find it, read the name); "
        "infer: it is removed and the answer is inferred from the rest of the window",
    )
    b.add_argument("--query-before", type=int, default=16, help="question words before the blank")
    b.add_argument("--query-after", type=int, default=3, help="question words after the blank")
    b.add_argument("--max-questions-per-window", type=int, default=8)
    b.add_argument("--max-entities", type=int, default=50, help="entity slots (the model's E)")
    wiki = b.add_mutually_exclusive_group()
    wiki.add_argument(
        "--wiki",
        dest="wiki",
        action="store_true",
        default=None,
        help="add gensim's Wikipedia sample as a second-domain test set (needs gensim)",
    )
    wiki.add_argument("--no-wiki", dest="wiki", action="store_false")
    b.set_defaults(handler=_run_build)
