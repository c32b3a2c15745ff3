"""Tokenization and entity anonymisation.

Documents become lower-cased tokens in which every entity is a marker `@entity{i}`; the entity
map `entities[i]` gives the surface string back. Questions are cloze sentences in which the
answer is `@placeholder`. The reader only ever sees markers, so it has to answer from what the
document says about an entity rather than from what it knows about a name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

PLACEHOLDER = "@placeholder"
_ENTITY_PREFIX = "@entity"

# Markers stay whole; words keep an inner apostrophe-less core, clitics ('s, 't, 'll) split off
# so that "Emma's" anonymises to "@entity0 's".
_TOKEN_RE = re.compile(r"@entity\d+|@placeholder|[^\W_]+|'[^\W_]+|[^\w\s]", re.UNICODE)
_MARKER_RE = re.compile(r"@entity(\d+)")

# Capitalised words that are not names: titles stay words ("mr. @entity3"), so do function
# words and calendar words, which start sentences or are capitalised by convention.
_NOT_NAMES_TEXT = """
    a an the and or but if of in on at to for from by with as is it its he she his her him they
    them their we us our you your i me my mine this that these those there here then than so no
    not nor yes oh ah well what which who whom whose when where why how all any some one every
    each both such very much many more most do does did have has had be been was were are am
    will would shall should can could may might must let let's upon after before while though
    indeed perhaps however yet still now only even again ever never good dear poor
    mr mrs miss ms dr st sir lady lord madam madame master colonel captain general admiral
    major lieutenant rev reverend chapter volume book part
    monday tuesday wednesday thursday friday saturday sunday
    january february march april june july august september october november december
    christmas easter god heaven aye ay esq
