"""Whether the document supports an answer: the question's words found near the answer.

    support(a) = max over the kept mentions m of a  |Q ∩ W(m)| / |Q|

Q is what tells the question's passage apart: the document's other names it mentions (as
markers) and its words that are no stop words; W(m) the words within `WIDTH` tokens of a
mention m of the answer, and the words of its name (the "bank" of "Which bank ...?" is in
"Fjord Bank"). 1.0: every such word of the question stands beside one mention of
the answer; 0.0: none does, as for a question about names or events the document never
mentions ("Who is Barack Obama?" of a shipping story). The reader's own probability is a
poor judge of this on people's text (the readers score a wrong answer as high as a right
one); on the hand-written stories' dev set, support separates right top answers from wrong
ones with an AUROC of 0.90-0.92 in every mode, the probability with 0.50-0.65
(`cheapqa bench realistic` reports it).

The windows are taken once, when the document is indexed (`mention_windows`), and kept with
its record: a bounded number per entity, so the record does not grow with the text.
"""

from __future__ import annotations

from collections.abc import Sequence

from encoder.text.anonymise import AnonymisedText
from encoder.text.tokens import PLACEHOLDER, STOP_WORDS, entity_index, tokenize
from store.record import DocumentRecord

WIDTH = 10  # tokens each side of a mention
MAX_WINDOWS = 8  # the first mentions of an entity whose windows are kept
MAX_SPANS = 64  # the first mentions of an entity whose place in the text is kept
# Words that stand beside names in any news story: no evidence of one passage.
_COMMON_TEXT = """
said says told tells say are its who whom whose what will would did does do also from into
onto over under after before about than then there
"""
_COMMON = STOP_WORDS | frozenset(_COMMON_TEXT.split())


def _evidence(token: str) -> bool:
    return (token.isalnum() and token not in _COMMON) or entity_index(token) is not None


def mention_windows(tokens: Sequence[str], n_entities: int) -> list[list[str]]:
    """Per entity slot, the distinct evidence words within WIDTH tokens of each of its first
    MAX_WINDOWS mentions, one space-joined string a mention."""
    windows: list[list[str]] = [[] for _ in range(n_entities)]
    for i, token in enumerate(tokens):
        slot = entity_index(token) if token.startswith("@entity") else None
        if slot is None or slot >= n_entities or len(windows[slot]) >= MAX_WINDOWS:
            continue
        near = tokens[max(0, i - WIDTH) : i + WIDTH + 1]
        words = dict.fromkeys(t for t in near if t != token and _evidence(t))
        windows[slot].append(" ".join(words))
    return windows


def question_terms(tokens: Sequence[str]) -> frozenset[str]:
    """The words of an anonymised question (the whole question, not the reader's window)
    that support is measured by."""
    return frozenset(t for t in tokens if t != PLACEHOLDER and _evidence(t))


def support(terms: frozenset[str], windows: Sequence[str], name: str = "") -> float | None:
    """The share of `terms` found in the best of an answer's windows or in its `name` ("the
    bank" of a Which-question is in "Fjord Bank"); None when the record kept no windows
    (indexed before they were), 0.0 for a question without terms."""
    if not windows:
        return None
    if not terms:
        return 0.0
    own = terms.intersection(tokenize(name))
    return max(len(terms.intersection(w.split()) | own) for w in windows) / len(terms)


def where_named(anon: AnonymisedText, offset: int = 0) -> tuple[list[list[int]], list[list[str]]]:
    """(spans, contexts) of a record for a text anonymised with its spans: per entity, its
    first MAX_SPANS mentions' offsets as [start, end, start, end, ...] (shifted by `offset`,
    the characters before the text), and its mention windows."""
    spans = [[x + offset for span in found[:MAX_SPANS] for x in span] for found in anon.spans]
    return spans, mention_windows(anon.tokens, len(anon.entities))


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
