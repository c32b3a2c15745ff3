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

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from encoder.model.state import DocumentState


def key_positions(lengths: Tensor, n: int, offset: int) -> Tensor:
    """(B,) lengths -> (B, n) the position of each token's key: t + offset, or the last token."""
    t = torch.arange(n, device=lengths.device).unsqueeze(0)  # (1, n)
    return torch.minimum(t + offset, (lengths - 1).unsqueeze(1))  # (B, n)


# The least share an entity is given (its log is the floor of a score): an entity without
# mentions (a candidate the client named, say) ranks below every mentioned one.
MIN_SHARE = 1e-30


def entity_scores(logits: Tensor, entities: Tensor, space: int) -> Tensor:
    """logits (B, M) of each mention, entities (B, M) its entity index (-1: no mention) ->
    (B, space) the log of each entity's share of the softmax over the mentions, i.e. the
    logsumexp of its mentions' logits less that of all (log MIN_SHARE without a mention)."""
    if logits.shape[1] == 0:  # a document without mentions
        return logits.new_full((logits.shape[0], space), math.log(MIN_SHARE))
    is_mention = entities >= 0  # (B, M)
    masked = logits.masked_fill(~is_mention, float("-inf"))
    top = masked.amax(dim=1, keepdim=True).clamp(min=torch.finfo(logits.dtype).min)  # finite
    weights = torch.exp(masked - top)  # (B, M), 0 off mentions
    weights = weights / weights.sum(dim=1, keepdim=True).clamp(min=MIN_SHARE)
    shares = torch.zeros(logits.shape[0], space, dtype=logits.dtype, device=logits.device)
    shares = shares.scatter_add(1, entities.clamp(min=0), weights)  # (B, space)
    return torch.log(shares.clamp(min=MIN_SHARE))  # clamp: no log(0), no NaN gradient


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
    keys: Tensor, entities: Tensor, Q: Tensor, pointer: tuple[Tensor, Tensor], space: int
) -> Tensor:
    """Questions Q (m, k) against one document's keys (M, k) and their entities (M,) int64:
    each entity's score (m, space), as entity_scores: the log of its share of
    softmax_m(κ_m · (W q + b)). Five ops, each paid per question batch whatever the length:
    F.linear multiplies by a transpose without making a view of it, the keys are all
    mentions (no masking), and the shares are summed by entity index in place onto the floor
    MIN_SHARE (adding 1e-30 to a share changes no float32 log)."""
    W, b = pointer
    logits = F.linear(F.linear(Q, W, b), keys)  # (m, M)
    if logits.shape[1] == 0:
        return Q.new_full((Q.shape[0], space), math.log(MIN_SHARE))
    probs = torch.softmax(logits, dim=1)  # (m, M)
    shares = probs.new_full((Q.shape[0], space), MIN_SHARE).index_add_(1, entities, probs)
    return shares.log_()  # (m, space)


def lookup_document(
    keys: Tensor, state: DocumentState, Q: Tensor, pointer: torch.nn.Linear, slots: int
) -> Tensor:
    """A mentions document's state (its keys as a tensor where the caller computes) against
    questions Q (m, k): each entity's score (m, max(slots, entities named)), the one lookup
    the Reader and the ServingReader share."""
    space = mention_space(state, slots)
    entities = state.mention_entities
    return lookup_mentions(keys, entities, Q, (pointer.weight, pointer.bias), space)


def mention_space(state: DocumentState, slots: int) -> int:
    """The width of a lookup's scores: the E slots the other modes answer over at least (so
    scores of documents line up), more when the document names more entities."""
    return max(slots, state.entities_named)


def masked_entity_scores(scores: Tensor, candidate_mask: Tensor) -> Tensor:
    """A lookup's scores (m, S) -> (m, E) for candidate_mask (m, E): cut, or padded (an entity
    without mentions gets the floor), and the non-candidates masked out."""
    very_negative = torch.finfo(torch.float32).min / 2
    width = candidate_mask.shape[1]
    if scores.shape[1] != width:
        if scores.shape[1] > width:
            scores = scores[:, :width]
        else:
            pad = scores.new_full((scores.shape[0], width - scores.shape[1]), math.log(MIN_SHARE))
            scores = torch.cat([scores, pad], dim=1)
    return scores.masked_fill(candidate_mask.logical_not(), very_negative)
