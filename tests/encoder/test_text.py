"""Tokenizer, sentence splitting and the special tokens on small hand-written text."""

from __future__ import annotations

import pytest

from encoder.text import (
    PLACEHOLDER,
    cut_around_placeholder,
    entity_index,
    entity_marker,
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


def test_cut_around_placeholder() -> None:
    tokens = tokenize("a b c d @placeholder e f g")
    assert cut_around_placeholder(tokens, 2, 1) == ["c", "d", PLACEHOLDER, "e"]
    assert cut_around_placeholder(tokens, 10, 10) == tokens
    with pytest.raises(ValueError):
        cut_around_placeholder(["a"], 1, 1)
