"""Whether the document supports an answer: the question's words found near the answer.

    support(a) = max over the kept mentions m of a  |Q ∩ W(m)| / |Q|

Q is what tells the question's passage apart: the document's other names it mentions (as
markers) and its words that are no stop words; W(m) the words of the sentence of a mention
m of the answer (at most `WIDTH` tokens each side), and the words of its name (the "bank" of
"Which bank ...?" is in "Fjord Bank"), each word as its `stem` ("founded" and "founder" are
one). 1.0: every such word of the question stands beside one mention of the answer; 0.0:
none does, as for a question about names or events the document never mentions ("Who is
Barack Obama?" of a shipping story). The reader's own probability is a poor judge of this
on people's text (the readers score a wrong answer as high as a right one); on the
hand-written stories' dev set, support separates right top answers from wrong ones with an
AUROC of 0.90-0.92 in every mode, the probability with 0.50-0.65
(`cheapqa bench realistic` reports it).

The windows are taken once, when the document is indexed (`mention_windows`), and kept with
its record: a bounded number per entity, so the record does not grow with the text.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from encoder.text.kinds import (
    COUNTRY_MARK,
    ORG_MARK,
    PERSON_MARK,
    PLACE_MARK,
    mention_marks,
    names_organisation,
    names_place,
)
from encoder.text.name_kinds import NameKind, name_kind
from encoder.text.possessors import ROLE_MARK, mention_roles
from encoder.text.questions import AGENT, ORGANISATION, PERSON, PLACE, TOWN
from encoder.text.tokens import PLACEHOLDER, STOP_WORDS, entity_index, tokenize

# A mention's window is its sentence, at most WIDTH tokens each side: a quote and who said it
# ('"Our members are selling at a loss," Chepkoech said.'), a long clause and its subject
# stand together, a neighbouring sentence's names and words do not. Against 10 tokens each
# side across sentences (and 15, 20, 25, 30): on the fifteen story sets already scored, as
# served, +3.8 to +7.5 points a mode on average, and the top answer's support share tells
# right from wrong better (pooled AUROC 0.76-0.79 -> 0.80-0.83); RESULTS.md, "Ideas tried".
# A coordinate clause is a sentence of its own here: in "Marcus drove Anna home to Fairfield,
# and Tom stayed behind", what Marcus did is not Tom's (the seventeen story sets: -0.2 to 0
# points a mode against the sentence, and the README's example right in every mode).
WIDTH = 30
_SENTENCE_ENDS = frozenset({".", "!", "?"})
_COORDINATORS = frozenset({"and", "but", "while", "whereas"})
MAX_WINDOWS = 8  # the first mentions of an entity whose windows are kept
# A sentence that opens with one of these speaks of what the sentence before it named ("Its
# director, Omar Tazi, said ..." after a sentence about the regulator): its words join the
# window, after the sentence's own. With a neighbouring entity's name words in the window too
# (`mention_windows`), the eighteen story sets scored before test18, each by ranking weights
# fitted without it: +0.6 to +1.0 points a mode (+0.3 to +0.6 from the names, the rest from
# this); RESULTS.md, "What the service does around the readers".
_BACK_REFERENCES = frozenset({"its", "their"})
# Words that stand beside names in any news story: no evidence of one passage.
_COMMON_TEXT = """
said says told tells say are its who whom whose what will would did does do also from into
onto over under after before about than then there
"""
_COMMON = STOP_WORDS | frozenset(_COMMON_TEXT.split())


def _evidence(token: str) -> bool:
    return (token.isalnum() and token not in _COMMON) or entity_index(token) is not None


# Longest first. A role and its verb meet at their stem ("founder", "founded", "founding" ->
# "found"; "adviser", "advised" -> "advis"), as do a verb's tenses ("backs", "backed").
_SUFFIXES = ("ings", "ing", "ers", "ors", "ies", "ied", "es", "ed", "er", "or", "s")
_MIN_STEM = 3
_INFLECTIONS = frozenset({"ings", "ing", "ed"})
_UNDOUBLED = frozenset("bdgmnprt")  # "winner", "planned" -> "win", "plan"; not "called"


# Bounded: a document's windows are stemmed whenever its record is read, mostly the same
# few thousand words (0.7 µs a word uncached, 0.05 cached).
@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A word without its inflection or agent suffix, for matching a question's words to a
    document's; names (markers), numbers and short words are kept as they are."""
    if not word.isalpha() or len(word) <= _MIN_STEM:
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            word = word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
            # ... and the agent's suffix under it, as "engineers" loses it with "ers":
            # "engineering", "engineered" -> "engin"
            if (
                suffix in _INFLECTIONS
                and word.endswith(("er", "or"))
                and len(word) - 2 >= _MIN_STEM
            ):
                word = word[:-2]
            break
    if len(word) > _MIN_STEM and word[-1] == word[-2] and word[-1] in _UNDOUBLED:
        word = word[:-1]
    return word[:-1] if word.endswith("e") and len(word) > _MIN_STEM else word


