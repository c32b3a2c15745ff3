"""Tokenization, sentences, and the two special tokens: `@entityN` markers and `@placeholder`.

Questions are cloze sentences in which the answer is `@placeholder`; entities are markers
(see encoder.text.anonymise for how names become markers).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

PLACEHOLDER = "@placeholder"
_ENTITY_PREFIX = "@entity"

# Markers stay whole; words keep an inner apostrophe-less core, clitics ('s, 't, 'll) split off
# so that "Emma's" anonymises to "@entity0 's".
TOKEN_RE = re.compile(r"@entity\d+|@placeholder|[^\W_]+|'[^\W_]+|[^\w\s]", re.UNICODE)
_MARKER_RE = re.compile(r"@entity(\d+)")


def word_set(text: str) -> frozenset[str]:
    """The words of a space-separated list, as the text modules write their lexicons."""
    return frozenset(text.split())


# Words too common to tell one passage from another: left out where text is matched by its
# words (the bag-of-words baseline, the answers' support).
_STOP_TEXT = """
    the a an and or of to in on at by for with as was were is be been had has have he she it
    his her him they them their i you we that this which not but so
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())

_TITLES_WITH_DOT = frozenset({"mr", "mrs", "ms", "dr", "st", "messrs", "rev", "col", "capt"})


# A marker typed in text from outside (a document, an appendix, a question) is two plain
# words, "@" and "entity0": only the anonymiser writes markers.
_TYPED_MARKER_RE = re.compile(r"@(?=entity\d)")
_TYPED_PLACEHOLDER_RE = re.compile(r"@(?=placeholder)")
_TYPED_ANY_RE = re.compile(f"{_TYPED_MARKER_RE.pattern}|{_TYPED_PLACEHOLDER_RE.pattern}")


def plain_text(text: str, *, question: bool = False) -> str:
    """Text from outside as the reader reads it: NFKC-normalised (a decomposed "Ame\u0301lie"
    is the name "Amélie", not three tokens), and any `@entityN` typed in it made plain words
    (in a document, `@placeholder` too; a question keeps its placeholder)."""
    return plain_text_with_offsets(text, question=question)[0]


def plain_text_with_offsets(text: str, *, question: bool = False) -> tuple[str, list[int] | None]:
    """`plain_text`, and for each of its characters (and its end) the offset in `text` it
    comes from, so that places found in the plain text point into the text as written;
    None when the plain text is `text` itself (the common case, found without a copy)."""
    typed = _TYPED_MARKER_RE if question else _TYPED_ANY_RE
    if unicodedata.is_normalized("NFKC", text) and typed.search(text) is None:
        return text, None
    parts: list[str] = []
    offsets: list[int] = []
    i = 0
    while i < len(text):
        # NFKC composes a character with the combining marks (and Hangul jamo) after it.
        j = i + 1
        while j < len(text) and (unicodedata.combining(text[j]) or "\u1160" <= text[j] <= "\u11ff"):
            j += 1
        chunk = unicodedata.normalize("NFKC", text[i:j])
        parts.append(chunk)
        offsets += [i] * len(chunk)
        i = j
    offsets.append(len(text))
    plain = "".join(parts)
    escaped: list[str] = []
    escaped_offsets: list[int] = []
    last = 0
    for m in typed.finditer(plain):
        cut = m.end()  # after the "@": a space there, from the same place as what follows
        escaped.append(plain[last:cut] + " ")
        escaped_offsets += [*offsets[last:cut], offsets[cut]]
        last = cut
    escaped.append(plain[last:])
    escaped_offsets += offsets[last:]
    return "".join(escaped), escaped_offsets


def entity_marker(i: int) -> str:
    """The marker of entity slot i: `@entity{i}`."""
    if i < 0:
        raise ValueError(f"entity index must be >= 0, got {i}")
    return f"{_ENTITY_PREFIX}{i}"


def entity_index(token: str) -> int | None:
    """i for a token `@entity{i}`, None for any other token."""
    m = _MARKER_RE.fullmatch(token)
    return int(m.group(1)) if m else None


def raw_tokens(text: str) -> list[str]:
    """Tokens with their original case (markers as written): TOKEN_RE's matches.

    No token spans whitespace, and a whitespace-free chunk of letters and digits is one
    token, so the regex only runs on the chunks that hold punctuation or markers: the same
    tokens for about half the time on running text (a question is tokenised per request)."""
    out: list[str] = []
    findall = TOKEN_RE.findall
    for chunk in text.split():  # str.split and the regex's \s: the same whitespace
        if chunk.isalnum():  # isalnum is \w without "_", i.e. [^\W_]+
            out.append(chunk)
        else:
            out += findall(chunk)
    return out


def lower_all(tokens: list[str]) -> list[str]:
    """Each token lower-cased: one str.lower over the tokens joined by NUL, cheaper than one
    call a token. A NUL token would add pieces to the split; then it is done token by token."""
    lows = "\0".join(tokens).lower().split("\0")
    return lows if len(lows) == len(tokens) else [t.lower() for t in tokens]


def tokenize(text: str) -> list[str]:
    """Lower-cased words and punctuation; `@entityN` and `@placeholder` are kept whole."""
    return lower_all(raw_tokens(text))


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
