"""Fit how a question asked in words ranks its answers (encoder.text.ranking), per reader, on
hand-written story sets already scored, and write the weights beside the checkpoints.

    cheapqa bench fit-ranking [--sets dev,test,...] [--checkpoint-dir DIR] [--dry-run]

Each story is indexed by the service itself (`served`) and each question prepared and ranked
by its own functions, over the reader's RERANK_POOL likeliest answers less those the question
names; every candidate's `features` are kept with whether it is right. The weights maximise
the log-probability of the right answers (a softmax over each question's candidates, a
little L2), from the hand-set ranking's weights. Questions without a right candidate in the
pool, or with nothing but right ones, tell the weights nothing and are left out.

The weights are fitted twice: with meaning(e) and role(e) (encoder.text.meaning and
encoder.text.roles; the stories are indexed with sentence and mention vectors) and without
them (`plain`, both 0 for every candidate), for a service or a record without them. role(e)
is the shipped head's (`cheapqa bench fit-roles`), fitted on every set: a set left out here
was not left out of it, so the figures with it are optimistic; `cheapqa bench fit-roles`
scores it on sets it did not see. It prints, per mode, the accuracy of the hand-set, the plain and
the full weights, each set scored by weights fitted without it (leave one set out), and the
AUROC of the top answer's probability (right against wrong, unanswerable questions counted
wrong) under each. Sets written blind and
kept unscored (`FROZEN`) are refused.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from bench.common import parse_modes
from bench.realistic.report import auroc
from bench.realistic.score import local_settings, served
from bench.realistic.stories import FROZEN, SETS, Story, load_stories, set_path
from encoder.model.modes import MODES
from encoder.text.meaning import embed_questions, unpack
from encoder.text.ranking import FILE, Fitted, Weights, probabilities
from encoder.text.support import KIND_WEIGHT, RERANK_POOL
from service.answering import (
    candidate_features,
    prepare_queries,
    question_meanings,
    rank_answers,
)
from service.app import Runtime
from service.settings import Settings

L2 = 1e-3


@dataclass(frozen=True)
class Candidates:
    """One question's candidates in one mode: their features and which are right."""

    group: str  # the set the story is from: scored by weights fitted without it
    rows: list[tuple[float, ...]]
    right: list[bool]
    answerable: bool
    # The question's asking-word vector and each candidate's mention vectors (rows of its
    # record's), for fitting role(e) itself (bench.realistic.roles); None and () unknown.
    asking: np.ndarray | None = None
    named: tuple[np.ndarray, ...] = ()
    # Where it is from, for reading it again (bench.realistic.reading): the story, the
    # question and its candidates' entity slots.
    story: str = ""
    question: str = ""
    slots: tuple[int, ...] = ()


async def _collect(
    sets: dict[str, list[Story]],
    settings: Settings,
    modes: Sequence[str],
    progress: Callable[[str], None],
    spans: dict[str, list[list[int]]],
) -> tuple[dict[str, list[Candidates]], dict[str, str]]:
    stories = [s for group in sets.values() for s in group]
    out: dict[str, list[Candidates]] = {m: [] for m in modes}
    async with served(stories, settings, progress) as (app, _):
        runtime: Runtime = app.state.runtime
        models, store = runtime.models.ready(), runtime.store
        assert store is not None  # the lifespan opened it
        for group, members in sets.items():
            for story in members:
                record = await store.get(story.id)
                assert record is not None, story.id
                spans[story.id] = record.spans
                questions = [a.question for a in story.questions]
                for mode in modes:
                    model = models[mode]
                    prepared = prepare_queries(model, questions, record.entities)
                    meanings = question_meanings(record, questions, prepared)
                    # The asking words' vectors, as question_meanings just embedded (and kept)
                    # them
                    _, asking = embed_questions([questions[i] for i in prepared.asked])
                    vectors = unpack(record.mention_vectors)
                    with torch.inference_mode():
                        Q = model.reader.encode_queries(prepared.ids)
                    ranked = rank_answers(
                        model,
                        record.states[mode],
                        Q,
                        len(record.entities),
                        RERANK_POOL,
                        record.mentions,
                        prepared.named,
                        record.evidence,
                        prepared.terms,
                        settings.support_weight,
                        prepared.kinds,
                    )
                    for row, i in enumerate(prepared.asked):
                        gold = story.questions[i].answer
                        slots = ranked.slots[row]
                        kept = list(zip(slots, ranked.reader_scores[row], strict=True))
                        rows = candidate_features(
                            kept,
                            ranked.supports[row],
                            record.evidence,
                            prepared.terms[row],
                            prepared.kinds[row],
                            record.mentions,
                            meanings[row],
                        )
                        right = [story.is_right(record.entities[s], gold) for s in slots]
                        named = tuple(
                            vectors[record.named[s] if s < len(record.named) else []] for s in slots
                        )
                        word = asking[row] if meanings[row] is not None else None
                        out[mode].append(
                            Candidates(
                                group,
                                rows,
                                right,
                                gold is not None,
                                word,
                                named,
                                story.id,
                                questions[i],
                                tuple(slots),
                            )
                        )
            progress(f"read {group}")
    return out, {mode: models[mode].model_id for mode in modes}


