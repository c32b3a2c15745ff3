"""The reader's invariants: the state path equals the training path, in every mode."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from functools import cache

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor

from encoder.model.attention import GatedAttention
from encoder.model.config import ReaderConfig
from encoder.model.modes import MODES, Mode
from encoder.model.reader import Reader, pad_sequences
from encoder.model.state import DocumentState

VOCAB = 50
K = 12
E = 6
TOL = 1e-5


@cache
def reader(mode: Mode, seed: int = 0) -> Reader:
    """A tiny reader in float64 (so float32 states are the only rounding); dropout on, to show
    the serving path and the eval-mode forward pass both switch it off."""
    torch.manual_seed(seed)
    config = ReaderConfig(
        mode=mode, vocab_size=VOCAB, embed_dim=8, hidden_size=K, max_entities=E, dropout=0.3
    )
    return Reader(config).double().eval()


def tokens(n: int, seed: int) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, VOCAB, (n,), generator=g)  # (n,) never the pad id 0


def candidate_masks(b: int, seed: int) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(b, E, generator=g) < 0.5  # (b, E)
    mask[torch.arange(b), torch.randint(0, E, (b,), generator=g)] = True  # >= 1 candidate
    return mask


def forward_scores(
    model: Reader, docs: Sequence[Tensor], queries: Sequence[Tensor], mask: Tensor
) -> Tensor:
    doc_ids, doc_lengths = pad_sequences(docs, model.config.pad_id)
    query_ids, query_lengths = pad_sequences(queries, model.config.pad_id)
    with torch.no_grad():
        return model(doc_ids, doc_lengths, query_ids, query_lengths, mask)  # (B, E)


def served_scores(
    model: Reader, states: Sequence[DocumentState], Q: Tensor, mask: Tensor
) -> Tensor:
    """Row i of Q against document i, as the service answers: lookup, then score."""
    if not states:
        return torch.empty(0, model.config.max_entities)
    R = torch.cat([model.lookup(s, Q[i : i + 1]) for i, s in enumerate(states)])  # (B, k)
    return model.score(R, Q, mask)  # (B, E)


def doc_states_from_scratch(model: Reader, doc: Tensor) -> Tensor:
    """The document GRU's states h_1..h_n, computed directly: H (n, k)."""
    with torch.no_grad():
        H, _ = model.doc_gru(model.embedding(doc).unsqueeze(0))  # (1, n, k)
    return H[0]


def assert_same_state(a: DocumentState, b: DocumentState, tol: float = TOL) -> None:
    assert a.mode == b.mode
    assert a.n == b.n
    torch.testing.assert_close(a.last_hidden, b.last_hidden, atol=tol, rtol=0)
    if a.memory is None or b.memory is None:
        assert a.memory is None and b.memory is None
    else:
        assert a.memory.shape == b.memory.shape
        torch.testing.assert_close(a.memory, b.memory, atol=tol, rtol=tol)


# ---- configuration ---------------------------------------------------------------------------


def test_config_round_trips_through_asdict() -> None:
    config = ReaderConfig(mode="gated", vocab_size=123, hidden_size=7, dropout=0.0)
    assert ReaderConfig(**asdict(config)) == config
    assert Reader(ReaderConfig(**asdict(config))).config == config


