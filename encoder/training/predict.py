"""A reader's answers to a set of encoded questions, and its accuracy on them."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import Tensor

from encoder.model.reader import Reader
from encoder.training.batches import Encoded, batches, document_key, make_batch

BATCH_TOKENS = 64_000  # document tokens a batch of predictions may hold

# Wraps the batches of a long pass (evaluation) to show progress: a tqdm bar, say.
Progress = Callable[[list[list[int]]], Iterable[list[int]]]


# Picks question i's answer from its scores (E,) (non-candidates very negative): argmax, or
# a re-ranking (encoder.training.evaluate: by the reader and the answers' support).
Choose = Callable[[int, Tensor], int]


@torch.no_grad()
def predict(
    model: Reader,
    data: Encoded,
    batch_size: int = 128,
    progress: Progress | None = None,
    choose: Choose | None = None,
) -> Tensor:
    """The predicted slot of every question, in order; `progress` wraps the batches, `choose`
    picks each answer from its scores (default: the best score)."""
    was_training = model.training
    model.eval()
    out = torch.empty(len(data), dtype=torch.long)
    lengths = [document_key(d) for d in data.docs]
    # Bounded in tokens as well: 128 questions of 5,000 tokens would hold gigabytes of states.
    longest = max(len(d) for d in data.docs)
    batch_size = max(1, min(batch_size, BATCH_TOKENS // longest))
    chunks = list(batches(len(data), batch_size, lengths, None))
    for idx in progress(chunks) if progress is not None else chunks:
        b = make_batch(data, idx, model.config.pad_id).to(model.device)
        scores = model(
            b.doc_ids, b.doc_lengths, b.query_ids, b.query_lengths, b.candidate_mask, b.doc_entities
        )
        if choose is None:
            out[idx] = scores.argmax(dim=1).cpu()
        else:
            rows = scores.float().cpu()
            out[idx] = torch.tensor([choose(i, row) for i, row in zip(idx, rows, strict=True)])
    model.train(was_training)
    return out


def accuracy(
    model: Reader, data: Encoded, progress: Progress | None = None, choose: Choose | None = None
) -> float:
    if len(data) == 0:
        return 0.0
    predicted = predict(model, data, progress=progress, choose=choose)
    return float((predicted == data.answers).float().mean())