def collect(
    sets: dict[str, list[Story]],
    settings: Settings,
    modes: Sequence[str],
    progress: Callable[[str], None] = lambda line: None,
    spans: dict[str, list[list[int]]] | None = None,
) -> tuple[dict[str, list[Candidates]], dict[str, str]]:
    """Per mode, every question's `Candidates`, and the model id of each mode's reader; the
    stories indexed in a temporary folder. spans: filled with each story's entities' mention
    spans, as its record keeps them."""
    with tempfile.TemporaryDirectory(prefix="cheapqa-fit-") as tmp:
        local = local_settings(settings, modes, Path(tmp))
        found = {} if spans is None else spans
        return asyncio.run(_collect(sets, local, modes, progress, found))


def hand_set(support_weight: float) -> Weights:
    """The hand-set ranking of a cloze sentence as weights (up to the candidates outside the
    pool, which do not change the order)."""
    return Weights(1.0, support_weight, KIND_WEIGHT, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def plain(questions: Sequence[Candidates]) -> list[Candidates]:
    """The questions with meaning(e) and role(e) unknown (0 for every candidate), as a service
    without sentence vectors ranks them."""
    known = len(Weights._fields) - 2  # meaning and role come last
    return [
        dataclasses.replace(q, rows=[(*r[:known], 0.0, 0.0) for r in q.rows]) for q in questions
    ]


class Padded(NamedTuple):
    """The questions that tell the weights something (a right candidate and a wrong one),
    padded to one (questions, candidates, features) block: a padding candidate is neither
    right nor counted."""

    told: list[Candidates]
    X: torch.Tensor
    real: torch.Tensor
    right: torch.Tensor


def padded(questions: Sequence[Candidates], dtype: torch.dtype) -> Padded:
    told = [q for q in questions if any(q.right) and not all(q.right)]
    width = max((len(q.rows) for q in told), default=1)
    X = torch.zeros(len(told), width, len(Weights._fields), dtype=dtype)
    real = torch.zeros(len(told), width, dtype=torch.bool)
    right = torch.zeros(len(told), width, dtype=torch.bool)
    for i, q in enumerate(told):
        X[i, : len(q.rows)] = torch.tensor(q.rows, dtype=dtype)
        real[i, : len(q.rows)] = True
        right[i, : len(q.rows)] = torch.tensor(q.right)
    return Padded(told, X, real, right)


def surprise(scores: torch.Tensor, block: Padded) -> torch.Tensor:
    """The mean negative log-probability of the right answers under the candidates' scores
    (a softmax over each question's real candidates)."""
    never = torch.tensor(float("-inf"), dtype=scores.dtype)
    all_ = torch.logsumexp(torch.where(block.real, scores, never), dim=1)
    good = torch.logsumexp(torch.where(block.right, scores, never), dim=1)
    return (all_ - good).mean()


def fit(questions: Sequence[Candidates], start: Weights) -> Weights:
    """The weights that maximise the right answers' log-probability, from `start`."""
    block = padded(questions, torch.float64)
    w = torch.tensor(start, dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.LBFGS([w], max_iter=200, line_search_fn="strong_wolfe")

    def loss() -> torch.Tensor:
        optimiser.zero_grad()
        value = surprise(block.X @ w, block) + L2 * (w**2).sum()
        value.backward()
        return value

    optimiser.step(loss)
    return Weights(*(float(x) for x in w.detach()))


class Scored(NamedTuple):
    accuracy: float  # of the answerable questions, their top answer right
    auroc: float  # the top answer's probability, right against wrong (unanswerable: wrong)


def score(pairs: Sequence[tuple[Candidates, Weights]]) -> Scored:
    """Questions ranked each by its weights: the accuracy of the answerable ones' top answer,
    and the AUROC of the top answer's probability."""
    right: list[float] = []
    wrong: list[float] = []
    hits: list[float] = []
    for q, weights in pairs:
        if not q.rows:
            hits += [0.0] if q.answerable else []
            continue
        p = probabilities(q.rows, weights)
        top = max(range(len(p)), key=lambda i: p[i])
        (right if q.right[top] else wrong).append(p[top])
        if q.answerable:
            hits.append(float(q.right[top]))
    return Scored(sum(hits) / max(len(hits), 1), auroc(right, wrong))


def held_out(questions: Sequence[Candidates], start: Weights) -> list[tuple[Candidates, Weights]]:
    """Each question with the weights fitted on every set but its own."""
    out = []
    for group in sorted({q.group for q in questions}):
        weights = fit([q for q in questions if q.group != group], start)
        out += [(q, weights) for q in questions if q.group == group]
    return out


def write(path: Path, fitted: dict[str, Fitted], about: dict[str, object]) -> None:
    """The fitted weights of each mode, with meaning(e) and without, with the model id they
    are for, and how they were fitted."""
    table = {
        **about,
        "modes": {
            mode: {
                "model_id": f.model_id,
                "weights": f.weights._asdict(),
                "plain": f.plain._asdict(),
            }
            for mode, f in fitted.items()
        },
    }
    path.write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def fitting(
    args: argparse.Namespace, settings: Settings
) -> tuple[Settings, dict[str, list[Story]]] | None:
    """What a fitter reads (`add_set_arguments`'): the settings to index with (the checkpoint
    folder asked for, sentence and mention vectors on) and the sets; None, the error said,
    where one is kept unscored."""
    frozen = [name for name in args.sets if name in FROZEN]
    if frozen:
        print(f"error: {', '.join(frozen)} is kept unscored: not fitted on", file=sys.stderr)
        return None
    if args.checkpoint_dir is not None:
        settings = settings.model_copy(update={"checkpoint_dir": args.checkpoint_dir})
    settings = settings.model_copy(update={"meaning": True})
    return settings, {name: load_stories(set_path(name)) for name in args.sets}


def fit_ranking(args: argparse.Namespace, settings: Settings) -> int:
    """`cheapqa bench fit-ranking`: collect, fit per mode (with meaning(e) and without),
    print the held-out figures, write the weights (unless --dry-run)."""
    from service.readers import checkpoint_dir

    read = fitting(args, settings)
    if read is None:
        return 2
    settings, sets = read
    found, model_ids = collect(sets, settings, args.modes, log)
    start = hand_set(settings.support_weight)
    fitted: dict[str, Fitted] = {}
    held: dict[str, object] = {}
    print(
        "| mode | questions | accuracy, hand-set | fitted, plain | fitted, with meaning and role "
        "| AUROC, hand-set | plain | with meaning and role |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode, questions in found.items():
        before = score([(q, start) for q in plain(questions)])
        without = score(held_out(plain(questions), start))
        after = score(held_out(questions, start))
        fitted[mode] = Fitted(model_ids[mode], fit(questions, start), fit(plain(questions), start))
        held[mode] = {
            "hand_set": before._asdict(),
            "plain": without._asdict(),
            "fitted": after._asdict(),
        }
        print(
            f"| {mode} | {len(questions)} | {before.accuracy:.3f} | {without.accuracy:.3f} "
            f"| {after.accuracy:.3f} | {before.auroc:.3f} | {without.auroc:.3f} "
            f"| {after.auroc:.3f} |"
        )
        for name, weights in (
            ("with meaning and role", fitted[mode].weights),
            ("plain", fitted[mode].plain),
        ):
            log(
                f"{mode}, {name}: "
                + ", ".join(f"{k} {v:.3f}" for k, v in weights._asdict().items())
            )
    if args.dry_run:
        return 0
    path = checkpoint_dir(settings) / FILE
    about = {"fitted_on": list(args.sets), "support_weight": settings.support_weight}
    write(path, fitted, {**about, "held_out": held})
    log(f"wrote {path}")
    return 0


def add_set_arguments(p: argparse.ArgumentParser) -> None:
    """What every fitter takes: the sets, the checkpoint folder, --dry-run."""
    p.add_argument(
        "--sets",
        type=lambda text: [s for s in text.split(",") if s],
        default=[s for s in SETS if s not in FROZEN],
        help="story sets to fit on (default: every set already scored)",
    )
    p.add_argument("--checkpoint-dir", type=Path, default=None, help="<mode>.pt files")
    p.add_argument("--dry-run", action="store_true", help="print the figures, write nothing")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_set_arguments(p)
    p.add_argument("--modes", type=parse_modes, default=list(MODES))
