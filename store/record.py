"""A document as the store keeps it: metadata plus one state per attention mode; the id rule
and the text hashes that decide whether a posting is a new document."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cheapqa_client.schemas import Status
from encoder.model.state import DocumentState
from encoder.text.meaning import meanings, unpack
from encoder.text.roles import RoleHead
from encoder.text.support import Evidence, entity_evidence
from store.errors import CorruptRecord

# The one rule for document ids: they end up in URLs and store keys, so they stay plain.
# The API validates bodies and paths with it; the store refuses anything else.
DOC_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"
MAX_DOC_ID_CHARS = 128
_DOC_ID = re.compile(DOC_ID_PATTERN)


DOC_ID_RULE = f"1 to {MAX_DOC_ID_CHARS} letters, digits or ._:- (starting with a letter or digit)"


def check_doc_id(doc_id: str) -> None:
    if len(doc_id) > MAX_DOC_ID_CHARS or not _DOC_ID.fullmatch(doc_id):
        raise ValueError(
            f"document id must be {DOC_ID_RULE}, got {doc_id[: MAX_DOC_ID_CHARS + 1]!r}"
        )


def derived_id(text_hash_hex: str) -> str:
    """The id of a document posted without one: its content address."""
    return f"doc-{text_hash_hex[:24]}"


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
    return hashlib.sha256(f"candidates\n{h}\n".encode() + given.encode()).hexdigest()


def appended_hash(old_hash: str, appended: str) -> str:
    """The hash after an append chains the old hash, so no old text is needed to compute it.
    Its prefix differs from `posting_hash`'s: text T with the appendix '["Ann"]' is not T
    posted with the candidates ["Ann"]."""
    return hashlib.sha256(f"append\n{old_hash}\n".encode() + appended.encode()).hexdigest()


# The metadata's format: 1 had no "schema" key; 2 adds mention counts, unplaced names, names
# given as candidates but never found, and the entity slots; 3 the text's length, where each
# entity's first mentions are in it, and the words around them. A record of an older format
# reads with those unknown (empty lists, None, 0); older code ignores the new keys. 4 adds the
# sentences naming each entity and their vectors (encoder/text/meaning.py); 5 the vectors of
# each entity's first mentions as their sentences read them (encoder/text/roles.py); 6 those
# sentences' text and where each starts (encoder/text/reading.py).
RECORD_SCHEMA = 6


@dataclass
class DocumentRecord:
    id: str
    text_hash: str
    status: Status
    tokens: int = 0
    entities: list[str] = field(default_factory=list)  # entities[i] is the surface of @entity{i}
    # mentions[i]: how often @entity{i} occurs; empty when unknown (a format-1 record)
    mentions: list[int] = field(default_factory=list)
    unplaced: list[str] = field(default_factory=list)  # names found beyond the entity slots
    candidates_not_found: list[str] = field(default_factory=list)  # given, never in the text
    entity_slots: int | None = None  # the slots the indexing models had; None when unknown
    model_ids: dict[str, str] = field(default_factory=dict)  # mode -> model id that built it
    error: str | None = None
    created_at: float = 0.0  # unix seconds
    updated_at: float = 0.0
    # mode -> state; on get, only the modes asked for
    states: dict[str, DocumentState] = field(default_factory=dict)
    # mode -> stored size in bytes; on get, every stored mode (whether its state was read or not)
    state_bytes: dict[str, int] = field(default_factory=dict)
    # the ingestion queue's entry that carries this text (while queued); None: not known to be
    # enqueued (the enqueue failed, or has not answered yet)
    entry_id: str | None = None
    # The write that made this content: every POST and append takes a new number from the
    # store (`new_versions`), so a version is never used twice, unlike a text hash (A -> B ->
    # A). Conditional writes go over a version; a job is current only for its own. 0: a
    # record written before versions existed.
    version: int = 0
    # Format 3: the text's length in characters (code points; an appended text follows it),
    # spans[i] the offsets of @entity{i}'s first mentions as [start, end, start, end, ...],
    # contexts[i] the words around them (encoder/text/support.py); empty when unknown.
    chars: int = 0
    spans: list[list[int]] = field(default_factory=list)
    contexts: list[list[str]] = field(default_factory=list)
    # Format 4: sentences[i] the indices, into sentence_vectors, of the sentences holding
    # @entity{i}'s kept mentions; sentence_vectors those sentences' embeddings packed
    # (encoder.text.meaning.pack); empty when unknown or not made (the `meaning` setting off).
    sentences: list[list[int]] = field(default_factory=list)
    sentence_vectors: str = ""
    # Format 5: named[i] the indices, into mention_vectors, of @entity{i}'s first mentions in
    # those sentences; mention_vectors their vectors packed (encoder.text.roles); empty when
    # unknown or not made.
    named: list[list[int]] = field(default_factory=list)
    mention_vectors: str = ""
    # Format 6: the kept sentences' text (sentence_texts[j] is row j of sentence_vectors) and
    # where each starts in the text, for reading a question beside them (encoder.text.reading);
    # empty when unknown or not made.
    sentence_texts: list[str] = field(default_factory=list)
    sentence_starts: list[int] = field(default_factory=list)
    # contexts as support reads them, and spans as [start, end] pairs, made once per entity a
    # request answers with (not stored)
    # (init=False: a record copied with dataclasses.replace starts with none of them, so a copy
    # with other contexts, spans or sentences never reads the original's)
    _evidence: dict[int, Evidence] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _span_pairs: dict[int, list[list[int]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _vectors: np.ndarray | None = field(default=None, init=False, repr=False, compare=False)
    _mention_rows: np.ndarray | None = field(default=None, init=False, repr=False, compare=False)

    def evidence(self, slot: int) -> Evidence:
        """Entity `slot`'s kept windows as word sets with its name's words (empty when none
        were kept), made on first use and kept while the record is."""
        found = self._evidence.get(slot)
        if found is None:
            windows = self.contexts[slot] if slot < len(self.contexts) else ()
            found = self._evidence[slot] = entity_evidence(windows, self.entities[slot])
        return found

    def meanings(self, cosines: Sequence[float]) -> list[float] | None:
        """Per entity, how near the question comes to a sentence naming it (encoder.text.
        meaning), from its cosines with the kept sentences (`cosines`); None when the record
        keeps no sentence vectors."""
        if not self.sentence_vectors:
            return None
        held = self.sentences + [[]] * (len(self.entities) - len(self.sentences))
        return meanings(cosines, held)

    def cosines(self, question: np.ndarray) -> list[float]:
        """The question's cosine with each kept sentence (empty when none is kept)."""
        if not self.sentence_vectors:
            return []
        if self._vectors is None:
            self._vectors = unpack(self.sentence_vectors)
        return (self._vectors @ question).tolist()

    def roles(self, asking: np.ndarray, head: RoleHead | None) -> list[float] | None:
        """Per entity, how well a mention of it plays the part the question's asking word
        asks about (encoder.text.roles); None when the record keeps no mention vectors or
        there is no head."""
        if not self.mention_vectors or head is None:
            return None
        if self._mention_rows is None:
            self._mention_rows = unpack(self.mention_vectors)
        held = self.named + [[]] * (len(self.entities) - len(self.named))
        return head.scores(asking, self._mention_rows, held)

    def span_pairs(self, slot: int) -> list[list[int]]:
        """Entity `slot`'s mention spans as [start, end] pairs (empty when unknown), made once:
        a request of 32 questions names the same few entities 160 times."""
        found = self._span_pairs.get(slot)
        if found is None:
            flat = self.spans[slot] if slot < len(self.spans) else []
            found = [flat[i : i + 2] for i in range(0, len(flat) - 1, 2)]
            self._span_pairs[slot] = found
        return found


