"""Fit role(e) (encoder.text.roles) on hand-written story sets already scored, and write it
beside the checkpoints.

    cheapqa bench fit-roles [--sets dev,test,...] [--mode linear] [--folds 6] [--dry-run]
                            [--checkpoint-dir DIR] [--out FILE]

The head (c, U, V) is fitted with the ranking's other weights, by the likelihood of the
right answers over each question's candidates (as `cheapqa bench fit-ranking` fits the
weights; role(e) read from one reader's candidates: the head compares a question with a
text, not with a reader). To say what it is worth on sets it did not see, the sets are first
dealt into `--folds` groups and each scored by a head and weights fitted without it, beside
the weights fitted without role(e) on the same folds. `cheapqa bench fit-ranking` must run
after it: the ranking's weight of role(e) is fitted there.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from bench.realistic.fit import (
    L2,
    Candidates,
    Scored,
    add_set_arguments,
    collect,
    fit,
    fitting,
    hand_set,
    log,
    padded,
    score,
    surprise,
)
from encoder.text.meaning import DIM
from encoder.text.ranking import Weights
from encoder.text.roles import FILE, MENTIONS_PER_ENTITY, RoleHead
from service.settings import Settings

# Chosen by six folds of the twenty-six sets (RESULTS.md): rank 16 gave no more than 8
# (0.717 against 0.718); on U and V an L2 of 1e-4 overfit (0.642), 3e-3 fitted less (0.711).
RANK = 8  # U and V's columns
L2_HEAD = 1e-3  # on U and V
INIT = 0.1  # U and V start random: at 0 their product has no gradient
STEPS = 300  # Adam's, over all questions at once
LEARNING_RATE = 0.05
ROLE = Weights._fields.index("role")


class Block:
    """Questions as padded tensors: their features, which candidates are real and right,
    their asking vectors, and each candidate's mention vectors (as rows of one table)."""

    def __init__(self, questions: Sequence[Candidates]):
        self.padded = padded(questions, torch.float32)
        told, X = self.padded.told, self.padded.X
        n, width = X.shape[:2]
        self.asking = torch.zeros(n, DIM)
        self.ids = torch.zeros(n, width, MENTIONS_PER_ENTITY, dtype=torch.long)
        table = [np.zeros((1, DIM), np.float32)]  # row 0: no mention
        for i, q in enumerate(told):
            if q.asking is None:
                continue
            self.asking[i] = torch.from_numpy(q.asking)
            start = sum(len(t) for t in table)
            for c, vectors in enumerate(q.named):
                k = min(len(vectors), MENTIONS_PER_ENTITY)
                self.ids[i, c, :k] = torch.arange(start, start + k)
                start += k
                table.append(vectors[:k])
        X[:, :, ROLE] = 0.0  # role(e) is the head's to give
        self.mentions = torch.from_numpy(np.concatenate(table))
        self.cosines = torch.cat(
            [
                torch.einsum("bd,bcmd->bcm", self.asking[at : at + 256],
                             self.mentions[self.ids[at : at + 256]])
                for at in range(0, n, 256)
            ]
        ) if n else torch.zeros(0, width, MENTIONS_PER_ENTITY)  # fmt: skip
        self.some = self.ids > 0

    def scores(
        self, w: torch.Tensor, c: torch.Tensor, U: torch.Tensor, V: torch.Tensor
    ) -> torch.Tensor:
        """Each candidate's score: the weighed features plus role(e)."""
        per = c * self.cosines + torch.einsum(
            "br,bcmr->bcm", self.asking @ U, (self.mentions @ V)[self.ids]
        )
        per = torch.where(self.some, per, torch.tensor(-1e9))
        role = torch.where(self.some.any(-1), per.max(-1).values, torch.zeros(()))
        return self.padded.X @ w + role


