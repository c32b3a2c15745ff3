"""The lean serving path (eval-mode CPU float32 reader) against the general implementation it
replaces on that path and against the training forward pass, for every mode and both output
layers and length norms."""

from __future__ import annotations

import copy
from functools import cache

import pytest
import torch

from encoder.model.config import ReaderConfig
from encoder.model.modes import MODES, Mode
from encoder.model.reader import Reader, pad_sequences
from encoder.model.state import DocumentState

VOCAB = 60
K = 16
E = 7
CONFIGS = [("n", "slots"), ("sqrt", "markers"), ("n", "markers"), ("sqrt", "slots")]


@cache
def lean_reader(mode: Mode, length_norm: str, output: str, prior: bool = False) -> Reader:
    torch.manual_seed(3)
    config = ReaderConfig(
        mode=mode,
        vocab_size=VOCAB,
        embed_dim=8,
        hidden_size=K,
        max_entities=E,
        dropout=0.3,
        length_norm=length_norm,  # type: ignore[arg-type]
        output=output,  # type: ignore[arg-type]
        mention_prior=prior,
    )
    model = Reader(config)
    if prior:
        with torch.no_grad():
            model.mention_weight.fill_(0.8)
            model.mention_gate.normal_(0.0, 0.5)
    model.prepare_serving()
    assert model._lean and not model.training
    return model


def tokens(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, VOCAB, (n,), generator=g)


def questions(seed: int) -> list[torch.Tensor]:
    return [tokens(n, seed + i) for i, n in enumerate((5, 1, 9, 9, 3, 12, 2))]


def general_queries(model: Reader, queries: list[torch.Tensor]) -> torch.Tensor:
    """The general implementation: the query GRU module over the padded batch."""
    ids, lengths = pad_sequences(queries, model.config.pad_id)
    with torch.no_grad():
        _, _, q = model._run_gru(model.query_gru, ids, lengths)
    return q


def general_lookup(model: Reader, state: DocumentState, Q: torch.Tensor) -> torch.Tensor:
    """R as the attention modes define it (C q / n with C as stored, Hᵀ softmax(H q), h_n)."""
    memory, n = state.memory, state.n
    if state.mode in ("linear", "gated"):
        assert memory is not None
        divisor = n**0.5 if model.config.length_norm == "sqrt" else n
        return Q @ memory.mT / divisor
    if state.mode == "softmax":
        assert memory is not None
        return torch.softmax(Q @ memory.mT, dim=-1) @ memory
    return state.last_hidden.expand_as(Q)


def general_scores(
    model: Reader,
    R: torch.Tensor,
    Q: torch.Tensor,
    mask: torch.Tensor,
    mentions: torch.Tensor | None = None,
) -> torch.Tensor:
    with torch.no_grad():
        return model._scores(R, Q, mask, mentions)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("length_norm", "output", "prior"), [(*c, i == 1) for i, c in enumerate(CONFIGS)]
)
def test_lean_path_equals_the_general_one(
    mode: Mode, length_norm: str, output: str, prior: bool
) -> None:
    model = lean_reader(mode, length_norm, output, prior)
    doc = tokens(40, seed=1)
    state = model.encode_documents([doc])[0]
    mentions = model.mentions(doc.unsqueeze(0))[0]  # (E,)
    queries = questions(seed=10)
    Q_ref = general_queries(model, queries)
    mask = torch.rand(len(queries), E, generator=torch.Generator().manual_seed(2)) < 0.6
    mask[:, 0] = True
    with torch.inference_mode():
        Q = model.encode_queries(queries)
        R = model.lookup(state, Q)
        R1 = model.lookup(state, Q[2:3])
        scores = model.score(R, Q, mask, mentions)
    torch.testing.assert_close(Q, Q_ref, atol=1e-5, rtol=1e-5)
    R_ref = general_lookup(model, state, Q)
    torch.testing.assert_close(R, R_ref, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(R1, R_ref[2:3], atol=1e-6, rtol=1e-6)
    expected = general_scores(model, R_ref, Q, mask, mentions)
    torch.testing.assert_close(scores, expected, atol=1e-6, rtol=1e-6)
    assert (scores[~mask] < -1e30).all()
    if prior:  # the counts moved the scores: the test would see a prior that is not applied
        assert not torch.allclose(expected, general_scores(model, R_ref, Q, mask))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("length_norm", "output", "prior"), [(*CONFIGS[0], False), (*CONFIGS[1], True)]
)
def test_lean_path_scores_like_forward(
    mode: Mode, length_norm: str, output: str, prior: bool
) -> None:
    """forward counts the mentions from the document's markers; serving is given them."""
    model = lean_reader(mode, length_norm, output, prior)
    docs = [tokens(n, seed=20 + n) for n in (7, 30, 12)]
    queries = [tokens(n, seed=40 + n) for n in (4, 11, 6)]
    mask = torch.ones(3, E, dtype=torch.bool)
    mask[1, 3:] = False
    doc_ids, doc_lengths = pad_sequences(docs, 0)
    query_ids, query_lengths = pad_sequences(queries, 0)
    with torch.no_grad():
        expected = model(doc_ids, doc_lengths, query_ids, query_lengths, mask)
    states = model.encode_documents(docs)
    with torch.inference_mode():
        Q = model.encode_queries(queries)
        R = torch.cat([model.lookup(s, Q[i : i + 1]) for i, s in enumerate(states)])
        # @entity{e} is id entity_offset + e (3 by default), counted here independently.
        mentions = torch.tensor([[float((d == 3 + e).sum()) for e in range(E)] for d in docs])
        served = model.score(R, Q, mask, mentions if prior else None)
    torch.testing.assert_close(served, expected, atol=1e-5, rtol=1e-5)


