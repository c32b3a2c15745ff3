"""How a question asked in words ranks its candidate answers: weights fitted on people's
questions, per reader.

    score(e) = w_reader · log p_reader(e) + w_support · support(e) + w_kind · kind(e)
               + w_noun · noun(e) + w_mentions · log(1 + mentions(e)) + w_rare · rare(e)
               + w_who_person · who_person(e) + w_meaning · meaning(e) + w_role · role(e)
    p(e)     = softmax of score over the question's candidates (the reader's RERANK_POOL
               likeliest, less those the question names)

support(e) is `encoder.text.support.support`, kind(e) what the question asks for against what
the text and the name say e is (`kind_logs`: a Who-question's answer is no place), noun(e) 1
where a Which-question's noun is in e's name ("the bank" in "Fjord Bank"), mentions(e) how
often the text names e, rare(e) the support with each question word weighed by how few of the
candidates have it beside them (`rare_support`: "company" beside every name tells none apart),
who_person(e) for a Who-question how much more e is a person's name than an organisation's
(`who_person`: the person beside an organisation in "The study was led by Valeria Ortúzar of
the Patagonian Institute"), meaning(e) the cosine between the question's sentence embedding
and that of the sentence naming e nearest to it (encoder.text.meaning: "Who runs the
cooperative?" near "Sabine Lorenz, its chairwoman, said ..."), role(e) how well a mention of
e plays the part the question's asking word asks about (encoder.text.roles: which of a
sentence's names rejected the offer). The hand-set ranking of a
cloze sentence (`support_ranked` after `kind_weighted`) is this with w = (1, λ, KIND_WEIGHT,
0, 0, 0, 0, 0, 0), up to the candidates outside the pool.

The weights are fitted per reader (`cheapqa bench fit-ranking`) by maximum
likelihood of the right answers of the hand-written story sets already scored: the readers
learnt cloze sentences from novels, and asked a person's question of a person's story they
score a wrong answer as high as a right one, so what the text says beside each answer must
weigh more, and how often it is named less, than the hand-set weights say. They are kept
beside the checkpoints (`ranking.json`), each with the model id it was fitted for, twice:
with meaning(e) and role(e) and without them (`plain`: for a service with the `meaning`
setting off, or a record indexed without sentence vectors); a reader without its own
(another checkpoint folder, a retrained reader) keeps the hand-set ranking.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

FILE = "ranking.json"
# A reader probability this small or smaller counts as this (log 0 is -inf).
MIN_PROB = 1e-9


class Weights(NamedTuple):
    """One reader's weights, one per feature (`features`)."""

    reader: float
    support: float
    kind: float
    noun: float
    mentions: float
    rare: float = 0.0
    who_person: float = 0.0
    meaning: float = 0.0
    role: float = 0.0


class Fitted(NamedTuple):
    """A reader's fitted weights: with meaning(e), and without it."""

    model_id: str  # the checkpoint they were fitted for
    weights: Weights
    plain: Weights  # meaning's and role's weights 0, the others fitted without them


def features(
    prob: float,
    support: float | None,
    kind: float,
    noun: bool,
    mentions: int,
    rare: float,
    who_person: float,
    meaning: float = 0.0,
    role: float = 0.0,
) -> tuple[float, float, float, float, float, float, float, float, float]:
    """One candidate's features, in the order of `Weights`; unknown support counts 0."""
    return (
        math.log(max(prob, MIN_PROB)),
        support or 0.0,
        kind,
        float(noun),
        math.log1p(mentions),
        rare,
        who_person,
        meaning,
        role,
    )


def probabilities(rows: Sequence[Sequence[float]], weights: Weights) -> list[float]:
    """Candidates' `features` -> their probabilities under the weights (softmax)."""
    a, b, c, d, e, f, g, h, i = weights  # unpacked: a generator over each row costs twice as much
    scores = [
        a * r + b * s + c * k + d * n + e * m + f * x + g * y + h * z + i * o
        for r, s, k, n, m, x, y, z, o in rows
    ]
    top = max(scores, default=0.0)
    raised = [math.exp(s - top) for s in scores]
    total = sum(raised)
    return [r / total for r in raised]


def read(folder: Path) -> dict[str, Fitted]:
    """The fitted weights kept in a checkpoint folder, by mode; empty when the folder keeps
    none. A table fitted before meaning(e) serves its weights as both."""
    path = folder / FILE
    if not path.is_file():
        return {}
    table = json.loads(path.read_text(encoding="utf-8"))
    out = {}
    for mode, entry in table["modes"].items():
        weights = Weights(**entry["weights"])
        plain = Weights(**entry["plain"]) if "plain" in entry else weights._replace(meaning=0.0)
        out[mode] = Fitted(entry["model_id"], weights, plain)
    return out
