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
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

from encoder.text.kinds import ORG_NOUNS, ROLES
from encoder.text.name_kinds import person_nouns
from encoder.text.tokens import STOP_WORDS, tokenize

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
