"""How a person restates a news sentence when asking about one of its names.

A clause question keeps the sentence's own words in its own order ("@placeholder rejected two
earlier approaches"). People ask about what a story says in other words and in other
orders, and three of them recur in news (the realistic dev set's Who-questions):

- a role for a verb: "Solvind 's founder , @placeholder" asked as "@placeholder founded
  Solvind", and "@placeholder founded Solvind" asked as "@placeholder is the founder of
  Solvind"; a role with no verb as "@placeholder is Vestlys 's chairman";
- the passive turned active: "Vestlys , backed by the pension fund @placeholder" asked as
  "the pension fund @placeholder backed Vestlys", and the active turned passive:
  "@placeholder advised Brekke" as "Brekke was advised by @placeholder";
- what stands between a name and its verb left out: "Its chairman , @placeholder , said in
  a statement that ..." (an appositive or a relative clause) asked as "@placeholder said in
  a statement that ...": the clause of the name alone is empty.

`restatements(tokens, pos)` gives those that the sentence allows, for the name at `pos`, on
the builder's lower-cased, anonymised tokens (names are single `@entityN` markers). Role
nouns are tied to verbs by WordNet's derivational links ("founder" - "found"), kept where
the noun is the verb with -er/-or ("leader" - "lead", "creator" - "create"), not "letter" -
"let"; a role is a noun WordNet files under people ("chairman", not "north"); `read_roles`
reads them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from encoder.text.questions import past_tense
from encoder.text.tokens import PLACEHOLDER, entity_index
from encoder.training.data.cloze import CLAUSE_BREAKS, clause_end
from encoder.training.data.paraphrase import synset_pointers, synset_words, wordnet_rows

_BE = frozenset({"was", "were", "is", "are", "been", "being", "be"})
_DETERMINERS = frozenset({"the", "a", "an", "its", "his", "her", "their"})
# An irregular participle and the simple past it stands for (a regular one is its own past);
# the pasts are the irregular verbs `_looks_like_a_verb` knows.
_PARTICIPLE_TEXT = """
    written:wrote taken:took given:gave chosen:chose driven:drove known:knew shown:showed
    seen:saw beaten:beat broken:broke stolen:stole spoken:spoke drawn:drew begun:began
    thrown:threw grown:grew won:won led:led held:held built:built bought:bought sold:sold
    made:made found:found brought:brought caught:caught paid:paid run:ran sent:sent
    told:told kept:kept lent:lent left:left met:met hit:hit struck:struck shot:shot
    said:said heard:heard felt:felt lost:lost meant:meant read:read set:set put:put cut:cut
    become:became come:came gone:went fallen:fell risen:rose stood:stood
