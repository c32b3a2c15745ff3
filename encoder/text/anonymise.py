"""Entity anonymisation: names become `@entityN` markers, and back.

Documents become lower-cased tokens in which every entity is a marker `@entity{i}`; the entity
map `entities[i]` gives the name back. The reader only ever sees markers, so it has to answer
from what the document says about an entity rather than from what it knows about a name. The
data builder and the service both come through here, with the same finder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from encoder.text.entities import (
    Entity,
    document_entities,
    is_common_word,
    name_key,
    short_names,
)
from encoder.text.kinds import NAME_NOUNS
from encoder.text.tokens import (
    PLACEHOLDER,
    TOKEN_RE,
    cut_around_placeholder,
    entity_index,
    entity_marker,
    lower_all,
    raw_tokens,
    tokenize,
)


@dataclass(frozen=True)
class AnonymisedText:
    tokens: list[str]  # tokenized text with entity surfaces replaced by @entityN markers
    entities: list[str]  # entities[i] = the name of @entity{i}
    mentions: list[int]  # mentions[i] = how often @entity{i} occurs in this text
    unplaced: list[str]  # names found beyond the free slots: they stay plain words
    # spans[i]: (start, end) character offsets in the text of each mention of @entity{i};
    # empty unless asked for
    spans: list[list[tuple[int, int]]] = field(default_factory=list)


_Pattern = tuple[tuple[str, ...], bool, int]


def _surface_patterns(
    surfaces: Sequence[tuple[str, int]], any_case: bool, cased: frozenset[str]
) -> list[_Pattern]:
    """(lower-cased tokens, must start capitalised, owner), longest first."""
    patterns = []
    for surface, owner in surfaces:
        raw = raw_tokens(surface)
        if not raw:
            continue
        words = tuple(t.lower() for t in raw)
        # In a question, "musharraf" is Musharraf; "may" is still a verb unless capitalised.
        needs_capital = raw[0][:1].isupper() and (
            not any_case or is_common_word(words) or (len(words) == 1 and words[0] in cased)
        )
        patterns.append((words, needs_capital, owner))
    # Longest first so "Frank Churchill" wins over "Frank" when both are candidates.
    patterns.sort(key=lambda p: -len(p[0]))
    return patterns


class EntityMatcher:
    """Finds entity surfaces in text, longest match first; build once, use on many texts.

    surfaces: (surface, owner) pairs; several surfaces may share an owner (a name and its
    aliases). A surface written with a capital only matches a capitalised occurrence, so the
    candidate "Bath" does not swallow "a bath" (any_case lifts that for all but common words,
    and the one-word surfaces in `cased`).
    """

    def __init__(
        self,
        surfaces: Sequence[tuple[str, int]],
        *,
        any_case: bool = False,
        cased: frozenset[str] = frozenset(),
    ) -> None:
        self._by_first: dict[str, list[_Pattern]] = {}
        for p in _surface_patterns(surfaces, any_case, cased):
            self._by_first.setdefault(p[0][0], []).append(p)

    def _spans(self, raw: list[str], lows: list[str]) -> list[tuple[int, int, int]]:
        """(start, tokens, owner) of each match, left to right; a match hides what it spans.
        Only tokens that begin some surface are tried (most tokens begin none)."""
        by_first = self._by_first
        spans: list[tuple[int, int, int]] = []
        covered = 0  # tokens before this index are inside an earlier match
        for i in [i for i, low in enumerate(lows) if low in by_first]:
            if i < covered:
                continue
            for words, needs_capital, owner in by_first[lows[i]]:
                if needs_capital and not raw[i][:1].isupper():
                    continue
                n = len(words)
                if tuple(lows[i : i + n]) == words:
                    spans.append((i, n, owner))
                    covered = i + n
                    break
        return spans

    def mark(self, text: str) -> list[tuple[str, int | None]]:
        """(lower-cased token, None) for plain tokens, ("", owner) for a match (which may
        span several tokens)."""
        raw = raw_tokens(text)
        lows = lower_all(raw)
        return self._marked(lows, self._spans(raw, lows))

    def mark_with_offsets(
        self, text: str
    ) -> tuple[list[tuple[str, int | None]], list[tuple[int, int]]]:
        """`mark`, and the (start, end) character offsets of each match, in order."""
        found = list(TOKEN_RE.finditer(text))  # raw_tokens' tokens, with their offsets
        raw = [m.group() for m in found]
        lows = lower_all(raw)
        spans = self._spans(raw, lows)
        offsets = [(found[start].start(), found[start + n - 1].end()) for start, n, _ in spans]
        return self._marked(lows, spans), offsets

    @staticmethod
    def _marked(lows: list[str], spans: list[tuple[int, int, int]]) -> list[tuple[str, int | None]]:
        out: list[tuple[str, int | None]] = []
        pos = 0
        for start, n, owner in spans:
            out += [(low, None) for low in lows[pos:start]]
            out.append(("", owner))
            pos = start + n
        out += [(low, None) for low in lows[pos:]]
        return out

    def replace(self, text: str, marker: Callable[[int], str]) -> list[str]:
        """Lower-cased tokens with each match replaced by marker(owner): `mark`, flattened,
        without a pair per token (the question path calls this per question)."""
        raw = raw_tokens(text)
        lows = lower_all(raw)
        spans = self._spans(raw, lows)
        if not spans:
            return lows
        out: list[str] = []
        pos = 0
        for start, n, owner in spans:
            out += lows[pos:start]
            out.append(marker(owner))
            pos = start + n
        out += lows[pos:]
        return out


def entity_surfaces(entities: Sequence[Entity]) -> list[tuple[str, int]]:
    """(surface, index) for each entity's name and aliases."""
    return [(s, i) for i, e in enumerate(entities) for s in (e.name, *e.aliases)]