def fit_head(
    questions: Sequence[Candidates], start: Weights, seed: int = 0
) -> tuple[RoleHead, Weights]:
    """The head, and the weights fitted with it (role's weight 1), from `start`."""
    block = Block(questions)
    generator = torch.Generator().manual_seed(seed)
    w = torch.tensor(start, dtype=torch.float32, requires_grad=True)
    c = torch.zeros((), requires_grad=True)
    U = (INIT * torch.randn(DIM, RANK, generator=generator)).requires_grad_()
    V = (INIT * torch.randn(DIM, RANK, generator=generator)).requires_grad_()
    optimiser = torch.optim.Adam([w, c, U, V], lr=LEARNING_RATE)
    for _ in range(STEPS):
        optimiser.zero_grad()
        loss = (
            surprise(block.scores(w, c, U, V), block.padded)
            + L2 * (w**2).sum()
            + L2_HEAD * ((U**2).sum() + (V**2).sum())
        )
        loss.backward()
        optimiser.step()
    weights = Weights(*(float(x) for x in w.detach()))._replace(role=1.0)
    return RoleHead(float(c.detach()), U.detach().numpy(), V.detach().numpy()), weights


def _with_role(q: Candidates, roles: Sequence[float]) -> Candidates:
    rows = [(*r[:ROLE], x, *r[ROLE + 1 :]) for r, x in zip(q.rows, roles, strict=True)]
    return dataclasses.replace(q, rows=rows)


def with_roles(questions: Sequence[Candidates], head: RoleHead) -> list[Candidates]:
    """The questions with each candidate's role(e) under the head."""
    return [
        q
        if q.asking is None
        else _with_role(q, [head.scores(q.asking, v, [range(len(v))])[0] for v in q.named])
        for q in questions
    ]


def no_role(questions: Sequence[Candidates]) -> list[Candidates]:
    """The questions with role(e) 0 for every candidate."""
    return [_with_role(q, [0.0] * len(q.rows)) for q in questions]


def held_out(questions: Sequence[Candidates], start: Weights, folds: int) -> tuple[Scored, Scored]:
    """(without role(e), with it): the sets dealt into `folds` groups, each scored by weights
    (and a head) fitted on the others."""
    names = sorted({q.group for q in questions})
    without, with_ = [], []
    for k in range(folds):
        out = set(names[k::folds])
        train = [q for q in questions if q.group not in out]
        test = [q for q in questions if q.group in out]
        plain = fit(no_role(train), start)
        without += [(q, plain) for q in no_role(test)]
        head, weights = fit_head(train, start)
        with_ += [(q, weights) for q in with_roles(test, head)]
        print(f"fold {k + 1} of {folds}: {', '.join(sorted(out))}", file=sys.stderr, flush=True)
    return score(without), score(with_)


def fit_roles(args: argparse.Namespace, settings: Settings) -> int:
    """`cheapqa bench fit-roles`: collect, score by folds, fit on every set, write the head."""
    from service.readers import checkpoint_dir

    read = fitting(args, settings)
    if read is None:
        return 2
    settings, sets = read
    found, _ = collect(sets, settings, [args.mode], log)
    questions = found[args.mode]
    start = hand_set(settings.support_weight)
    if args.folds > 1:
        without, with_ = held_out(questions, start, args.folds)
        print(f"| {args.mode}, {args.folds} folds of {len(sets)} sets | accuracy | AUROC |")
        print("|---|---:|---:|")
        print(f"| without role(e) | {without.accuracy:.3f} | {without.auroc:.3f} |")
        print(f"| with role(e) | {with_.accuracy:.3f} | {with_.auroc:.3f} |")
    head, weights = fit_head(questions, start)
    log(f"fitted on every set: c {head.cosine:.3f}; " + ", ".join(
        f"{k} {v:.3f}" for k, v in weights._asdict().items()
    ))  # fmt: skip
    if args.dry_run:
        return 0
    path = args.out or checkpoint_dir(settings) / FILE
    about = {"fitted_on": list(args.sets), "mode": args.mode, "rank": RANK}
    path.write_text(json.dumps({**about, **head.to_json()}) + "\n", encoding="utf-8")
    log(f"wrote {path}; now run `cheapqa bench fit-ranking`")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_set_arguments(p)
    p.add_argument("--mode", default="linear", help="the reader whose candidates it reads")
    p.add_argument("--folds", type=int, default=6, help="held-out folds to score (1: none)")
    p.add_argument("--out", type=Path, default=None, help=f"default: <checkpoint-dir>/{FILE}")