# News names a person's role where a question asks what they do ("Who leads the union?" of
# "Union chairwoman Grace Chepkoech"; "Who speaks for the riders?" of "Carmen Aguado,
# spokeswoman for the SRU"): each class's words also stand for their class (`with_roles`),
# in the question and beside a mention, so a role meets its class's other words at half the
# weight of the same word.
_ROLE_CLASSES = {
    "^lead": """lead leads led leader leaders head heads headed chair chairs chaired chairman
        chairwoman chairperson president director directs boss chief manager manages run runs
        ran ceo""",
    "^speak": "speak speaks spoke spokesman spokeswoman spokesperson spokespeople",
    "^represent": """represent represents represented representative representatives lawyer
        lawyers attorney attorneys counsel barrister solicitor""",
}
_ROLES = {stem(w): role for role, words in _ROLE_CLASSES.items() for w in words.split()}


def with_roles(stems: Iterable[str]) -> frozenset[str]:
    """Stems, and the role class of each that has one: "chairwoman" and "leads" have the word
    "^lead" in common, "director" and "director" that and their own."""
    out = set(stems)
    return frozenset(out | {_ROLES[s] for s in out if s in _ROLES})


# The evidence words nearest a mention, this many each side, are its clause: a question word
# among them counts in full, one further out in the window FAR_WEIGHT. In "Marcus drove Anna
# home to Fairfield, and Tom stayed behind", Anna has "Marcus", "drove", "home" and
# "Fairfield" beside her, Tom has "Marcus" five evidence words away. Chosen on the realistic
# dev set and the validation splits as served (RESULTS.md, "Ideas tried"): 2, 3, 4 and 5 with
# FAR_WEIGHT 0.5 gave the dev set +4 to +5 points a mode on average; 2 and 3 lost 5 points on
# the restated questions, which put words farther from the name, 4 lost 1-2. With a sentence
# for a window, FAR_WEIGHT 0.75 against 0.5, 0.9 and 1.0 (NEAR 3 and 6 no better): the fifteen
# story sets -0.4 to +1.4 points a mode against 0.5, and the best AUROC.
NEAR = 4
FAR_WEIGHT = 0.75
# Separates a window's near words from its far ones (a window kept without it: all near).
FAR_MARK = "^|"


def _ends_clause(tokens: Sequence[str], j: int) -> bool:
    """Whether token j ends a sentence or a coordinate clause (", and Tom stayed behind")."""
    if tokens[j] in _SENTENCE_ENDS or tokens[j] == ";":
        return True
    return tokens[j] == "," and j + 1 < len(tokens) and tokens[j + 1] in _COORDINATORS


def _sentence_around(tokens: Sequence[str], i: int) -> tuple[int, int]:
    """[start, end) of the sentence (the coordinate clause) of token i, at most WIDTH tokens
    each side of it."""
    start = i
    while start > max(0, i - WIDTH) and not _ends_clause(tokens, start - 1):
        start -= 1
    end = i + 1
    while end < min(len(tokens), i + WIDTH + 1) and not _ends_clause(tokens, end - 1):
        end += 1
    return start, end


