from __future__ import annotations

from pathlib import Path

import pytest

from bench.corpus import (
    CorpusError,
    cloze_questions,
    load_dataset_corpus,
    load_text_corpus,
)
from encoder.text.tokens import PLACEHOLDER, tokenize


def test_text_corpus_documents_have_the_length_and_questions(story_file: Path) -> None:
    corpus = load_text_corpus(story_file)
    assert len(corpus.passages) == 4
    docs = corpus.documents(3, 60, prefix="t")
    assert [d.id for d in docs] == ["t-0", "t-1", "t-2"]
    for doc in docs:
        n = len(tokenize(doc.text))
        assert n == doc.tokens
        assert 60 <= n <= 62  # cut at a word: one word may hold more than one token
        assert doc.candidates is None  # the service detects the names
        assert doc.questions
        assert all(q.count(PLACEHOLDER) == 1 for q in doc.questions)
    # Each document starts at another passage.
    assert len({d.text[:40] for d in docs}) == 3


def test_long_documents_wrap_around_the_corpus(story_file: Path) -> None:
    corpus = load_text_corpus(story_file)
    doc = corpus.documents(1, 3 * corpus.tokens, prefix="long")[0]
    assert doc.tokens == len(tokenize(doc.text))
    assert 3 * corpus.tokens <= doc.tokens <= 3 * corpus.tokens + 2


def test_cloze_questions_blank_one_name() -> None:
    questions = cloze_questions(
        "Oswin fixed the wheel. Nobody helped. Philippa saw Oswin.", ["Oswin", "Philippa"]
    )
    assert questions == ["@placeholder fixed the wheel.", "@placeholder saw Oswin."]


def test_dataset_corpus_keeps_markers_as_candidates(questions_file: Path) -> None:
    corpus = load_dataset_corpus(questions_file)
    assert len(corpus.passages) == 2  # two windows, the first asked twice
    assert len(corpus.passages[0].questions) == 2
    whole = corpus.documents(1, 27, prefix="d")[0]  # both windows: 14 + 13 tokens
    assert whole.candidates == ["@entity0", "@entity1", "@entity2", "@entity3"]
    assert len(whole.questions) == 3
    cut = corpus.documents(1, 20, prefix="d")[0]  # the second window cut after "turned again"
    assert cut.tokens == 20
    assert cut.candidates == ["@entity0", "@entity1", "@entity2"]


def test_empty_text_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(CorpusError):
        load_text_corpus(empty).documents(1, 10, prefix="e")
    with pytest.raises(CorpusError):
        load_text_corpus(tmp_path / "missing.txt")
