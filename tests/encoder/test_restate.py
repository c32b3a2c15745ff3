"""Restated questions: a role for a verb, the passive turned active, an appositive left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from encoder.text.entities import find_entities
from encoder.text.tokens import PLACEHOLDER
from encoder.training.data.cloze import ClozeOptions, build_questions
from encoder.training.data.restate import Roles, read_roles, restatements
from encoder.training.data.sources import Text

P = PLACEHOLDER
ROLES = Roles(
    verbs={"founder": "found", "adviser": "advise", "owner": "own"},
    people=frozenset({"founder", "adviser", "owner", "chairman", "analyst"}),
)

# A fake WordNet: "letter" names one who lets only in its third sense; "north" is no person.
FAKE = {
    "data.verb": [
        "01000001 31 v 01 found 0 001 + 07000001 n 0101 | set up",
        "01000002 40 v 01 let 0 001 + 07000003 n 0101 | lease",
        "01000003 32 v 01 advise 0 000 | give advice",
    ],
    "data.noun": [
        "07000001 18 n 01 founder 0 001 + 01000001 v 0101 | one who founds",
        "07000002 10 n 01 letter 0 000 | a document",
        "07000003 18 n 01 letter 0 001 + 01000002 v 0101 | one who lets",
        "07000004 10 n 01 letter 0 000 | a symbol",
        "07000005 18 n 01 chairman 0 000 | presides",
        "07000006 15 n 01 north 0 000 | a direction",
        "07000007 18 n 02 adviser 0 advisor 0 002 + 01000003 v 0101 + 01000003 v 0201 | advises",
    ],
    "index.noun": [
        "founder n 1 1 + 1 1 07000001",
        "letter n 3 1 + 3 1 07000002 07000004 07000003",
        "chairman n 1 0 1 1 07000005",
        "north n 1 0 1 1 07000006",
        "adviser n 1 1 + 1 1 07000007",
        "advisor n 1 1 + 1 1 07000007",
    ],
}


@pytest.fixture
def wordnet(tmp_path: Path) -> Path:
    for name, lines in FAKE.items():
        (tmp_path / name).write_text("  license line\n" + "".join(line + "  \n" for line in lines))
    return tmp_path


def test_roles_are_wordnets_agent_nouns_and_people(wordnet: Path) -> None:
    roles = read_roles(wordnet)
    assert dict(roles.verbs) == {"founder": "found", "adviser": "advise", "advisor": "advise"}
    assert {"founder", "chairman", "adviser"} <= roles.people
    assert "north" not in roles.people and "letter" not in roles.people


def asked(sentence: str, name: str) -> list[str]:
    tokens = sentence.split()
    return [" ".join(q) for q in restatements(tokens, tokens.index(name), ROLES)]


def test_a_role_is_asked_with_its_verb_or_as_the_role() -> None:
    assert asked("@entity1 's founder , @entity2 , resigned in may .", "@entity2") == [
        f"{P} resigned in may",
        f"{P} founded @entity1",
    ]
    assert f"{P} founded @entity1" in asked("@entity2 , the founder of @entity1 , left", "@entity2")
    assert asked("the chairman of @entity3 , @entity4 , said no", "@entity4")[1:] == [
        f"{P} is @entity3 's chairman",
        f"{P} is the chairman of @entity3",
    ]
    # Not a person: no role question.
    assert asked("@entity3 's north , @entity5 , is cold", "@entity5") == [f"{P} is cold"]


def test_the_passive_turned_active_and_the_active_turned_passive() -> None:
    sentence = "@entity0 , backed by the danish pension fund @entity8 , said it would not bid"
    assert asked(sentence, "@entity8") == [f"the danish pension fund {P} backed @entity0"]
    assert asked("@entity1 was founded in 1990 by @entity2 .", "@entity2") == [
        f"{P} founded @entity1 in 1990"
    ]
    assert asked("@entity1 was written by @entity2", "@entity2") == [f"{P} wrote @entity1"]
    assert asked("@entity5 advised @entity2 on the deal", "@entity5") == [
        f"@entity2 was advised by {P} on the deal",
        f"{P} is the adviser of @entity2",
    ]


def test_an_appositive_or_relative_clause_is_left_out_but_not_a_list() -> None:
    sentence = "@entity4 , an analyst at @entity7 , said she expected a ruling"
    assert asked(sentence, "@entity4") == [f"{P} said she expected a ruling"]
    sentence = "@entity4 , who owns 34 percent , has agreed to sell"
    assert asked(sentence, "@entity4") == [f"{P} has agreed to sell"]
    assert asked("@entity1 , @entity2 , @entity3 and @entity4 met", "@entity1") == []
    assert asked("@entity1 , in the end , the", "@entity1") == []  # no verb after it


def test_restated_form_asks_only_where_a_restatement_exists() -> None:
    text = Text(
        "story",
        [
            "Nordvik's founder, Jan Haugen, rejected the offer. Halden was advised by Fjord "
            "Bank. Jan Haugen and Fjord Bank met in Oslo on a long grey day. "
            "Halden and Nordvik talked for hours in Oslo about the sale."
        ]
        * 4,
    )
    entities = find_entities(" ".join(text.paragraphs), min_count=1)
    options = ClozeOptions(window_tokens=60, question="restated", query_tokens_after=16)
    with pytest.raises(ValueError, match="restate"):
        build_questions(text, entities, options, seed=1)
    questions = build_questions(
        text, entities, options, seed=1, restate=lambda t, p: restatements(t, p, ROLES)
    )
    queries = {q.query for q in questions}
    # Only restated questions: the role, the passive and the appositive restated.
    assert f"{P} rejected the offer" in queries
    assert any(" founded " in q for q in queries) and any(" advised " in q for q in queries)
    assert all(q.startswith(P) for q in queries), queries
    again = build_questions(
        text, entities, options, seed=1, restate=lambda t, p: restatements(t, p, ROLES)
    )
    assert again == questions