def anonymise_document(
    text: str,
    candidates: Sequence[str] | None = None,
    *,
    max_entities: int | None,
    known: Sequence[str] = (),
    with_spans: bool = False,
) -> AnonymisedText:
    """Tokenize `text` and replace entity mentions by `@entityN` markers.

    candidates: the names to replace; None finds them with the entity finder
    (`encoder.text.entities`, the finder the data set was built with). A multi-word name's
    aliases (its surname alone, its acronym) take its marker too.
    known: an existing entity map (when text is appended to a document): its entities keep
    their slots and are replaced wherever they occur; new entities take the next free slots in
    order of first mention, up to `max_entities` (None: every entity gets one). Names beyond
    that stay plain words and are listed in `unplaced`. with_spans: also where each entity's
    mentions are in `text` (character offsets, for showing an answer in the text).
    """
    if max_entities is not None and max_entities < 1:
        raise ValueError(f"max_entities must be >= 1, got {max_entities}")
    if max_entities is not None and len(known) > max_entities:
        raise ValueError(f"{len(known)} known entities exceed max_entities={max_entities}")
    known_entities, found = document_entities(text, candidates, known)
    taken = {name_key(s) for e in known_entities for s in (e.name, *e.aliases)}
    fresh = [e for e in found if not any(name_key(s) in taken for s in (e.name, *e.aliases))]
    everyone = [*known_entities, *fresh]
    entities = list(known)
    slot_of: dict[int, int] = {i: i for i in range(len(known))}
    unplaced: dict[str, None] = {}  # insertion-ordered: a list's `in` is quadratic here
    tokens: list[str] = []
    mentions = [0] * len(known)
    spans: list[list[tuple[int, int]]] = [[] for _ in known]
    matcher = EntityMatcher(entity_surfaces(everyone))
    if with_spans:
        marked, offsets = matcher.mark_with_offsets(text)
    else:
        marked, offsets = matcher.mark(text), []
    matches = iter(offsets)
    for low, owner in marked:
        if owner is None:
            tokens.append(low)
            continue
        where = next(matches, None)
        slot = slot_of.get(owner)
        if slot is None and (max_entities is None or len(entities) < max_entities):
            slot = slot_of[owner] = len(entities)
            entities.append(everyone[owner].name)
            mentions.append(0)
            spans.append([])
        if slot is None:  # no free slot: the name stays plain words
            name = everyone[owner].name
            unplaced[name] = None
            tokens.extend(tokenize(name))
        else:
            tokens.append(entity_marker(slot))
            mentions[slot] += 1
            if where is not None:
                spans[slot].append(where)
    return AnonymisedText(
        tokens=tokens,
        entities=entities,
        mentions=mentions,
        unplaced=list(unplaced),
        spans=spans if with_spans else [],
    )


@lru_cache(maxsize=1024)
def query_matcher(entities: tuple[str, ...]) -> EntityMatcher:
    """The matcher of a document's names and short names in questions, built once per
    entity map (building it costs more than marking a question; a service asks many questions
    of the same documents). A matcher is read-only once built, so threads may share it."""
    surfaces = [(name, i) for i, name in enumerate(entities)]
    surfaces += [(alias, i) for i, alias in short_names(entities).items()]
    # "Which court ordered ...?" does not name the Bombay High Court by its last word: the
    # nouns names are made of match a question's word only where it is capitalised.
    return EntityMatcher(surfaces, any_case=True, cased=NAME_NOUNS)


def anonymise_query(text: str, entities: Sequence[str]) -> list[str]:
    """Tokenize a cloze question and replace the document's entity names by their markers.

    Names match in any case ("musharraf"), and a multi-word name's short name ("Musharraf",
    "Halden" for "Halden Group") alone is that name where no other entity shares it. Raises
    ValueError unless the question holds exactly one `@placeholder`.
    """
    tokens = query_matcher(tuple(entities)).replace(text, entity_marker)
    count = tokens.count(PLACEHOLDER)
    if count != 1:
        raise ValueError(f"a question needs exactly one {PLACEHOLDER}, found {count}")
    return tokens


@dataclass(frozen=True)
class PreparedQuestion:
    tokens: list[str]  # as the reader sees it: names as markers, cut to its question window
    named: frozenset[int]  # the entity slots the whole question names, before the cut
    whole: list[str]  # the whole question, names as markers, before the cut


def prepare_question(
    question: str, entities: Sequence[str], window: tuple[int, int] | None
) -> PreparedQuestion:
    """A question as the reader sees it, wherever it is asked (the answers route and
    `cheapqa evaluate` both come here): names to the document's markers, then cut to the
    window of the reader's training questions; and the entities it names, which are not
    its answer ("Who rejected two offers from Halden?" is not answered "Halden")."""
    tokens = anonymise_query(question, entities)
    named = frozenset(
        i for t in tokens if t.startswith("@entity") and (i := entity_index(t)) is not None
    )
    cut = tokens if window is None else cut_around_placeholder(tokens, *window)
    return PreparedQuestion(cut, named, tokens)
