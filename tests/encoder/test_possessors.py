"""Whom a question names by a role ("the cyclist's lawyer"), and the roles a text gives."""

from __future__ import annotations

import pytest

from encoder.text.possessors import (
    mention_roles,
    possessor_slots,
    question_object_role,
    question_possessor,
)
from encoder.text.support import entity_evidence, mention_windows
from encoder.text.tokens import tokenize


def _roles(text: str, name: str) -> list[str]:
    """The roles the first mention of `name` (one word) is given in `text`."""
    tokens = tokenize(text.lower())
    return mention_roles(tokens, tokens.index(name.lower()))


@pytest.mark.parametrize(
    ("text", "name", "roles"),
    [
        ("Colombian cyclist Ortega has tested positive.", "Ortega", ["cyclist"]),
        ("The club dismissed head coach Vaitkus on Monday.", "Vaitkus", ["coach", "head"]),
        ("His assistant coach Courtenay stays.", "Courtenay", ["coach", "assistant"]),
        ("Peru's housing minister, Valdivia, resigned.", "Valdivia", ["minister"]),
        ("Lysø, a professor of emergency medicine, said so.", "Lysø", ["professor"]),
        ("Theodorou, a lawyer for the company, said so.", "Theodorou", ["lawyer"]),
        # the trust's director, the tycoon's partner: not the trust, not the tycoon
        ("Hansen, the trust's procurement director, said so.", "Hansen", ["director"]),
        ("Villareal, the tycoon's partner, spoke.", "Villareal", ["partner"]),
        ("The deal was agreed by Ortega on Monday.", "Ortega", []),
        ("Ortega, Vaitkus and Lysø met.", "Vaitkus", []),  # a list, no appositive
    ],
)
def test_mention_roles(text: str, name: str, roles: list[str]) -> None:
    assert _roles(text, name) == roles


@pytest.mark.parametrize(
    ("question", "role"),
    [
        ("Who is acting as the cyclist's lawyer?", "cyclist"),
        ("Who is acting as the former minister's lawyer?", "minister"),
        ("Who is the chocolate maker's boss?", "maker"),
        ("Who said the government would pay half of the coach's salary?", "coach"),
        ("Who is Ortega's lawyer?", None),  # named: left out by name
        ("Who is a cyclist's best friend?", None),  # no one in particular
        ("Who is the lawyer of the cyclist?", None),
        ("Who compared the two poets' texts?", None),
        ("Who won the race?", None),
    ],
)
def test_question_possessor(question: str, role: str | None) -> None:
    found = question_possessor(question)
    assert (found and found.role) == role


def test_only_the_one_entity_with_the_role_is_left_out() -> None:
    text = (
        "Colombian cyclist Ortega tested positive. His lawyer, Oquendo, said he would appeal. "
        "Rival carrier Aerovia and budget carrier Voa Sul cut fares. The team's assistant "
        "coach Courtenay stays."
    )
    tokens = tokenize(text.lower())
    names = ["Ortega", "Oquendo", "Aerovia", "Voa Sul", "Courtenay"]
    for slot, name in enumerate(names):
        at = tokens.index(name.split()[0].lower())
        tokens[at : at + len(name.split())] = [f"@entity{slot}"]
    windows = mention_windows(tokens, len(names), names)
    roles = [entity_evidence(w, n).roles for w, n in zip(windows, names, strict=True)]
    assert roles[0] == {"cyclist"} and roles[1] == {"lawyer"}
    assert roles[4] == {"coach", "assistant"}

    def left_out(question: str) -> set[int]:
        return set(possessor_slots(question_possessor(question), roles))

    assert left_out("Who is acting as the cyclist's lawyer?") == {0}
    assert left_out("Who pays the lawyer's fees?") == {1}
    assert left_out("Who cut the carrier's fares?") == set()  # two: which is not known
    assert left_out("Who is the new coach's assistant?") == set()  # the assistant coach
    assert left_out("Who is the coach's agent?") == {4}
    assert left_out("Who is the player's agent?") == set()  # no one is the player
    assert possessor_slots(None, roles) == set()


@pytest.mark.parametrize(
    ("question", "role"),
    [
        ("Who represents the former procurement chief?", "chief"),
        ("Who is defending the accused judge?", "judge"),  # does something: not a copula
        ("Who won damages from the editor?", "editor"),
        ("Who is the lawyer for the editor?", None),  # says what its answer is
        ("Who was named the new coach?", None),
        ("Who has been appointed the new coach?", None),
        ("Who heads the Turkish Volleyball Federation?", None),  # "federation president X"
        ("Who represents the cyclist's family?", None),  # a possessor: question_possessor's
        ("Whom did the minister brief?", "minister"),  # its subject
        ("Whom has the former technology chief hired?", "chief"),
        ("Whom did Ortega thank?", None),  # named: left out by name
        ("Who won the race?", None),
    ],
)
def test_question_object_role(question: str, role: str | None) -> None:
    found = question_object_role(question)
    assert (found and found.role) == role
