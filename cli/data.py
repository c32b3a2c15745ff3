"""`cheapqa data build`: make the entity-cloze data set (JSONL) from real text;
`cheapqa data name-kinds`: the table of what a name's words say it is."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from cli.progress import bar
from encoder.text.name_kinds import TABLE
from encoder.training.data.choices import DOMAINS, MIN_NAME_COUNT, QUESTION_FORMS, TASKS
from service.settings import Settings

DEFAULT_TASK = "para"


def _run_build(args: argparse.Namespace, settings: Settings) -> int:
    from encoder.training.data.build import (
        LEAD_MIN_TOKENS,
        build_dataset,
        cloze_options,
        load_sources,
        make_paraphrasers,
        make_restater,
    )
    from encoder.training.data.sources import SourceError

    started = time.perf_counter()
    try:
        sources = load_sources(args.cache_dir, args.source_dir, args.wiki)
        paraphrasers = (
            make_paraphrasers(args.cache_dir, args.question) if args.task == "para" else None
        )
        restate = make_restater(args.cache_dir) if args.question == "restated" else None
    except SourceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    window = args.window_tokens
    if args.task == "lead":  # its bodies are read that far at least (build_lead_questions)
        window = max(window, LEAD_MIN_TOKENS)
    options = cloze_options(
        args.task,
        window_tokens=window,
        stride_tokens=args.stride_tokens or window // 2,
        query_tokens_before=args.query_before,
        query_tokens_after=args.query_after,
        max_questions_per_window=args.max_questions_per_window,
        max_entities=args.max_entities,
        question=args.question,
    )
    prefix = "" if args.domain == "books" else f"{args.domain}-"
    form = "" if args.question == "sentence" else f"-{args.question}"
    out = args.out or Path("data") / f"{prefix}{args.task}{form}-{window}"
    try:
        summary = build_dataset(
            out,
            sources,
            args.task,
            options,
            args.seed,
            paraphrasers,
            progress=bar("texts"),
            min_name_count=args.min_name_count,
            domain=args.domain,
            restate=restate,
        )
    except ValueError as e:  # what the build needs and the sources lack (wiki: gensim)
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {out}/{{{','.join(summary['splits'])}}}.jsonl and meta.json")
    header = f"{'split':<11}{'questions':>10}{'doc tok':>9}{'cands':>7}"
    header += f"{'random':>8}{'frequent':>9}{'recent':>8}{'match':>7}{'bow':>7}"
    print(header)
    for split, s in summary["splits"].items():
        b = s["baselines"]
        print(
            f"{split:<11}{s['questions']:>10}{s['mean_document_tokens']:>9.0f}"
            f"{s['mean_candidates']:>7.1f}{b['random']:>8.3f}{b['most_frequent']:>9.3f}"
            f"{b['most_recent']:>8.3f}{b['context_match']:>7.3f}{b['bag_of_words']:>7.3f}"
        )
    print(f"done in {time.perf_counter() - started:.1f}s")
    return 0


def _run_name_kinds(args: argparse.Namespace, settings: Settings) -> int:
    from encoder.training.data.paraphrase import fetch_wordnet
    from encoder.training.data.sources import SourceError
    from encoder.training.name_kinds import build_table, write_person_nouns

    try:
        wordnet = fetch_wordnet(args.cache_dir)
        write_person_nouns(wordnet, args.out.with_name("person_nouns.txt.gz"))
        build_table(wordnet, args.out)
    except (SourceError, RuntimeError) as e:
        print(f"cheapqa data name-kinds: {e}", file=sys.stderr)
        return 1
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("data", help="build the entity-cloze data set")
    data_sub = p.add_subparsers(dest="data_command", required=True, metavar="ACTION")
    b = data_sub.add_parser(
        "build",
        help="questions from Jane Austen's novels (Debian r-cran-janeaustenr), split by novel",
    )
    b.add_argument(
        "--out", type=Path, default=None, help="output folder (data/<task>-<window-tokens>)"
    )
    b.add_argument(
        "--cache-dir", type=Path, default=Path("data/cache"), help="where the package is unpacked"
    )
    b.add_argument(
        "--source-dir", type=Path, default=None, help="an already unpacked r-cran-janeaustenr"
    )
    b.add_argument("--seed", type=int, default=13)
    b.add_argument("--window-tokens", type=int, default=200, help="document length target")
    b.add_argument(
        "--stride-tokens", type=int, default=None, help="a window starts every N (window/2)"
    )
    b.add_argument(
        "--task",
        choices=TASKS,
        default=DEFAULT_TASK,
        help="find: the question's sentence stays in the document (find it, read the name); "
        "para: it stays, and the question is a paraphrase of it (WordNet synonyms, dropped and "
        "reordered words); infer: it is removed and the answer is inferred from the rest of "
        "the window; lead: a name of a chapter's (an article's) first paragraph, answered from "
        "the body (800 tokens at least). With gensim, wiki_test (same task) and lead_test "
        "(lead -> body) on Wikipedia's test articles are added.",
    )
    b.add_argument("--query-before", type=int, default=16, help="question words before the blank")
    b.add_argument("--query-after", type=int, default=3, help="question words after the blank")
    b.add_argument("--max-questions-per-window", type=int, default=8)
    b.add_argument(
        "--question",
        choices=QUESTION_FORMS,
        default="sentence",
        help="sentence: the blank's whole sentence; clause: only its clause, as a person asks "
        "(the blank often first; use with --query-after 16; writes data/<task>-clause-<window>); "
        "restated: only names whose sentence people restate, restated (a role for a verb, the "
        "passive turned active, an appositive left out; writes data/<task>-restated-<window>)",
    )
    b.add_argument(
        "--domain",
        choices=DOMAINS,
        default="books",
        help="books: Austen's novels and Moby Dick; wiki: gensim's Wikipedia sample, split by "
        "article (needs gensim; writes data/wiki-<task>-<window>)",
    )
    b.add_argument(
        "--min-name-count",
        type=int,
        default=MIN_NAME_COUNT,
        help="a book's name is an entity from this many mentions (1: every name, as served)",
    )
    b.add_argument("--max-entities", type=int, default=256, help="entity slots (the model's E)")
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
    k = data_sub.add_parser(
        "name-kinds",
        help="what a name's words say it is (a person's, a place's): a network on GloVe's "
        "vectors learns WordNet's named people and places and writes every GloVe word's "
        "probabilities (needs the data extra); and WordNet's nouns for a person beside it "
        "(person_nouns.txt.gz, for the entity finder)",
    )
    k.add_argument("--out", type=Path, default=TABLE, help="the table (the service reads TABLE)")
    k.add_argument(
        "--cache-dir", type=Path, default=Path("data/cache"), help="where WordNet is unpacked"
    )
    k.set_defaults(handler=_run_name_kinds)
