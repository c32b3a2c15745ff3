"""Request and response bodies of the HTTP API (v1)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path
from pydantic import BaseModel, ConfigDict, Field

from encoder.model.modes import Mode
from store.record import DOC_ID_PATTERN, MAX_DOC_ID_CHARS, Status

# The store's id rule, for ids in bodies and in paths.
DocumentId = Annotated[
    str, Field(min_length=1, max_length=MAX_DOC_ID_CHARS, pattern=DOC_ID_PATTERN)
]
DocumentIdPath = Annotated[
    str, Path(min_length=1, max_length=MAX_DOC_ID_CHARS, pattern=DOC_ID_PATTERN)
]


class _Body(BaseModel):
    # strict: the schema says integer, so "5" or true for top_k is a 422, not a quiet 5 or 1.
    model_config = ConfigDict(extra="forbid", strict=True)


class DocumentIn(_Body):
    id: DocumentId | None = Field(
        default=None, description="Client id; omitted means an id derived from the text."
    )
    text: str = Field(min_length=1, description="The document text (UTF-8).")
    candidates: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        default=None,
        max_length=1000,
        description="Entity names to answer with; omitted means entities detected in the text.",
    )


class DocumentBatchIn(_Body):
    documents: list[DocumentIn] = Field(min_length=1)


class DocumentAccepted(BaseModel):
    id: str
    status: Status
    status_url: str
    text_hash: str = Field(
        description="Hash of the text (and of the candidates, when given): the version of the "
        "document this posting made."
    )
    enqueued: bool = Field(
        description="False when the same id, text and candidates were already known."
    )


class DocumentsAccepted(BaseModel):
    documents: list[DocumentAccepted]


class DocumentInfo(BaseModel):
    id: str
    status: Status
    tokens: int
    entities: int = Field(description="Number of entity slots the document uses.")
    entity_slots: int | None = Field(
        description="Entity slots of the models that indexed it (the most entities they can "
        "answer with); null when unknown (indexed before this was kept, or not yet indexed)."
    )
    entities_unplaced: int = Field(
        description="Names found beyond the entity slots: they stay plain words and can never "
        "be an answer (listed by GET /v1/documents/{id}/entities)."
    )
    candidates_not_found: list[str] = Field(
        description="Names given as `candidates` that never occur in the text."
    )
    modes: list[str]
    bytes_stored: dict[str, int]
    model_ids: dict[str, str]
    text_hash: str = Field(
        description="Hash of the text (and candidates, when given); an append chains it."
    )
    error: str | None
    created_at: float
    updated_at: float


class DocumentSummary(BaseModel):
    id: str
    status: Status


class DocumentList(BaseModel):
    documents: list[DocumentSummary] = Field(description="In id order.")
    next_cursor: str | None = Field(
        description="Pass as `cursor` for the next page; null on the last page."
    )


class EntityMentions(BaseModel):
    entity: str = Field(description="The whole name, as answers give it.")
    mentions: int | None = Field(
        description="How often the text mentions it (by its name or an alias); null for "
        "documents indexed before counts were kept."
    )


class DocumentEntities(BaseModel):
    id: str
    entities: list[EntityMentions] = Field(
        description="The entities answers can name, in order of first mention (slot order)."
    )
    entity_slots: int | None = Field(
        description="Entity slots of the models that indexed it; null when unknown."
    )
    unplaced: list[str] = Field(
        description="Names found beyond the entity slots, in order of first mention: they stay "
        "plain words and are never answers."
    )


class AppendIn(_Body):
    text: str = Field(min_length=1, description="Text to append to an indexed document.")
    expected_text_hash: str | None = Field(
        default=None,
        max_length=64,
        description="Append only if the document's text_hash is this one (else 412): a retry "
        "of an append that did happen is refused, not applied twice.",
    )


class AnswersIn(_Body):
    # A question is a sentence: the length cap keeps tokenizing it cheap.
    queries: list[Annotated[str, Field(min_length=1, max_length=4000)]] = Field(
        min_length=1,
        description="Cloze sentences with exactly one @placeholder, or plain questions "
        "starting with Who, Whom, Whose or 'Which <noun>', turned into cloze sentences.",
    )
    mode: Mode | None = Field(default=None, description="Attention mode; default from settings.")
    top_k: int = Field(default=5, ge=1)
    exclude_question_entities: bool = Field(
        default=True,
        description='Leave the entities a question names out of its answers ("Who rejected '
        'two offers from Halden?" is not answered "Halden"); false answers from all of '
        "the document's entities.",
    )


class Answer(BaseModel):
    entity: str
    score: float = Field(description="Probability over the document's candidates.")


class QueryAnswers(BaseModel):
    query: str
    cloze: str = Field(
        description="The cloze sentence asked: the query itself, or the plain question turned "
        "into one."
    )
    answers: list[Answer]


class AnswersOut(BaseModel):
    id: str
    mode: str
    model_id: str
    results: list[QueryAnswers]


class ModelInfo(BaseModel):
    mode: str
    model_id: str
    k: int = Field(description="Hidden size: the state is k×k (linear, gated) or k (none).")
    entity_slots: int = Field(description="The most entities one document can answer with.")
    vocabulary: int = Field(description="Words in the vocabulary.")
    trained_on: str = Field(description="What it was trained on, from the checkpoint's meta.")
    test_accuracy: float | None = Field(
        description="Accuracy on its test set when recorded for this very checkpoint; null "
        "when unknown."
    )


class ModelsOut(BaseModel):
    models: list[ModelInfo]


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str
    store: bool
    models: dict[str, str] = Field(description="mode -> model id of every loaded model")
    worker: bool = Field(description="Whether this process also runs an ingestion worker.")