"""
_PARTICIPLE_PAST = dict(pair.split(":") for pair in _PARTICIPLE_TEXT.split())
_MAX_APPOSITIVE = 10  # tokens between the two commas of "@Y , an analyst at @K , said"
_MAX_AGENT_WORDS = 4  # "by the danish pension fund @Y"
_MAX_ROLE_WORDS = 3  # "@X 's chief executive @Y"
_MIN_WORDS = 2  # words besides the blank: "@placeholder founded @entity3"


def _is_name(token: str) -> bool:
    return entity_index(token) is not None


@dataclass(frozen=True)
class Roles:
    """What WordNet says of nouns that name what a person is (its first two senses read:
    index.noun lists a noun's senses commonest first, and "letter" is a document and a
    symbol before "one who lets")."""

    verbs: Mapping[str, str]  # agent noun -> its verb: "founder" -> "found"
    people: frozenset[str]  # nouns for a person: "chairman", "mayor", "sister"


_PERSON_FILE = "18"  # WordNet's lexicographer file noun.person


def read_roles(wordnet_dir: Path) -> Roles:
    """Agent nouns from WordNet's derivational pointers (noun to verb) where the noun is the
    verb with -er/-or, -r/-or after an e, or a doubled consonant and -er; people's nouns from
    the lexicographer file of their synsets."""
    verbs = {f[0]: synset_words(f) for f in wordnet_rows(wordnet_dir / "data.verb")}
    common = {
        f[0]: set(f[6 + int(f[3]) : 8 + int(f[3])])
        for f in wordnet_rows(wordnet_dir / "index.noun")
    }
    agents: dict[str, str] = {}
    people: set[str] = set()
    for f in wordnet_rows(wordnet_dir / "data.noun"):
        words = synset_words(f)
        if f[1] == _PERSON_FILE:
            people.update(w for w in words if f[0] in common.get(w, ()) and w.isalpha())
        for symbol, offset, pos, source_target in synset_pointers(f):
            if symbol != "+" or pos != "v":
                continue
            source, target = int(source_target[:2], 16), int(source_target[2:], 16)
            noun = words[source - 1] if source else None
            if noun is None or f[0] not in common.get(noun, ()):
                continue
            verb_words = verbs.get(offset, [])
            verb = verb_words[target - 1] if target and target <= len(verb_words) else None
            if verb and noun.isalpha() and verb.isalpha() and _agent_of(noun, verb):
                agents.setdefault(noun, verb)
    return Roles(agents, frozenset(people))


def _agent_of(noun: str, verb: str) -> bool:
    return noun in {verb + "er", verb + "or", verb + "r", verb + verb[-1] + "er"} or (
        verb.endswith("e") and noun == verb[:-1] + "or"
    )


_AUXILIARY_TEXT = "was were is are has had have will would could can may might must should did does"
_AUXILIARIES = frozenset(_AUXILIARY_TEXT.split())


def _looks_like_a_verb(word: str) -> bool:
    """A finite verb after "@Y , ... ,", told apart without a tagger: an auxiliary, a known
    past, or -ed / -s ("said", "owns"), not -ss ("fortress")."""
    if word in _AUXILIARIES or word in _PARTICIPLE_PAST.values():
        return True
    return word.isalpha() and (
        word.endswith("ed") or (word.endswith("s") and not word.endswith("ss"))
    )


def _clause_after(tokens: Sequence[str], start: int) -> list[str]:
    return list(tokens[start : clause_end(tokens, start)])


def _skip_appositive(tokens: Sequence[str], pos: int) -> list[str] | None:
    """ "@Y , an analyst at @K , said she ..." -> "@placeholder said she ..."; "its chairman ,
    @Y , said ..." (the name is the appositive) -> "@placeholder said ..."."""
    if pos + 1 >= len(tokens) or tokens[pos + 1] != ",":
        return None
    if pos > 0 and tokens[pos - 1] == ",":
        rest = _clause_after(tokens, pos + 2)
        return [PLACEHOLDER, *rest] if rest and _looks_like_a_verb(rest[0]) else None
    for close in range(pos + 3, min(len(tokens), pos + 3 + _MAX_APPOSITIVE)):
        if tokens[close] in CLAUSE_BREAKS - {","}:
            return None
        if tokens[close] != ",":
            continue
        inside = tokens[pos + 2 : close]
        if (len(inside) == 1 and _is_name(inside[0])) or inside[0] in {"and", "or"}:
            return None  # a list of names, not an appositive
        rest = _clause_after(tokens, close + 1)
        if not rest or not _looks_like_a_verb(rest[0]):
            return None
        return [PLACEHOLDER, *rest]
    return None


def _role_phrase(tokens: Sequence[str], pos: int) -> tuple[str, list[str]] | None:
    """The name whose role the name at `pos` holds and the role's words: "@X 's founder ,
    @Y", "@X 's founder @Y", "the founder of @X , @Y", "@Y , the founder of @X",
    "@Y , @X 's founder"."""
    before = list(tokens[max(0, pos - _MAX_ROLE_WORDS - 3) : pos])
    if before and before[-1] == ",":
        before.pop()
    if "'s" in before:  # "@X 's chief executive (,) @Y"
        at = len(before) - 1 - before[::-1].index("'s")
        role = before[at + 1 :]
        fits = 0 < len(role) <= _MAX_ROLE_WORDS and all(w.isalpha() for w in role)
        if at >= 1 and _is_name(before[at - 1]) and fits:
            return before[at - 1], role
    if "of" in before:  # "the founder of @X , @Y"
        at = before.index("of")
        if at + 2 == len(before) and _is_name(before[at + 1]) and at >= 1:
            role = [w for w in before[:at] if w not in _DETERMINERS][-_MAX_ROLE_WORDS:]
            if role and all(w.isalpha() for w in role):
                return before[at + 1], role
    after = list(tokens[pos + 1 : pos + 3 + _MAX_ROLE_WORDS + 2])
    if after[:1] != [","]:
        return None
    after = after[1:]
    if after and after[0] in _DETERMINERS:
        after = after[1:]
    if len(after) >= 3 and _is_name(after[0]) and after[1] == "'s":  # "@Y , @X 's founder"
        role = _words_until_break(after[2:])
        return (after[0], role) if role else None
    role = _words_until_break(after)  # "@Y , the founder of @X"
    if role and len(role) < len(after) - 1 and after[len(role)] == "of":
        owner = after[len(role) + 1]
        return (owner, role) if _is_name(owner) else None
    return None


