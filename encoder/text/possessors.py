"""Whom a question names by a role: "Who is acting as the cyclist's lawyer?" is not answered
by the cyclist, nor "Who is the chocolate maker's boss?" by the chocolate maker.

A reader finds the possessor's name beside the question's words ("Colombian cyclist Juan
Ortega ... his lawyer, Mariana Oquendo, said") and often answers with it. News says who
plays a role where it names them, in a few fixed ways, and each mention of a name keeps the
role nouns its neighbours give it (`mention_roles`) when the document is indexed:

    before the name     cyclist Juan Ortega; head coach Darius Vaitkus; rival carrier Voa Sul;
                        Peru's housing minister, Rosario Valdivia
    an appositive       Astrid Wold-Hansen, the trust's procurement director, ...;
                        Einar Lysø, a professor of emergency medicine, ...

A question "... the <role>'s <noun> ..." leaves out the one entity the document gives that
role (`possessor_slots`); where several have it ("the bankrupt carrier" of two carriers) it
leaves out none, since which one the question means is not known. On every story set scored
before test36, as served: 77 of the 267 questions naming a possessor leave an entity out, 4
more answered right a mode, none fewer (RESULTS.md); it errs where the possessor is the answer
after all ("Who wears the captain's armband?", a miss of test37).

A Who-question names the one its verb is done to the same way ("Who represents the former
procurement chief?", "Who is defending the accused judge?"), a Whom-question its subject
("Whom did the engineer send her reports to?"), and a reader answers with them too:
`question_object_role` finds that person's role, left out as a possessor is. On the 53 story
sets scored before test49, softmax as served: 14 questions more, 1 fewer (RESULTS.md).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

from encoder.text.kinds import ORG_NOUNS, ROLES
from encoder.text.name_kinds import person_nouns
from encoder.text.questions import AUXILIARIES, MODALS
from encoder.text.tokens import STOP_WORDS, tokenize, word_set

ROLE_MARK = "^r="  # a mention window's word for a role its mention is given ("^r=cyclist")
_ARTICLES = frozenset({"the", "a", "an", "its", "their", "his", "her"})
_APPOSITIVE_REACH = 6  # words of an appositive read for its role
# where an appositive's head has come, beside the stop words ("and", "which", "for", ...)
_ENDS = frozenset({",", ".", ";", ":", "!", "?", "(", ")", "-", "who"})
_MODIFIERS_REACH = 3  # "the former housing minister's lawyer": words between "the" and the role


@functools.cache
def role_nouns() -> frozenset[str]:
    """The nouns that say what a person or an organisation is: titles and roles, the
    organisation nouns, and the plain words the name table says are a person's."""
    return ROLES | ORG_NOUNS | person_nouns().nouns


def _is_role(tokens: Sequence[str], j: int) -> bool:
    """Whether tokens[j] is a role noun heading its phrase (not "the trust" of "the trust's
    procurement director")."""
    return (
        0 <= j < len(tokens)
        and tokens[j] in role_nouns()
        and tokens[j + 1 : j + 2] not in (["'s"], ["'"])
    )


def mention_roles(tokens: Sequence[str], i: int) -> list[str]:
    """The role nouns the words around the mention at `i` give it (lower-cased tokens of an
    anonymised text): the noun just before it ("cyclist @entity0", "minister , @entity3" after
    "'s housing"), and the last role noun of an appositive after it ("@entity1 , the trust 's
    procurement director ,")."""
    found = []
    if _is_role(tokens, i - 1):
        # "assistant coach @entity2": each noun of the title, so that the assistant is not
        # left out of "the new coach's assistant" (`possessor_slots`)
        j = i - 1
        while j >= max(0, i - 1 - _MODIFIERS_REACH) and tokens[j] in role_nouns():
            found.append(tokens[j])
            j -= 1
    elif tokens[i - 1 : i] == [","] and _is_role(tokens, i - 2) and tokens[i - 3 : i - 2] != [","]:
        found.append(tokens[i - 2])
    if tokens[i + 1 : i + 2] == [","] and tokens[i + 2 : i + 3] and tokens[i + 2] in _ARTICLES:
        head = None
        for j in range(i + 3, min(len(tokens), i + 3 + _APPOSITIVE_REACH)):
            # "a lawyer for the company": the head comes before its preposition
            if tokens[j] in _ENDS or tokens[j] in STOP_WORDS or tokens[j].startswith("@"):
                break
            if _is_role(tokens, j):
                head = tokens[j]
        if head is not None:
            found.append(head)
    return found


