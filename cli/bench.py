"""`cheapqa bench lookup|stages|store`: in-process benchmarks that print figures (never timed
tests). The work is in `bench/lookup.py`, `bench/stages.py` and `bench/store.py`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bench.common import DEFAULT_DATA, DEFAULT_LOOKUP_MODES, parse_modes, write_json
from cli.progress import bar
from encoder.model.modes import MODES
from service.settings import SUPPORT_WEIGHT, Settings

CORPUS_HINT = "build the data with `cheapqa data build`, or --text-file"


def _ints(text: str) -> list[int]:
    try:
        values = [int(v.replace("_", "")) for v in text.split(",") if v.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas: {text!r}") from exc
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive numbers: {text!r}")
    return values


def _readers(args: argparse.Namespace, settings: Settings) -> int:
    from bench.readers import as_json, evaluate_readers, markdown, write_index
    from encoder.model.checkpoint import CHECKPOINT_DIR

    def log(line: str) -> None:
        if not args.json:
            print(line, file=sys.stderr, flush=True)

    rows = evaluate_readers(
        args.checkpoint_dir or CHECKPOINT_DIR,
        args.data,
        args.modes,
        log=log,
        max_questions=args.max_questions,
    )
    if not rows:
        print(f"no built sets or checkpoints found ({CORPUS_HINT})", file=sys.stderr)
        return 1
    print(json.dumps(as_json(rows)) if args.json else markdown(rows, args.modes))
    if args.write_index:
        log(f"wrote {write_index(args.checkpoint_dir or CHECKPOINT_DIR, rows)}")
    return 0


def _meaning(args: argparse.Namespace, settings: Settings) -> int:
    from bench.meaning import main

    return main(args)


def _frontier(args: argparse.Namespace, settings: Settings) -> int:
    import tempfile

    from bench.frontier import as_json, markdown, plot, run_frontier
    from encoder.model.checkpoint import CHECKPOINT_DIR

    def log(line: str) -> None:
        if not args.json:
            print(line, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        rows = run_frontier(
            args.checkpoint_dir or CHECKPOINT_DIR,
            args.data,
            Path(tmp),
            lengths=args.lengths,
            modes=args.modes,
            max_questions=args.max_questions,
            cost_documents=args.cost_documents,
            rounds=args.rounds,
            support_weight=args.support_weight,
            log=log,
        )
    if not rows:
        print(f"no built para-N sets or checkpoints found ({CORPUS_HINT})", file=sys.stderr)
        return 1
    print(json.dumps(as_json(rows)) if args.json else markdown(rows))
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "frontier.json", as_json(rows))
    (args.out / "frontier.md").write_text(markdown(rows) + "\n")
    plot(rows, args.out / "frontier.png")
    log(f"wrote {args.out / 'frontier.md'}, frontier.json and frontier.png")
    return 0


def _lookup(args: argparse.Namespace, settings: Settings) -> int:
    from bench.corpus import CorpusError, load_corpus
    from bench.lookup import format_goals, load_readers, markdown, run_lookup_bench, write_outputs
    from encoder.model.checkpoint import CheckpointError

    if args.checkpoint_dir is not None:
        settings = settings.model_copy(update={"checkpoint_dir": args.checkpoint_dir})
    try:
        corpus = load_corpus(args.data, args.text_file)
        readers, vocabs, source = load_readers(
            args.modes, corpus, settings, random_init=args.random_init, largest_n=max(args.ns)
        )
    except (CorpusError, ValueError) as exc:
        print(f"error: {exc} ({CORPUS_HINT})", file=sys.stderr)
        return 2
    except CheckpointError as exc:
        hint = "or pass --random-init: timing does not need trained weights"
        print(f"error: {exc} ({hint})", file=sys.stderr)
        return 2
    bench = run_lookup_bench(
        readers,
        vocabs.__getitem__,
        corpus,
        ns=args.ns,
        batch_queries=args.batch_queries,
        encode_batches=args.encode_batches,
        encode_tokens=args.encode_tokens,
        rounds=args.rounds,
        progress=bar("modes", args.json),
    )
    bench.setup["checkpoints"] = source
    written = write_outputs(bench, args.out)
    if args.json:
        print(json.dumps(bench.to_json(), indent=2))
    else:
        print(f"checkpoints: {source}; corpus {corpus.source}; torch threads 1")
        print(markdown(bench))
        print(format_goals(bench.goals))
        print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 0


def _stages(args: argparse.Namespace, settings: Settings) -> int:
    from bench.corpus import CorpusError, load_corpus
    from bench.stages import format_stages, profile_in_temp_dir

    try:
        doc = load_corpus(args.data, args.text_file).documents(1, args.tokens, prefix="stages")[0]
    except (CorpusError, ValueError) as exc:
        print(f"error: {exc} ({CORPUS_HINT})", file=sys.stderr)
        return 2
    report = profile_in_temp_dir(
        settings,
        doc,
        args.mode,
        args.queries,
        args.repeats,
        store_url=args.store_url,
        random_init=args.random_init,
        checkpoint_dir=args.checkpoint_dir,
        progress=bar("requests", args.json),
    )
    print(json.dumps(report.to_json(), indent=2) if args.json else format_stages(report))
    if args.json_out is not None:
        write_json(args.json_out, report.to_json())
    return 0


def _store(args: argparse.Namespace, settings: Settings) -> int:
    from bench.store import LatencyPlan, format_report, redis_url_and_source, run_store_bench

    url, source = redis_url_and_source(args.redis_url, settings.store_url)
    plan = LatencyPlan(
        k=args.k, repeats=args.repeats, batch=args.batch_size, batch_repeats=args.batches
    )
    report = asyncio.run(run_store_bench(url, source, plan))
    print(json.dumps(report.to_json(), indent=2) if args.json else format_report(report))
    return 0


def _realistic(args: argparse.Namespace, settings: Settings) -> int:
    from bench.realistic.__main__ import realistic

    return realistic(args, settings)


def _fit_ranking(args: argparse.Namespace, settings: Settings) -> int:
    from bench.realistic.fit import fit_ranking

    return fit_ranking(args, settings)


def _fit_roles(args: argparse.Namespace, settings: Settings) -> int:
    from bench.realistic.roles import fit_roles

    return fit_roles(args, settings)


def _fit_reading(args: argparse.Namespace, settings: Settings) -> int:
    from bench.realistic.reading import fit_reading

    return fit_reading(args, settings)


def _add_corpus_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="data set JSONL (real text)")
    p.add_argument("--text-file", type=Path, default=None, help="plain text instead of --data")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bench", help="measure the readers, the store and the service, print the figures"
    )
    bench_sub = p.add_subparsers(dest="bench", required=True, metavar="BENCH")

    s = bench_sub.add_parser(
        "readers", help="test accuracy of every reader on every built set, beside the baselines"
    )
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.add_argument(
        "--checkpoint-dir", type=Path, default=None, help="<mode>.pt files (the shipped ones)"
    )
    s.add_argument("--data", type=Path, default=Path("data"), help="the built sets' folder")
    s.add_argument("--modes", type=parse_modes, default=list(MODES))
    s.add_argument("--max-questions", type=int, default=None, help="the first N of each set")
    s.add_argument(
        "--write-index", action="store_true", help="write <checkpoint-dir>/index.json too"
    )
    s.set_defaults(handler=_readers)

    s = bench_sub.add_parser(
        "frontier",
        help="accuracy, lookup µs and state bytes of every mode at every length, in one run",
    )
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.add_argument("--checkpoint-dir", type=Path, default=None, help="<mode>.pt files")
    s.add_argument("--data", type=Path, default=Path("data"), help="the built sets' folder")
    s.add_argument("--modes", type=parse_modes, default=list(MODES))
    s.add_argument("--lengths", type=_ints, default=[200, 800, 1600, 5000, 20_000])
    s.add_argument("--max-questions", type=int, default=400, help="the first N of each set")
    s.add_argument("--cost-documents", type=int, default=8, help="documents timed per length")
    s.add_argument("--rounds", type=int, default=15, help="timed rounds per document (median)")
    s.add_argument(
        "--support-weight",
        type=float,
        default=SUPPORT_WEIGHT,
        help="also each mode as served, its answers ranked with this support_weight "
        "(<mode>+support; the service's default); 0: the readers alone",
    )
    s.add_argument("--out", type=Path, default=Path("docs/bench"), help="table, plot and JSON")
    s.set_defaults(handler=_frontier)

    s = bench_sub.add_parser(
        "realistic",
        help="hand-written news stories asked through the service, beside word matching",
    )
    from bench.realistic.__main__ import add_arguments

    add_arguments(s)
    s.set_defaults(handler=_realistic)

    s = bench_sub.add_parser(
        "fit-ranking",
        help="fit how a question asked in words ranks its answers, per reader, on the "
        "hand-written stories already scored; write ranking.json beside the checkpoints",
    )
    from bench.realistic.fit import add_arguments as add_fit_arguments

    add_fit_arguments(s)
    s.set_defaults(handler=_fit_ranking)

    s = bench_sub.add_parser(
        "fit-roles",
        help="fit role(e), which of a sentence's names a question asks about, on the "
        "hand-written stories already scored; write roles.json beside the checkpoints",
    )
    from bench.realistic.roles import add_arguments as add_roles_arguments

    add_roles_arguments(s)
    s.set_defaults(handler=_fit_roles)

    s = bench_sub.add_parser(
        "fit-reading",
        help="fit the pair reader, which reads a question beside its candidates' sentences, "
        "on the hand-written stories already scored; write reading.pt beside the checkpoints",
    )
    from bench.realistic.reading import add_arguments as add_reading_arguments

    add_reading_arguments(s)
    s.set_defaults(handler=_fit_reading)

    s = bench_sub.add_parser(
        "meaning", help="what embedding sentences and questions costs beside the reader"
    )
    from bench.meaning import add_arguments as add_meaning_arguments

    add_meaning_arguments(s)
    s.set_defaults(handler=_meaning)

    s = bench_sub.add_parser("store", help="state bytes per document; get/put latency")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.add_argument("--redis-url", default=None, help="Redis to measure (default: settings)")
    s.add_argument("--k", type=int, default=100, help="hidden size (default 100)")
    s.add_argument("--repeats", type=int, default=200, help="single-document calls timed")
    s.add_argument("--batch-size", type=int, default=32, help="documents per batch")
    s.add_argument("--batches", type=int, default=20, help="batches timed")
    s.set_defaults(handler=_store)

    s = bench_sub.add_parser(
        "stages", help="where one answers request's time goes (in process, per stage)"
    )
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.add_argument("--json-out", type=Path, default=None, help="also write the JSON here")
    s.add_argument("--mode", choices=MODES, default="linear")
    s.add_argument("--queries", type=int, default=1, help="queries per request")
    s.add_argument("--tokens", type=int, default=5000, help="document length n")
    s.add_argument("--repeats", type=int, default=200, help="timed requests (median)")
    s.add_argument("--store-url", default="", help="Redis URL (default: embedded store)")
    s.add_argument("--checkpoint-dir", type=Path, default=None, help="<mode>.pt files")
    s.add_argument("--random-init", action="store_true", help="a random reader, default size")
    _add_corpus_arguments(s)
    s.set_defaults(handler=_stages)

    s = bench_sub.add_parser(
        "lookup",
        help="lookup time per question against n, per mode; encoding throughput (in process)",
    )
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.add_argument("--out", type=Path, default=Path("docs/bench"), help="table, plot and JSON")
    s.add_argument("--modes", type=parse_modes, default=list(DEFAULT_LOOKUP_MODES))
    s.add_argument("--ns", type=_ints, default=[100, 250, 750, 2000, 5000, 10_000, 20_000, 50_000])
    s.add_argument("--batch-queries", type=int, default=32, help="questions per batched lookup")
    s.add_argument("--encode-batches", type=_ints, default=[1, 4, 16, 64])
    s.add_argument("--encode-tokens", type=int, default=250, help="tokens per encoded document")
    s.add_argument("--rounds", type=int, default=21, help="timed rounds per point (median)")
    s.add_argument("--checkpoint-dir", type=Path, default=None, help="<mode>.pt files")
    s.add_argument("--random-init", action="store_true", help="random readers of the default size")
    _add_corpus_arguments(s)
    s.set_defaults(handler=_lookup)
