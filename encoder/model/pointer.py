"""The `mentions` mode: a pointer answer read from the document's entity mentions.

For every mention m of an entity e(m) at token t_m the reader keeps one key, the document
GRU's state w tokens later (w = config.mention_offset; the last state when the document ends
first): a unidirectional GRU has by then read the mention and the words that follow it, as the
question GRU has read the words around its blank. A question q scores each mention by
κ_m · W q and each entity by the attention mass of its mentions (the Attention-Sum reader of
Kadlec et al., 2016, over mention keys instead of every token):

    p(e | q) = Σ_{m: e(m) = e} softmax_m(κ_m · W q)      score_e = logsumexp_{m ∈ e} κ_m · W q

So every entity of a document can be the answer, however many it names, and the state is
M × k for M mentions (a tenth of the tokens in news and novels), not n × k. Appending text only
adds keys, and fixes the keys of mentions still waiting for their w-th token: the result equals
reading the whole text at once.
"""

from __future__ import annotations

import torch
from torch import Tensor

from encoder.model.state import DocumentState


def key_positions(lengths: Tensor, n: int, offset: int) -> Tensor:
    """(B,) lengths -> (B, n) the position of each token's key: t + offset, or the last token."""
    t = torch.arange(n, device=lengths.device).unsqueeze(0)  # (1, n)
    return torch.minimum(t + offset, (lengths - 1).unsqueeze(1))  # (B, n)


def entity_scores(logits: Tensor, entities: Tensor, space: int, very_negative: float) -> Tensor:
    """logits (B, M) of each mention, entities (B, M) its entity index (-1: no mention) ->
    (B, space) logsumexp of each entity's mention logits (very_negative / 2 without any)."""
    if logits.shape[1] == 0:  # a document without mentions
        return logits.new_full((logits.shape[0], space), very_negative / 2)
    is_mention = entities >= 0  # (B, M)
    masked = logits.masked_fill(~is_mention, float("-inf"))
    top = masked.amax(dim=1, keepdim=True).clamp(min=very_negative)  # (B, 1), finite
    weights = torch.exp(masked - top)  # (B, M), 0 off mentions
    sums = torch.zeros(logits.shape[0], space, dtype=logits.dtype, device=logits.device)
    sums = sums.scatter_add(1, entities.clamp(min=0), weights)  # (B, space)
    # clamp: log(0) would send a NaN gradient back through entities without mentions
    scores = torch.log(sums.clamp(min=1e-30)) + top
    # An entity without mentions (a candidate the client named, say) ranks below every
    # mentioned one and above whatever the caller masks out as very negative.
    return scores.masked_fill(sums <= 0, very_negative / 2)  # (B, space)


def read_mentions(H: Tensor, length: int, entities: Tensor, offset: int) -> tuple[Tensor, Tensor]:
    """One document: H (n, k), its length, entities (n,) (-1 off mentions) -> the keys K (M, k)
    and the mentions (M, 2): each one's entity index and token position."""
    positions = torch.nonzero(entities[:length] >= 0).squeeze(1)  # (M,)
    keys = H[torch.clamp(positions + offset, max=length - 1)]  # (M, k)
    mentions = torch.stack([entities[positions], positions], dim=1).to(torch.int32)  # (M, 2)
    return keys, mentions


def append_mentions(
    keys: Tensor, mentions: Tensor, n: int, H_new: Tensor, entities_new: Tensor, offset: int
) -> tuple[Tensor, Tensor]:
    """Keys and mentions of a document of n tokens, the states H_new (t, k) and entities (t,)
    of appended tokens -> the grown keys and mentions, equal to reading the whole text at once:
    a mention still waiting for its offset-th token (keyed at the old last state) gets its key
    from the new states, and the new tokens' mentions are added."""
    t = H_new.shape[0]
    waiting = mentions[:, 1].long() + offset > n - 1  # (M,) keyed at the old last state
    if bool(waiting.any()):
        keys = keys.clone()
        where = torch.clamp(mentions[waiting, 1].long() + offset - n, max=t - 1)
        keys[waiting] = H_new[where].to(keys.dtype)
    new_keys, new_mentions = read_mentions(H_new, t, entities_new, offset)
    new_mentions[:, 1] += n
    return (
        torch.cat([keys, new_keys.to(keys.dtype)]),
        torch.cat([mentions, new_mentions.to(mentions.dtype)]),
    )


def lookup_mentions(
    keys: Tensor, mentions: Tensor, Q: Tensor, pointer: tuple[Tensor, Tensor], space: int
) -> Tensor:
    """Questions Q (m, k) against one document's keys (M, k): each entity's score (m, space),
    logsumexp over its mentions of κ · (W q + b); very negative where it has no mention."""
    W, b = pointer
    logits = torch.addmm(b, Q, W.T) @ keys.T  # (m, M)
    entities = mentions[:, 0].long().expand(Q.shape[0], -1)  # (m, M)
    return entity_scores(logits, entities, space, torch.finfo(torch.float32).min / 2)


def mention_space(state: DocumentState, slots: int) -> int:
    """The width of a lookup's scores: the E slots the other modes answer over at least (so
    scores of documents line up), more when the document names more entities."""
    assert state.mentions is not None
    named = int(state.mentions[:, 0].max()) + 1 if len(state.mentions) else 0
    return max(slots, named)


def masked_entity_scores(scores: Tensor, candidate_mask: Tensor) -> Tensor:
    """A lookup's scores (m, S) -> (m, E) for candidate_mask (m, E): cut, or padded (an entity
    without mentions ranks last among candidates), and the non-candidates masked out."""
    very_negative = torch.finfo(torch.float32).min / 2
    width = candidate_mask.shape[1]
    scores = scores.to("cpu", torch.float32)[:, :width]
    if scores.shape[1] < width:
        pad = scores.new_full((scores.shape[0], width - scores.shape[1]), very_negative / 2)
        scores = torch.cat([scores, pad], dim=1)
    return scores.masked_fill(~candidate_mask.bool(), very_negative)
