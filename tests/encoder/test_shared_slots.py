"""The slot modes beyond their E slots (encoder.model.shared_slots): entity i takes slot i mod E,
its probability split evenly among the candidates sharing it; the mention prior, counted by
entity, tells sharers apart; the lean serving path, the general path and the training
forward pass agree."""

from __future__ import annotations

import pytest
import torch

from encoder.model.modes import READOUT_MODES, Mode
from encoder.model.reader import Reader
from encoder.model.serving import ServingReader
from encoder.model.shared_slots import entity_counts, spread_over_entities
from encoder.training.batches import Batch, permute_shared
from tests.encoder.test_serving_path import VOCAB, E, new_reader

S = 3 * E + 2  # entities a document names: three or four to a slot


def test_a_slot_s_probability_is_split_evenly_among_its_candidates() -> None:
    torch.manual_seed(0)
    slot_logits = torch.randn(2, E)
    mask = torch.ones(2, S, dtype=torch.bool)
    mask[1, E] = False  # entity E shares slot 0 with entity 0 (and 2E, 3E): not a candidate
    scores = spread_over_entities(slot_logits, mask).masked_fill(~mask, -1e30)
    p_entity, p_slot = torch.softmax(scores, dim=1), torch.softmax(slot_logits, dim=1)
    slot_of = torch.arange(S) % E
    by_slot = torch.zeros(2, E).index_add_(1, slot_of, p_entity)
    torch.testing.assert_close(by_slot, p_slot)  # every slot keeps its probability
    sharers = [e for e in range(S) if e % E == 0]
    assert len(sharers) == 4
    torch.testing.assert_close(p_entity[0, sharers], p_slot[0, 0].expand(4) / 4)
    torch.testing.assert_close(p_entity[1, [0, 2 * E, 3 * E]], p_slot[1, 0].expand(3) / 3)


def test_entity_counts_count_by_entity_not_by_slot() -> None:
    doc_entities = torch.tensor([[0, -1, E, E, 2, -1], [1, 1, 1, -1, -1, -1]])
    counts = entity_counts(doc_entities, S, torch.float32)
    assert counts[0, [0, E, 2]].tolist() == [1.0, 2.0, 1.0] and counts[0].sum() == 4
    assert counts[1, 1] == 3 and counts[1].sum() == 3


@pytest.mark.parametrize("mode", READOUT_MODES)
@pytest.mark.parametrize("output", ["slots", "markers"])
def test_serving_general_and_forward_agree_beyond_the_slots(mode: Mode, output: str) -> None:
    reader: Reader = new_reader(mode, "n", output, prior=True)
    g = torch.Generator().manual_seed(5)
    entities = torch.randint(-1, S, (40,), generator=g).masked_fill(torch.rand(40) < 0.5, -1)
    entities[:S] = torch.arange(S)  # every entity named at least once
    entities[S : S + 3] = E  # and entity E, which shares entity 0's slot, three times more
    words = torch.randint(3 + E, VOCAB, (40,), generator=g)
    ids = torch.where(entities >= 0, 3 + entities % E, words)  # marker i reads as i mod E
    question = torch.randint(3 + E, VOCAB, (6,), generator=g)
    question[2] = 2  # @placeholder
    mask = torch.ones(1, S, dtype=torch.bool)
    mask[0, [1, E + 3]] = False  # named in the question, say
    counts = entity_counts(entities.unsqueeze(0), S, torch.float32)[0]  # (S,)

    reader.eval()
    with torch.no_grad():
        forward = reader(
            ids.unsqueeze(0),
            torch.tensor([40]),
            question.unsqueeze(0),
            torch.tensor([6]),
            mask,
            entities.unsqueeze(0),
        )  # (1, S)
    [state] = reader.encode_documents([ids])
    Q = reader.encode_queries([question])
    general = reader.score(reader.lookup(state, Q), Q, mask, counts)
    serving = ServingReader(reader)
    lean = serving.score(serving.lookup(state, Q), Q, mask, counts)
    assert forward.shape == general.shape == lean.shape == (1, S)
    torch.testing.assert_close(general, forward, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(lean, forward, atol=1e-4, rtol=1e-4)
    # Sharers differ by their own counts only (the prior), never by their slot's score.
    assert not torch.equal(forward[0, 0], forward[0, E])


def test_shared_renumbering_numbers_a_document_s_entities_among_its_own() -> None:
    offset = 3
    # One document naming entities 5, 40 and 200 (more than E = 7 apart), asked twice.
    doc_entities = torch.tensor([[5, -1, 40, 200, 5], [5, -1, 40, 200, 5]])
    doc_ids = torch.where(doc_entities >= 0, offset + doc_entities % E, 50)
    query_entities = torch.tensor([[-1, 40], [-1, -1]])
    query_ids = torch.where(query_entities >= 0, offset + query_entities % E, 2)
    mask = torch.zeros(2, S * 10, dtype=torch.bool)
    mask[:, [5, 200]] = True
    batch = Batch(
        doc_ids,
        torch.tensor([5, 5]),
        query_ids,
        torch.tensor([2, 2]),
        mask,
        torch.tensor([5, 200]),
        doc_entities,
        query_entities,
    )
    out = permute_shared(batch, offset, E, torch.Generator().manual_seed(1))
    assert out.doc_entities is not None and out.query_entities is not None
    new = out.doc_entities[0]
    assert sorted(set(new[new >= 0].tolist())) == [0, 1, 2]  # numbered among its own three
    assert torch.equal(out.doc_entities[0], out.doc_entities[1])  # one order per document
    assert torch.equal(out.doc_ids, torch.where(out.doc_entities >= 0, offset + new % E, 50))
    assert out.query_entities[0, 1] == new[2]  # the question's 40 is the document's 40
    assert out.answers.tolist() == [int(new[0]), int(new[3])]
    assert out.candidate_mask[0, out.answers].all() and int(out.candidate_mask.sum()) == 4
