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

    @property
    def k(self) -> int:
        return int(self.last_hidden.shape[-1])
