"""What the reader keeps of a document after reading it once (one state per attention mode).

| mode      | memory                         | lookup for a query vector q |
|-----------|--------------------------------|-----------------------------|
| `none`    | None (only last_hidden)        | R = h_n                     |
| `linear`  | C = Σ_t h_t h_tᵀ  (k, k)       | R = C q / n                 |
| `gated`   | C = Σ_t f_t f_tᵀ  (k, k)       | R = C q / n                 |
| `softmax` | H (n, k)                       | R = Hᵀ softmax(H q)         |

C is kept as a sum (not divided by n) so that appending text only adds outer products;
the division by n happens at lookup time. `last_hidden` lets `extend` continue the GRU.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch

from encoder.model.modes import Mode


@dataclass(frozen=True)
class DocumentState:
    mode: Mode
    n: int  # tokens read so far
    last_hidden: torch.Tensor  # (k,) GRU state after the last token
    memory: torch.Tensor | None  # linear/gated: C (k, k); softmax: H (n, k); mentions: K (M, k)
    # mentions: (M, 2) int32, each mention's entity index and token position (encoder.model.pointer)
    mentions: torch.Tensor | None = None

    @cached_property
    def mention_entities(self) -> torch.Tensor:
        """(M,) int64: each mention's entity index, as a lookup sums by it. Kept once per state
        (the stored int32 column would cost every lookup a slow index_add)."""
        assert self.mentions is not None
        return self.mentions[:, 0].long()

    @cached_property
    def entities_named(self) -> int:
        """How many entity indices the mentions reach (the largest plus one; 0 without any)."""
        entities = self.mention_entities
        return int(entities.max()) + 1 if len(entities) else 0

    @property
    def k(self) -> int:
        return int(self.last_hidden.shape[-1])
