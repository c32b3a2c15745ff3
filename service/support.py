"""Where a document names its entities, kept with its record when it is indexed or appended:
the character spans of each entity's mentions (the page and the API mark the answer in the
text) and the words around its first mentions (encoder.text.support: whether the document
supports an answer)."""

from __future__ import annotations

from encoder.text.anonymise import AnonymisedText
from encoder.text.support import MAX_WINDOWS, mention_windows
from store.record import DocumentRecord

MAX_SPANS = 64  # the first mentions of an entity whose place in the text is kept


def where_named(anon: AnonymisedText, offset: int = 0) -> tuple[list[list[int]], list[list[str]]]:
    """(spans, contexts) of a record for a text anonymised with its spans: per entity, its
    first MAX_SPANS mentions' offsets as [start, end, start, end, ...] (shifted by `offset`,
    the characters before the text), and its mention windows."""
    spans = [[x + offset for span in found[:MAX_SPANS] for x in span] for found in anon.spans]
    return spans, mention_windows(anon.tokens, len(anon.entities), anon.entities)


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
