"""Fit the pair reader (encoder.text.reading) on hand-written story sets already scored, and
say what it is worth on sets it did not see.

    cheapqa bench fit-reading [--sets dev,test,...] [--folds 6] [--questions FILE]
                              [--epochs 3] [--abstain 0.25] [--device cpu|cuda]
                              [--out FILE] [--dry-run]

Each story is indexed by the service (as `cheapqa bench fit-ranking` does) and each question's
TOP likeliest candidates under the shipped linear ranking kept, with their features and, per
candidate, its sentences nearest the question (`candidate_sentences`, as the service picks
them) and where it is named in each. Those questions are written to
`--questions` (a JSON file; given an existing one, it is read instead): the fit
(encoder.training.reading) needs only torch and the sentence model, so the file can be
carried to a machine with a GPU and fitted there with `--device cuda`.

With `--folds` > 1 the sets are first dealt into that many folds and each scored by a reader
fitted on the others, beside the ranking's weights fitted alone on the same candidates: the
accuracy, how well the top answer's `score` (as served) and its probability among the
candidates read tell right from wrong (AUROC, the unanswerable counted wrong), and the share
of the questions a client keeping only the answers above one score gets right at 80%
precision. Then
the reader is fitted on every set and written (unless --dry-run). Sets kept unscored
(`FROZEN`) are refused.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.realistic.fit import Candidates, add_set_arguments, collect, fitting, log
from bench.realistic.report import auroc, right_kept
from bench.realistic.stories import Story
from encoder.text.meaning import _sentence_of, embed, embed_questions, sentence_spans
from encoder.text.ranking import probabilities
from encoder.text.ranking import read as read_ranking
from encoder.text.reading import FILE, TOP, candidate_sentences, lineage, save
from encoder.training.reading import (
    START_MODE,
    Answered,
    Question,
    Settings,
    fit,
    held_out,
    read_questions,
    write_questions,
)
from service.settings import Settings as ServiceSettings


def questions_to_read(
    found: Sequence[Candidates],
    stories: dict[str, Story],
    spans: dict[str, list[list[int]]],
    weights: Sequence[float],
) -> list[Question]:
    """Each question's TOP candidates under the weights, with their sentences nearest it."""
    out = []
    for story_id in dict.fromkeys(q.story for q in found):
        asked = [q for q in found if q.story == story_id]
        text = stories[story_id].text
        bounds = sentence_spans(text)
        sentences = [text[a:b] for a, b in bounds]
        starts = [a for a, _ in bounds]
        named = [
            sorted({_sentence_of(starts, flat[i]) for i in range(0, len(flat) - 1, 2)})
            for flat in spans[story_id]
        ]
        vectors = embed(sentences)
        questions, _ = embed_questions([q.question for q in asked])
        for q, vector in zip(asked, questions, strict=True):
            if not q.rows:
                out.append(Question(q.group, q.question, q.answerable, [], [], []))
                continue
            p = probabilities(q.rows, weights)  # type: ignore[arg-type]
            top = sorted(range(len(p)), key=lambda i: -p[i])[:TOP]
            cos = (vectors @ vector).tolist()
            read = [
                candidate_sentences(
                    named[q.slots[i]] if q.slots[i] < len(named) else [],
                    cos, sentences, starts,
                    spans[story_id][q.slots[i]] if q.slots[i] < len(named) else [],
                )
                for i in top
            ]  # fmt: skip
            out.append(
                Question(
                    q.group,
                    q.question,
                    q.answerable,
                    [list(q.rows[i]) for i in top],
                    [q.right[i] for i in top],
                    read,
                    sum(p[i] for i in top),
                )
            )
    return out


def _figures(answered: Sequence[Answered]) -> tuple[float, float, float, float]:
    """(accuracy over the answerable questions; AUROC, right against wrong with the
    unanswerable counted wrong, of the top answer's score as served and of its probability
    over the candidates read; the share of the questions answered right by the answers kept
    above the score that keeps 80% of them right)."""
    hits = [a.right for a in answered if a.answerable]
    right, wrong = [a for a in answered if a.right], [a for a in answered if not a.right]
    return (
        float(np.mean(hits)) if hits else 0.0,
        auroc([a.score for a in right], [a.score for a in wrong]),
        auroc([a.probability for a in right], [a.probability for a in wrong]),
        right_kept([(a.score, a.right) for a in answered], 0.8),
    )


def fit_reading(args: argparse.Namespace, settings: ServiceSettings) -> int:
    """`cheapqa bench fit-reading`: the questions (collected, or read), the folds' figures,
    the reader fitted on every set and written."""
    from service.readers import checkpoint_dir

    read = fitting(args, settings)
    if read is None:
        return 2
    settings, sets = read
    folder = checkpoint_dir(settings)
    ranking = read_ranking(folder)
    if START_MODE not in ranking:
        log(
            f"error: {folder} keeps no fitted ranking for {START_MODE}: "
            "run cheapqa bench fit-ranking"
        )
        return 2
    start = list(ranking[START_MODE].weights)
    path: Path = args.questions
    if path.is_file():
        questions = read_questions(path)
        log(f"read {len(questions)} questions from {path}")
    else:
        spans: dict[str, list[list[int]]] = {}
        found, _ = collect(sets, settings, [START_MODE], log, spans)
        stories = {s.id: s for group in sets.values() for s in group}
        questions = questions_to_read(found[START_MODE], stories, spans, start)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_questions(path, questions)
        log(f"wrote {len(questions)} questions to {path}")
    fitted = Settings(epochs=args.epochs, learning_rate=args.learning_rate, abstain=args.abstain)
    if args.folds > 1:
        alone = held_out(questions, start, args.folds, fitted._replace(read=False), args.device)
        both = held_out(questions, start, args.folds, fitted, args.device, log)
        print(
            f"| {START_MODE}, {args.folds} folds, top {TOP} candidates | accuracy "
            "| AUROC of score | AUROC of probability | right kept at 80% |"
        )
        print("|---|---:|---:|---:|---:|")
        for name, answered in (("the ranking alone", alone), ("with reading(e)", both)):
            figures = " | ".join(f"{x:.3f}" for x in _figures(answered))
            print(f"| {name} | {figures} |")
    if args.dry_run:
        return 0
    state = path.with_suffix(".state.pt")
    reader = fit(questions, start, fitted, args.device, log, state, args.init)
    out = args.out or folder / FILE
    about: dict[str, object] = {
        "fitted_on": list(args.sets),
        "mode": START_MODE,
        "settings": list(fitted),
    }
    save(reader, out, about | (lineage(args.init) if args.init else {}))
    log(f"wrote {out}")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_set_arguments(p)
    p.add_argument(
        "--questions",
        type=Path,
        default=Path("runs/reading/questions.json"),
        help="the questions read (written when absent, read when present)",
    )
    p.add_argument("--folds", type=int, default=1, help="held-out folds to score (1: none)")
    p.add_argument("--epochs", type=int, default=Settings().epochs)
    p.add_argument("--learning-rate", type=float, default=Settings().learning_rate)
    p.add_argument(
        "--abstain",
        type=float,
        default=Settings().abstain,
        help='the weight of "none of these" beside the ranking (0: none fitted)',
    )
    p.add_argument("--device", default="cpu", help="cpu, or cuda where there is a GPU")
    p.add_argument("--out", type=Path, default=None, help=f"default: <checkpoint-dir>/{FILE}")
    p.add_argument(
        "--init",
        type=Path,
        default=None,
        help="a fitted reader to go on from (its adapter, head and weights) with these sets",
    )