def meta_to_json(record: DocumentRecord, state_bytes: dict[str, int], now: float) -> bytes:
    """Everything but the states, as UTF-8 JSON; times left at 0.0 become `now`."""
    meta = {
        "schema": RECORD_SCHEMA,
        "id": record.id,
        "text_hash": record.text_hash,
        "status": str(record.status),
        "tokens": record.tokens,
        "entities": record.entities,
        "mentions": record.mentions,
        "unplaced": record.unplaced,
        "candidates_not_found": record.candidates_not_found,
        "entity_slots": record.entity_slots,
        "model_ids": record.model_ids,
        "error": record.error,
        "created_at": record.created_at or now,
        "updated_at": record.updated_at or now,
        "state_bytes": state_bytes,
        "entry_id": record.entry_id,
        "version": record.version,
        "chars": record.chars,
        "spans": record.spans,
        "contexts": record.contexts,
        "sentences": record.sentences,
        "sentence_vectors": record.sentence_vectors,
        "named": record.named,
        "mention_vectors": record.mention_vectors,
        "sentence_texts": record.sentence_texts,
        "sentence_starts": record.sentence_starts,
    }
    return json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode()


def meta_from_json(data: bytes | str) -> DocumentRecord:
    """The record's metadata; CorruptRecord when it is not JSON of this schema."""
    try:
        return _meta_from_dict(json.loads(data))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        # ValueError covers JSONDecodeError, UnicodeDecodeError and an unknown status.
        raise CorruptRecord(
            f"unreadable document metadata ({type(exc).__name__}: {str(exc)[:200]})"
        ) from exc


def _meta_from_dict(meta: dict[str, Any]) -> DocumentRecord:
    """Reads formats 1 to 6 (keys an older format lacks read as unknown)."""
    entry_id = meta.get("entry_id")  # absent from records written before it existed
    slots = meta.get("entity_slots")
    return DocumentRecord(
        id=meta["id"],
        text_hash=meta["text_hash"],
        status=Status(meta["status"]),
        tokens=int(meta["tokens"]),
        entities=list(meta["entities"]),
        mentions=[int(m) for m in meta.get("mentions", ())],
        unplaced=list(meta.get("unplaced", ())),
        candidates_not_found=list(meta.get("candidates_not_found", ())),
        entity_slots=None if slots is None else int(slots),
        model_ids=dict(meta["model_ids"]),
        error=meta["error"],
        created_at=float(meta["created_at"]),
        updated_at=float(meta["updated_at"]),
        state_bytes={mode: int(size) for mode, size in meta["state_bytes"].items()},
        entry_id=None if entry_id is None else str(entry_id),
        version=int(meta.get("version", 0)),
        chars=int(meta.get("chars", 0)),
        spans=[[int(x) for x in found] for found in meta.get("spans", ())],
        contexts=[[str(w) for w in found] for found in meta.get("contexts", ())],
        sentences=[[int(j) for j in found] for found in meta.get("sentences", ())],
        sentence_vectors=str(meta.get("sentence_vectors", "")),
        named=[[int(j) for j in found] for found in meta.get("named", ())],
        mention_vectors=str(meta.get("mention_vectors", "")),
        sentence_texts=[str(t) for t in meta.get("sentence_texts", ())],
        sentence_starts=[int(a) for a in meta.get("sentence_starts", ())],
    )


def now() -> float:
    return time.time()