"""
_NOT_NAMES = frozenset(_NOT_NAMES_TEXT.split())
_TITLES_WITH_DOT = frozenset({"mr", "mrs", "ms", "dr", "st", "messrs", "rev", "col", "capt"})
_SENTENCE_END = frozenset({".", "!", "?"})
_OPENERS = frozenset({'"', "'", "(", "[", "“", "‘", "-", "—", ":", ";"})


def entity_marker(i: int) -> str:
    """The marker of entity slot i: `@entity{i}`."""
    if i < 0:
        raise ValueError(f"entity index must be >= 0, got {i}")
    return f"{_ENTITY_PREFIX}{i}"


def entity_index(token: str) -> int | None:
    """i for a token `@entity{i}`, None for any other token."""
    m = _MARKER_RE.fullmatch(token)
    return int(m.group(1)) if m else None


def _raw_tokens(text: str) -> list[str]:
    """Tokens with their original case (markers as written)."""
    return _TOKEN_RE.findall(text)


def tokenize(text: str) -> list[str]:
    """Lower-cased words and punctuation; `@entityN` and `@placeholder` are kept whole."""
    return [t.lower() for t in _raw_tokens(text)]


def split_sentences(text: str) -> list[str]:
    """Split running text into sentences at . ! ? (not after titles such as "Mr.").

    A closing quote right after the end mark stays with its sentence.
    """
    sentences: list[str] = []
    start = 0
    for m in re.finditer(r"[.!?]+[\"'”’)]*(?=\s+|$)", text):
        end = m.end()
        before = text[start : m.start()].split()
        last_word = before[-1].lower().strip("\"'“‘(") if before else ""
        if m.group().startswith(".") and last_word in _TITLES_WITH_DOT:
            continue
        # A single capital letter before the dot is an initial ("J. Smith"), not an end.
        if m.group() == "." and len(last_word) == 1 and last_word.isalpha():
            continue
        sentence = text[start:end].strip()
        if sentence:
            sentences.append(sentence)
        start = end
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def _is_capitalised(token: str) -> bool:
    # All-caps words are headings or shouting ("CHAPTER", "EMMA").
    # Single letters are initials or "I".
    return len(token) > 1 and token[:1].isupper() and token.isalpha() and not token.isupper()


def find_candidates(text: str, *, min_count: int = 1) -> list[str]:
    """Proper names in `text` by a heuristic, in order of first appearance.

    A word is a name when it is capitalised, is never written in lower case in the text, is not
    a function word, title or calendar word, and appears capitalised at least once where a
    sentence does not start (so that capitals due to position alone are not taken for names).
    """
    tokens = _raw_tokens(text)
    lower_seen = {t for t in tokens if t.isalpha() and t.islower()}
    counts: dict[str, int] = {}
    mid_sentence: set[str] = set()
    order: list[str] = []
    prev = "."
    for i, tok in enumerate(tokens):
        if _is_capitalised(tok):
            low = tok.lower()
            if low not in _NOT_NAMES and low not in lower_seen:
                if tok not in counts:
                    order.append(tok)
                counts[tok] = counts.get(tok, 0) + 1
                starts = prev in _SENTENCE_END or (
                    prev in _OPENERS and (i < 2 or tokens[i - 2] in _SENTENCE_END)
                )
                if not starts:
                    mid_sentence.add(tok)
        # "Mr." does not end a sentence, so the name after it is mid-sentence.
        is_title_dot = tok == "." and i > 0 and tokens[i - 1].lower() in _TITLES_WITH_DOT
        prev = "," if is_title_dot else tok
    return [t for t in order if t in mid_sentence and counts[t] >= min_count]


@dataclass(frozen=True)
class AnonymisedText:
    tokens: list[str]  # tokenized text with entity surfaces replaced by @entityN markers
    entities: list[str]  # entities[i] = surface string of @entity{i}


def _surface_patterns(surfaces: Sequence[str]) -> list[tuple[tuple[str, ...], bool, int]]:
    """(lower-cased tokens, must start capitalised, position in surfaces), longest first."""
    patterns = []
    for pos, surface in enumerate(surfaces):
        raw = _raw_tokens(surface)
        if not raw:
            continue
        patterns.append((tuple(t.lower() for t in raw), raw[0][:1].isupper(), pos))
    # Longest first so "Frank Churchill" wins over "Frank" when both are candidates.
    patterns.sort(key=lambda p: -len(p[0]))
    return patterns


def _replace_surfaces(raw: list[str], surfaces: Sequence[str]) -> list[tuple[str, int | None]]:
    """Scan raw tokens for the surfaces, longest match first.

    Returns (lower-cased token, None) for plain tokens and ("", pos) for a match of
    surfaces[pos] (which may span several tokens). Matching is on
    lower-cased tokens, but a surface written with a capital only matches a capitalised
    occurrence, so the candidate "Bath" does not swallow "a bath".
    """
    patterns = _surface_patterns(surfaces)
    by_first: dict[str, list[tuple[tuple[str, ...], bool, int]]] = {}
    for p in patterns:
        by_first.setdefault(p[0][0], []).append(p)
    out: list[tuple[str, int | None]] = []
    i = 0
    while i < len(raw):
        low = raw[i].lower()
        matched = None
        for words, needs_capital, pos in by_first.get(low, ()):
            n = len(words)
            if needs_capital and not raw[i][:1].isupper():
                continue
            if tuple(t.lower() for t in raw[i : i + n]) == words:
                matched = (n, pos)
                break
        if matched is None:
            out.append((low, None))
            i += 1
        else:
            out.append(("", matched[1]))
            i += matched[0]
    return out


def anonymise_document(
    text: str,
    candidates: Sequence[str] | None = None,
    *,
    max_entities: int,
    known: Sequence[str] = (),
) -> AnonymisedText:
    """Tokenize `text` and replace entity surfaces by `@entityN` markers.

    candidates: the surfaces to replace; None finds proper names with `find_candidates`.
    known: an existing entity map (when text is appended to a document): its entities keep
    their slots and are replaced wherever they occur; new entities take the next free slots in
    order of first appearance, up to `max_entities`. Candidates beyond that stay plain words.
    """
    if max_entities < 1:
        raise ValueError(f"max_entities must be >= 1, got {max_entities}")
    if len(known) > max_entities:
        raise ValueError(f"{len(known)} known entities exceed max_entities={max_entities}")
    raw = _raw_tokens(text)
    found = find_candidates(text) if candidates is None else list(candidates)
    surfaces = list(dict.fromkeys([*known, *(c.strip() for c in found if c.strip())]))
    entities = list(known)
    slot_of_surface = {s: i for i, s in enumerate(entities)}
    tokens: list[str] = []
    for low, pos in _replace_surfaces(raw, surfaces):
        if pos is None:
            tokens.append(low)
            continue
        surface = surfaces[pos]
        slot = slot_of_surface.get(surface)
        if slot is None and len(entities) < max_entities:
            slot = len(entities)
            entities.append(surface)
            slot_of_surface[surface] = slot
        if slot is None:  # no free slot: the name stays a plain word
            tokens.extend(tokenize(surface))
        else:
            tokens.append(entity_marker(slot))
    return AnonymisedText(tokens=tokens, entities=entities)


def anonymise_query(text: str, entities: Sequence[str]) -> list[str]:
    """Tokenize a cloze question and replace the document's entity surfaces by their markers.

    Raises ValueError unless the question holds exactly one `@placeholder`.
    """
    tokens: list[str] = []
    for low, pos in _replace_surfaces(_raw_tokens(text), list(entities)):
        tokens.append(low if pos is None else entity_marker(pos))
    count = tokens.count(PLACEHOLDER)
    if count != 1:
        raise ValueError(f"a question needs exactly one {PLACEHOLDER}, found {count}")
    return tokens


def cut_around_placeholder(tokens: Sequence[str], before: int, after: int) -> list[str]:
    """At most `before` tokens before `@placeholder` and `after` after it.

    The shipped readers were trained on questions cut this way (the values are in the
    checkpoint's meta, `data.options.query_tokens_before/after`); cutting served questions
    the same way keeps them like the training data.
    """
    tokens = list(tokens)
    if tokens.count(PLACEHOLDER) != 1:
        raise ValueError(f"a question needs exactly one {PLACEHOLDER}")
    p = tokens.index(PLACEHOLDER)
    return tokens[max(0, p - before) : p + after + 1]
