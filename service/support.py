"""Where a document names its entities, kept with its record when it is indexed or appended:
the character spans of each entity's mentions (the page and the API mark the answer in the
text), the words around its first mentions (encoder.text.support: whether the document
supports an answer) and the sentences naming it as vectors (encoder.text.meaning)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from encoder.text.anonymise import AnonymisedText
from encoder.text.meaning import (
    DIM,
    MAX_SENTENCES,
    count,
    embed_spans,
    entity_sentences,
    extended,
    mention_places,
    pack,
    sentence_spans,
)
from encoder.text.roles import MAX_MENTIONS, MENTIONS_PER_ENTITY
from encoder.text.support import MAX_WINDOWS, mention_windows
from store.record import DocumentRecord

MAX_SPANS = 64  # the first mentions of an entity whose place in the text is kept


def where_named(anon: AnonymisedText, offset: int = 0) -> tuple[list[list[int]], list[list[str]]]:
    """(spans, contexts) of a record for a text anonymised with its spans: per entity, its
    first MAX_SPANS mentions' offsets as [start, end, start, end, ...] (shifted by `offset`,
    the characters before the text), and its mention windows."""
    return shifted_spans(anon, offset), mention_windows(
        anon.tokens, len(anon.entities), anon.entities
    )


def shifted_spans(anon: AnonymisedText, offset: int = 0) -> list[list[int]]:
    """Per entity, its first MAX_SPANS mentions' offsets as [start, end, start, end, ...],
    shifted by `offset`."""
    return [[x + offset for span in found[:MAX_SPANS] for x in span] for found in anon.spans]


def appended_where_named(
    record: DocumentRecord, anon: AnonymisedText
) -> tuple[list[list[int]], list[list[str]]]:
    """The record's spans and contexts with those of an appended text (anonymised with the
    record's entity map, so its slots extend the record's); unknown (empty) stays unknown."""
    if not record.contexts and record.entities:
        return [], []  # indexed before format 3: where its names are is not known
    spans, contexts = where_named(anon, record.chars)
    old_spans = record.spans + [[]] * (len(spans) - len(record.spans))
    old_contexts = record.contexts + [[]] * (len(contexts) - len(record.contexts))
    return (
        [(old + new)[: 2 * MAX_SPANS] for old, new in zip(old_spans, spans, strict=True)],
        [(old + new)[:MAX_WINDOWS] for old, new in zip(old_contexts, contexts, strict=True)],
    )


class Meant(NamedTuple):
    """A record's sentence and mention vectors (its format-4 and format-5 fields)."""

    sentences: list[list[int]]  # per entity, indices into sentence_vectors
    sentence_vectors: str
    named: list[list[int]]  # per entity, indices into mention_vectors
    mention_vectors: str
    texts: list[str]  # the kept sentences' text, in sentence_vectors' order (format 6)
    starts: list[int]  # where each starts in the document


NOT_MEANT = Meant([], "", [], "", [], [])


def where_meant(text: str, spans: Sequence[Sequence[int]], offset: int = 0) -> Meant:
    """A record's `Meant` for a text: per entity, the indices of the kept sentences of
    `text` that hold its mentions and of its kept mentions (spans: per entity, offsets
    shifted by `offset`, the characters before the text), with those sentences and mentions
    embedded and packed (blocking: the sentence model runs here)."""
    found = [(a + offset, b + offset) for a, b in sentence_spans(text)]
    kept, held = entity_sentences(spans, found)
    places = mention_places(spans, [found[j] for j in kept], MENTIONS_PER_ENTITY, MAX_MENTIONS)
    asked: list[list[tuple[int, int]]] = [[] for _ in kept]
    for at, start, end in (place for per in places for place in per):
        asked[at].append((start, end))
    texts = [text[found[j][0] - offset : found[j][1] - offset] for j in kept]
    vectors, parts = embed_spans(texts, asked)
    # The mentions in entity order, as `places` gives them: per sentence they come in that
    # order too.
    taken = [0] * len(kept)
    rows: list[np.ndarray] = []
    named = []
    for per in places:
        named.append(list(range(len(rows), len(rows) + len(per))))
        for at, _, _ in per:
            rows.append(parts[at][taken[at]])
            taken[at] += 1
    mentions = np.stack(rows) if rows else np.zeros((0, DIM), np.float32)
    return Meant(held, pack(vectors), named, pack(mentions), texts, [found[j][0] for j in kept])


def appended_where_meant(
    record: DocumentRecord, text: str, spans: Sequence[Sequence[int]]
) -> Meant:
    """The record's `Meant` with that of an appended text (spans: the appended text's own,
    shifted by the record's length), at most MAX_SENTENCES sentences and MAX_MENTIONS
    mentions (MENTIONS_PER_ENTITY an entity) in all; a record that keeps none (indexed
    without them) keeps none."""
    if not record.sentence_vectors and record.entities:
        return NOT_MEANT
    # A record indexed before format 6 keeps no sentences' text: it gets none (its vectors
    # and the texts would not line up).
    has_texts = len(record.sentence_texts) == count(record.sentence_vectors)
    old = Meant(
        record.sentences, record.sentence_vectors, record.named, record.mention_vectors,
        record.sentence_texts if has_texts else [], record.sentence_starts if has_texts else [],
    )  # fmt: skip
    if count(old.sentence_vectors) >= MAX_SENTENCES and count(old.mention_vectors) >= MAX_MENTIONS:
        # Full: the appended text's would not be kept, so it is not embedded.
        grown = len(spans)  # the entities after the append
        return Meant(
            old.sentences + [[]] * (grown - len(old.sentences)), old.sentence_vectors,
            old.named + [[]] * (grown - len(old.named)), old.mention_vectors,
            old.texts, old.starts,
        )  # fmt: skip
    new = where_meant(text, spans, record.chars)
    sentences, vectors = _extended(
        old.sentences, old.sentence_vectors, new.sentences, new.sentence_vectors, MAX_SENTENCES
    )
    kept = count(vectors) - count(old.sentence_vectors)
    texts, starts = ((old.texts + new.texts[:kept], old.starts + new.starts[:kept])
                     if has_texts else ([], []))  # fmt: skip
    return Meant(
        sentences, vectors,
        *_extended(old.named, old.mention_vectors, new.named, new.mention_vectors,
                   MAX_MENTIONS, MENTIONS_PER_ENTITY),
        texts, starts,
    )  # fmt: skip


def _extended(
    old_held: list[list[int]],
    old: str,
    new_held: list[list[int]],
    new: str,
    at_most: int,
    per_entity: int | None = None,
) -> tuple[list[list[int]], str]:
    """Vectors packed with, per entity, the indices of its own: the old followed by the new,
    at most `at_most` in all and `per_entity` an entity."""
    start = count(old)
    vectors = extended(old, new, at_most)
    kept = count(vectors) - start
    old_held = old_held + [[]] * (len(new_held) - len(old_held))
    held = [
        [*before, *(start + j for j in after if j < kept)][:per_entity]
        for before, after in zip(old_held, new_held, strict=True)
    ]
    return held, vectors
