from __future__ import annotations

import json
from typing import Any

import pytest

from bench.entity_names import (
    PARAGRAPHS,
    fold_aliases,
    heuristic_finder,
    load_paragraphs,
    normalise,
    score,
)

PARAGRAPHS_FAKE: list[dict[str, Any]] = [
    {"id": "a", "text": "one", "entities": ["Theresa May", "Bank of England", "UN"]},
    {"id": "b", "text": "two", "entities": ["George W. Bush", "Dallas"]},
    {"id": "c", "text": "three", "entities": []},
]
FOUND = {
    # case and spacing do not matter; a duplicate counts once; "Bank" is both a miss and an FP
    "one": ["theresa  MAY", "Theresa May", "Bank", "UN"],
    "two": ["George W. Bush", "Monday"],
    "three": ["Nobody"],
}


def fake_finder(text: str) -> list[str]:
    return FOUND[text]


def test_score_counts_whole_names_exactly() -> None:
    result = score(fake_finder, PARAGRAPHS_FAKE, min_seconds=0)
    assert result["paragraphs"] == 3
    assert result["labelled"] == 5
    assert result["found"] == 6  # the repeated "Theresa May" once
    assert result["correct"] == 3
    assert result["precision"] == pytest.approx(3 / 6)
    assert result["recall"] == pytest.approx(3 / 5)
    assert result["misses"] == [["a", "Bank of England"], ["b", "Dallas"]]
    assert result["false_positives"] == [["a", "Bank"], ["b", "Monday"], ["c", "Nobody"]]
    assert result["docs_per_s"] > 0
    json.dumps(result)  # --json prints it as is


def test_score_of_a_perfect_and_of_a_silent_finder() -> None:
    perfect = score(
        lambda t: {
            "one": ["UN", "Bank of England", "Theresa May"],
            "two": ["Dallas", "George W. Bush"],
            "three": [],
        }[t],
        PARAGRAPHS_FAKE,
        min_seconds=0,
    )
    assert (perfect["precision"], perfect["recall"]) == (1.0, 1.0)
    assert perfect["misses"] == perfect["false_positives"] == []
    silent = score(lambda t: [], PARAGRAPHS_FAKE, min_seconds=0)
    assert (silent["precision"], silent["recall"], silent["found"]) == (0.0, 0.0, 0)
    assert len(silent["misses"]) == 5


def test_score_times_the_finder_for_at_least_min_seconds() -> None:
    calls = 0

    def counting(text: str) -> list[str]:
        nonlocal calls
        calls += 1
        return []

    score(counting, PARAGRAPHS_FAKE, min_seconds=0.05)
    assert calls > 2 * len(PARAGRAPHS_FAKE)  # scoring once, then timing passes


def test_fold_aliases_drops_surnames_and_initials_of_longer_names() -> None:
    names = ["United Nations", "Pervez Musharraf", "UN", "Musharraf", "Islamabad"]
    assert fold_aliases(names) == ["United Nations", "Pervez Musharraf", "Islamabad"]


def test_heuristic_finder_returns_names() -> None:
    names = heuristic_finder("Pervez Musharraf met UN officials. Musharraf said little.")
    assert all(isinstance(n, str) for n in names)


def test_labelled_paragraphs_are_well_formed() -> None:
    paragraphs = load_paragraphs()
    raw_lines = [line for line in PARAGRAPHS.read_text(encoding="utf-8").splitlines() if line]
    assert len(paragraphs) == len(raw_lines) == 40
    ids = [p["id"] for p in paragraphs]
    assert len(set(ids)) == len(ids)
    for p in paragraphs:
        assert set(p) == {"id", "text", "entities"}
        assert isinstance(p["text"], str)
        assert 60 <= len(p["text"].split()) <= 150, p["id"]
        assert p["entities"] and all(isinstance(e, str) for e in p["entities"]), p["id"]
        keys = [normalise(e) for e in p["entities"]]
        assert len(set(keys)) == len(keys), f"{p['id']}: an entity listed twice"
        for entity in p["entities"]:
            assert entity in p["text"], f"{p['id']}: {entity!r} is not in the text"
            assert entity == entity.strip() and "  " not in entity
