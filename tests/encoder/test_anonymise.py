"""Entity anonymisation: names to markers in documents and questions, slots, aliases."""

from __future__ import annotations

import pytest

from encoder.text.anonymise import (
    anonymise_document,
    anonymise_query,
    prepare_question,
    query_matcher,
)
from encoder.text.tokens import PLACEHOLDER, entity_index, entity_marker

TEXT = (
    "Emma Woodhouse, tired but cheerful, stayed at Hartfield. "
    "Twelve winters had Miss Taylor spent in Mr. Woodhouse's house. "
    '"Dear Emma," said Mr. Knightley, "you are late." '
    "Then Emma walked to Highbury with Harriet. She took a bath."
)


def test_anonymise_document_with_the_finder() -> None:
    doc = anonymise_document(TEXT, max_entities=10)
    assert doc.entities[0] == "Emma Woodhouse"  # a whole name is one entity
    assert doc.tokens[:2] == ["@entity0", ","]
    # The surname alone is the same entity; the title stays a word; the clitic splits off.
    i = doc.tokens.index("'s")
    assert doc.tokens[i - 3 : i] == ["mr", ".", "@entity0"]
    assert doc.mentions[0] == 2
    assert "Twelve" not in doc.entities and "She" not in doc.entities
    assert all(t == t.lower() for t in doc.tokens)
    markers = {t for t in doc.tokens if entity_index(t) is not None}
    assert markers == {entity_marker(i) for i in range(len(doc.entities))}
    assert sum(doc.mentions) == sum(1 for t in doc.tokens if t in markers)


def test_anonymise_document_with_given_candidates() -> None:
    doc = anonymise_document(TEXT, ["Emma Woodhouse", "Mr. Knightley", "Bath"], max_entities=10)
    assert doc.entities == ["Emma Woodhouse", "Mr. Knightley"]  # "Bath" never occurs capitalised
    assert doc.tokens[0] == "@entity0"
    assert "@entity1" in doc.tokens and "knightley" not in doc.tokens
    assert "bath" in doc.tokens  # a lower-case "bath" is not the name "Bath"
    assert doc.tokens.count("emma") == 2  # plain "Emma" is not a candidate here
    assert doc.mentions == [2, 1]  # "Woodhouse" alone is Emma Woodhouse


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
    assert more.unplaced == ["Elton"]  # said, never silently dropped


def test_appended_surname_joins_the_known_entity() -> None:
    first = anonymise_document("Pervez Musharraf met the press in Islamabad.", max_entities=8)
    more = anonymise_document("Musharraf said little.", max_entities=8, known=first.entities)
    assert more.entities == first.entities
    assert more.tokens[0] == entity_marker(first.entities.index("Pervez Musharraf"))


def test_anonymise_document_caps_entities() -> None:
    doc = anonymise_document("A met B. B met C.", ["A", "B", "C"], max_entities=2)
    assert doc.entities == ["A", "B"]
    assert doc.tokens[-2] == "c"
    assert doc.unplaced == ["C"]
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


def test_a_prepared_question_knows_the_entities_it_names_beyond_its_window() -> None:
    entities = ["Emma", "Mr. Knightley", "Harriet"]
    question = "At Hartfield Harriet said that @placeholder walked with Mr. Knightley today ."
    prepared = prepare_question(question, entities, (2, 1))
    assert prepared.tokens == ["said", "that", PLACEHOLDER, "walked"]
    # Harriet and Mr. Knightley are outside the window, and still not the answer.
    assert prepared.named == {1, 2}


def test_query_names_entities_in_lower_case_and_by_surname() -> None:
    entities = ["Pervez Musharraf", "Theresa May", "United Nations"]
    assert anonymise_query("@placeholder met musharraf", entities)[-1] == "@entity0"
    assert anonymise_query("@placeholder met pervez musharraf", entities)[-1] == "@entity0"
    assert anonymise_query("@placeholder met the united nations", entities)[-1] == "@entity2"
    assert anonymise_query("@placeholder met May", entities)[-1] == "@entity1"
    # A common word stays a word unless capitalised: "may" is a verb here.
    assert anonymise_query("@placeholder may go", entities)[1] == "may"


def test_a_which_questions_noun_is_no_short_form_of_a_name() -> None:
    """ "Which court ...?" asks for the Bombay High Court; it does not name it (which would
    leave it out of the answers). Capitalised, "the Court" still does."""
    entities = ["Pune", "Bombay High Court"]
    asked = anonymise_query("the court @placeholder ordered the evictions to stop", entities)
    assert asked[1] == "court" and prepare_question(" ".join(asked), entities, None).named == set()
    assert anonymise_query("the Court heard @placeholder", entities)[1] == "@entity1"


def test_question_replace_equals_marking_token_by_token() -> None:
    # replace() (the question path) is mark() flattened: the same matches, longest first, a
    # match hiding what it spans, capitals required where the surface is a common word.
    names = ("Frank Churchill", "Frank", "May", "Bath", "Jane Fairfax", "Emma")
    matcher = query_matcher(names)
    texts = [
        "Frank Churchill met Frank and frank churchill in Bath , said @placeholder .",
        "In may , Jane Fairfax 's aunt took a bath ; Emma said May would @placeholder .",
        "nothing here matches @placeholder",
        "Fairfax and Churchill : @placeholder , emma",
    ]
    for text in texts:
        marked = [low if owner is None else f"@entity{owner}" for low, owner in matcher.mark(text)]
        assert matcher.replace(text, lambda i: f"@entity{i}") == marked
    assert query_matcher(names) is matcher  # built once per entity map
    tokens = anonymise_query(texts[0], list(names))
    assert tokens[:3] == ["@entity0", "met", "@entity1"] and "@entity3" in tokens
