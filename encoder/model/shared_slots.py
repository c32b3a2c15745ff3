"""Every entity for the slot modes: E output slots shared by however many entities a text names.

The paper's four modes score E = config.max_entities output slots, one per entity marker. A
document may name more (a long news file, a 50,000-token book: hundreds), so entity i reads
as marker i mod E (`Vocabulary.encode_marked`, as the mentions mode reads them) and takes its
slot's score. The slot's probability is split evenly among the candidates that share it:

    score(e) = slot_score(e mod E) − log |{e' candidate : e' ≡ e (mod E)}|

so softmax over entities gives p(e) = p(slot) / (candidates in the slot), and the mention
prior (each entity's own count, added after) and the answers' support tell sharers apart.
With at most E candidates nothing changes: each slot holds one entity. Appending text keeps
this exact, since an entity's index, and so its marker, never changes.
"""

from __future__ import annotations

import torch
from torch import Tensor


def spread_over_entities(slot_logits: Tensor, candidate_mask: Tensor) -> Tensor:
    """slot_logits (B, E) and candidate_mask (B or 1, S) over entity indices, S > E ->
    entity logits (B, S): each entity its slot's logit less the log of how many candidates
    share that slot (at least one)."""
    E, S = slot_logits.shape[1], candidate_mask.shape[1]
    slot_of = torch.arange(S, device=slot_logits.device) % E  # (S,)
    sharing = torch.zeros(
        candidate_mask.shape[0], E, dtype=slot_logits.dtype, device=slot_logits.device
    ).index_add_(1, slot_of, candidate_mask.to(slot_logits.dtype))  # (B, E) candidates a slot
    crowd = sharing.index_select(1, slot_of).clamp_(min=1.0).log_()  # (B, S)
    return slot_logits.index_select(1, slot_of) - crowd  # (B, S)


def entity_counts(doc_entities: Tensor, space: int, dtype: torch.dtype) -> Tensor:
    """doc_entities (B, n), each token's entity index (-1: none, padding) -> (B, space) how
    often each entity is named: the mention prior's counts by entity, not by shared slot."""
    named = doc_entities >= 0
    counts = torch.zeros(doc_entities.shape[0], space, dtype=dtype, device=doc_entities.device)
    return counts.scatter_add_(1, doc_entities.clamp(0, space - 1), named.to(dtype))
