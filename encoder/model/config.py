"""The reader's configuration: one frozen dataclass, stored beside the weights in a checkpoint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from encoder.model.modes import MODES, Mode


@dataclass(frozen=True)
class ReaderConfig:
    mode: Mode  # "none" | "linear" | "gated" | "softmax"
    vocab_size: int
    embed_dim: int = 50  # 50 so GloVe 6B 50-d vectors can initialise the embedding
    hidden_size: int = 100  # k: the document state is k×k for linear and gated
    max_entities: int = 50  # E output slots: @entity0 .. @entity{E-1}
    dropout: float = 0.2
    pad_id: int = 0
    # R = C q / n (the paper) or C q / sqrt(n): an evidence term that fades slower with length.
    length_norm: Literal["n", "sqrt"] = "n"
    # "slots": W_o scores E fixed slots; "markers": the output is tied to the @entity marker
    # embeddings (score_e = marker_e · W_p h + b_e), so every slot shares what is learnt.
    output: Literal["slots", "markers"] = "slots"
    # A learnt prior on how often the document names each candidate: scores += (w + uᵀ hidden)
    # · log(1 + mentions). Frequency is what the most-frequent baseline reads and what attention
    # over a long document blurs; how far to trust it depends on the question and on what was
    # read. The counts are kept beside the state and add up when text is appended.
    mention_prior: bool = False
    entity_offset: int = 3  # id of @entity0 in the vocabulary
    # mentions mode: a mention's key is the document state this many tokens after it
    # (encoder.pointer); 0 keys it at the marker itself.
    mention_offset: int = 3

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if not 0 <= self.pad_id < self.vocab_size:
            raise ValueError(f"pad_id {self.pad_id} outside vocabulary of {self.vocab_size}")
        if min(self.embed_dim, self.hidden_size, self.max_entities) < 1:
            raise ValueError("embed_dim, hidden_size and max_entities must be positive")
        if self.length_norm not in ("n", "sqrt") or self.output not in ("slots", "markers"):
            raise ValueError(f"unknown length_norm {self.length_norm!r} or output {self.output!r}")
        if self.mode == "mentions" and self.mention_prior:
            raise ValueError("the mentions mode points at mentions: it has no mention prior")
        if self.mention_offset < 0:
            raise ValueError(f"mention_offset must be >= 0, got {self.mention_offset}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
