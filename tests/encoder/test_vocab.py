"""Vocabulary building and encoding."""

from __future__ import annotations

import pytest

from encoder.model.vocab import PAD, UNK, Vocabulary
from encoder.text.tokens import PLACEHOLDER, entity_marker


def test_build_reserves_markers_and_orders_by_frequency() -> None:
    texts = [["b", "a", "a", "@entity9", PLACEHOLDER], ["a", "c", "b", "d"]]
    vocab = Vocabulary.build(texts, max_entities=3, min_count=1)
    assert vocab.tokens[:6] == [PAD, UNK, PLACEHOLDER, "@entity0", "@entity1", "@entity2"]
    assert vocab.tokens[6:] == ["a", "b", "c", "d"]  # by count, ties alphabetical
    assert vocab.max_entities == 3
    assert vocab.entity_id(2) == vocab.encode([entity_marker(2)])[0]
    assert vocab.pad_id == 0 and vocab.unk_id == 1


def test_encode_decode_round_trip_and_unknowns() -> None:
    vocab = Vocabulary.build([["x", "x", "y", "y", "z"]], max_entities=2, min_count=2)
    ids = vocab.encode(["x", "@entity1", "z", "@entity5", PLACEHOLDER])
    assert ids == [vocab.id_of("x"), 4, vocab.unk_id, vocab.unk_id, 2]
    assert vocab.decode(vocab.encode(["y", "x"])) == ["y", "x"]
    assert len(vocab) == 3 + 2 + 2


def test_size_cap_and_rebuild_from_tokens() -> None:
    vocab = Vocabulary.build([list("aabbbcccc")], max_entities=2, max_size=6, min_count=1)
    assert vocab.tokens[5:] == ["c"]
    assert Vocabulary(vocab.tokens) == vocab
    with pytest.raises(ValueError):
        Vocabulary(["a", "b"])
    with pytest.raises(ValueError):
        Vocabulary.build([], max_entities=5, max_size=4)
    with pytest.raises(ValueError):
        vocab.entity_id(2)


def test_marked_ids_give_every_entity_an_input_id_and_keep_its_index() -> None:
    vocab = Vocabulary.build([["the", "@entity0", "@hello"]], max_entities=3, min_count=1)
    tokens = ["the", "@entity1", "@entity4", "@entity9", "@hello", "@entity2"]
    ids, entities = vocab.encode_marked(tokens)
    # Marker i reads as marker i mod E (the plain encoding: an unknown word beyond E).
    assert ids == [vocab.id_of("the"), 4, 4, 3, vocab.id_of("@hello"), 5]
    assert vocab.encode(tokens)[2:4] == [vocab.unk_id, vocab.unk_id]
    assert entities == [-1, 1, 4, 9, -1, 2]