def mention_windows(
    tokens: Sequence[str], n_entities: int, names: Sequence[str] = ()
) -> list[list[str]]:
    """Per entity slot, the distinct evidence words of the sentence (at most WIDTH tokens each
    side) of each of its first MAX_WINDOWS mentions, one space-joined string a mention: led by
    what its neighbours say the name is (encoder.text.kinds.mention_marks) and the roles they
    give it (encoder.text.possessors.mention_roles, as ROLE_MARK words), the NEAR nearest
    words each side, FAR_MARK, then the rest. With the entities' `names`, another entity named
    in the window brings its name's words too ("union" from "The Polish Musicians' Union, led
    by Krzysztof Nowicki"), counted where its marker is, and the first person a sentence names
    (by its marks or its name's words) takes the next sentence's words when that one names no
    one and says he or she (`_PERSONAL`)."""
    name_tokens = [tokenize(n.lower()) for n in names]
    name_words = [[w for w in words if _evidence(w)] for words in name_tokens]
    named_person = [name_kind([w for w in ws if w.isalnum()]).person >= 0.5 for ws in name_tokens]

    def person_like(j: int, marks: Sequence[str] | None = None) -> bool:
        """Whether the marker at j names a person, by its name's words or its marks (the
        mention's own `marks` when already read)."""
        k = entity_index(tokens[j])
        if k is None:
            return False
        if k < len(named_person) and named_person[k]:
            return True
        return PERSON_MARK in (mention_marks(tokens, j) if marks is None else marks)

    def spelled(words: list[str]) -> list[str]:
        out = []
        for t in words:
            out.append(t)
            k = entity_index(t)
            if k is not None and k < len(name_words):
                out += name_words[k]
        return out

    windows: list[list[str]] = [[] for _ in range(n_entities)]
    for i, token in enumerate(tokens):
        slot = entity_index(token) if token.startswith("@entity") else None
        if slot is None or slot >= n_entities or len(windows[slot]) >= MAX_WINDOWS:
            continue
        start, end = _sentence_around(tokens, i)
        before = [t for t in reversed(tokens[start:i]) if _evidence(t)]
        after = [t for t in tokens[i + 1 : end] if _evidence(t)]
        if tokens[start] in _BACK_REFERENCES and start >= 2:
            # "Its director, Omar Tazi, said ...": the sentence before says whose.
            back, _ = _sentence_around(tokens, start - 2)
            after += [t for t in tokens[back : start - 1] if _evidence(t)]
        marks = mention_marks(tokens, i)
        if person_like(i, marks) and not any(person_like(j) for j in range(start, i)):
            # '"A single truck can ruin hours of observations," she added.': the person the
            # sentence before named first.
            after += _pronoun_sentence(tokens, end)
        near = dict.fromkeys(t for t in spelled([*before[:NEAR], *after[:NEAR]]) if t != token)
        far = dict.fromkeys(
            t for t in spelled([*before[NEAR:], *after[NEAR:]]) if t != token and t not in near
        )
        roles = [ROLE_MARK + role for role in mention_roles(tokens, i)]
        windows[slot].append(" ".join([*marks, *roles, *near, FAR_MARK, *far]))
    return windows


# '"A single truck can ruin hours of observations," she added.': a sentence that names no one
# and says he or she speaks of the person the sentence before named first, and joins that
# person's window (after its own words, mostly as far words). On the twenty story sets scored
# before test20, each by ranking weights fitted without it: +0.2 to +0.3 points a mode
# (RESULTS.md, "What the service does around the readers").
_PERSONAL = frozenset({"he", "she"})


def _pronoun_sentence(tokens: Sequence[str], end: int) -> list[str]:
    """The evidence words of the next sentence from `end` (within WIDTH tokens) when it
    speaks of a person by "he" or "she" and names no one; none otherwise."""
    end = next(
        (
            j + 1
            for j in range(end - 1, min(len(tokens), end + WIDTH))
            if tokens[j] in _SENTENCE_ENDS
        ),
        len(tokens),
    )
    if end >= len(tokens):
        return []
    start, stop = _sentence_around(tokens, end)
    words = tokens[start:stop]
    if _PERSONAL.isdisjoint(words) or any(t.startswith("@entity") for t in words):
        return []
    return [t for t in words if _evidence(t)]


class Terms(NamedTuple):
    """What a question's support is measured by."""

    words: frozenset[str]  # its evidence words, stemmed
    # The word just before the blank ("bank" of "the bank @placeholder arranged the debt"): the
    # noun of a Which-question, the one word an answer's own name may hold ("Fjord Bank").
    noun: str | None = None


