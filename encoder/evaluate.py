"""Accuracy of a checkpoint on a JSONL data set, beside the baselines that do not read."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from typing import Any

from encoder.checkpoint import load_checkpoint
from encoder.data.questions import baselines, read_questions
from encoder.train import Progress, accuracy, encode_questions


@dataclass(frozen=True)
class Evaluation:
    checkpoint: str
    model_id: str
    mode: str
    data: str
    count: int
    accuracy: float
    random: float
    most_frequent: float
    most_recent: float
    context_match: float
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def evaluate(
    checkpoint_path: str | os.PathLike[str],
    data_path: str | os.PathLike[str],
    device: str = "cpu",
    progress: Progress | None = None,
) -> Evaluation:
    """Accuracy and baselines; `progress` wraps the batches of questions (a bar, say)."""
    ckpt = load_checkpoint(checkpoint_path, device=device)
    questions = list(read_questions(data_path))
    started = time.perf_counter()
    data = encode_questions(questions, ckpt.vocab)
    acc = accuracy(ckpt.model, data, progress)
    b = baselines(questions)
    return Evaluation(
        checkpoint=str(checkpoint_path),
        model_id=ckpt.model_id,
        mode=ckpt.model.config.mode,
        data=str(data_path),
        count=len(questions),
        accuracy=acc,
        random=b.random,
        most_frequent=b.most_frequent,
        most_recent=b.most_recent,
        context_match=b.context_match,
        seconds=time.perf_counter() - started,
    )
