"""The serving object against the reader it is built from: ServingReader (the lean path the
service runs) must give the Reader's general path's results, and the training forward
pass's, for every mode, both output layers and both length norms. This is the contract
between encoder/model/serving.py and encoder/model/reader.py."""

from __future__ import annotations

import copy
import math
from functools import cache

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from encoder.model.config import ReaderConfig
from encoder.model.modes import MODES, Mode
from encoder.model.reader import Reader, pad_sequences
from encoder.model.serving import ServingReader, for_serving
from encoder.model.state import DocumentState

VOCAB = 60
K = 16
E = 7
CONFIGS = [("n", "slots"), ("sqrt", "markers"), ("n", "markers"), ("sqrt", "slots")]


def new_reader(mode: Mode, length_norm: str, output: str, prior: bool = False) -> Reader:
    """A trained-looking CPU float32 reader (random weights, dropout on in train())."""
    torch.manual_seed(3)
    prior = prior and mode != "mentions"  # the mentions mode points at mentions: no prior
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
    return model


@cache
def served(mode: Mode, length_norm: str, output: str, prior: bool = False) -> ServingReader:
    serving = ServingReader(new_reader(mode, length_norm, output, prior))
    assert not serving.reader.training  # built for good in eval()
    return serving


def tokens(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, VOCAB, (n,), generator=g)


def questions(seed: int) -> list[torch.Tensor]:
    return [tokens(n, seed + i) for i, n in enumerate((5, 1, 9, 9, 3, 12, 2))]