def question_terms(tokens: Sequence[str]) -> Terms:
    """The words of an anonymised question (the whole question, not the reader's window)
    that support is measured by."""
    words = with_roles(stem(t) for t in tokens if t != PLACEHOLDER and _evidence(t))
    at = tokens.index(PLACEHOLDER) if PLACEHOLDER in tokens else 0
    before = tokens[at - 1] if at > 0 else ""
    return Terms(words, stem(before) if before.isalpha() and _evidence(before) else None)


def support(terms: Terms, windows: Sequence[str], name: str = "") -> float | None:
    """The share of the question's words found in the best of an answer's windows, a word
    beyond the NEAR nearest counting FAR_WEIGHT, its noun found in the answer's `name` as if
    near ("the bank" of a Which-question is in "Fjord Bank"); None when the record kept no
    windows (indexed before they were), 0.0 for a question without words."""
    return evidence_support(terms, entity_evidence(windows, name))


# ---- ranking by reader and support together ----------------------------------------------


class Evidence(NamedTuple):
    """One entity's kept windows as word sets and what the text says it is, read once (a
    record keeps them for all its questions)."""

    windows: tuple[tuple[frozenset[str], frozenset[str]], ...]  # (near words, far words) each
    # The words of its name. Only a Which-question's noun may be found there: a question's
    # other words in a name say the question names it ("Who heads the fruit exporters'
    # association?" is not answered by the association).
    name: frozenset[str] = frozenset()
    # The share of its kept mentions the text marks as a place's, a person's, an
    # organisation's (encoder.text.kinds; 0 for a record kept before the marks were): near 1
    # for a town the text puts things in; 1 where the name says it ("Tagus River", "Fjord
    # Bank").
    place: float = 0.0
    person: float = 0.0
    organisation: float = 0.0
    country: float = 0.0  # of the place marks, a state's ("Greece's government")
    # What its name's words say (encoder.text.name_kinds; 0 where the name says it is an
    # organisation's or a place's by its own words): "Rodrigo Garza" a person's, "Nuevo León"
    # a place's, with no cue in the text.
    name_person: float = 0.0
    name_place: float = 0.0
    words: frozenset[str] = frozenset()  # every word of its windows, near or far
    # The roles its mentions are given ("cyclist" of "cyclist Juan Ortega";
    # encoder.text.possessors).
    roles: frozenset[str] = frozenset()


def entity_evidence(windows: Sequence[str], name: str = "") -> Evidence:
    """An entity's kept windows and name as what `support` and `kind_weighted` read."""
    out = []
    roles: set[str] = set()
    for window in windows:
        near, _, far = window.partition(FAR_MARK)
        marked = near.split()
        roles.update(t.removeprefix(ROLE_MARK) for t in marked if t.startswith(ROLE_MARK))
        near_words = with_roles(stem(t) for t in marked if not t.startswith(ROLE_MARK))
        out.append((near_words, with_roles(stem(t) for t in far.split()) - near_words))
    words = [t for t in tokenize(name) if t.isalnum()]

    def share(mark: str) -> float:
        return sum(mark in near for near, _ in out) / len(out) if out else 0.0

    says_place, says_organisation = names_place(words), names_organisation(frozenset(words))
    by_name = NameKind() if says_place or says_organisation else name_kind(words)
    # An acronym ("NULRW", "ONEP") is an organisation's, unless its letters read as a place's
    # ("USA", "UAE").
    if _acronym(name) and by_name.place < 0.5:
        says_organisation, by_name = True, NameKind()
    return Evidence(
        tuple(out),
        frozenset(map(stem, words)),
        place=1.0 if says_place else share(PLACE_MARK),
        person=share(PERSON_MARK),
        organisation=1.0 if says_organisation else share(ORG_MARK),
        country=share(COUNTRY_MARK),
        name_person=by_name.person,
        name_place=by_name.place,
        words=frozenset().union(*(near | far for near, far in out)),
        roles=frozenset(roles),
    )


def _acronym(name: str) -> bool:
    return 3 <= len(name) <= 8 and name.isalpha() and name.isupper()


