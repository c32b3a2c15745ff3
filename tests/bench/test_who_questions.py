"""Who-questions made from cloze questions go back to the same cloze through the service."""

from __future__ import annotations

import pytest

from bench.who_questions import _as_markers, _as_names, who_question
from encoder.text.questions import to_cloze


@pytest.mark.parametrize(
    ("cloze", "who", "back"),
    [
        (
            "@placeholder said that @entity1 was right .",
            "Who said that @entity1 was right?",
            "@placeholder said that @entity1 was right",
        ),
        (
            "@entity1 thanked @placeholder for the letter .",
            "Whom did @entity1 thank for the letter?",
            "@entity1 thanked @placeholder for the letter",
        ),
        ("@entity12 loved @placeholder dearly", "Whom did @entity12 love dearly?", None),
    ],
)
def test_round_trip(cloze: str, who: str, back: str | None) -> None:
    assert who_question(cloze) == who
    expected = back if back is not None else "@entity12 loved @placeholder dearly"
    assert _as_markers(to_cloze(_as_names(who))) == expected


def test_other_forms_are_left_out() -> None:
    assert who_question("@entity2 saw @placeholder .") is None  # irregular verb
    assert who_question("the @placeholder of it") is None