@pytest.mark.parametrize(
    "bad",
    [
        {"mode": "cosine", "vocab_size": 10},
        {"mode": "linear", "vocab_size": 10, "pad_id": 10},
        {"mode": "linear", "vocab_size": 10, "hidden_size": 0},
        {"mode": "linear", "vocab_size": 10, "dropout": 1.0},
    ],
)
def test_config_rejects_nonsense(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ReaderConfig(**bad)  # type: ignore[arg-type]


# ---- what each mode keeps --------------------------------------------------------------------


def test_linear_memory_is_sum_of_outer_products() -> None:
    model = reader("linear")
    doc = tokens(9, seed=1)
    (state,) = model.encode_documents([doc])
    H = doc_states_from_scratch(model, doc)  # (n, k)
    outer_sum = sum(torch.outer(h, h) for h in H)
    assert state.memory is not None and state.memory.shape == (K, K)
    assert state.memory.dtype == torch.float32 and state.memory.device.type == "cpu"
    torch.testing.assert_close(state.memory.double(), H.T @ H, atol=TOL, rtol=TOL)
    torch.testing.assert_close(state.memory.double(), outer_sum, atol=TOL, rtol=TOL)
    torch.testing.assert_close(state.memory, state.memory.T, atol=1e-6, rtol=0)
    assert torch.linalg.eigvalsh(state.memory.double()).min() > -1e-5  # positive semi-definite
    assert state.n == 9
    torch.testing.assert_close(state.last_hidden.double(), H[-1], atol=TOL, rtol=0)


def test_gated_memory_matches_its_formula() -> None:
    model = reader("gated")
    doc = tokens(11, seed=2)
    (state,) = model.encode_documents([doc])
    H = doc_states_from_scratch(model, doc)  # (n, k)
    assert isinstance(model.attention, GatedAttention)
    gate = model.attention.gate
    with torch.no_grad():
        Fg = torch.sigmoid(H @ gate.weight.T + gate.bias) * H  # f_t = sigmoid(W h_t + b) ⊙ h_t
    assert state.memory is not None
    torch.testing.assert_close(state.memory.double(), Fg.T @ Fg, atol=TOL, rtol=TOL)
    torch.testing.assert_close(state.memory, state.memory.T, atol=1e-6, rtol=0)
    # The gate really gates: C differs from the ungated HᵀH.
    assert not torch.allclose(state.memory.double(), H.T @ H, atol=1e-3)


def test_softmax_keeps_all_states_and_none_keeps_only_the_last() -> None:
    doc = tokens(7, seed=3)
    (soft,) = reader("softmax").encode_documents([doc])
    H = doc_states_from_scratch(reader("softmax"), doc)
    assert soft.memory is not None and soft.memory.shape == (7, K)
    torch.testing.assert_close(soft.memory.double(), H, atol=TOL, rtol=0)
    (none,) = reader("none").encode_documents([doc])
    assert none.memory is None and none.n == 7
    torch.testing.assert_close(
        none.last_hidden.double(),
        doc_states_from_scratch(reader("none"), doc)[-1],
        atol=TOL,
        rtol=0,
    )


@pytest.mark.parametrize("mode", ["linear", "softmax"])
def test_lookup_implements_the_equation(mode: Mode) -> None:
    model = reader(mode)
    doc = tokens(8, seed=4)
    (state,) = model.encode_documents([doc])
    H = doc_states_from_scratch(model, doc)  # (n, k)
    q = torch.randn(K, dtype=torch.float64)
    expected = H.T @ (H @ q) / 8 if mode == "linear" else H.T @ torch.softmax(H @ q, dim=0)
    R = model.lookup(state, q.unsqueeze(0))  # (1, k)
    torch.testing.assert_close(R[0].double(), expected, atol=TOL, rtol=TOL)


# ---- padding, order, extension ---------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_padding_changes_nothing(mode: Mode) -> None:
    model = reader(mode)
    short, long1, long2 = tokens(3, seed=5), tokens(10, seed=6), tokens(17, seed=7)
    (alone,) = model.encode_documents([short])
    batch = model.encode_documents([long1, short, long2])
    assert_same_state(alone, batch[1])

    query = tokens(4, seed=8)
    mask = candidate_masks(3, seed=9)
    scores_alone = forward_scores(model, [short], [query], mask[1:2])
    scores_batch = forward_scores(model, [long1, short, long2], [tokens(9, 10), query, query], mask)
    torch.testing.assert_close(scores_batch[1:2], scores_alone, atol=TOL, rtol=TOL)


@pytest.mark.parametrize("mode", MODES)
def test_batch_order_does_not_change_results(mode: Mode) -> None:
    model = reader(mode)
    docs = [tokens(n, seed=20 + n) for n in (4, 12, 7, 1, 9)]
    queries = [tokens(n, seed=40 + n) for n in (3, 6, 2, 5, 4)]
    mask = candidate_masks(5, seed=11)
    perm = [3, 0, 4, 2, 1]

    states = model.encode_documents(docs)
    permuted = model.encode_documents([docs[i] for i in perm])
    for j, i in enumerate(perm):
        assert_same_state(states[i], permuted[j])

    scores = forward_scores(model, docs, queries, mask)
    scores_p = forward_scores(
        model, [docs[i] for i in perm], [queries[i] for i in perm], mask[perm]
    )
    torch.testing.assert_close(scores_p, scores[perm], atol=TOL, rtol=TOL)


@settings(max_examples=15, deadline=None)
@given(
    mode=st.sampled_from(MODES),
    chunks=st.lists(
        st.lists(st.integers(1, VOCAB - 1), min_size=1, max_size=8), min_size=2, max_size=4
    ),
)
def test_extend_equals_encoding_the_whole_text(mode: Mode, chunks: list[list[int]]) -> None:
    model = reader(mode)
    pieces = [torch.tensor(c) for c in chunks]
    (state,) = model.encode_documents([pieces[0]])
    for piece in pieces[1:]:
        state = model.extend(state, piece)
    (whole,) = model.encode_documents([torch.cat(pieces)])
    assert_same_state(state, whole)


def test_extend_with_nothing_keeps_the_state() -> None:
    model = reader("linear")
    (state,) = model.encode_documents([tokens(5, seed=12)])
    assert model.extend(state, torch.tensor([], dtype=torch.long)) is state


# ---- the serving path gives the training path's scores ---------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_lookup_path_equals_forward(mode: Mode) -> None:
    model = reader(mode)
    docs = [tokens(n, seed=60 + n) for n in (5, 13, 1, 8)]
    queries = [tokens(n, seed=80 + n) for n in (4, 2, 6, 3)]
    mask = candidate_masks(4, seed=13)

    expected = forward_scores(model, docs, queries, mask)  # (B, E)
    states = model.encode_documents(docs)
    Q = model.encode_queries(queries)  # (B, k)
    assert Q.shape == (4, K) and Q.dtype == torch.float32 and Q.device.type == "cpu"
    scores = served_scores(model, states, Q, mask)
    assert scores.dtype == torch.float32 and scores.device.type == "cpu"
    torch.testing.assert_close(scores.double(), expected, atol=TOL, rtol=TOL)


@pytest.mark.parametrize("mode", MODES)
def test_many_queries_against_one_document_equal_one_by_one(mode: Mode) -> None:
    model = reader(mode)
    doc = tokens(10, seed=14)
    doc[[2, 6]] = torch.tensor([3, 4])  # two entity markers: mentions for the mentions mode
    (state,) = model.encode_documents([doc])
    Q = model.encode_queries([tokens(n, seed=90 + n) for n in (2, 5, 3, 7, 1)])  # (m, k)
    R = model.lookup(state, Q)  # (m, k); mentions: entity scores (m, E)
    assert R.shape == (5, E if mode == "mentions" else K)
    for i in range(5):
        torch.testing.assert_close(
            R[i : i + 1], model.lookup(state, Q[i : i + 1]), atol=1e-6, rtol=0
        )
    if mode == "none":
        assert torch.equal(R, state.last_hidden.expand(5, K))
    elif mode == "mentions":  # the document's mentions score differently for each question
        named = state.mentions[:, 0].long().unique()
        assert not torch.allclose(R[0, named], R[1, named], atol=1e-4)
    else:  # attention reads the document differently for different questions
        assert not torch.allclose(R[0], R[1], atol=1e-4)


@pytest.mark.parametrize("mode", MODES)
def test_non_candidates_never_win(mode: Mode) -> None:
    model = reader(mode)
    docs = [tokens(6 + i, seed=100 + i) for i in range(8)]
    queries = [tokens(3, seed=120 + i) for i in range(8)]
    mask = torch.zeros(8, E, dtype=torch.bool)
    mask[torch.arange(8), torch.arange(8) % E] = True  # exactly one candidate per row
    mask[:4, -1] = True

    scores = forward_scores(model, docs, queries, mask)  # (B, E)
    assert torch.isfinite(scores).all()
    assert mask[torch.arange(8), scores.argmax(dim=1)].all()
    assert (scores[~mask] < -1e30).all()
    answers = scores.masked_fill(~mask, float("-inf")).argmax(dim=1)
    loss = F.cross_entropy(scores, answers)
    assert torch.isfinite(loss) and loss >= 0

    served = served_scores(model, model.encode_documents(docs), model.encode_queries(queries), mask)
    assert torch.isfinite(served).all()
    assert mask[torch.arange(8), served.argmax(dim=1)].all()


# ---- serving-time conveniences ---------------------------------------------------------------


def test_serving_turns_dropout_off_and_restores_training() -> None:
    model = reader("gated")
    doc, query = tokens(9, seed=15), tokens(4, seed=16)
    (expected,) = model.encode_documents([doc])
    model.train()
    try:
        for _ in range(3):  # dropout 0.3 would make these differ if it were on
            (state,) = model.encode_documents([doc])
            assert_same_state(state, expected, tol=0.0)
            assert torch.equal(model.encode_queries([query]), model.encode_queries([query]))
        assert model.training
    finally:
        model.eval()


def test_states_are_ordinary_tensors_and_float16_states_still_answer() -> None:
    model = reader("linear")
    (state,) = model.encode_documents([tokens(6, seed=17)])
    assert state.memory is not None
    state.memory.clone().add_(1.0)  # no inference-tensor error for callers
    state.last_hidden.mul_(1.0)
    Q = model.encode_queries([tokens(3, seed=18)])
    half = DocumentState(state.mode, state.n, state.last_hidden.half(), state.memory.half())
    torch.testing.assert_close(
        model.lookup(half, Q.half()), model.lookup(state, Q), atol=2e-3, rtol=2e-3
    )


def test_states_must_match_the_model_mode() -> None:
    (state,) = reader("linear").encode_documents([tokens(4, seed=19)])
    with pytest.raises(ValueError):
        reader("gated").lookup(state, torch.zeros(1, K))
    with pytest.raises(ValueError):
        reader("softmax").extend(state, tokens(2, seed=20))


def test_empty_batches() -> None:
    model = reader("softmax")
    assert model.encode_documents([]) == []
    assert model.encode_queries([]).shape == (0, K)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("mode", MODES)
def test_cuda_matches_cpu(mode: Mode) -> None:
    cpu = reader(mode)
    gpu = Reader(cpu.config).double()
    gpu.load_state_dict(cpu.state_dict())
    gpu = gpu.to("cuda").eval()
    docs = [tokens(n, seed=140 + n) for n in (3, 9)]
    queries = [tokens(n, seed=160 + n) for n in (2, 4)]
    mask = candidate_masks(2, seed=21)
    for a, b in zip(cpu.encode_documents(docs), gpu.encode_documents(docs), strict=True):
        assert_same_state(a, b)
    states = gpu.extend(gpu.encode_documents(docs)[0], tokens(3, seed=22))
    assert states.last_hidden.device.type == "cpu"
    Q = gpu.encode_queries(queries)
    torch.testing.assert_close(Q, cpu.encode_queries(queries), atol=TOL, rtol=TOL)
    scores = served_scores(gpu, gpu.encode_documents(docs), Q, mask)
    assert scores.device.type == "cpu"
    torch.testing.assert_close(
        scores, served_scores(cpu, cpu.encode_documents(docs), Q, mask), atol=TOL, rtol=TOL
    )
