"""Fit the pair reader from a questions file on a machine that holds torch and the sentence
model alone (a GPU machine without the service's packages):

    python -m encoder.training.fit_reading QUESTIONS --out FILE [--device cuda]
        [--sentence-model DIR] [--checkpoint-dir DIR] [--epochs N] [--seed N] [--init FILE]

QUESTIONS is the file `cheapqa bench fit-reading --questions` writes (gzip-compressed too):
each question's candidates with their features and sentences, from the sets already scored.
The fit starts from the linear ranking's weights of --checkpoint-dir (the shipped ones), as
`cheapqa bench fit-reading` does, and keeps its state beside --out (`<out>.state.pt`), so a
fit cut off goes on when started again. --init: a fitted reader to go on from (its adapter,
head and weights) instead. --sentence-model: a folder holding a copy of the
sentence model (`sentence_transformers` format) where its package is not installed; one in
half precision, 45 MB against 91, travels where files are few (its weights are read back in
single precision, the adapter fitted on weights rounded to 3 significant digits).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from encoder.model.checkpoint import CHECKPOINT_DIR
from encoder.text.meaning import MODEL_FOLDER_VARIABLE
from encoder.text.ranking import read as read_ranking
from encoder.text.reading import lineage, save
from encoder.training.reading import DEFAULTS, START_MODE, fit, read_questions


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m encoder.training.fit_reading")
    p.add_argument("questions", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--device", default="cpu", help="cpu, or cuda where there is a GPU")
    p.add_argument("--sentence-model", default=None, help="a folder with the sentence model")
    p.add_argument("--checkpoint-dir", type=Path, default=CHECKPOINT_DIR)
    p.add_argument("--epochs", type=int, default=DEFAULTS.epochs)
    p.add_argument(
        "--seed", type=int, default=DEFAULTS.seed, help="the adapter's start, the questions' order"
    )
    p.add_argument("--init", type=Path, default=None, help="a fitted reader to go on from")
    args = p.parse_args(argv)
    if args.sentence_model:
        os.environ[MODEL_FOLDER_VARIABLE] = args.sentence_model
    ranking = read_ranking(args.checkpoint_dir)
    if START_MODE not in ranking:
        print(f"error: {args.checkpoint_dir} keeps no fitted {START_MODE} ranking", file=sys.stderr)
        return 2
    questions = read_questions(args.questions)
    print(f"{len(questions)} questions from {args.questions}", flush=True)
    settings = DEFAULTS._replace(epochs=args.epochs, seed=args.seed)
    began = time.perf_counter()
    reader = fit(
        questions,
        list(ranking[START_MODE].weights),
        settings,
        args.device,
        lambda line: print(line, flush=True),
        args.out.with_suffix(".state.pt"),
        args.init,
    )
    sets = list(dict.fromkeys(q.group for q in questions))
    about: dict[str, object] = {"fitted_on": sets, "mode": START_MODE, "settings": list(settings)}
    save(reader, args.out, about | (lineage(args.init) if args.init else {}))
    print(f"fitted in {time.perf_counter() - began:.0f} s; wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
