"""`cheapqa train`: train a reader on a JSONL entity-cloze data set."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from encoder.model.modes import MODES
from service.settings import Settings


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from encoder.training.data.questions import DataError
    from encoder.training.recipe import RecipeError, load_recipe
    from encoder.training.train import recipe_of, train_recipe

    out = args.out or Path("runs") / f"{args.mode}.pt"
    started = time.perf_counter()
    try:
        # Without --recipe, the flags make a one-stage recipe over --data.
        recipe = load_recipe(args.recipe) if args.recipe else recipe_of(_options(args, out))
        history = train_recipe(
            recipe,
            args.mode,
            out,
            log=lambda line: print(line, flush=True),
            resume=args.resume,
            threads=args.threads,
            device=args.device,
        )
    except (DataError, RecipeError) as e:
        print(f"error: {e}")
        return 1
    print(
        f"best validation accuracy {history.best_accuracy:.4f} at epoch {history.best_epoch}; "
        f"checkpoint {out}; {time.perf_counter() - started:.0f}s"
    )
    return 0


def _options(args: argparse.Namespace, out: Path) -> Any:
    from encoder.training.train import TrainOptions

    return TrainOptions(
        mode=args.mode,
        data_dir=args.data,
        out=out,
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        seed=args.seed,
        hidden_size=args.hidden_size,
        dropout=args.dropout,
        vocab_size=args.vocab_size,
        glove=args.glove,
        embedding_lr_scale=args.embedding_lr_scale,
        shuffle_entities=args.shuffle_entities,
        max_train=args.max_train,
        resume=args.resume,
        threads=args.threads,
    )


def register(sub: Any) -> None:
    p = sub.add_parser("train", help="train a reader; keeps the best checkpoint (by validation)")
    p.add_argument("--mode", choices=MODES, required=True)
    p.add_argument(
        "--recipe",
        type=Path,
        default=None,
        help="a staged recipe (JSON, e.g. encoder/training/recipes/reader.json); the other "
        "training flags are then taken from it",
    )
    p.add_argument(
        "--data",
        type=Path,
        default=Path("data/para-200"),
        help="folder with train/validation.jsonl",
    )
    p.add_argument("--out", type=Path, default=None, help="checkpoint path (runs/<mode>.pt)")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--hidden-size", type=int, default=100)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--vocab-size", type=int, default=10_000)
    p.add_argument(
        "--glove",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="initialise word embeddings from GloVe 6B 50-d when installed",
    )
    p.add_argument("--embedding-lr-scale", type=float, default=1.0, help="0 freezes the embeddings")
    p.add_argument(
        "--shuffle-entities",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="renumber entity markers at random each time an example is drawn",
    )
    p.add_argument("--max-train", type=int, default=None, help="use only N training questions")
    p.add_argument(
        "--resume",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="continue from <out>.resume when it exists",
    )
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument(
        "--device",
        default="cpu",
        help="where the weights train: cpu, or cuda where torch sees a GPU",
    )
    p.set_defaults(handler=_run)
