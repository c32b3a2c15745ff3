"""Tokenizer, sentence splitting and entity anonymisation on small hand-written text."""

from __future__ import annotations

import pytest

from encoder.text import (
    PLACEHOLDER,
    anonymise_document,
    anonymise_query,
    cut_around_placeholder,
    entity_index,
    entity_marker,
    find_candidates,
    split_sentences,
    tokenize,
)

TEXT = (
    "Emma Woodhouse, tired but cheerful, stayed at Hartfield. "
    "Twelve winters had Miss Taylor spent in Mr. Woodhouse's house. "
    '"Dear Emma," said Mr. Knightley, "you are late." '
    "Then Emma walked to Highbury with Harriet. She took a bath."
)


def test_tokenize_lowercases_and_keeps_markers_whole() -> None:
    assert tokenize("Mr. Knightley's @entity12 met @placeholder, twice!") == [
        "mr",
        ".",
        "knightley",
        "'s",
        "@entity12",
        "met",
        "@placeholder",
        ",",
        "twice",
        "!",
    ]
    assert tokenize("") == []


def test_entity_marker_round_trip() -> None:
    assert entity_marker(7) == "@entity7"
    assert entity_index("@entity7") == 7
    assert entity_index("entity7") is None
    assert entity_index(PLACEHOLDER) is None
    with pytest.raises(ValueError):
        entity_marker(-1)


def test_split_sentences_keeps_titles_and_quotes() -> None:
    sentences = split_sentences(TEXT)
    assert sentences[1] == "Twelve winters had Miss Taylor spent in Mr. Woodhouse's house."
    assert sentences[2] == '"Dear Emma," said Mr. Knightley, "you are late."'
    assert len(sentences) == 5


def test_find_candidates_heuristic() -> None:
    found = find_candidates(TEXT)
    assert found == ["Emma", "Woodhouse", "Hartfield", "Taylor", "Knightley", "Highbury", "Harriet"]
    # Titles and sentence-initial function words are not names.
    assert "Mr" not in found and "Twelve" not in found and "She" not in found


def test_anonymise_document_with_heuristic() -> None:
    doc = anonymise_document(TEXT, max_entities=10)
    assert doc.entities[0] == "Emma"  # first appearance, even sentence-initial
    assert doc.tokens[:3] == ["@entity0", "@entity1", ","]
    assert doc.entities[1] == "Woodhouse"
    # "Woodhouse's" keeps the clitic; "mr ." stays as words.
    i = doc.tokens.index("'s")
    assert doc.tokens[i - 3 : i] == ["mr", ".", "@entity1"]
    assert all(t == t.lower() for t in doc.tokens)
    markers = {t for t in doc.tokens if entity_index(t) is not None}
    assert markers == {entity_marker(i) for i in range(len(doc.entities))}


def test_anonymise_document_with_given_candidates() -> None:
    doc = anonymise_document(TEXT, ["Emma Woodhouse", "Mr. Knightley", "Bath"], max_entities=10)
    assert doc.entities == ["Emma Woodhouse", "Mr. Knightley"]  # "Bath" never occurs capitalised
    assert doc.tokens[0] == "@entity0"
    assert "@entity1" in doc.tokens and "knightley" not in doc.tokens
    assert "bath" in doc.tokens  # a lower-case "bath" is not the name "Bath"
    assert doc.tokens.count("emma") == 2  # plain "Emma" is not a candidate here


def test_anonymise_document_known_map_keeps_slots() -> None:
    first = anonymise_document(
        "Emma met Harriet at Hartfield.", ["Emma", "Harriet"], max_entities=4
    )
    assert first.entities == ["Emma", "Harriet"]
    more = anonymise_document(
        "Harriet and Knightley and Elton and Emma.",
        ["Knightley", "Elton", "Emma"],
        max_entities=3,
        known=first.entities,
    )
    assert more.entities == ["Emma", "Harriet", "Knightley"]  # full: Elton stays a word
    assert more.tokens == ["@entity1", "and", "@entity2", "and", "elton", "and", "@entity0", "."]


def test_anonymise_document_caps_entities() -> None:
    doc = anonymise_document("A met B. B met C.", ["A", "B", "C"], max_entities=2)
    assert doc.entities == ["A", "B"]
    assert doc.tokens[-2] == "c"
    with pytest.raises(ValueError):
        anonymise_document("x", [], max_entities=1, known=["A", "B"])


def test_anonymise_query() -> None:
    entities = ["Emma", "Mr. Knightley"]
    assert anonymise_query("@placeholder said Mr. Knightley to Emma.", entities) == [
        PLACEHOLDER,
        "said",
        "@entity1",
        "to",
        "@entity0",
        ".",
    ]
    with pytest.raises(ValueError, match="exactly one"):
        anonymise_query("Emma said nothing.", entities)
    with pytest.raises(ValueError, match="exactly one"):
        anonymise_query("@placeholder met @placeholder", entities)


def test_cut_around_placeholder() -> None:
    tokens = tokenize("a b c d @placeholder e f g")
    assert cut_around_placeholder(tokens, 2, 1) == ["c", "d", PLACEHOLDER, "e"]
    assert cut_around_placeholder(tokens, 10, 10) == tokens
    with pytest.raises(ValueError):
        cut_around_placeholder(["a"], 1, 1)
