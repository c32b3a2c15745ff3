"""Tokenizer, sentence splitting and the special tokens on small hand-written text."""

from __future__ import annotations

import random

import pytest

from encoder.text.tokens import (
    PLACEHOLDER,
    TOKEN_RE,
    cut_around_placeholder,
    entity_index,
    entity_marker,
    lower_all,
    raw_tokens,
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


def test_raw_tokens_are_the_regex_matches_on_any_text() -> None:
    """The whitespace-chunk shortcut gives exactly TOKEN_RE.findall: odd whitespace (NBSP,
    em space, \\x1c), combining marks, "_", dotted capital I, NUL, markers glued to words."""
    alphabet = "ab_Z9 \t\n'@.,-é\u00a0\u2003\x1c\u0301İ²½\0"
    rng = random.Random(7)
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        text += rng.choice(["", "@entity12", " @placeholder", "@entityx", "Emma's"])
        tokens = raw_tokens(text)
        assert tokens == TOKEN_RE.findall(text), repr(text)
        assert lower_all(tokens) == [t.lower() for t in tokens], repr(text)
