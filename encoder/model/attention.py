"""The four attention modes, each behind one small interface.

A mode answers these questions about the document GRU's states H = (h_1 .. h_n):

- `forward`: the batched training read-out R for query vectors q (padded positions masked);
- `read`: what to keep of each document (its memory; un-normalised, so it can grow);
- `append`: how that memory grows when tokens are appended;
- `lookup`: the read-out R for many query vectors against one kept memory.

`forward` and `read` + `lookup` compute the same R; the tests hold them to it.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import ClassVar

import torch
from torch import Tensor, nn

from encoder.model.modes import Mode


class Attention(nn.Module, ABC):
    mode: ClassVar[Mode]

    @abstractmethod
    def forward(self, H: Tensor, mask: Tensor, h_last: Tensor, q: Tensor) -> Tensor:
        """H (B, n, k), mask (B, n) True on real tokens, h_last (B, k), q (B, k) -> R (B, k)."""

    @abstractmethod
    def read(self, H: Tensor, mask: Tensor) -> list[Tensor | None]:
        """H (B, n, k), mask (B, n) -> one memory per document."""

    @abstractmethod
    def append(self, memory: Tensor | None, H_new: Tensor) -> Tensor | None:
        """memory of a document, H_new (t, k) states of appended tokens -> the grown memory."""

    @abstractmethod
    def lookup(self, memory: Tensor | None, n: int, h_last: Tensor, Q: Tensor) -> Tensor:
        """memory of one document of n tokens, h_last (k,), Q (m, k) -> R (m, k)."""


class LastState(Attention):
    """Baseline without attention: R = h_n. Keeps nothing but the last GRU state."""

    mode: ClassVar[Mode] = "none"

    def forward(self, H: Tensor, mask: Tensor, h_last: Tensor, q: Tensor) -> Tensor:
        return h_last  # (B, k)

    def read(self, H: Tensor, mask: Tensor) -> list[Tensor | None]:
        return [None] * H.shape[0]

    def append(self, memory: Tensor | None, H_new: Tensor) -> Tensor | None:
        return None

    def lookup(self, memory: Tensor | None, n: int, h_last: Tensor, Q: Tensor) -> Tensor:
        return h_last.expand_as(Q)  # (m, k)


class LinearAttention(Attention):
    """Cheap linear attention (de Brébisson & Vincent, 2016): content attention without softmax.

        R = (1/n) Σ_t f_t (f_tᵀ q) = C q / n,   C = Σ_t f_t f_tᵀ = Fᵀ F   (k × k)

    with f_t = h_t here. C does not depend on q, so a document is kept as C (plus n) and every
    question costs O(k²), whatever the document's length.
    """

    mode: ClassVar[Mode] = "linear"

    def __init__(self, length_norm: str = "n") -> None:
        super().__init__()
        self.length_norm = length_norm
        self._sqrt = length_norm == "sqrt"  # read on every lookup

    def scale(self, n: Tensor) -> Tensor:
        """The divisor of C q: n (the paper), or sqrt(n)."""
        return n.sqrt() if self._sqrt else n

    def features(self, H: Tensor) -> Tensor:
        """The vectors whose outer products make C: f_t = h_t."""
        return H

    def _masked_features(self, H: Tensor, mask: Tensor) -> Tensor:
        return self.features(H) * mask.unsqueeze(-1).to(H.dtype)  # (B, n, k), padding -> 0

    def forward(self, H: Tensor, mask: Tensor, h_last: Tensor, q: Tensor) -> Tensor:
        # Fᵀ (F q) / n: the same R as C q / n without building C for every example.
        F = self._masked_features(H, mask)  # (B, n, k)
        n = mask.sum(dim=1, keepdim=True).to(H.dtype)  # (B, 1)
        weights = torch.einsum("bnk,bk->bn", F, q)  # (B, n)
        return torch.einsum("bnk,bn->bk", F, weights) / self.scale(n)  # (B, k)

    def read(self, H: Tensor, mask: Tensor) -> list[Tensor | None]:
        F = self._masked_features(H, mask)  # (B, n, k)
        C = torch.einsum("bnk,bnl->bkl", F, F)  # (B, k, k)
        return list(C.unbind(0))

    def append(self, memory: Tensor | None, H_new: Tensor) -> Tensor | None:
        assert memory is not None
        F = self.features(H_new)  # (t, k)
        return memory + F.mT @ F  # (k, k)

    def lookup(self, memory: Tensor | None, n: int, h_last: Tensor, Q: Tensor) -> Tensor:
        assert memory is not None
        # One op, 1/n folded in: C is symmetric, so Q C = Q Cᵀ (row i is C q_i / n). With
        # beta = 0 addmm ignores the tensor it is called on (Q stands in for a bias of the
        # right shape); the method form skips a module attribute read (~0.06 us, measured).
        alpha = 1.0 / (math.sqrt(n) if self._sqrt else n)
        return Q.addmm(Q, memory, beta=0, alpha=alpha)  # (m, k)


class GatedAttention(LinearAttention):
    """Gated linear attention: each state is gated before it enters the memory.

        f_t = sigmoid(W h_t + b) ⊙ h_t,   C = Σ_t f_t f_tᵀ,   R = C q / n

    The gate lets the reader choose what to remember; lookup is the same O(k²) as linear.
    """

    mode: ClassVar[Mode] = "gated"

    def __init__(self, hidden_size: int, length_norm: str = "n") -> None:
        super().__init__(length_norm)
        self.gate = nn.Linear(hidden_size, hidden_size)

    def features(self, H: Tensor) -> Tensor:
        return torch.sigmoid(self.gate(H)) * H  # (..., k)


class SoftmaxAttention(Attention):
    """Classic content attention, for comparison: R = Hᵀ softmax(H q).

    The softmax couples q with every h_t, so the document must be kept whole: H (n × k), and a
    question costs O(nk).
    """

    mode: ClassVar[Mode] = "softmax"

    def forward(self, H: Tensor, mask: Tensor, h_last: Tensor, q: Tensor) -> Tensor:
        logits = torch.einsum("bnk,bk->bn", H, q)  # (B, n)
        logits = logits.masked_fill(~mask, float("-inf"))  # padding gets zero weight
        weights = torch.softmax(logits, dim=1)  # (B, n)
        return torch.einsum("bnk,bn->bk", H, weights)  # (B, k)

    def read(self, H: Tensor, mask: Tensor) -> list[Tensor | None]:
        lengths = mask.sum(dim=1).tolist()
        return [h[:length] for h, length in zip(H, lengths, strict=True)]  # each (n_i, k)

    def append(self, memory: Tensor | None, H_new: Tensor) -> Tensor | None:
        assert memory is not None
        return torch.cat([memory, H_new], dim=0)  # (n + t, k)

    def lookup(self, memory: Tensor | None, n: int, h_last: Tensor, Q: Tensor) -> Tensor:
        assert memory is not None
        weights = torch.softmax(Q @ memory.mT, dim=-1)  # (m, n)
        return weights @ memory  # (m, k)


class MentionKeys(Attention):
    """The mentions mode reads no R: the reader scores every entity from the keys of its
    mentions (encoder.model.pointer). Here it only holds the mode's place among the modes."""

    mode: ClassVar[Mode] = "mentions"

    def forward(self, H: Tensor, mask: Tensor, h_last: Tensor, q: Tensor) -> Tensor:
        raise TypeError("the mentions mode scores entities itself (Reader._mention_forward)")

    def read(self, H: Tensor, mask: Tensor) -> list[Tensor | None]:
        raise TypeError("the mentions mode reads with each token's entity (read_mentions)")

    def append(self, memory: Tensor | None, H_new: Tensor) -> Tensor | None:
        raise TypeError("the mentions mode appends with each token's entity (append_mentions)")

    def lookup(self, memory: Tensor | None, n: int, h_last: Tensor, Q: Tensor) -> Tensor:
        raise TypeError("the mentions mode looks up entity scores (lookup_mentions)")


def build_attention(mode: Mode, hidden_size: int, length_norm: str = "n") -> Attention:
    if mode == "none":
        return LastState()
    if mode == "linear":
        return LinearAttention(length_norm)
    if mode == "gated":
        return GatedAttention(hidden_size, length_norm)
    if mode == "softmax":
        return SoftmaxAttention()
    if mode == "mentions":
        return MentionKeys()
    raise ValueError(f"unknown attention mode {mode!r}")
