"""Which of a sentence's names plays the part a question asks about: the question's asking
word ("Who", "Which") as the sentence model reads it in the question, against each mention of
a name as the same model reads it in its sentence (encoder.text.meaning.embed_spans).

meaning(e) says a sentence naming e says what the question asks; it cannot tell apart two
names of one sentence ("Halden's offer was rejected by Nordvik's board": who rejected it?).
The model's vector of a word carries the part the sentence gives it, so the asking word's
vector and the right name's come nearer than a wrong name's of the same sentence:

    role(e) = max over e's kept mentions m of  c · cos(a, m) + (Uᵀa) · (Vᵀm)

a: the asking word's unit vector, m: the mention's; c, U and V (DIM × rank) are fitted with
the ranking's weights on the hand-written story sets (`cheapqa bench fit-roles`) and kept as
`roles.json` beside the checkpoints. A record keeps its mentions' vectors as int8
(`encoder.text.meaning.pack`), at most MENTIONS_PER_ENTITY an entity, MAX_MENTIONS in all.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

FILE = "roles.json"
SHIPPED = Path(__file__).resolve().parents[1] / "checkpoints" / FILE
MENTIONS_PER_ENTITY = 8  # an entity's first mentions in the kept sentences
MAX_MENTIONS = 512  # 192 KiB of int8 vectors at most a record


class RoleHead(NamedTuple):
    """The fitted comparison of an asking word with a mention."""

    cosine: float  # c
    asking: np.ndarray  # U, (DIM, rank)
    named: np.ndarray  # V, (DIM, rank)

    def scores(
        self, asking: np.ndarray, mentions: np.ndarray, held: Sequence[Sequence[int]]
    ) -> list[float]:
        """Per entity, role(e) over its mentions (rows of `mentions`, by `held`); 0 where it
        has none."""
        if not len(mentions):
            return [0.0] * len(held)
        # c·(m·a) + (Vᵀm)·(Uᵀa) = m·(c·a + V Uᵀa): one product with the mentions, not two
        values = (mentions @ (self.cosine * asking + self.named @ (asking @ self.asking))).tolist()
        return [max((values[j] for j in found), default=0.0) for found in held]

    def to_json(self) -> dict[str, object]:
        return {
            "cosine": self.cosine,
            "asking": np.round(self.asking, 6).tolist(),
            "named": np.round(self.named, 6).tolist(),
        }


def read(path: Path) -> RoleHead | None:
    """The head kept at `path`; None when there is none."""
    if not path.is_file():
        return None
    table = json.loads(path.read_text(encoding="utf-8"))
    return RoleHead(
        float(table["cosine"]),
        np.asarray(table["asking"], dtype=np.float32),
        np.asarray(table["named"], dtype=np.float32),
    )


@lru_cache(maxsize=1)
def shipped() -> RoleHead | None:
    """The head shipped beside the checkpoints (read once a process)."""
    return read(SHIPPED)
