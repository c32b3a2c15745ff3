"""What a name is, read from how the text uses it, and what a question asks for."""

from __future__ import annotations

import pytest

from encoder.text.kinds import (
    COUNTRY_MARK,
    ORG_MARK,
    PERSON_MARK,
    PLACE_MARK,
    mention_marks,
    names_organisation,
    names_place,
)
from encoder.text.questions import AGENT, ORGANISATION, PERSON, PLACE, TOWN, asks_for
from encoder.text.support import entity_evidence, kind_weighted, who_person
from encoder.text.tokens import tokenize


def _marks(text: str, name: str) -> list[str]:
    """The marks of the first mention of `name` (one word) in `text`."""
    tokens = tokenize(text)
    return mention_marks(tokens, tokens.index(name.lower()))


@pytest.mark.parametrize(
    ("text", "name", "mark"),
    [
        ("BERGEN, May 6 - Brekke agreed to buy it.", "Bergen", PLACE_MARK),  # a dateline
        ("Floods hit villages in western Kenya on Monday.", "Kenya", PLACE_MARK),
        ("The ship was heading to Ulsan on Monday.", "Ulsan", PLACE_MARK),
        ("A team sent from Portugal arrived.", "Portugal", PLACE_MARK),
        ("The mayor of Marseille was questioned.", "Marseille", PLACE_MARK),
        ("A Luxembourg-based investor backed the deal.", "Luxembourg", PLACE_MARK),
        ("Agency head Wulandari said so.", "Wulandari", PERSON_MARK),
        ("Analyst Keane put the cost at 5 million.", "Keane", PERSON_MARK),
        ("Grandmaster Nguyen, 17, won the title.", "Nguyen", PERSON_MARK),
        ("Nguyen, 17, won the title.", "Nguyen", PERSON_MARK),  # an age
        ("Keane, an analyst at Liffey, said so.", "Keane", PERSON_MARK),
        ("Sousa said he would resign.", "Sousa", PERSON_MARK),
        ("Rival bidder Vestlys raised its offer.", "Vestlys", ORG_MARK),
        ("Hanul's shares fell 8 percent.", "Hanul", ORG_MARK),
        ("Hanul said it would pay.", "Hanul", ORG_MARK),
        # A title says a person's, whatever "its" follows.
        ("Director Ferri said it would review the rules.", "Ferri", PERSON_MARK),
    ],
)
def test_a_mention_is_marked_by_what_its_neighbours_say(text: str, name: str, mark: str) -> None:
    assert _marks(text, name) == [mark]


@pytest.mark.parametrize(
    ("text", "name", "marks"),
    [
        ("Greece's government rejected the bid.", "Greece", [PLACE_MARK, COUNTRY_MARK]),
        (
            "Indonesia's medicines regulator approved the shot.",
            "Indonesia",
            [PLACE_MARK, COUNTRY_MARK],
        ),
        ("Kenya's finance minister spoke.", "Kenya", [PLACE_MARK, COUNTRY_MARK]),
        ("Lima's police closed the road.", "Lima", [PLACE_MARK]),  # a city has police too
    ],
)
def test_what_a_state_has_marks_a_country(text: str, name: str, marks: list[str]) -> None:
    assert _marks(text, name) == marks


@pytest.mark.parametrize(
    "text",
    [
        "Brekke agreed to buy Solvind on Tuesday.",
        "Sousa wrote to Haugen last week.",  # "to" after a verb that goes nowhere
        "A stake in Halden rose.",  # what one owns in a company
        "Investors in Vestlys sold.",
        "Halden's chief executive spoke.",  # a company's officer, not a country's body
        # "its" after another noun is that noun's: "the federation's rules", not Ferri's
        "Ferri said the federation would review its rules.",
    ],
)
def test_plain_mentions_carry_no_mark(text: str) -> None:
    tokens = tokenize(text)
    names = [i for i, t in enumerate(text.split()) if t[:1].isupper() and i > 0]
    for i in names:
        assert mention_marks(tokens, i) == []


