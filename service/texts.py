"""What indexing, appending and answering share: text hashes, the entity budget, tokens."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

from encoder.text.anonymise import AnonymisedText, anonymise_document
from encoder.text.tokens import TOKEN_RE
from service.readers import LoadedModel


def text_hash(text: str) -> str:
    """sha256 of the text: with the id, it decides whether a POST is a new document."""
    return hashlib.sha256(text.encode()).hexdigest()


def posting_hash(text: str, candidates: Sequence[str] | None) -> str:
    """What a posted document is known by: its text and, when given, its candidates. With
    the id it decides whether a POST is a new document, so the same text posted with other
    candidates is indexed again; without candidates it is the text hash."""
    h = text_hash(text)
    if candidates is None:
        return h
    given = json.dumps(list(candidates), ensure_ascii=False)
    return hashlib.sha256(f"{h}\n".encode() + given.encode()).hexdigest()


def candidates_not_found(candidates: Sequence[str] | None, anon: AnonymisedText) -> list[str]:
    """Names the client gave that never occur in the text (reported, not silently dropped)."""
    placed = {*anon.entities, *anon.unplaced}
    given = dict.fromkeys(c.strip() for c in candidates or () if c.strip())
    return [name for name in given if name not in placed]


def appended_hash(old_hash: str, appended: str) -> str:
    """The hash after an append chains the old hash, so no old text is needed to compute it."""
    return hashlib.sha256(f"{old_hash}\n".encode() + appended.encode()).hexdigest()


def derived_id(text_hash_hex: str) -> str:
    """The id of a document posted without one: its content address."""
    return f"doc-{text_hash_hex[:24]}"


def entity_budget(models: Mapping[str, LoadedModel]) -> int:
    """Entity slots every loaded model can answer with (the entity map is shared by modes)."""
    return min(m.entity_slots for m in models.values())


def has_tokens(text: str) -> bool:
    """Whether the text holds any token (word, number or punctuation) for the reader."""
    return TOKEN_RE.search(text) is not None


def anonymise(
    models: Mapping[str, LoadedModel],
    text: str,
    candidates: list[str] | None = None,
    known: list[str] | None = None,
) -> AnonymisedText:
    """Tokens with entity markers; raises ValueError when the text holds no tokens."""
    anon = anonymise_document(
        text, candidates, max_entities=entity_budget(models), known=known or ()
    )
    if not anon.tokens:
        raise ValueError("the text holds no tokens")
    return anon