def test_outside_inference_mode_results_are_ordinary_tensors() -> None:
    model = lean_reader("linear", "n", "slots")
    state = model.encode_documents([tokens(10, seed=3)])[0]
    Q = model.encode_queries(questions(seed=4))
    R = model.lookup(state, Q)
    scores = model.score(R, Q, torch.ones(Q.shape[0], E, dtype=torch.bool))
    for t in (Q, R, scores):
        assert not t.is_inference() and t.dtype == torch.float32
        t.add_(1.0)  # an inference tensor would refuse this outside inference mode


def test_float16_states_and_queries_take_the_lean_path() -> None:
    model = lean_reader("softmax", "n", "slots")
    state = model.encode_documents([tokens(12, seed=5)])[0]
    assert state.memory is not None
    half = DocumentState(state.mode, state.n, state.last_hidden.half(), state.memory.half())
    Q = model.encode_queries(questions(seed=6))
    with torch.inference_mode():
        torch.testing.assert_close(
            model.lookup(half, Q.half()), model.lookup(state, Q), atol=2e-3, rtol=2e-3
        )


def test_lean_path_rejects_a_state_of_another_mode() -> None:
    state = lean_reader("linear", "n", "slots").encode_documents([tokens(4, seed=7)])[0]
    gated = lean_reader("gated", "n", "slots")  # built outside inference mode
    with torch.inference_mode(), pytest.raises(ValueError):
        gated.lookup(state, torch.zeros(1, K))


def test_query_table_follows_weight_updates_and_moves() -> None:
    model = copy.deepcopy(lean_reader("gated", "n", "markers"))
    queries = questions(seed=8)
    before = model.encode_queries(queries)
    with torch.no_grad():  # what an optimizer step or a load does: in-place updates
        model.embedding.weight.mul_(1.5)
        model.query_gru.weight_hh_l0.add_(0.05)
    after = model.encode_queries(queries)
    assert not torch.allclose(before, after)
    torch.testing.assert_close(after, general_queries(model, queries), atol=1e-5, rtol=1e-5)
    model.double()  # not float32 any more: the general path, in float64
    assert not model._lean
    torch.testing.assert_close(
        model.encode_queries(queries), general_queries(model, queries).float(), atol=1e-5, rtol=0
    )


def test_training_mode_takes_the_general_path_without_dropout() -> None:
    model = copy.deepcopy(lean_reader("linear", "sqrt", "slots"))
    queries = questions(seed=9)
    expected = model.encode_queries(queries)
    model.train()
    torch.testing.assert_close(model.encode_queries(queries), expected, atol=1e-5, rtol=1e-5)
    assert model.training


def test_lean_queries_need_a_token_each() -> None:
    with pytest.raises(ValueError):
        lean_reader("none", "n", "slots").encode_queries([tokens(3, seed=1), tokens(0, seed=2)])


def test_queries_as_id_lists_encode_as_tensors_do() -> None:
    # The service hands over plain id lists (equal lengths, ties in the longest-first order,
    # a one-token question among them); tensors and lists give the general path's vectors.
    model = copy.deepcopy(lean_reader("linear", "n", "slots"))
    queries = [*questions(seed=12), tokens(9, seed=40), tokens(1, seed=41)]
    as_lists = [q.tolist() for q in queries]
    expected = general_queries(model, queries)
    torch.testing.assert_close(model.encode_queries(as_lists), expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(model.encode_queries(queries), expected, atol=1e-5, rtol=1e-5)
    model.train()  # the general path takes lists too
    torch.testing.assert_close(model.encode_queries(as_lists), expected, atol=1e-5, rtol=1e-5)
