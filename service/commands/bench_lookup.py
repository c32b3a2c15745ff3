"""`cheapqa bench lookup [--json]`: per-question lookup time against n for each mode, and
encoding throughput against batch size; in process, one torch thread, no HTTP.

`cheapqa bench stages [--json]`: where one `answers` request's time goes (in process, the
app with its lifespan, the handler's own calls timed one by one)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from service.settings import ALL_MODES, Settings

DEFAULT_DATA = Path("data/cloze/train.jsonl")


def _ints(text: str) -> list[int]:
    try:
        values = [int(v.replace("_", "")) for v in text.split(",") if v.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas: {text!r}") from exc
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive numbers: {text!r}")
    return values


def _modes(text: str) -> list[str]:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    if not modes or any(m not in ALL_MODES for m in modes):
        raise argparse.ArgumentTypeError(f"modes must be among {','.join(ALL_MODES)}: {text!r}")
    return modes


def _run(args: argparse.Namespace, settings: Settings) -> int:
    import torch

    from encoder.checkpoint import CheckpointError, load_checkpoint
    from encoder.model import Reader
    from encoder.vocab import Vocabulary
    from service.bench_lookup import format_goals, markdown, run_lookup_bench, write_outputs
    from service.loadtest.checkpoints import corpus_vocabulary, random_reader
    from service.loadtest.corpus import CorpusError
    from service.models import checkpoint_path

    try:
        corpus = _load_corpus(args)
    except (CorpusError, ValueError) as exc:
        print(f"error: {exc} (build the data with `cheapqa data build`, or --text-file)")
        return 2
    readers: dict[str, Reader] = {}
    vocabs: dict[str, Vocabulary] = {}
    if args.random_init:
        # A vocabulary of a few thousand real words, as a trained reader's would be.
        sample = corpus.documents(1, max(*args.ns, 100_000), prefix="vocab")[0].text
        vocab = corpus_vocabulary([sample])
        for i, mode in enumerate(args.modes):
            readers[mode], vocabs[mode] = random_reader(mode, vocab, seed=i), vocab
        source = f"random-init, default size (k=100, E=50, vocabulary {len(vocab)})"
    else:
        if args.checkpoint_dir is not None:
            settings = settings.model_copy(update={"checkpoint_dir": args.checkpoint_dir})
        paths = {mode: checkpoint_path(settings, mode) for mode in args.modes}
        try:
            for mode, path in paths.items():
                ckpt = load_checkpoint(path)
                readers[mode], vocabs[mode] = ckpt.model, ckpt.vocab
        except CheckpointError as exc:
            print(f"error: {exc} (or pass --random-init: timing does not need trained weights)")
            return 2
        source = ", ".join(f"{m}: {p}" for m, p in paths.items())
    with torch.inference_mode():
        bench = run_lookup_bench(
            readers,
            vocabs.__getitem__,
            corpus,
            ns=args.ns,
            batch_queries=args.batch_queries,
            encode_batches=args.encode_batches,
            encode_tokens=args.encode_tokens,
            rounds=args.rounds,
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


def _load_corpus(args: argparse.Namespace) -> Any:
    from service.loadtest.corpus import load_dataset_corpus, load_text_corpus

    if args.text_file is not None:
        return load_text_corpus(args.text_file)
    return load_dataset_corpus(args.data)


def _run_stages(args: argparse.Namespace, settings: Settings) -> int:
    import asyncio
    import tempfile

    from service.loadtest.checkpoints import corpus_vocabulary, write_random_checkpoints
    from service.loadtest.corpus import CorpusError
    from service.loadtest.stages import format_stages, profile_answers

    try:
        corpus = _load_corpus(args)
        doc = corpus.documents(1, args.tokens, prefix="stages")[0]
    except (CorpusError, ValueError) as exc:
        print(f"error: {exc} (build the data with `cheapqa data build`, or --text-file)")
        return 2
    with tempfile.TemporaryDirectory(prefix="cheapqa-stages-") as tmp:
        updates: dict[str, Any] = {
            "data_dir": Path(tmp) / "data",
            "store_url": args.store_url,
            "key_prefix": f"cheapqa-stages-{Path(tmp).name}",
            "serve_worker": True,
            "modes": [args.mode],
            "default_mode": args.mode,
        }
        if args.random_init:
            vocab = corpus_vocabulary([doc.text])
            updates["checkpoint_dir"] = write_random_checkpoints(
                Path(tmp) / "checkpoints", [args.mode], vocab
            )
        elif args.checkpoint_dir is not None:
            updates["checkpoint_dir"] = args.checkpoint_dir
        profile_settings = settings.model_copy(update=updates)
        report = asyncio.run(
            profile_answers(profile_settings, doc, args.mode, args.queries, args.repeats)
        )
    report.notes["checkpoints"] = (
        "random-init, default size" if args.random_init else str(args.checkpoint_dir or "shipped")
    )
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(format_stages(report))
    if args.json_out is not None:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(report.to_json(), indent=2) + "\n")
    return 0


def register(bench_sub: Any) -> None:
    s = bench_sub.add_parser(
        "stages", help="where one answers request's time goes (in process, per stage)"
    )
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.add_argument("--json-out", type=Path, default=None, help="also write the JSON here")
    s.add_argument("--mode", choices=ALL_MODES, default="linear")
    s.add_argument("--queries", type=int, default=1, help="queries per request")
    s.add_argument("--tokens", type=int, default=5000, help="document length n")
    s.add_argument("--repeats", type=int, default=200, help="timed requests (median)")
    s.add_argument("--store-url", default="", help="Redis URL (default: embedded store)")
    s.add_argument("--checkpoint-dir", type=Path, default=None, help="<mode>.pt files")
    s.add_argument("--random-init", action="store_true", help="a random reader, default size")
    s.add_argument("--data", type=Path, default=DEFAULT_DATA, help="data set JSONL (real text)")
    s.add_argument("--text-file", type=Path, default=None, help="plain text instead of --data")
    s.set_defaults(handler=_run_stages)

    p = bench_sub.add_parser(
        "lookup",
        help="lookup time per question against n, per mode; encoding throughput (in process)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--out", type=Path, default=Path("docs/bench"), help="table, plot and JSON")
    p.add_argument("--modes", type=_modes, default=["linear", "gated", "softmax", "none"])
    p.add_argument("--ns", type=_ints, default=[100, 250, 750, 2000, 5000, 10_000, 20_000, 50_000])
    p.add_argument("--batch-queries", type=int, default=32, help="questions per batched lookup")
    p.add_argument("--encode-batches", type=_ints, default=[1, 4, 16, 64])
    p.add_argument("--encode-tokens", type=int, default=250, help="tokens per encoded document")
    p.add_argument("--rounds", type=int, default=21, help="timed rounds per point (median)")
    p.add_argument("--checkpoint-dir", type=Path, default=None, help="<mode>.pt files")
    p.add_argument("--random-init", action="store_true", help="random readers of the default size")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="data set JSONL (real text)")
    p.add_argument("--text-file", type=Path, default=None, help="plain text instead of --data")
    p.set_defaults(handler=_run)
