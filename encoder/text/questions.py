"""Plain Who/Whom/Whose/Which/What questions turned into the cloze sentences the readers
answer.

The readers were trained on statements with one entity blanked, so a question is rewritten
as the statement it asks about, with `@placeholder` where the answer goes:

    Who drove Anna home?            -> @placeholder drove Anna home
    Whose dog barked?               -> @placeholder 's dog barked
    Whom did Marcus drive home?     -> Marcus drove @placeholder home
    Who does Anna visit?            -> Anna visits @placeholder
    Who was Anna talking to?        -> Anna was talking to @placeholder
    Which company did Marcus buy?   -> Marcus bought the company @placeholder
    Which bank arranged the debt?   -> the bank @placeholder arranged the debt
    Which union's members struck?   -> the union @placeholder 's members struck
    In which city was it built?     -> it was built in the city @placeholder
    Where did Anna study?           -> Anna studied in @placeholder

A subject question keeps its words after the wh-phrase. Which/What keep the noun phrase
that narrows the answer ("state miner", "Dutch group"), before the blank as news writes a
description before a name ("the state miner Codelsa"): it gave the shipped readers 3-6
points on the realistic dev set's Which-questions against dropping it.

An object question (an auxiliary, a subject, then a verb) moves the subject first: `did` +
verb becomes the past tense, `does` the third person, `do` the verb itself; other
auxiliaries (was, is, has, will, ...) stay, and be/have only where a participle follows the
subject ("Who is the president of France?" is a subject question: the auxiliary is its
verb). The answer goes after the verb, or at the end when the question ends on a
preposition. Anything else is refused with `UnsupportedQuestion`, whose message says which
forms work.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from encoder.text.entities import is_demonym
from encoder.text.kinds import ORG_NOUNS, ROLES
from encoder.text.tokens import PLACEHOLDER
from encoder.text.tokens import word_set as _words

FORMS = (
    "a question is a cloze sentence with one @placeholder, or a plain question starting "
    "with Who, Whom, Whose, '(In) Which/What <noun>' or Where (e.g. 'Who drove Anna home?', "
    "'Whom did Marcus drive home?', 'Who was Anna talking to?', 'Whose dog barked?', "
    "'Which company did Marcus buy?', 'In which town did Anna live?', "
    "'Where did Anna study?', 'What is the new firm called?'); the answer is always one "
    "of the document's entities"
)


class UnsupportedQuestion(ValueError):
    """The question is neither a cloze sentence nor a form this module rewrites."""


_PRONOUNS = _words("i you he she it we they")
_DETERMINERS = _words("the a an his her their its our my your this that these those")
_BE_HAVE = _words("was were is are am has have had")
MODALS = _words("will would can could shall should may might must")
_KEPT_AUXILIARIES = _BE_HAVE | MODALS
_DO = _words("did does do")
AUXILIARIES = _KEPT_AUXILIARIES | _DO
PREPOSITIONS = _words(
    "to with for from about at by of on in into onto after like behind beside near toward "
    "towards against without over under upon around before between through off along across "
    "outside inside beyond within among during alongside via"
)


def _pairs(text: str) -> dict[str, str]:
    return dict(pair.split(":", 1) for pair in text.split())


_IRREGULAR_PAST = _pairs(
    """
    be:was have:had do:did go:went say:said make:made take:took see:saw come:came know:knew
    get:got give:gave find:found think:thought tell:told become:became leave:left feel:felt
    bring:brought begin:began keep:kept hold:held write:wrote stand:stood hear:heard let:let
    mean:meant set:set meet:met run:ran pay:paid sit:sat speak:spoke lead:led read:read
    grow:grew lose:lost fall:fell send:sent build:built understand:understood draw:drew
    break:broke spend:spent cut:cut quit:quit drive:drove buy:bought wear:wore choose:chose
    seek:sought throw:threw catch:caught win:won forget:forgot sell:sold fight:fought
    teach:taught eat:ate sing:sang swim:swam fly:flew ride:rode hide:hid shoot:shot
    steal:stole sleep:slept hit:hit put:put hurt:hurt beat:beat bite:bit blow:blew feed:fed
    forgive:forgave freeze:froze hang:hung light:lit shake:shook strike:struck swear:swore
    tear:tore wake:woke lay:laid lend:lent shut:shut bear:bore bind:bound flee:fled
    dig:dug ring:rang spin:spun spread:spread sting:stung swing:swung withdraw:withdrew
    overtake:overtook mislead:misled undertake:undertook
    """
)
# What be/have takes as a participle ("has Anna met", "was Tom seen"): the irregular past
# forms above, and the participles that differ from the past tense.
_PARTICIPLES = frozenset(_IRREGULAR_PAST.values()) | _words(
    """
    been seen given taken known done gone written chosen driven spoken eaten fallen
    forgotten forgiven hidden ridden shaken stolen sworn thrown torn woken worn born borne
    broken frozen beaten bitten blown drawn flown grown shown sung swum begun rung struck
    """
)
_NOT_IN_SUBJECT = PREPOSITIONS | _DETERMINERS | _words("who whom whose which that and or")
_IRREGULAR_THIRD = {"be": "is", "have": "has", "do": "does", "go": "goes"}
_SHORT_CVC = re.compile(r"^[^aeiou]*[aeiou][^aeiouwxy]$")  # stop -> stopped


def past_tense(verb: str) -> str:
    """The simple past of a base verb: a table of irregular verbs, else the regular rules."""
    low = verb.lower()
    if low in _IRREGULAR_PAST:
        return _IRREGULAR_PAST[low]
    if low.endswith("e"):
        return low + "d"
    if len(low) > 1 and low.endswith("y") and low[-2] not in "aeiou":
        return low[:-1] + "ied"
    if _SHORT_CVC.match(low):
        return low + low[-1] + "ed"
    return low + "ed"


def third_person(verb: str) -> str:
    """The present third person singular of a base verb (visit -> visits, watch -> watches)."""
    low = verb.lower()
    if low in _IRREGULAR_THIRD:
        return _IRREGULAR_THIRD[low]
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return low + "es"
    if len(low) > 1 and low.endswith("y") and low[-2] not in "aeiou":
        return low[:-1] + "ies"
    return low + "s"


def _subject_length(words: list[str]) -> int:
    """How many leading words form a subject: a pronoun, a capitalised name (one or more
    words), or a determiner and its noun; a possessive takes the noun after it too ("the
    portrait's sitter", "Chile's mining minister"); 0 when none does."""
    if not words:
        return 0
    first = words[0]
    if first.lower() in _PRONOUNS:
        return 1
    if first.lower() in _DETERMINERS:
        n = 2 if len(words) > 1 else 0
        # ... a name after it runs on: "the Highland Institute", "the Bank of England"
        while 0 < n < len(words) and words[n - 1][:1].isupper():
            if words[n][:1].isupper():
                n += 1
            elif words[n] in ("of", "for") and n + 1 < len(words) and words[n + 1][:1].isupper():
                n += 2
            else:
                break
    else:
        n = 0
        while n < len(words) and words[n][:1].isupper():
            n += 1
    while 0 < n < len(words) and words[n - 1].endswith(("'s", "s'")) and words[n].isalpha():
        n += 1
    return n


def _bare_subject_length(words: list[str]) -> int:
    """A do-question's subject without a determiner ("did police arrest", "did plastic
    pellets wash up"): up to a plural noun among its first two words, else its first word
    alone; 0 when the first word cannot start one."""
    first = words[0] if words else ""
    if not (first.isalpha() and first.islower()) or first in _NOT_IN_SUBJECT | _VERB_FORMS:
        return 0
    for j, word in enumerate(words[:2]):
        if word.endswith("s") and not word.endswith("ss") and j + 1 < len(words):
            return j + 1
    return 1 if len(words) > 1 else 0


def _bare_subject_before_be(words: list[str]) -> int:
    """After a modal, a bare noun phrase running on to its "be" or "have" and the participle
    after it ("will young char be raised", "will fish be released"): its length, 0 when
    there is none ("will be named", "will soon be named", "will lead the team")."""
    for j, word in enumerate(words[: MAX_NOUN_WORDS + 1]):
        if word.lower() in ("be", "have"):
            after = _word_after(words, j)
            return j if j and (_participle(after) or after.lower() == "been") else 0
        low = word.lower()
        if not (word.isalpha() and word.islower()) or low in _NOT_IN_SUBJECT | _VERB_FORMS:
            return 0
        if _is_adverb(word) or low in _AFTER_VERB:
            return 0
    return 0


def _word_after(words: list[str], j: int) -> str:
    """The word after words[j], "" at the end."""
    return words[j + 1] if j + 1 < len(words) else ""


def _bare_plural_subject(words: list[str]) -> bool:
    """After a modal, whether a bare plural noun is its subject ("will fans get", "will fund
    members be briefed"), not its verb ("will lead the team", "must approve the deal"): a
    plural among its first two words and a plain word after it."""
    for j, word in enumerate(words[:2]):
        after = _word_after(words, j)
        if (
            word.endswith("s")
            and not word.endswith("ss")
            and after.isalpha()
            and after.islower()
            and (after == "of" or after not in _AFTER_VERB | _NOT_IN_SUBJECT)
        ):
            return True
    return False


def _of_phrase(words: list[str], j: int) -> int:
    """How many words from words[j] are an "of" phrase inside a noun phrase: "of" and a
    determiner's first noun ("the president of the owners' council"), or "of" and a name
    ("the buyer of Kovinar", "the head of Lâm Viên Trading"); 0 when words[j] starts none."""
    if words[j].lower() != "of":
        return 0
    if _word_after(words, j).lower() in _DETERMINERS:
        return 3 if j + 2 < len(words) else 0
    end = j + 1
    while end < len(words) and words[end][:1].isupper():
        end += 1
    return end - j if end > j + 1 else 0


_ATTRIBUTIVE = _words("former late outgoing incoming current acting interim would-be so-called")


def _runs_on_to(words: list[str], ends: Callable[[str, str], bool], over_of: bool = False) -> int:
    """Where a determiner and its noun (`words` starts "the old ...") run on, over plain words,
    to the first word `ends` accepts (given the word after it, "" at the end): its index ("the
    old man talking" -> 3), 0 when none. `over_of`: over an "of" phrase too ("the buyer of
    Kovinar headquartered"), where an -ing word after it is a noun's modifier ("the director
    of the arts funding body") unless only a preposition follows it ("the photographer of the
    winch sailing on")."""
    if len(words) > 2 and words[0].lower() in _DETERMINERS:
        # "the former paving company owner": a word only ever before a noun is none
        j, crossed = 3 if words[1].lower() in _ATTRIBUTIVE else 2, False
        while j < len(words):
            if over_of and (skip := _of_phrase(words, j)):
                j, crossed = j + skip, True
                continue
            if words[j].lower() in _NOT_IN_SUBJECT or not words[j].isalpha():
                break
            if ends(words[j], _word_after(words, j)):
                if crossed and words[j].lower().endswith("ing") and not _ends_after(words, j):
                    return 0
                return j
            j += 1
    return 0


# What follows a verb, not a noun: its object, a preposition, an infinitive's "to", an
# adverb, a clause ("did a woman die when ...").
_CONJUNCTIONS = _words("when while if because until unless whether where after before since")
_AFTER_VERB = (
    PREPOSITIONS
    | _DETERMINERS
    | _CONJUNCTIONS
    | _words("him them me us as now today here there back up down out away and or")
    | _words("most part some all much many more next")  # "shift most of", "move next spring"
)


_NOT_PLURAL = ("ss", "us", "is")  # endings of a singular noun or verb: "address", "bus", "crisis"


def _plural_noun(word: str) -> bool:
    """A plain word that reads as a plural noun, never a verb's base form ("workers", not
    "address" or "focus")."""
    return (
        word.isalpha() and word.islower() and word.endswith("s") and not word.endswith(_NOT_PLURAL)
    )


def _ends_after(words: list[str], j: int) -> bool:
    """Whether words[j] ends the question, or only a preposition follows it (a phrase that led
    the question: "Outside which hotel did the strike leader address workers?")."""
    rest = words[j + 1 :]
    return not rest or (len(rest) == 1 and rest[0].lower() in PREPOSITIONS)


def _do_subject(words: list[str], n: int) -> int:
    """After "did"/"does"/"do", a determiner's noun phrase runs on over plain words, a
    possessive's noun ("the employers' group chairman") and an "of" phrase ("the president of
    the owners' council"), to its verb: the first that a known verb, an adverb, an object or
    the question's end follows, or that is a known irregular verb ("did the perfume house hire
    to ...", "did the lock gate give way", "did the four singers also perform with"), not "the
    perfume" and the verb "house"; a plural noun ending the question is the verb's object
    ("did the strike leader address workers"). `n` when none is found."""
    possessive = n > 2 and words[n - 2].endswith(("'s", "s'"))
    if (n != 2 and not possessive) or words[0].lower() not in _DETERMINERS:
        return n
    last = min(len(words), n + MAX_NOUN_WORDS - 1)
    j = n - 1
    while j < last:
        word = words[j]
        if skip := _of_phrase(words, j):
            j, last = j + skip, min(len(words), last + skip)
            continue
        if not word.isalpha() or word in _NOT_IN_SUBJECT | _CONJUNCTIONS:
            return n
        if j == n - 1 or word[:1].isupper():
            j += 1
            continue  # the determiner's (or possessive's) own noun, or a name's word
        if _plural_noun(word) and _ends_after(words, j):
            return j - 1 if j > n else n  # "address workers": the plural is the object
        after = _word_after(words, j)
        if (
            word in _IRREGULAR_PAST
            or _is_adverb(word)
            or _no_longer([word, after])
            or not after
            or after.lower() in _AFTER_VERB
            or after.endswith("ing")  # "stop buying"
            or not after.isalpha()
            or after[:1].isupper()
        ):
            return j
        j += 1
    return n


def _modal_subject(words: list[str], n: int) -> int:
    """After a modal ("would", "will", ...) a determiner's noun phrase runs on to the be/have
    that follows it: "would the new filling line be built" has the subject "the new filling
    line", not "the new"; else to its verb, as after "did" ("will the new coach replace")."""
    if n == 2:
        be_have = _runs_on_to(words[: 2 + MAX_NOUN_WORDS], lambda w, _: w.lower() in ("be", "have"))
        return be_have or _do_subject(words, n)
    return n


# Participles that take no object: after "is the <noun>" and before a preposition they say who
# the noun is, so the question asks for the noun ("Who is the lawyer acting for the owners?").
_TAKES_NO_OBJECT = _words(
    "acting working speaking serving standing running campaigning competing testifying lobbying"
)


_ADVERBIAL = (
    PREPOSITIONS
    | _CONJUNCTIONS
    | _words("to today tomorrow tonight yesterday now next this soon again instead there here as")
)


def _described(words: list[str], n: int) -> bool:
    """After "is"/"was", whether a determiner's noun and the participle after it describe the
    answer ("is the police officer leading the inquiry", "is the analyst quoted about the
    revenue") rather than say what the subject is doing to it ("is the old man talking to"):
    the participle already has its object, or is passive, and no preposition ends the
    question to take the answer."""
    if n < 2 or n >= len(words) or words[0].lower() not in _DETERMINERS:
        return False
    if words[-1].lower() in PREPOSITIONS:
        return False
    participle, after = words[n].lower(), words[n + 1 : n + 2]
    passive = not participle.endswith("ing")
    if after and participle in _TAKES_NO_OBJECT and after[0].lower() in PREPOSITIONS:
        return True  # "is the lawyer acting for the owners": no object for the answer to be
    # ... or anything but an adverbial after it: "is the former owner standing trial", "is
    # the analyst leading talks" (not "is the minister meeting today", "... meeting on Friday")
    return passive or bool(after and after[0].isalpha() and after[0].lower() not in _ADVERBIAL)


def _participle(word: str) -> bool:
    """Whether `word` can be the participle a be/have auxiliary takes (talking, met)."""
    low = word.lower()
    return low.endswith(("ing", "ed")) or low in _PARTICIPLES


def _be_have_subject(words: list[str], n: int) -> int:
    """How many of `words` (after "is", "has", ...) form the subject of a participle that
    follows them ("is Anna talking", "was the old man talking"), 0 when no participle
    follows: then be/have is the main verb ("Who is the president of France?")."""
    if n and n < len(words) and _participle(words[n]):
        after = _word_after(words, n)
        if n != 2:
            return n
        if words[0].lower() not in _DETERMINERS or (
            _verb_participle(words[n], after) and words[1].lower() not in _ATTRIBUTIVE
        ):
            return n
    if n != 2:
        return 0
    # "was the old man talking"; else the first participle ("is the drilling taking place")
    return _runs_on_to(words, _verb_participle, over_of=True) or _runs_on_to(
        words, lambda w, _: _participle(w), over_of=True
    )


def _verb_participle(word: str, after: str) -> bool:
    """A participle that is the verb, not a noun's modifier: "based" of "is the Spanish fishing
    company based", not "fishing"; "been" of "has the company been fined"."""
    if not _participle(word):
        return False
    plain_noun = after.isalpha() and after.islower() and after not in _AFTER_VERB
    return not plain_noun or _participle(after)


def _wh_phrase(words: list[str]) -> tuple[str, list[str]] | None:
    """(the answer's stand-in, the words after the wh-phrase), or None for other openings."""
    first = words[0].lower()
    if first in ("who", "whom"):
        return PLACEHOLDER, words[1:]
    if first == "whose" and len(words) > 1:
        n = _owned_length(words[1:])
        return f"{PLACEHOLDER} 's {' '.join(words[1 : 1 + n])}", words[1 + n :]
    if first in ("which", "what") and _asks_what_is(words):
        return PLACEHOLDER, words[1:]  # "Which is the larger of the two ...?": its subject
    if first in ("which", "what"):
        n = _noun_phrase_length(words[1:])
        if n and _POSSESSIVE.search(words[n]):  # "Which union's protesters ...": the owner
            noun = [*words[1:n], _POSSESSIVE.sub("", words[n])]
            return f"{_with_noun(noun)} 's {words[n + 1]}", words[n + 2 :]
        if n:
            return _with_noun(words[1 : 1 + n]), words[1 + n :]
    return None


_POSSESSIVE = re.compile(r"'s$")


def _asks_what_is(words: list[str]) -> bool:
    """Whether a Which/What-question asks what is a determiner's noun ("Which is the larger
    of the two unions ...?", "What was the first club to bid?")."""
    if len(words) < 5 or words[1].lower() not in _BE or words[2].lower() not in _DETERMINERS:
        return False
    return _object_clause(PLACEHOLDER, words[1:]) is None  # not "What was the ship named after?"


def _owned_length(words: list[str]) -> int:
    """How many of `words` (after Whose) name what the answer owns: the words up to an
    auxiliary that a subject follows ("Whose security camera footage did investigators
    examine?", "Whose place in the team will the new signing take?"), else the first alone
    ("Whose pilots will strike?", "Whose lawyer says he ...?": a verb ends the search)."""
    for n in range(1, min(len(words) - 1, MAX_NOUN_WORDS + 1)):
        low = words[n].lower()
        if low in _DO or low in _KEPT_AUXILIARIES:
            return n
        if not _is_noun_word(words[n]) or low in _VERB_FORMS or _is_adverb(low) or _verb_like(low):
            break
    return 1


# Nouns that say no more than "the answer" does: dropped ("Which person drove Anna home?").
_GENERIC_NOUNS = _words("person people one man woman men women someone somebody")
# Words that end the wh-phrase's noun phrase: the verb's adverbs.
_ADVERBS = _words("twice once also then later first last again still never already just now soon")
# Nouns in -ly a question's subject may hold; any other word in -ly of six letters or more is
# an adverb ("currently", "formerly", "jointly"): no list of them is complete.
_LY_NOUNS = _words("family assembly supply rally monopoly anomaly butterfly reply bully homily")


def _is_adverb(word: str) -> bool:
    """Whether `word` is an adverb that may stand between a subject and its verb."""
    low = word.lower()
    return low in _ADVERBS or (len(low) >= 6 and low.endswith("ly") and low not in _LY_NOUNS)


_VERB_FORMS = frozenset(_IRREGULAR_PAST.values()) | AUXILIARIES
MAX_NOUN_WORDS = 4
NOUN_FORM = "the {noun} " + PLACEHOLDER


def _verb_like(low: str) -> bool:
    """Whether a lower-case word after a noun reads as its verb: a past form or a third
    person ("arranged", "owns"), not a noun in -ss or -us ("business", "campus")."""
    return low.endswith(("ed", "s")) and not low.endswith(("ss", "us"))


def _no_longer(words: list[str]) -> bool:
    """Whether `words` open with the adverb "no longer" ("will the race no longer pass")."""
    return [w.lower() for w in words[:2]] == ["no", "longer"]


def _noun_phrase_length(words: list[str]) -> int:
    """How many of `words` (after Which/What) name what the answer is: "state miner",
    "Dutch group", "law firm", up to the verb (an auxiliary, a past form, a third person, an
    adverb) or a possessive and the noun it owns ("union's protesters"); 0 when the first word
    cannot start one ("What did Anna eat?")."""
    n = 0
    while n < min(len(words), MAX_NOUN_WORDS + 1):
        word, low = words[n], words[n].lower()
        if _POSSESSIVE.search(word) and word[:-2].isalpha():
            n += 1  # "union's": the phrase ends in its owner; the owned noun follows
            break
        if low == "that" and n == 1:  # "Which body that advises UNESCO ...": its clause
            break
        if low in _DETERMINERS:  # "Which polling firm forecast the result": the verb's object
            n = n - 1 if n > 1 else 0
            break
        if not _is_noun_word(word) or low in _VERB_FORMS or (low in _ADVERBS and word == low):
            break  # not "First" of "Which First Nation"
        if low == "of" and n and n + 2 <= MAX_NOUN_WORDS and n + 1 < len(words):
            after = words[n + 1]
            if _is_noun_word(after) and after.lower() not in _DETERMINERS | _VERB_FORMS:
                n += 2  # "group of dairies": the noun's own plural, not the verb
                continue
        # The first word is the noun's (a "family", "companies"); after it, the verb or its
        # adverb: "Which bank arranged", "Which pension fund owns", "Which club quickly".
        # ("state-owned", "start-up": a hyphenated word is a compound of the noun, no verb).
        if n and (_verb_like(low) or low.endswith("ly")) and "-" not in low:
            break
        n += 1
    return n if 0 < n <= MAX_NOUN_WORDS and n < len(words) else 0


_INITIALS = re.compile(r"(?:[A-Z]\.){2,}")


def _is_noun_word(word: str) -> bool:
    """A word of a wh-phrase's noun: a plain word, a hyphenated one ("state-owned operator",
    "start-up"), a plural possessive ("pilots' union") or initials ("U.S. retailer")."""
    if _INITIALS.fullmatch(word):
        return True
    parts = word.split("-")
    if len(parts) > 1 and all(p.isalpha() for p in parts):
        return True
    return word.isalpha() or (word.endswith("s'") and word[:-1].isalpha())


def _with_noun(noun: list[str]) -> str:
    """The answer's stand-in keeping the noun the question narrows it by, as news writes a
    name after its description ("the law firm Wiersholm"): the reader sees "bank" beside the
    blank of "Which bank arranged the new debt?"."""
    if len(noun) == 1 and noun[0].lower() in _GENERIC_NOUNS:
        return PLACEHOLDER
    return NOUN_FORM.format(noun=" ".join(w if w[:1].isupper() else w.lower() for w in noun))


def _object_clause(answer: str, rest: list[str]) -> str | None:
    """`rest` = auxiliary, subject, verb, ... rewritten as a statement; None unless it is one."""
    aux = rest[0].lower()
    if (aux not in _DO and aux not in _KEPT_AUXILIARIES) or len(rest) < 2:
        return None  # "Who has?": nothing after the auxiliary to rewrite
    if len(rest) > 1 and _is_adverb(rest[1]):
        return None  # "Who was also arrested?", "Who was formerly managing director?"
    n = _subject_length(rest[1:])
    if n == 0 and (aux in _DO or aux in MODALS or (aux in _BE_HAVE and not _participle(rest[1]))):
        # "did police arrest", "have farmers been protesting", "will fans get"
        n = _bare_subject_length(rest[1:])
        if aux in MODALS and not _bare_plural_subject(rest[1:]):
            n = _bare_subject_before_be(rest[1:])
            if n == 0:
                return None  # "Who will lead the team?": the modal's verb, no subject between
    if aux in _DO:
        n = _do_subject(rest[1:], n)
    if aux in _BE_HAVE:
        n = _be_have_subject(rest[1:], n)
        if aux in _BE and _described(rest[1:], n):
            return None  # "Who is the police officer leading the inquiry?": the answer is it
    elif aux in MODALS and _word_after(rest, n).lower() not in ("be", "have"):
        n = _modal_subject(rest[1:], n)
    subject, after = rest[1 : 1 + n], rest[1 + n :]
    if n == 0 or not after:
        return None  # "Who was the captain?": the auxiliary is the main verb
    adverb = after[:2] if _no_longer(after) else after[:1] if _is_adverb(after[0]) else []
    adverb = adverb if len(after) > len(adverb) else []
    verb, tail = after[len(adverb)], after[1 + len(adverb) :]
    if aux == "did":
        verbs = [past_tense(verb)]
    elif aux == "does":
        verbs = [third_person(verb)]
    elif aux == "do":
        verbs = [verb]
    else:
        verbs = [rest[0], verb]
        # "would the board have chosen", "will fish be raised": the participle after a modal's
        # be/have (and "been"/"being") goes with the verbs, the answer after them
        while aux in MODALS and verbs[-1].lower() in ("be", "have", "been", "being") and tail:
            if not (_participle(tail[0]) or tail[0].lower() in ("been", "being")):
                break
            verbs, tail = [*verbs, tail[0]], tail[1:]
    verbs = [*adverb, *verbs] if aux in _DO else [*verbs[:-1], *adverb, verbs[-1]]
    if aux in ("did", "does") and len(tail) > 1 and tail[0].lower() in ("and", "or"):
        # "did the teenager live and train": both verbs take the tense
        verbs += [tail[0], past_tense(tail[1]) if aux == "did" else third_person(tail[1])]
        tail = tail[2:]
    if tail and tail[-1].lower() in PREPOSITIONS:
        return " ".join([*subject, *verbs, *tail, answer])
    return " ".join([*subject, *verbs, answer, *tail])


def to_cloze(question: str) -> str:
    """The cloze sentence for `question`: itself when it holds `@placeholder` (whether it
    holds exactly one is checked where it is tokenized), else the rewritten plain question.
    Raises UnsupportedQuestion for other questions."""
    if PLACEHOLDER in question:
        return question
    lead, words = _lead_and_words(question)
    if words and words[0].lower() == "where":
        cloze = _where_within(words[1:], question)
    elif (naming := _naming_clause(words)) is not None:
        cloze = naming
    else:
        wh = _wh_phrase(words) if words else None
        if wh is None or not wh[1]:
            raise UnsupportedQuestion(f"cannot read {question[:80]!r}: {FORMS}")
        answer, rest = wh
        cloze = _object_clause(answer, rest) or " ".join([answer, *rest])
    # A phrase before the wh-word ("Apart from Fort William, where ...") follows the
    # statement, so its words (and the names it leaves out) stay in the question.
    return " , ".join([cloze, " ".join(lead)] if lead else [cloze]).replace(" , ", ", ")


_NAMED = ("called", "named")


def _naming_clause(words: list[str]) -> str | None:
    """A question asking what a thing is called, as a statement in its tense: "What will the
    merged company be called?" -> "the merged company will be called @placeholder", "What
    was the name of the man's business?" -> "the man's business was called @placeholder";
    None for any other question."""
    low = [w.lower() for w in words]
    if len(low) < 4 or low[0] != "what" or low[1] not in _KEPT_AUXILIARIES:
        return None
    if low[1] in _BE and low[2:4] == ["the", "name"] and len(low) > 5 and low[4] == "of":
        subject, verb = words[5:], [low[1], "called"]
    elif low[-1] in _NAMED:
        subject, verb = words[2:-1], [low[1], low[-1]]
        if subject and subject[-1].lower() in ("be", "been"):  # "will ... be called"
            verb.insert(1, subject.pop().lower())
    else:
        return None
    return " ".join([*subject, *verb, PLACEHOLDER]) if subject else None


# What a question asks for.
AGENT, PERSON, PLACE, ORGANISATION = "agent", "person", "place", "organisation"
TOWN = "town"  # a place within a country: "Which town ...?", "In which city ...?"
# Nouns of "(In) which <noun>" that ask for a place; of these, a town's.
_PLACE_NOUNS = _words(
    "city town village country region province county district capital port island nation "
    "neighbourhood neighborhood suburb area place state airport stadium"
)
_TOWN_NOUNS = _words("city town village capital port neighbourhood neighborhood suburb")


# A Who-question whose verb is one of these asks for a person: what people do and companies
# do not (run, chair, coach a thing; warn, fear, expect), or what is done to people (jailed,
# appointed).
_PERSON_VERBS = _words(
    """
    run runs ran chair chairs chaired lead leads led head heads headed coach coaches coached
    direct directs directed manage manages managed captain captains captained found founds
    founded co-founded cofounded start starts started paint paints
    painted compose composes composed represent represents represented
    warn warns warned fear fears feared expect expects expected hope hopes hoped believe
    believes believed think thinks thought insist insists insisted argue argues argued admit
    admits admitted urge urges urged complain complains complained predict predicts predicted
    estimate estimates estimated describe describes described said says told tells speak
    speaks spoke
    """
)
_DONE_TO_PEOPLE = _words(
    """
    jailed arrested charged questioned suspended elected appointed named sacked fired
    dismissed injured killed hurt sentenced hired replaced promoted convicted acquitted born
    interviewed detained
    """
)
# "Whom did Jung replace?": verbs whose object is a person.
_PERSON_OBJECT_VERBS = _words("replace hire appoint name sack fire interview elect succeed")
# "Who is the chief executive ...?", "Who served as the chief arbiter?"
_ROLE_VERBS = _words("is was are were serves served acts acted became becomes")


def _asks_for_person(words: list[str]) -> bool:
    """Whether a Who/Whom-question (lower-cased words, the wh-word first) asks for a person."""
    rest = words[1:]
    if words[0] == "whom":  # the verb after the auxiliary and its subject
        return len(rest) > 2 and any(w in _PERSON_OBJECT_VERBS for w in rest[2:6])
    if not rest:
        return False
    if rest[0] in _PERSON_VERBS or rest[0] == "from":  # "Who from the funder visited ...?"
        return True
    if rest[0] in _BE_HAVE and any(w in _DONE_TO_PEOPLE for w in rest[1:3]):
        return True  # "Who was jailed ...?", "Who has been appointed ...?"
    if rest[0] in _ROLE_VERBS:
        role = [w for w in rest[1:6] if w not in _DETERMINERS and w not in ("as", "acting")]
        return any(w in ROLES for w in role[:3])
    return False


def asks_for(question: str) -> str | None:
    """What a plain question asks for: "person" for a Who/Whom-question whose verb or role
    only a person fills ("Who chairs Hanul?", "Who was jailed?", "Who is the chief
    executive of Rimal?") and for "Which <role or nationality> ...?" ("Which Brazilian
    ...?"); "agent" (a person or an organisation) for other Who, Whom and Whose questions;
    "place" for Where and "(In) which/what <place noun>" ("In which region ...?"), "town"
    where that noun is a town's ("In which city ...?");
    "organisation" for "Which <organisation noun>" ("Which bank ...?"); None for a cloze
    sentence and every other question (a Which-question's noun is kept in its cloze too: "the
    bank @placeholder ...")."""
    if PLACEHOLDER in question:
        return None
    cased = _question_words(question)  # as to_cloze reads it: names by their capitals
    words = [w.lower() for w in cased]
    if not words:
        return None
    if words[0] in ("who", "whom") and _asks_for_person(words):
        return PERSON
    if words[0] in ("who", "whom", "whose"):
        return AGENT
    if words[0] == "where":
        return PLACE
    if words[0] in ("which", "what"):
        # "Which is the second company ...?": the noun after "is the"
        at = 2 if _asks_what_is(cased) else 0
        n = _noun_phrase_length(words[1 + at :])
        noun = _POSSESSIVE.sub("", words[at + n]) if n else ""  # "Which company's workers ...?"
        if noun in _PLACE_NOUNS:
            return TOWN if noun in _TOWN_NOUNS else PLACE
        if noun in ORG_NOUNS:
            return ORGANISATION
        # "Which Brazilian ...?"; not "Which prosecutor's office ...?", an office's name
        if n and (words[at + n] in ROLES or is_demonym(words[at + n])):
            return PERSON
    return None


def _where_clause(rest: list[str], question: str) -> str:
    """ "Where did Anna study" -> "Anna studied in @placeholder"; "Where is the clinic" ->
    "the clinic is in @placeholder": the answer is a place the statement puts its subject in."""
    clause = _object_clause(PLACEHOLDER, [*rest, "in"]) if len(rest) > 1 else None
    if clause is None and len(rest) > 1 and rest[0].lower() in _BE:
        clause = " ".join([*rest[1:], rest[0].lower(), "in", PLACEHOLDER])
    if clause is None:
        raise UnsupportedQuestion(f"cannot read {question[:80]!r}: {FORMS}")
    return clause


def _where_within(rest: list[str], question: str) -> str:
    """A Where-question asking within a place first (in, at, on ...): "Where in China is the
    centre located" -> "the centre is located in @placeholder in China", "Where at Dougga is
    ..." (the place named stays in the question, so it is no answer); any other
    Where-question as `_where_clause` reads it."""
    if rest and rest[0].lower() in _WITHIN:
        verb = next((i for i, w in enumerate(rest) if w.lower() in AUXILIARIES), 0)
        if 1 < verb <= MAX_WITHIN_WORDS + 1 and verb < len(rest) - 1:
            return " ".join([_where_clause(rest[verb:], question), *rest[:verb]])
    return _where_clause(rest, question)


MAX_WITHIN_WORDS = 4
_WITHIN = _words("in at on within inside")  # "Where at Dougga is ...", "Where on the island ..."


_BE = _words("is are was were")


def _question_words(question: str) -> list[str]:
    """A plain question's words from its wh-word on (`_lead_and_words`)."""
    return _lead_and_words(question)[1]


def _lead_and_words(question: str) -> tuple[list[str], list[str]]:
    """(the words of a phrase before the wh-word, else []; the question's words from it on)
    without the question mark, a fronted preposition moved last (`_preposition_last`), "Which
    of the two banks" read as "Which bank" (`_one_of`). A comma stands apart: it ends the
    wh-phrase's noun before an appositive ("Which investor, the biggest in the brewer, backed
    the deal?") and a phrase before the wh-word ("Apart from Oslo, where ...")."""
    words = _CLAUSE_COMMA.sub(" , ", question.strip().rstrip("?")).split()
    lead: list[str] = []
    if words[:2] == ["Where", ","] and "," in words[2 : MAX_LEAD_WORDS + 3]:
        # "Where, besides Dubai, does ...": the phrase between the commas read as one before
        # the wh-word ("Besides Dubai, where does ..."); after "Who," it stays beside the
        # answer ("Who, an outside researcher, said ...")
        comma = words.index(",", 2)
        words = [*words[2:comma], ",", words[0], *words[comma + 1 :]]
    if words and not _opens_question(words, 0) and "," in words[: MAX_LEAD_WORDS + 1]:
        comma = words.index(",")
        if comma > 0 and _opens_question(words, comma + 1):  # ", what ...": no phrase before it
            lead, words = words[:comma], words[comma + 1 :]
            lead[0] = lead[0] if lead[0][1:2].isupper() else lead[0][:1].lower() + lead[0][1:]
    return lead, _one_of(_preposition_last(words))


MAX_LEAD_WORDS = 8
WH_WORDS = _words("who whom whose which what where")


def _opens_question(words: list[str], i: int) -> bool:
    """Whether words[i:] open with a wh-word, or a preposition and Which/What/Whom."""
    if i >= len(words):
        return False
    first = words[i].lower()
    if first in WH_WORDS:
        return True
    return first in PREPOSITIONS and i + 1 < len(words) and words[i + 1].lower() in _FRONTED


def _one_of(words: list[str]) -> list[str]:
    """ "Which of the two institutions ran ..." -> "Which institution ran ...": one of
    several the text names, asked for by their noun, made singular."""
    if len(words) < 4 or words[0].lower() not in ("which", "what") or words[1].lower() != "of":
        return words
    k = 2 + (words[2].lower() in _DETERMINERS)
    k += k < len(words) and (words[k].isdigit() or words[k].lower() in _SMALL_NUMBERS)
    rest = words[k:]
    if rest and rest[0].lower() in _OBJECT_PRONOUNS:
        return ["who", *rest[1:]]  # "Which of them won?": the answer, no noun
    n = _noun_phrase_length(["which", *rest])
    if n == 0:
        return words
    return [words[0], *rest[: n - 1], _singular(rest[n - 1]), *rest[n:]]


_SMALL_NUMBERS = _words("two three four five six seven eight nine ten")
_OBJECT_PRONOUNS = _words("them us you these those")


def _singular(noun: str) -> str:
    """A plural noun made singular by its regular endings ("companies", "branches", "banks")."""
    low = noun.lower()
    if low.endswith("ies") and len(low) > 4:
        return noun[:-3] + "y"
    if low.endswith(("ches", "shes", "sses", "xes")):
        return noun[:-2]
    if low.endswith("s") and not low.endswith(_NOT_PLURAL):
        return noun[:-1]
    return noun


_CLAUSE_COMMA = re.compile(r",(?=\s|$)")  # not the comma of "8,000"


def _preposition_last(words: list[str]) -> list[str]:
    """A Which/What/Whom/Whose question that opens with its preposition, as people often ask
    it ("In whose home ...", "Close to which lake ..."), with the preposition moved to the end,
    where the object clause places the answer after it: "In which city was the plant built"
    -> "which city was the plant built in"; and a phrase that ends in one ("On the slopes of
    which mountain is the drilling taking place" -> "which mountain is the drilling taking
    place on the slopes of")."""
    if len(words) < 3 or not (
        words[0].lower() in PREPOSITIONS
        or (words[0].lower() in _PREPOSITION_HEADS and words[1].lower() in ("to", "of"))
    ):
        return words
    for k in range(1, min(len(words) - 1, MAX_LEAD_WORDS)):
        if words[k].lower() in _FRONTED and words[k - 1].lower() in PREPOSITIONS:
            return [*words[k:], words[0].lower(), *words[1:k]]
        if not words[k].isalpha():
            break
    return words


_FRONTED = _words("which what whom whose")
# Words that open a preposition of two: "Close to which lake ...?", "Ahead of whom ...?"
_PREPOSITION_HEADS = _words("close next near ahead")
