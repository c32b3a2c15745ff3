"""Gradients flow in every mode: a few hundred steps on a toy cloze task lower the loss."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from encoder.model.config import ReaderConfig
from encoder.model.modes import READOUT_MODES, Mode
from encoder.model.reader import Reader

E = 4  # entity token ids 1..E stand for slots 0..E-1
VOCAB = 20
DOC_LEN = 6
BATCH = 32
STEPS = 150


def toy_batch(g: torch.Generator) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Documents of filler words with one entity token somewhere; the answer is that entity.

    Every slot is a candidate, so the only way to the answer is to read the document.
    """
    doc_ids = torch.randint(E + 1, VOCAB, (BATCH, DOC_LEN), generator=g)  # (B, n) filler
    answers = torch.randint(0, E, (BATCH,), generator=g)  # (B,)
    where = torch.randint(0, DOC_LEN, (BATCH,), generator=g)  # (B,)
    doc_ids[torch.arange(BATCH), where] = answers + 1
    doc_lengths = torch.full((BATCH,), DOC_LEN)
    query_ids = torch.full((BATCH, 2), E + 1)  # (B, m) the same question every time
    query_lengths = torch.full((BATCH,), 2)
    mask = torch.ones(BATCH, E, dtype=torch.bool)
    return doc_ids, doc_lengths, query_ids, query_lengths, mask, answers


@pytest.mark.parametrize("mode", READOUT_MODES)  # the mentions mode: test_mentions_mode.py
def test_training_lowers_the_loss(mode: Mode) -> None:
    torch.manual_seed(0)
    config = ReaderConfig(
        mode=mode,
        vocab_size=VOCAB,
        embed_dim=8,
        hidden_size=16,
        max_entities=E,
        dropout=0.0,
        entity_offset=1,  # the toy's entity tokens (the mentions mode points at them)
    )
    model = Reader(config).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    g = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(STEPS):
        *inputs, answers = toy_batch(g)
        loss = F.cross_entropy(model(*inputs), answers)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    # Chance is log(4) ≈ 1.39; a reader that finds the entity does far better.
    assert first > 1.2
    assert last < 0.2, (first, last)
