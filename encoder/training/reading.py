"""Fitting the pair reader (encoder.text.reading) with the ranking's weights: each question's
TOP candidates, ranked by softmax of w · features(e) + w_reading · reading(e), the right
answers' log-probability maximised (as `cheapqa bench fit-ranking` fits w alone); beside
them an answer "none of these", its logit fitted on every question (the unanswerable and
those whose answer is not among the candidates say "none"), so that a question none of
whose candidates reads as its answer gets low scores.

The questions come as a JSON file of `Question`s (`cheapqa bench fit-reading` writes it from
the story sets), so the fit itself needs only torch and the sentence model
(`python -m encoder.training.fit_reading`): it runs where there is a GPU, or on the CPU (about
6 s a step of BATCH questions on 2 threads: 77 minutes for 6,067 questions over 2 epochs; the
900 steps of 4,789 questions took 86 s on an H200). A fit
keeps its state every CHECKPOINT_EVERY steps and goes on from it when started again with the
same file, settings and start (--init).
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn

from encoder.text.reading import N_WEIGHTS, Pair, PairReader, base_model, read_fitted

# The reader whose ranking the fit starts from (whose candidates the questions file holds)
START_MODE = "linear"
BATCH = 16  # questions a step
EPOCHS = 3
LEARNING_RATE = 5e-4  # the adapter's
HEAD_RATE = 1e-3
WEIGHT_RATE = 1e-2  # the ranking's weights and reading(e)'s
WARMUP = 50  # steps
WEIGHT_DECAY = 0.01
CHECKPOINT_EVERY = 25  # steps
# The weight of "none of these" (PairReader.abstain) beside the ranking: its loss, whether a
# question has a right candidate at all, times this (0: none fitted). 1 is the log-probability
# of the right answer among the candidates and "none"; in held-out folds it cost accuracy
# that 0.25 does not (RESULTS.md, "Ideas tried").
ABSTAIN = 0.25


@dataclass(frozen=True)
class Question:
    """One question's TOP candidates: their ranking features, which are right, and per
    candidate its sentences nearest the question with where it is named in each."""

    group: str  # the story set: folds are dealt by set
    question: str
    answerable: bool
    rows: list[list[float]]  # encoder.text.ranking.features, per candidate
    right: list[bool]
    sentences: list[list[tuple[str, list[list[int]]]]]  # per candidate: (sentence, spans)
    mass: float = 1.0  # the candidates' share of the ranking's probability before reading

    @property
    def told(self) -> bool:
        """Whether it tells the fit anything: a right candidate and a wrong one."""
        return any(self.right) and not all(self.right)


def write_questions(path: Path, questions: Sequence[Question]) -> None:
    rows = [q.__dict__ for q in questions]
    path.write_text(json.dumps(rows) + "\n", encoding="utf-8")


def read_questions(path: Path) -> list[Question]:
    """The questions of a file `write_questions` wrote, gzip-compressed too (a `.gz` name)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        rows = json.load(f)
    return [
        Question(
            r["group"],
            r["question"],
            r["answerable"],
            r["rows"],
            r["right"],
            [[(text, spans) for text, spans in per] for per in r["sentences"]],
            r.get("mass", 1.0),
        )
        for r in rows
    ]


class Settings(NamedTuple):
    epochs: int = EPOCHS
    learning_rate: float = LEARNING_RATE
    seed: int = 0
    read: bool = True  # False: the weights alone, reading(e) 0 (the comparison)
    abstain: float = ABSTAIN

    @property
    def abstains(self) -> bool:
        """Whether "none of these" is fitted."""
        return self.abstain > 0


DEFAULTS = Settings()


def _pairs(reader: PairReader, q: Question) -> list[list[Pair]]:
    out = []
    for per in q.sentences:
        found = [reader.pair(q.question, text, spans) for text, spans in per]
        out.append([p for p in found if p is not None])
    return out