def evidence_support(terms: Terms, evidence: Evidence) -> float | None:
    """`support` on an entity's `entity_evidence`: the same value, a tenth of the time."""
    if not evidence.windows:
        return None
    words, noun = terms
    if not words:
        return 0.0
    windows = evidence.windows
    if noun is None or noun not in evidence.name:
        best = max(len(words & near) + FAR_WEIGHT * len(words & far) for near, far in windows)
    else:  # the noun, in the answer's name, counts in full beside every mention
        best = max(
            len(words & near)
            + FAR_WEIGHT * len(words & far)
            + (noun not in near) * (1.0 - FAR_WEIGHT * (noun in far))
            for near, far in windows
        )
    return best / len(words)


# The fitted ranking's rare(e) (encoder.text.ranking) reads the support through these weights:
# on the twenty story sets scored before test20, each by weights fitted without it, +0.8 to
# +0.9 points a mode (RESULTS.md). Over the candidates, not every entity of the document: the
# same on a news story (its names are the candidates), and a long document's thousand names
# are not read for one question.
def word_weights(terms: Terms, evidence: Sequence[Evidence]) -> dict[str, float]:
    """Each of the question's words weighed by how few of its candidate answers (`evidence`,
    n of them) have it beside a mention: log((n + 1) / (candidates with it + 1)). A word beside
    every name ("company" in a story about one) tells little of which one answers."""
    n = len(evidence) + 1
    return {w: math.log(n / (1 + sum(w in e.words for e in evidence))) for w in terms.words}


def rare_support(terms: Terms, evidence: Evidence, weights: dict[str, float]) -> float:
    """`evidence_support` with each question word counted by its `word_weights`: the share of
    the question's weight found in the best of an answer's windows (0.0 without windows)."""
    total = sum(weights.values())
    if not evidence.windows or total <= 0:
        return 0.0
    best = max(
        sum(weights[w] for w in terms.words & near)
        + FAR_WEIGHT * sum(weights[w] for w in terms.words & far)
        for near, far in evidence.windows
    )
    return best / total


# λ_kind: a Who-question's answer is a person or an organisation (a person only, where its
# verb or role says so: encoder.text.questions.asks_for), a Where-question's a place, a "Which
# bank ...?" question's an organisation. The factor exp(∓ λ_kind · share) demotes a town named
# beside the question's words (they often are: "Britain" for "Who said Poland was its second
# home market?") for a Who-question and promotes it for a Where-question; a Which-question that
# names an organisation demotes people and places, a person's Who-question organisations and
# places. It is support's own λ (the service's support_weight, 12), so a town's place share
# weighs as much as the support that lifts it: on the hand-written stories already scored
# (RESULTS.md, "Ideas tried"), 12 against 8 gave the modes -0.3 to +0.8 points.
KIND_WEIGHT = 12.0
# What a name's words say counts NAME_WEIGHT of what the text's marks say: an entity is a
# place by max(its place share, NAME_WEIGHT · its name's place probability), a person
# likewise. A Who-question lifts a person by PERSON_LIFT of that (an agent's question demotes
# places only, a person's places and organisations: neither, before, told a person apart from
# a name the text says nothing of). Chosen on the fourteen story sets already scored, as
# served (RESULTS.md, "Ideas tried"): NAME_WEIGHT 0.3-0.7 and PERSON_LIFT 0-1 tried; 0.6 and
# 0.3 gave every mode +3.3 to +4.9 points on average; a larger lift separates right answers
# from wrong ones better (AUROC) and answers worse.
NAME_WEIGHT = 0.6
PERSON_LIFT = 0.3


def kind_weighted(
    probs: Sequence[float], evidence: Sequence[Evidence], kind: str | None
) -> list[float]:
    """Candidates' probabilities (and their evidence) weighed by what the question asks for,
    scaled back to their sum, with place and person the `_place` and `_person` of each: an
    agent, exp(KIND_WEIGHT · (−place + PERSON_LIFT · person)); a person, exp(KIND_WEIGHT ·
    (−place − organisation share + PERSON_LIFT · person)); a place, exp(+KIND_WEIGHT · place);
    a town, exp(+KIND_WEIGHT · (place − country share)); an organisation, exp(−KIND_WEIGHT ·
    (place + person)); as they are for other questions."""
    logs = kind_logs(evidence, kind)
    if logs is None:
        return list(probs)
    weighted = [p * math.exp(KIND_WEIGHT * x) for p, x in zip(probs, logs, strict=True)]
    total = sum(weighted)
    return [w * sum(probs) / total for w in weighted] if total > 0 else list(probs)