def test_a_name_says_what_it_is() -> None:
    assert names_organisation(frozenset(["fjord", "bank"]))
    assert names_organisation(frozenset(["baltic", "election", "watch"]))
    assert not names_organisation(frozenset(["orla", "keane"]))
    assert names_place(["tagus", "river"]) and names_place(["cyclone", "adjali"])
    # A place word inside an organisation's name does not make it a place.
    assert not names_place(["rift", "valley", "brewing", "company"])
    assert not names_place(["civic", "harbour", "alliance"])
    assert not names_place(["harbour", "master", "keane"])  # the place word is not its head
    evidence = entity_evidence(["plain words ^|"], "Fjord Bank")
    assert evidence.organisation == 1.0 and evidence.place == 0.0
    # Bodies and companies by their head word in other languages too.
    for name in (
        "vietnam food administration",
        "southern cross bus lines",
        "grupo calizas",
        "orquídea pro cycling",
        "samorząd studentów uniwersytetu odrzańskiego",
        "assicurazioni tevere",
    ):
        assert names_organisation(frozenset(name.split())), name
    # An acronym is an organisation's, unless its letters read as a place's.
    assert entity_evidence(["plain ^|"], "NULRW").organisation == 1.0
    usa = entity_evidence(["plain ^|"], "USA")
    assert usa.organisation == 0.0 and usa.name_place > 0.5
    assert entity_evidence(["plain words ^|"], "Tagus River").place == 1.0


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Who chairs Hanul?", PERSON),
        ("Who runs the Czech engineering firm?", PERSON),
        ("Who warned that police would force residents out?", PERSON),
        ("Who said the cost was manageable?", PERSON),
        ("Who was jailed for six years?", PERSON),
        ("Who has been appointed to lead the review?", PERSON),
        ("Who is the chief executive of Rimal Energy?", PERSON),
        ("Who served as the tournament's chief arbiter?", PERSON),
        ("Who from the funder visited the clinics?", PERSON),
        ("Whom did Jung replace as festival director?", PERSON),
        ("Who bought Solvind?", AGENT),  # a company or a person
        ("Who won the contract?", AGENT),
        ("Who is paying for the trial?", AGENT),
        ("Whom did Marcus drive home?", AGENT),
        ("Which polling firm forecast the result?", ORGANISATION),
        ("Which company's warehouse workers walked out?", ORGANISATION),  # the owner asked for
    ],
)
def test_what_kind_of_answer_a_who_question_asks_for(question: str, kind: str) -> None:
    assert asks_for(question) == kind


def test_a_person_question_demotes_organisations_and_places() -> None:
    company = entity_evidence(["plain ^|"], "Bohemia Signal Group")
    town = entity_evidence([f"{PLACE_MARK} plain ^|"], "Brno")
    person = entity_evidence([f"{PERSON_MARK} plain ^|"], "Jana Horakova")
    unmarked = entity_evidence(["plain ^|"], "Petr Novak")
    probs = [0.4, 0.3, 0.2, 0.1]
    evidence = [company, town, person, unmarked]
    weighed = kind_weighted(probs, evidence, PERSON)
    assert weighed[2] > weighed[3] > max(weighed[0], weighed[1])
    assert sum(weighed) == pytest.approx(sum(probs))
    # A plain Who-question may be answered by a company: the town falls and a person rises
    # above it, but the company is not demoted.
    agent = kind_weighted(probs, evidence, AGENT)
    assert agent[2] > agent[0] > agent[1] and agent[0] > weighed[0]


def test_a_town_question_demotes_a_country() -> None:
    country = entity_evidence([f"{PLACE_MARK} {COUNTRY_MARK} plain ^|", "plain ^|"], "Colombia")
    town = entity_evidence([f"{PLACE_MARK} plain ^|", "plain ^|"], "San Rafael")
    probs = [0.6, 0.4]
    assert kind_weighted(probs, [country, town], PLACE)[0] > 0.5  # a place either way
    town_first = kind_weighted(probs, [country, town], TOWN)
    assert town_first[1] > town_first[0]


def test_a_who_question_leans_to_the_person_beside_an_organisation() -> None:
    person = entity_evidence(["^p director led study"], "Valeria Ortuzar")
    organisation = entity_evidence(["^o published study"], "Journal of Southern Palaeobiology")
    for kind in (AGENT, PERSON):
        assert who_person(person, kind) > 0 > who_person(organisation, kind)
    # Other questions do not read it.
    assert who_person(person, ORGANISATION) == who_person(organisation, PLACE) == 0.0
