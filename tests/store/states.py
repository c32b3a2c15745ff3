"""Document states with realistic shapes and values, for the store's tests."""

from __future__ import annotations

import torch

from encoder.model.state import DocumentState


def make_state(mode: str, k: int, n: int, seed: int = 0, magnitude: float = 1.0) -> DocumentState:
    """A state whose C is exactly symmetric, as Σ h hᵀ is in exact arithmetic."""
    gen = torch.Generator().manual_seed(seed)
    hidden = torch.tanh(torch.randn(n, k, generator=gen)) * magnitude  # (n, k)
    last = hidden[-1] if n else torch.zeros(k)
    if mode == "none":
        return DocumentState("none", n, last, None)
    if mode == "softmax":
        return DocumentState("softmax", n, last, hidden)
    if mode == "mentions":  # every third token a mention of one of five entities
        positions = torch.arange(0, n, 3)
        mentions = torch.stack([positions % 5, positions], dim=1).to(torch.int32)
        return DocumentState("mentions", n, last, hidden[positions], mentions)
    c = hidden.T @ hidden  # (k, k)
    c = torch.triu(c) + torch.triu(c, diagonal=1).T
    return DocumentState(mode, n, last, c)  # type: ignore[arg-type]