def candidate_scores(
    reader: PairReader, questions: Sequence[Question], pairs: Sequence[list[list[Pair]]], read: bool
) -> list[torch.Tensor]:
    """Per question, its candidates' scores: w · features + w_reading · reading(e) (reading(e)
    0 for a candidate none of whose mentions the pairs hold), one model run for them all."""
    device = reader.weights.device
    w = reader.weights
    out = [torch.tensor(q.rows, device=device) @ w[: N_WEIGHTS - 1] for q in questions]
    if not read:
        return out
    flat: list[Pair] = []
    owner: list[tuple[int, int]] = []
    for n, per_question in enumerate(pairs):
        for k, per in enumerate(per_question):
            flat += per
            owner += [(n, k)] * len(per)
    values = reader.scores(flat)
    best: list[list[list[torch.Tensor]]] = [[[] for _ in q.rows] for q in questions]
    for value, (n, k) in zip(values, owner, strict=True):
        best[n][k].append(value)
    zero = torch.zeros((), device=device)
    return [
        s + w[-1] * torch.stack([torch.stack(v).max() if v else zero for v in per])
        for s, per in zip(out, best, strict=True)
    ]


def _loss(
    scores: Sequence[torch.Tensor],
    questions: Sequence[Question],
    abstain: torch.Tensor,
    weight: float = 0.0,
) -> torch.Tensor:
    """The mean negative log-probability of the right candidates among them (a question
    with a right candidate and a wrong one), plus, weighed by `weight`, that of whether any
    candidate is right against "none of these" (the abstain logit): together, at weight 1,
    the log-probability of the right answers among the candidates and "none"."""
    total = torch.zeros((), device=scores[0].device)
    for s, q in zip(scores, questions, strict=True):
        right = torch.tensor(q.right, device=s.device)
        every = torch.logsumexp(s, 0)
        if q.told:
            total = total + every - torch.logsumexp(s[right], 0)
        if weight > 0:
            some = every - abstain  # the logit of "a candidate is right"
            total = total + weight * nn.functional.softplus(-some if any(q.right) else some)
    return total / len(questions)


def _teaches(q: Question, settings: Settings) -> bool:
    """Whether a question tells the fit anything: a right candidate and a wrong one; with
    an abstain fitted, any question with candidates (where none is right, "none" is)."""
    return bool(q.rows) if settings.abstains else q.told


