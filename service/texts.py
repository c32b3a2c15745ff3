"""What indexing, appending and answering share: text hashes, the entity budget, tokens."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from encoder.anonymise import AnonymisedText, anonymise_document
from encoder.text import TOKEN_RE
from service.readers import LoadedModel


def text_hash(text: str) -> str:
    """sha256 of the text: with the id, it decides whether a POST is a new document."""
    return hashlib.sha256(text.encode()).hexdigest()


def appended_hash(old_hash: str, appended: str) -> str:
    """The hash after an append chains the old hash, so no old text is needed to compute it."""
    return hashlib.sha256(f"{old_hash}\n".encode() + appended.encode()).hexdigest()


def derived_id(text_hash_hex: str) -> str:
    """The id of a document posted without one: its content address."""
    return f"doc-{text_hash_hex[:24]}"


def entity_budget(models: Mapping[str, LoadedModel]) -> int:
    """Entity slots every loaded model can answer with (the entity map is shared by modes)."""
    return min(min(m.max_entities, m.vocab.max_entities) for m in models.values())


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