def formula_lookup(model: Reader, state: DocumentState, Q: torch.Tensor) -> torch.Tensor:
    """R as the attention modes define it (C q / n with C as stored, Hᵀ softmax(H q), h_n)."""
    memory, n = state.memory, state.n
    if state.mode in ("linear", "gated"):
        assert memory is not None
        divisor = n**0.5 if model.config.length_norm == "sqrt" else n
        return Q @ memory.mT / divisor
    if state.mode == "softmax":
        assert memory is not None
        return torch.softmax(Q @ memory.mT, dim=-1) @ memory
    if state.mode == "mentions":  # each entity: log of its mentions' share of softmax(K (W q + b))
        assert memory is not None and state.mentions is not None
        with torch.no_grad():
            logits = model.pointer(Q.clone()) @ memory.mT  # (m, M)
        entities = state.mentions[:, 0].long()
        width = max(model.config.max_entities, int(entities.max()) + 1)
        out = torch.full((Q.shape[0], width), math.log(1e-30))
        everyone = torch.logsumexp(logits, dim=1)  # (m,) each entity's share of the softmax
        for e in entities.unique().tolist():
            out[:, e] = torch.logsumexp(logits[:, entities == e], dim=1) - everyone
        return out
    return state.last_hidden.expand_as(Q)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("length_norm", "output", "prior"), [(*c, i == 1) for i, c in enumerate(CONFIGS)]
)
def test_serving_reader_equals_the_general_path(
    mode: Mode, length_norm: str, output: str, prior: bool
) -> None:
    serving = served(mode, length_norm, output, prior)
    reader = serving.reader
    doc = tokens(40, seed=1)
    state = reader.encode_documents([doc])[0]
    mentions = reader.mentions(doc.unsqueeze(0))[0]  # (E,)
    queries = questions(seed=10)
    mask = torch.rand(len(queries), E, generator=torch.Generator().manual_seed(2)) < 0.6
    mask[:, 0] = True
    Q_ref = reader.encode_queries(queries)
    R_ref = reader.lookup(state, Q_ref)
    expected = reader.score(R_ref, Q_ref, mask, mentions)
    with torch.inference_mode():
        Q = serving.encode_queries(queries)
        R = serving.lookup(state, Q)
        R1 = serving.lookup(state, Q[2:3])
        scores = serving.score(R, Q, mask, mentions)
    torch.testing.assert_close(Q, Q_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(R, R_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(R, formula_lookup(reader, state, Q), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(R1, R[2:3], atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(scores, expected, atol=1e-5, rtol=1e-5)
    assert (scores[~mask] < -1e30).all()
    if reader.config.mention_prior:  # the counts moved the scores: a prior not applied fails
        assert not torch.allclose(expected, reader.score(R_ref, Q_ref, mask))
    (own,) = serving.encode_documents([doc])  # the reader's own, unchanged
    assert own.n == state.n and torch.equal(own.last_hidden, state.last_hidden)
    assert (own.memory is None) == (state.memory is None)
    assert own.memory is None or torch.equal(own.memory, state.memory)
    grown = serving.extend(state, tokens(5, seed=11))
    torch.testing.assert_close(
        grown.last_hidden, reader.extend(state, tokens(5, seed=11)).last_hidden
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("length_norm", "output", "prior"), [(*CONFIGS[0], False), (*CONFIGS[1], True)]
)
def test_serving_reader_scores_like_forward(
    mode: Mode, length_norm: str, output: str, prior: bool
) -> None:
    """forward counts the mentions from the document's markers; serving is given them."""
    serving = served(mode, length_norm, output, prior)
    docs = [tokens(n, seed=20 + n) for n in (7, 30, 12)]
    queries = [tokens(n, seed=40 + n) for n in (4, 11, 6)]
    mask = torch.ones(3, E, dtype=torch.bool)
    mask[1, 3:] = False
    doc_ids, doc_lengths = pad_sequences(docs, 0)
    query_ids, query_lengths = pad_sequences(queries, 0)
    with torch.no_grad():
        expected = serving.reader(doc_ids, doc_lengths, query_ids, query_lengths, mask)
    states = serving.encode_documents(docs)
    with torch.inference_mode():
        Q = serving.encode_queries(queries)
        R = torch.cat([serving.lookup(s, Q[i : i + 1]) for i, s in enumerate(states)])
        # @entity{e} is id entity_offset + e (3 by default), counted here independently.
        mentions = torch.tensor([[float((d == 3 + e).sum()) for e in range(E)] for d in docs])
        scores = serving.score(R, Q, mask, mentions if prior else None)
    torch.testing.assert_close(scores, expected, atol=1e-5, rtol=1e-5)


token_lists = st.lists(st.integers(1, VOCAB - 1), min_size=1, max_size=12)


@settings(max_examples=12, deadline=None)
@given(
    mode=st.sampled_from(MODES),
    config=st.sampled_from(CONFIGS),
    queries=st.lists(token_lists, min_size=1, max_size=6),
    doc=token_lists,
)
def test_any_questions_get_the_general_paths_scores(
    mode: Mode, config: tuple[str, str], queries: list[list[int]], doc: list[int]
) -> None:
    """Any batch of questions (ties in length, one-token questions), as id lists."""
    serving = served(mode, *config)
    reader = serving.reader
    state = reader.encode_documents([torch.tensor(doc)])[0]
    mask = torch.ones(len(queries), E, dtype=torch.bool)
    Q_ref = reader.encode_queries(queries)
    expected = reader.score(reader.lookup(state, Q_ref), Q_ref, mask)
    with torch.inference_mode():
        Q = serving.encode_queries(queries)
        scores = serving.score(serving.lookup(state, Q), Q, mask)
    torch.testing.assert_close(Q, Q_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(scores, expected, atol=1e-5, rtol=1e-5)


def test_outside_inference_mode_results_are_ordinary_tensors() -> None:
    serving = served("linear", "n", "slots")
    state = serving.encode_documents([tokens(10, seed=3)])[0]
    Q = serving.encode_queries(questions(seed=4))
    R = serving.lookup(state, Q)
    scores = serving.score(R, Q, torch.ones(Q.shape[0], E, dtype=torch.bool))
    for t in (Q, R, scores):
        assert not t.is_inference() and t.dtype == torch.float32
        t.add_(1.0)  # an inference tensor would refuse this outside inference mode


def test_float16_states_and_queries_are_served() -> None:
    serving = served("softmax", "n", "slots")
    state = serving.encode_documents([tokens(12, seed=5)])[0]
    assert state.memory is not None
    half = DocumentState(state.mode, state.n, state.last_hidden.half(), state.memory.half())
    Q = serving.encode_queries(questions(seed=6))
    with torch.inference_mode():
        torch.testing.assert_close(
            serving.lookup(half, Q.half()), serving.lookup(state, Q), atol=2e-3, rtol=2e-3
        )


def test_a_state_of_another_mode_is_refused() -> None:
    state = served("linear", "n", "slots").encode_documents([tokens(4, seed=7)])[0]
    gated = served("gated", "n", "slots")  # built outside inference mode
    with torch.inference_mode(), pytest.raises(ValueError):
        gated.lookup(state, torch.zeros(1, K))
    with pytest.raises(ValueError):  # outside it too
        gated.lookup(state, torch.zeros(1, K))


def test_query_table_follows_weight_updates() -> None:
    serving = ServingReader(new_reader("gated", "n", "markers"))
    queries = questions(seed=8)
    before = serving.encode_queries(queries)
    with torch.no_grad():  # what a load does: in-place updates
        serving.reader.embedding.weight.mul_(1.5)
        serving.reader.query_gru.weight_hh_l0.add_(0.05)
    after = serving.encode_queries(queries)
    assert not torch.allclose(before, after)
    expected = serving.reader.encode_queries(queries)
    torch.testing.assert_close(after, expected, atol=1e-5, rtol=1e-5)


def test_other_dtypes_and_devices_are_served_by_the_reader_itself() -> None:
    reader = new_reader("linear", "n", "slots").double()
    with pytest.raises(ValueError, match="CPU float32"):
        ServingReader(reader)
    assert for_serving(reader) is reader and not reader.training
    assert isinstance(for_serving(new_reader("linear", "n", "slots")), ServingReader)


def test_the_general_path_in_training_mode_has_no_dropout() -> None:
    reader = copy.deepcopy(served("linear", "sqrt", "slots").reader)
    queries = questions(seed=9)
    expected = served("linear", "sqrt", "slots").encode_queries(queries)
    reader.train()
    torch.testing.assert_close(reader.encode_queries(queries), expected, atol=1e-5, rtol=1e-5)
    assert reader.training


def test_queries_need_a_token_each() -> None:
    with pytest.raises(ValueError):
        served("none", "n", "slots").encode_queries([tokens(3, seed=1), tokens(0, seed=2)])


def test_queries_as_id_lists_encode_as_tensors_do() -> None:
    # The service hands over plain id lists (equal lengths, ties in the longest-first order,
    # a one-token question among them); tensors and lists give the general path's vectors.
    serving = served("linear", "n", "slots")
    queries = [*questions(seed=12), tokens(9, seed=40), tokens(1, seed=41)]
    as_lists = [q.tolist() for q in queries]
    expected = serving.reader.encode_queries(queries)
    torch.testing.assert_close(serving.encode_queries(as_lists), expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(serving.encode_queries(queries), expected, atol=1e-5, rtol=1e-5)
    # the general path takes lists too
    torch.testing.assert_close(
        serving.reader.encode_queries(as_lists), expected, atol=1e-5, rtol=1e-5
    )
