"""The mentions mode: it points at the document's mentions, reaches entities beyond the E
markers, extends exactly, and learns to point at the right mention."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from encoder.model.config import ReaderConfig
from encoder.model.pointer import entity_scores
from encoder.model.reader import Reader
from encoder.model.serving import ServingReader

VOCAB, K, E, OFFSET = 30, 12, 4, 3  # markers: ids 3..6 (E = 4 of them)


def reader(seed: int = 0, mention_offset: int = 2) -> Reader:
    torch.manual_seed(seed)
    config = ReaderConfig(
        mode="mentions",
        vocab_size=VOCAB,
        embed_dim=8,
        hidden_size=K,
        max_entities=E,
        dropout=0.0,
        mention_offset=mention_offset,
    )
    return Reader(config).double().eval()


def document(n: int, entities: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (filler words, every third token a mention of one of `entities` entities,
    its marker the entity modulo E) and each token's entity (-1 for other words)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(OFFSET + E, VOCAB, (n,), generator=g)
    which = torch.full((n,), -1)
    at = torch.arange(0, n, 3)
    which[at] = torch.randint(0, entities, (len(at),), generator=g)
    ids[at] = OFFSET + which[at] % E
    return ids, which


def test_config_refuses_a_prior_and_a_negative_offset() -> None:
    with pytest.raises(ValueError, match="prior"):
        ReaderConfig(mode="mentions", vocab_size=10, mention_prior=True)
    with pytest.raises(ValueError, match="mention_offset"):
        ReaderConfig(mode="mentions", vocab_size=10, mention_offset=-1)


def test_entity_scores_are_the_log_of_each_entitys_share() -> None:
    logits = torch.tensor([[1.0, 2.0, 3.0, 0.5]])
    entities = torch.tensor([[0, 2, 0, -1]])
    scores = entity_scores(logits, entities, 4)
    everyone = torch.logsumexp(torch.tensor([1.0, 2.0, 3.0]), 0)
    assert torch.allclose(scores[0, 0], torch.logsumexp(torch.tensor([1.0, 3.0]), 0) - everyone)
    assert torch.allclose(scores[0, 2], torch.tensor(2.0) - everyone)
    assert torch.allclose(scores[0].exp().sum(), torch.tensor(1.0))  # shares of one softmax
    assert scores[0, 1] < -60 and scores[0, 3] < -60  # no mention: the floor


def test_every_entity_is_reachable_beyond_the_markers() -> None:
    model = reader()
    ids, which = document(60, entities=9, seed=1)  # 9 entities, 4 markers
    (state,) = model.encode_documents([ids], [which])
    assert state.mentions is not None and state.memory is not None
    assert set(state.mentions[:, 0].tolist()) == set(which[which >= 0].tolist())
    Q = model.encode_queries([torch.tensor([9, 10, 11])])
    scores = model.score(model.lookup(state, Q), Q, torch.ones(1, 9, dtype=torch.bool))
    assert scores.shape == (1, 9) and torch.isfinite(scores).all()
    named = sorted(set(which[which >= 0].tolist()))
    assert len(named) > E  # more entities than markers ...
    assert (scores[0, named] > -1e30).all()  # ... yet each one mentioned is scored
    unnamed = [e for e in range(9) if e not in named]
    assert (scores[0, unnamed] < scores[0, named].min()).all()


@settings(max_examples=15, deadline=None)
@given(cuts=st.lists(st.integers(1, 20), min_size=1, max_size=4), offset=st.integers(0, 5))
def test_extend_equals_encoding_the_whole_text(cuts: list[int], offset: int) -> None:
    model = reader(mention_offset=offset)
    ids, which = document(sum(cuts) + 5, entities=7, seed=sum(cuts))
    (whole,) = model.encode_documents([ids], [which])
    (state,) = model.encode_documents([ids[:5]], [which[:5]])
    start = 5
    for n in cuts:  # a mention's key may wait for tokens of the next chunk
        state = model.extend(state, ids[start : start + n], which[start : start + n])
        start += n
    assert state.n == whole.n and torch.equal(state.mentions, whole.mentions)
    torch.testing.assert_close(state.memory, whole.memory, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(state.last_hidden, whole.last_hidden, atol=1e-5, rtol=1e-5)


def test_lookup_equals_forward_and_padding_changes_nothing() -> None:
    model = reader()
    docs = [document(n, entities=6, seed=n) for n in (7, 19, 13)]
    query = torch.tensor([8, 9, 10, 11])
    mask = torch.ones(3, 6, dtype=torch.bool)
    ids = torch.nn.utils.rnn.pad_sequence([d for d, _ in docs], batch_first=True)
    which = torch.nn.utils.rnn.pad_sequence([w for _, w in docs], True, padding_value=-1)
    lengths = torch.tensor([len(d) for d, _ in docs])
    queries = query.expand(3, -1)
    with torch.no_grad():
        forward = model(ids, lengths, queries, torch.full((3,), 4), mask, which)
    states = model.encode_documents([d for d, _ in docs], [w for _, w in docs])
    Q = model.encode_queries([query])
    for i, state in enumerate(states):
        served = model.score(model.lookup(state, Q), Q, mask[i : i + 1])
        torch.testing.assert_close(served[0], forward[i].float(), atol=1e-4, rtol=1e-4)


def test_serving_reader_points_as_the_reader_does() -> None:
    model = reader().float()
    serving = ServingReader(model)
    ids, which = document(40, entities=8, seed=5)
    (state,) = serving.encode_documents([ids], [which])
    mask = torch.ones(2, 8, dtype=torch.bool)
    mask[1, 3] = False
    queries = [torch.tensor([8, 9]), torch.tensor([12, 13, 14])]
    with torch.inference_mode():
        Q = serving.encode_queries(queries)
        lean = serving.score(serving.lookup(state, Q), Q, mask)
    general = model.score(model.lookup(state, Q), Q, mask)
    torch.testing.assert_close(lean, general, atol=1e-5, rtol=1e-5)
    assert lean[1, 3] < -1e30


def test_training_learns_to_point_at_the_cued_mention() -> None:
    """Two entities a document; the answer is the one right after the cue word (id 20).
    Chance is log 2 = 0.69: a reader that points learns to do far better."""
    torch.manual_seed(0)
    config = ReaderConfig(
        mode="mentions",
        vocab_size=VOCAB,
        embed_dim=8,
        hidden_size=16,
        max_entities=E,
        dropout=0.0,
        mention_offset=0,
    )
    model = Reader(config).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    g = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(150):
        ids = torch.randint(OFFSET + E, 20, (32, 8), generator=g)
        which = torch.full((32, 8), -1)
        first = torch.randint(0, 2, (32,), generator=g)
        ids[:, 2], which[:, 2] = OFFSET + first, first  # mentions at 2 and 5
        ids[:, 5], which[:, 5] = OFFSET + 1 - first, 1 - first
        cue_before_second = torch.rand(32, generator=g) < 0.5
        ids[:, 1] = torch.where(cue_before_second, ids[:, 1], 20)
        ids[:, 4] = torch.where(cue_before_second, 20, ids[:, 4])
        answers = torch.where(cue_before_second, 1 - first, first)
        queries = torch.full((32, 2), 21)
        mask = torch.ones(32, 2, dtype=torch.bool)
        scores = model(ids, torch.full((32,), 8), queries, torch.full((32,), 2), mask, which)
        loss = F.cross_entropy(scores, answers)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    first_loss, last_loss = losses[0], sum(losses[-10:]) / 10
    assert first_loss > 0.5
    assert last_loss < 0.2, (first_loss, last_loss)
