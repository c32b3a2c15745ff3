"""The answer layer of the lean serving path in numpy: the per-question work every mode pays.

Scoring one question is a handful of products of a k-vector with k×k or k×E matrices. In
torch each such op costs several µs of dispatch on a CPU, whatever its size (BENCHMARKS.md:
~37 µs a question before this, more than a linear lookup itself); numpy's ops cost about a
third of that. So the output layer W_o tanh(W_r R + W_q q) (+ the mention prior) and the
mentions mode's pointer p(e) = Σ_{m ∈ e} softmax_m(κ_m · (W q + b)) run here on numpy views
of the reader's own weights (they share its memory, so a load into the reader is seen). The
reading itself (C q, softmax's Hᵀ softmax(H q)) stays in torch, whose matrix-vector products
are faster at length. tests/encoder/test_serving_path.py holds these to the general path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from encoder.model.pointer import MIN_SHARE
from encoder.model.reader import Reader

# Half float32's smallest number (as Reader._scores): a finite "not a candidate".
VERY_NEGATIVE = np.float32(torch.finfo(torch.float32).min / 2)
_F32 = torch.float32


def as_numpy(t: Tensor) -> np.ndarray:
    """A CPU float32 tensor's numpy view (no copy); other tensors converted first."""
    if t.dtype is not _F32 or not t.is_cpu:
        t = t.to("cpu", _F32)
    return t.numpy()


def _view(p: Tensor) -> np.ndarray:
    return p.detach().numpy()


@dataclass(frozen=True)
class OutputLayer:
    """Numpy views of a slot-mode reader's output layer (scores over its E slots)."""

    W_r: np.ndarray  # (k, k)
    b_r: np.ndarray  # (k,)
    W_q: np.ndarray  # (k, k)
    W_o: np.ndarray | None  # (E, k), output "slots"
    b_o: np.ndarray  # (E,)
    W_p: np.ndarray | None  # (d, k), output "markers"
    markers: np.ndarray | None  # (E, d) the marker embeddings, output "markers"
    prior: tuple[np.ndarray, np.ndarray] | None  # (w (1,), u (k,)): the mention prior

    @classmethod
    def of(cls, reader: Reader) -> OutputLayer:
        config = reader.config
        slots = config.output == "slots"
        start = config.entity_offset
        markers = reader.embedding.weight[start : start + config.max_entities]
        return cls(
            W_r=_view(reader.W_r.weight),
            b_r=_view(reader.W_r.bias),
            W_q=_view(reader.W_q.weight),
            W_o=_view(reader.W_o.weight) if slots else None,
            b_o=_view(reader.W_o.bias if slots else reader.b_o),
            W_p=None if slots else _view(reader.W_p.weight),
            markers=None if slots else _view(markers),
            prior=(_view(reader.mention_weight), _view(reader.mention_gate))
            if config.mention_prior
            else None,
        )

    def scores(
        self, R: np.ndarray, Q: np.ndarray, mask: np.ndarray, mentions: np.ndarray | None
    ) -> np.ndarray:
        """R (m, k), Q (m, k), mask (m, E) bool, mentions (E,) or (m, E) or None -> (m, E):
        W_o tanh(W_r R + b_r + W_q q) (+ (w + uᵀ hidden) log(1 + mentions)), masked."""
        hidden = R @ self.W_r.T  # (m, k)
        hidden += self.b_r
        hidden += Q @ self.W_q.T
        np.tanh(hidden, out=hidden)
        if self.W_o is not None:
            logits = hidden @ self.W_o.T  # (m, E)
        else:
            assert self.W_p is not None and self.markers is not None
            logits = (hidden @ self.W_p.T) @ self.markers.T  # (m, E)
        logits += self.b_o
        if self.prior is not None and mentions is not None:
            w, u = self.prior
            weight = hidden @ u  # (m,)
            weight += w
            logits += weight[:, None] * np.log1p(mentions)
        return np.where(mask, logits, VERY_NEGATIVE)


def pointer_scores(
    keys: np.ndarray, entities: np.ndarray, Q: np.ndarray, W: np.ndarray, b: np.ndarray, space: int
) -> np.ndarray:
    """The mentions mode's lookup (encoder.model.pointer.lookup_mentions) in numpy: keys (M, k),
    entities (M,) int64, Q (m, k) -> (m, space) the log of each entity's share of
    softmax_m(κ_m · (W q + b)), MIN_SHARE at least."""
    m = Q.shape[0]
    if keys.shape[0] == 0:
        return np.full((m, space), math.log(MIN_SHARE), dtype=np.float32)
    u = Q @ W.T  # (m, k)
    u += b
    logits = u @ keys.T  # (m, M)
    logits -= logits.max(axis=1, keepdims=True)
    np.exp(logits, out=logits)
    logits /= logits.sum(axis=1, keepdims=True)
    shares = np.empty((m, space), dtype=np.float64)
    for row in range(m):  # bincount sums a row by entity in one pass
        shares[row] = np.bincount(entities, weights=logits[row], minlength=space)[:space]
    shares += MIN_SHARE
    return np.log(shares).astype(np.float32)


def masked_pointer_scores(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A pointer lookup's scores (m, S) -> (m, E) for mask (m, E): cut, or padded with the
    floor (an entity without mentions), non-candidates very negative."""
    width = mask.shape[1]
    if scores.shape[1] > width:
        scores = scores[:, :width]
    elif scores.shape[1] < width:
        pad = np.full((scores.shape[0], width - scores.shape[1]), math.log(MIN_SHARE), np.float32)
        scores = np.concatenate([scores, pad], axis=1)
    return np.where(mask, scores, VERY_NEGATIVE)
