"""Property tests: for any batch of documents, padding and order change nothing, and the
serving path (states + lookups) scores exactly like the training forward pass."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from encoder.model.modes import MODES, Mode
from tests.encoder.test_model import (
    TOL,
    VOCAB,
    E,
    assert_same_state,
    forward_scores,
    reader,
    served_scores,
)

token_lists = st.lists(st.integers(1, VOCAB - 1), min_size=1, max_size=12)


@st.composite
def batches(draw: st.DrawFn) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
    size = draw(st.integers(1, 5))
    docs = [torch.tensor(draw(token_lists)) for _ in range(size)]
    queries = [torch.tensor(draw(token_lists)) for _ in range(size)]
    rows = [draw(st.lists(st.booleans(), min_size=E, max_size=E)) for _ in range(size)]
    mask = torch.tensor(rows, dtype=torch.bool).reshape(size, E)  # (B, E)
    mask[:, draw(st.integers(0, E - 1))] = True  # every row needs a candidate
    return docs, queries, mask


@settings(max_examples=12, deadline=None)
@given(mode=st.sampled_from(MODES), batch=batches(), data=st.data())
def test_states_do_not_depend_on_batch_company_or_order(
    mode: Mode,
    batch: tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor],
    data: st.DataObject,
) -> None:
    model = reader(mode)
    docs, _, _ = batch
    perm = data.draw(st.permutations(range(len(docs))))
    together = model.encode_documents(docs)
    shuffled = model.encode_documents([docs[i] for i in perm])
    for doc, state in zip(docs, together, strict=True):
        (alone,) = model.encode_documents([doc])
        assert_same_state(alone, state)
    for j, i in enumerate(perm):
        assert_same_state(together[i], shuffled[j])


@settings(max_examples=12, deadline=None)
@given(mode=st.sampled_from(MODES), batch=batches())
def test_serving_path_scores_like_forward(
    mode: Mode, batch: tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor]
) -> None:
    model = reader(mode)
    docs, queries, mask = batch
    expected = forward_scores(model, docs, queries, mask)  # (B, E)
    served = served_scores(model, model.encode_documents(docs), model.encode_queries(queries), mask)
    torch.testing.assert_close(served.double(), expected, atol=TOL, rtol=TOL)
    assert mask.gather(1, served.argmax(dim=1, keepdim=True)).all()