def kind_logs(evidence: Sequence[Evidence], kind: str | None) -> list[float] | None:
    """How well each candidate is what the question asks for (`kind_weighted`'s exponents,
    before KIND_WEIGHT); None for a question that asks for no kind."""
    if kind == AGENT:
        return [-_place(e) + PERSON_LIFT * _person(e) for e in evidence]
    if kind == PERSON:
        return [-_place(e) - e.organisation + PERSON_LIFT * _person(e) for e in evidence]
    if kind == PLACE:
        return [_place(e) for e in evidence]
    if kind == TOWN:
        return [_place(e) - e.country for e in evidence]
    if kind == ORGANISATION:
        return [-_place(e) - _person(e) for e in evidence]
    return None


def who_person(e: Evidence, kind: str | None) -> float:
    """For a Who-question (an agent's or a person's), how much more the text and the name say
    e is a person's than an organisation's (-1 to 1); 0 for other questions. Beside the kind's
    own exponents, fitted weights read it: an organisation often stands in its person's own
    sentence ("The study, published in the Journal of Southern Palaeobiology, was led by
    Valeria Ortúzar"). On the twenty-one story sets scored before test21, each by weights
    fitted without it: +0.1 to +0.6 points a mode (RESULTS.md)."""
    return _person(e) - e.organisation if kind in (AGENT, PERSON) else 0.0


def _place(e: Evidence) -> float:
    return max(e.place, NAME_WEIGHT * e.name_place)


def _person(e: Evidence) -> float:
    return max(e.person, NAME_WEIGHT * e.name_person)


# How many of a question's likeliest answers (by the reader) its support re-ranks: every name of
# a news story (they name up to 30), a long document's likeliest. 32 against 20: on the
# hand-written stories as served +0.5 to +2.7 points a mode (mentions 0; the readers put a right
# answer below their 20th), on the validation splits 0 to +2, at 5,000 tokens (test) 0 to +2,
# for 4-11 µs more a question (RESULTS.md, "Ideas tried").
RERANK_POOL = 32


# λ of `support_shares`: chosen on the hand-written stories' dev set (4, 8 or 16; 8 best)
SHARE_WEIGHT = 8.0


def support_shares(
    supports: Sequence[float | None], weight: float = SHARE_WEIGHT
) -> list[float | None]:
    """Each candidate's share of the support among the candidates a question is ranked over,
    exp(λ · support(e)) / Σ exp(λ · support(e')): 1.0 when only this answer stands beside the
    question's words, 1/n when n answers do equally well, so a top answer with a share near 1
    is one the document singles out. Unknown support (None) anywhere gives None for all."""
    if any(s is None for s in supports):
        return [None] * len(supports)
    known = [float(s) for s in supports if s is not None]
    top = max(known, default=0.0)
    raised = [math.exp(weight * (s - top)) for s in known]
    total = sum(raised)
    return [r / total for r in raised]


def support_ranked(
    probs: Sequence[float], supports: Sequence[float | None], weight: float
) -> list[float]:
    """The reader's probabilities of some candidates, their support, and its weight λ -> each
    candidate's probability under p(e) ∝ p_reader(e) · exp(λ · support(e)), normalised over
    every candidate of the question (those not given keep their reader probability, support
    0: `probs` may be the reader's top few). λ = 0 gives the reader's probabilities back;
    unknown support (None) counts as 0."""
    boosted = [p * math.exp(weight * (s or 0.0)) for p, s in zip(probs, supports, strict=True)]
    rest = max(0.0, 1.0 - sum(probs))  # the candidates not given: support 0
    total = sum(boosted) + rest
    return [b / total for b in boosted] if total > 0 else list(probs)


def support_order(
    probs: Sequence[float], supports: Sequence[float | None], weight: float
) -> tuple[list[int], list[float]]:
    """Candidates' reader probabilities and their support -> (their order, best first; their
    probabilities as ranked): `support_ranked` with weight λ > 0, the reader's own with 0. The
    one ranking the service, `cheapqa evaluate` and the frontier bench share."""
    ranked = support_ranked(probs, supports, weight) if weight > 0 else list(probs)
    return sorted(range(len(ranked)), key=lambda i: -ranked[i]), ranked