def fit(
    questions: Sequence[Question],
    start: Sequence[float],
    settings: Settings = DEFAULTS,
    device: str = "cpu",
    progress: Callable[[str], None] = lambda line: None,
    state: Path | None = None,
    init: Path | None = None,
) -> PairReader:
    """The reader fitted on the questions that tell something, from the ranking's weights
    `start` (reading(e)'s from 1), or from the reader kept at `init` (its adapter, head and
    weights: a fitted reader going on with more questions); `state`: where to keep (and find)
    the fit's progress."""
    torch.manual_seed(settings.seed)
    bert, tokenizer = base_model()
    reader = PairReader(bert, tokenizer, seed=settings.seed).to(device)
    with torch.no_grad():
        reader.weights.copy_(torch.tensor([*start, 1.0]))
        if settings.abstains:
            reader.abstain.fill_(0.0)
        if init is not None:
            tensors, rank = read_fitted(init)
            if rank != reader.rank:
                raise ValueError(f"{init}: an adapter of rank {rank}, not {reader.rank}")
            reader.load_state_dict(tensors, strict=False)
    reader.abstain.requires_grad = settings.abstains
    told = [q for q in questions if _teaches(q, settings)]
    pairs = [_pairs(reader, q) for q in told] if settings.read else [[] for _ in told]
    adapter = [p for n, p in reader.named_parameters() if n.endswith((".A", ".B"))]
    rated = [reader.weights, reader.abstain] if settings.abstains else [reader.weights]
    groups = [{"params": rated, "lr": WEIGHT_RATE}]
    if settings.read:
        groups += [
            {"params": list(reader.head.parameters()), "lr": HEAD_RATE},
            {"params": adapter, "lr": settings.learning_rate},
        ]
    optimiser = torch.optim.AdamW(groups, weight_decay=WEIGHT_DECAY)
    per_epoch = (len(told) + BATCH - 1) // BATCH
    steps = max(1, settings.epochs * per_epoch)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda i: min(1.0, (i + 1) / WARMUP) * max(0.0, 1.0 - i / steps)
    )
    done = 0
    begun_from = None if init is None else str(init)
    if state is not None and state.is_file():
        kept = torch.load(state, map_location=device, weights_only=True)
        # A state goes on only the fit that began it: the same recipe, questions and start
        # (a fit from --init must not take up one begun from the ranking's weights).
        same = kept["settings"] == list(settings) and kept["questions"] == len(told)
        if same and kept.get("init") == begun_from:
            reader.load_state_dict(kept["fitted"], strict=False)
            optimiser.load_state_dict(kept["optimiser"])
            schedule.load_state_dict(kept["schedule"])
            done = int(kept["step"])
            progress(f"going on from step {done} of {steps}")
    reader.train()
    step = 0
    for epoch in range(settings.epochs):
        order = list(range(len(told)))
        random.Random(settings.seed * 1000 + epoch).shuffle(order)
        for at in range(0, len(order), BATCH):
            step += 1
            if step <= done:
                continue
            batch = order[at : at + BATCH]
            qs = [told[i] for i in batch]
            scores = candidate_scores(reader, qs, [pairs[i] for i in batch], settings.read)
            loss = _loss(scores, qs, reader.abstain, settings.abstain)
            loss.backward()
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
            if step % CHECKPOINT_EVERY == 0 or step == steps:
                progress(f"step {step} of {steps}: loss {loss.item():.3f}")
                if state is not None:
                    torch.save(
                        {
                            "settings": list(settings),
                            "questions": len(told),
                            "init": begun_from,
                            "step": step,
                            "fitted": reader.fitted(),
                            "optimiser": optimiser.state_dict(),
                            "schedule": schedule.state_dict(),
                        },
                        state,
                    )
    return reader.eval()


class Answered(NamedTuple):
    """A question's top answer under a fitted reader."""

    group: str
    answerable: bool
    right: bool  # the top candidate is a right answer (never for an unanswerable question)
    probability: float  # its probability over the candidates read (and "none", if fitted)
    score: float  # as served: that times the candidates' share before reading (Question.mass)


def answer(
    reader: PairReader, questions: Sequence[Question], read: bool = True, batch: int = 64
) -> list[Answered]:
    """Each question's top answer (a question without candidates: not right, probability
    0)."""
    out = []
    with torch.no_grad():
        for at in range(0, len(questions), batch):
            qs = list(questions[at : at + batch])
            asked = [q for q in qs if q.rows]
            pairs = [_pairs(reader, q) for q in asked] if read else [[] for _ in asked]
            found = iter(candidate_scores(reader, asked, pairs, read))
            for q in qs:
                if not q.rows:
                    out.append(Answered(q.group, q.answerable, False, 0.0, 0.0))
                    continue
                p = torch.softmax(torch.cat([next(found), reader.abstain[None]]), 0)[:-1]
                top = int(p.argmax())
                right, chance = bool(q.right[top]), float(p[top])
                out.append(Answered(q.group, q.answerable, right, chance, chance * q.mass))
    return out


def held_out(
    questions: Sequence[Question],
    start: Sequence[float],
    folds: int,
    settings: Settings = DEFAULTS,
    device: str = "cpu",
    progress: Callable[[str], None] = lambda line: None,
) -> list[Answered]:
    """Every question answered by a reader fitted without its fold (the sets dealt into
    `folds` groups, in sorted order)."""
    groups = sorted({q.group for q in questions})
    out: list[Answered] = []
    for i in range(folds):
        left = set(groups[i::folds])
        progress(f"fold {i + 1} of {folds}: {', '.join(sorted(left))}")
        reader = fit([q for q in questions if q.group not in left], start, settings, device)
        out += answer(reader, [q for q in questions if q.group in left], settings.read)
    return out
