"""Where a document names its entities, kept with its record when it is indexed or appended:
the character spans of each entity's mentions (the page and the API mark the answer in the
text), the words around its first mentions (encoder.text.support: whether the document
supports an answer) and the sentences naming it as vectors (encoder.text.meaning)."""

from __future__ import annotations

from collections.abc import Sequence

from encoder.text.anonymise import AnonymisedText
from encoder.text.meaning import (
    MAX_SENTENCES,
    count,
    embed,
    entity_sentences,
    extended,
    pack,
    sentence_spans,
)
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


def where_meant(
    text: str, spans: Sequence[Sequence[int]], offset: int = 0
) -> tuple[list[list[int]], str]:
    """(sentences, sentence_vectors) of a record: per entity, the indices of the kept
    sentences of `text` that hold its mentions (spans: per entity, offsets shifted by
    `offset`, the characters before the text), and those sentences embedded and packed
    (blocking: the sentence model runs here)."""
    found = [(a + offset, b + offset) for a, b in sentence_spans(text)]
    kept, held = entity_sentences(spans, found)
    vectors = embed([text[found[j][0] - offset : found[j][1] - offset] for j in kept])
    return held, pack(vectors)


def appended_where_meant(
    record: DocumentRecord, text: str, spans: Sequence[Sequence[int]]
) -> tuple[list[list[int]], str]:
    """The record's sentences and vectors with those of an appended text (spans: the
    appended text's own, shifted by the record's length), at most MAX_SENTENCES in all; a
    record that keeps none (indexed without them) keeps none."""
    if not record.sentence_vectors and record.entities:
        return [], ""
    start = count(record.sentence_vectors)
    if start >= MAX_SENTENCES:
        held = record.sentences + [[]] * (len(spans) - len(record.sentences))
        return held, record.sentence_vectors
    new_held, packed = where_meant(text, spans, record.chars)
    vectors = extended(record.sentence_vectors, packed, MAX_SENTENCES)
    kept = count(vectors) - start
    old_held = record.sentences + [[]] * (len(new_held) - len(record.sentences))
    held = [
        [*before, *(start + j for j in after if j < kept)]
        for before, after in zip(old_held, new_held, strict=True)
    ]
    return held, vectors