def _words_until_break(words: Sequence[str]) -> list[str]:
    role: list[str] = []
    for w in words:
        if not w.isalpha() or w == "of" or len(role) == _MAX_ROLE_WORDS:
            break
        role.append(w)
    return role


def _from_role(tokens: Sequence[str], pos: int, roles: Roles) -> list[list[str]]:
    found = _role_phrase(tokens, pos)
    if found is None or found[1][-1] not in roles.people:
        return []
    owner, role = found
    verb = roles.verbs.get(role[-1])
    if verb is not None and len(role) == 1:
        return [[PLACEHOLDER, past_tense(verb), owner]]
    return [[PLACEHOLDER, "is", owner, "'s", *role], [PLACEHOLDER, "is", "the", *role, "of", owner]]


def _from_passive(tokens: Sequence[str], pos: int) -> list[list[str]]:
    """ "@X , backed by the pension fund @Y" -> "the pension fund @placeholder backed @X"."""
    by = next(
        (i for i in range(pos - 1, max(-1, pos - 2 - _MAX_AGENT_WORDS), -1) if tokens[i] == "by"),
        None,
    )
    if by is None or any(_is_name(t) or t in CLAUSE_BREAKS for t in tokens[by + 1 : pos]):
        return []
    agent_words = [t for t in tokens[by + 1 : pos] if t not in _DETERMINERS]
    verb_at = next(
        (
            i
            for i in range(by - 1, max(-1, by - 4), -1)
            if tokens[i].endswith("ed") or tokens[i] in _PARTICIPLE_PAST
        ),
        None,
    )
    if verb_at is None:
        return []
    middle = list(tokens[verb_at + 1 : by])  # "founded in 1990 by"
    if any(t in CLAUSE_BREAKS or _is_name(t) for t in middle):
        return []
    subject = next(
        (i for i in range(verb_at - 1, max(-1, verb_at - 4), -1) if _is_name(tokens[i])),
        None,
    )
    if subject is None or not all(
        t in _BE or t in {",", "has", "have", "had", "being"} for t in tokens[subject + 1 : verb_at]
    ):
        return []
    participle = tokens[verb_at]
    past = _PARTICIPLE_PAST.get(participle, participle)
    prefix = ["the", *agent_words] if agent_words else []
    return [[*prefix, PLACEHOLDER, past, tokens[subject], *middle]]


def _from_active(tokens: Sequence[str], pos: int, roles: Roles) -> list[list[str]]:
    """ "@Y advised @X" -> "@X was advised by @placeholder"; "@Y founded @X" -> also
    "@placeholder is the founder of @X"."""
    if pos + 2 >= len(tokens) or not tokens[pos + 1].endswith("ed"):
        return []
    verb = tokens[pos + 1]
    obj = pos + 2
    if not _is_name(tokens[obj]):
        return []
    out = [[tokens[obj], "was", verb, "by", PLACEHOLDER, *_clause_after(tokens, obj + 1)]]
    nouns = [n for n, v in roles.verbs.items() if past_tense(v) == verb and n in roles.people]
    if nouns:
        out.append([PLACEHOLDER, "is", "the", min(nouns, key=len), "of", tokens[obj]])
    return out


def restatements(tokens: Sequence[str], pos: int, roles: Roles) -> list[list[str]]:
    """Questions about the name at `pos` that restate its sentence as a person would ask
    (above), each with `@placeholder` where the name was and at least `_MIN_WORDS` words
    besides it; [] when the sentence allows none. roles: `read_roles`."""
    found = [
        *([q] if (q := _skip_appositive(tokens, pos)) else []),
        *_from_role(tokens, pos, roles),
        *_from_passive(tokens, pos),
        *_from_active(tokens, pos, roles),
    ]
    return [q for q in found if len(q) - 1 >= _MIN_WORDS]