class Possessor(NamedTuple):
    """A role a question names a possessor by, and the words for what it has."""

    role: str  # "cyclist" of "the cyclist's lawyer"
    owned: frozenset[str]  # the two words after it ("lawyer"; "senior", "counsel")


def question_possessor(question: str) -> Possessor | None:
    """The role a plain question names a possessor by ("the cyclist" of "Who is acting as the
    cyclist's lawyer?", "the maker" of "the chocolate maker's boss"), or None."""
    tokens = tokenize(question.lower())
    for j, token in enumerate(tokens):
        if token != "'s" or j == 0 or tokens[j - 1] not in role_nouns():
            continue
        # "the" opens its phrase, after at most a few modifiers ("the former housing
        # minister's"); "a cyclist's lawyer", "Ortega's lawyer" name no one the text must.
        for t in reversed(tokens[max(0, j - 2 - _MODIFIERS_REACH) : j - 1]):
            if t == "the":
                return Possessor(tokens[j - 1], frozenset(tokens[j + 1 : j + 3]))
            if t in STOP_WORDS or not t.isalpha():
                break
    return None


def possessor_slots(possessor: Possessor | None, roles: Sequence[frozenset[str]]) -> frozenset[int]:
    """The one entity slot (of the document's, in order, each with the roles its mentions
    are given) that plays the possessor's role; none where no entity or several do, or where
    that one is also given what the possessor has ("assistant coach Liam Courtenay" is the
    answer to "Who will be the new coach's assistant?")."""
    if possessor is None:
        return frozenset()
    holders = [slot for slot, given in enumerate(roles) if possessor.role in given]
    if len(holders) != 1 or not possessor.owned.isdisjoint(roles[holders[0]]):
        return frozenset()
    return frozenset(holders)


# A Who-question's verbs that say its answer is, or is made, what the phrase after them names
# ("Who is the club's captain?", "Who became the new coach?", "Who was named its director?").
_BEING = word_set(
    """
    is are was were be been being become became becomes remain remains remained
    named appointed elected chosen picked made called
    """
)
# What stands between "Who" and a verb that may say what the answer is ("Who has been named
# ...?", "Who will be ...?"); any auxiliary stands between "Whom" and its subject.
_PERFECT_OR_MODAL = MODALS | word_set("has have had")


def question_object_role(question: str) -> Possessor | None:
    """The person's role a Who-question names the one its verb is done to by ("the former
    procurement chief" of "Who represents the former procurement chief?", "the editor" of
    "Who won damages from the editor?"), or a Whom-question its subject by ("the engineer" of
    "Whom did the engineer send her reports to?"): someone other than the answer. None for a
    question that says what its answer is ("Who is the lawyer for the editor?", "Who was
    named the new coach?"), names no person's role in that phrase, or names an
    organisation's ("Who heads the federation?": "federation president Ayşe Karaca" is given
    that noun too)."""
    tokens = tokenize(question.lower())
    if len(tokens) < 3 or tokens[0] not in ("who", "whom"):
        return None
    if tokens[0] == "whom":  # "Whom did the minister brief?": its subject is someone else
        return _role_phrase(tokens, 2) if tokens[1] in AUXILIARIES else None
    verb = 2 if tokens[1] in _PERFECT_OR_MODAL else 1  # "Who has been named ...?": "been"
    after = tokens[verb + 1] if verb + 1 < len(tokens) else ""
    # "Who is defending the judge?", "Who has been representing him?": a doing, not a being
    if tokens[verb] in _BEING and not after.endswith("ing"):
        return None
    if "the" not in tokens[verb + 1 :]:
        return None
    return _role_phrase(tokens, tokens.index("the", verb + 1))  # the verb's first phrase


def _role_phrase(tokens: Sequence[str], j: int) -> Possessor | None:
    """The person's role heading the phrase that opens with "the" at tokens[j], or None."""
    if tokens[j : j + 1] != ["the"]:
        return None
    for k in range(j + 1, min(len(tokens), j + 2 + _MODIFIERS_REACH)):
        # the phrase's head: a role noun no title follows ("the union leader": leader; not
        # "draw" of "the winner draw", a plain word the name table says is a person's too)
        if _is_role(tokens, k) and not (ROLES | ORG_NOUNS).intersection(tokens[k + 1 : k + 2]):
            return None if tokens[k] in ORG_NOUNS else Possessor(tokens[k], frozenset())
        if tokens[k] in STOP_WORDS or not tokens[k].isalpha():
            break
    return None
