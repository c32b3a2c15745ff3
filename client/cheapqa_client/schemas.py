"""The response bodies of the HTTP API (v1), defined once: the service declares them as its
routes' response models (so they are its OpenAPI schema) and the client parses answers into
them. Request bodies, with the service's limits, stay with the service."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


class Status(StrEnum):
    """Where a document stands: the API's word, and the store's (store/record.py keeps it)."""

    QUEUED = "queued"
    INDEXED = "indexed"
    FAILED = "failed"


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
        description="The fewest output slots among the models that indexed it. Every mode "
        "answers among all of a document's entities: beyond this many, entity i shares slot "
        "i mod entity_slots (its probability split among the entities sharing it); the "
        "mentions mode points at mentions. Null when unknown (not yet indexed)."
    )
    entities_unplaced: int = Field(
        description="Names that can never be an answer: none for a document indexed now (every "
        "entity can be the answer in every mode); a document indexed by an older server that "
        "kept 64 slots may list some (GET /v1/documents/{id}/entities)."
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
    waiting: str | None = Field(
        default=None,
        description="Why a queued document is still queued, when the service can tell (no "
        "worker has read the ingestion queue lately); null otherwise.",
    )


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
        description="The fewest output slots among the models that indexed it (shared beyond "
        "it, see DocumentInfo.entity_slots); null when unknown."
    )
    unplaced: list[str] = Field(
        description="Names that are never answers: empty for a document indexed now (every "
        "entity can be the answer); an older server's record may list some."
    )


class Answer(BaseModel):
    entity: str
    score: float = Field(
        description="The answer's probability over the entities the question is answered "
        "from, the reader's weighted by support: for a cloze sentence p(e) ∝ reader_score(e) "
        "· exp(λ · support(e)), λ the request's support_weight (0: the reader's own); for a "
        "question asked in words, by weights fitted for the reader on hand-written stories, "
        "where it has them (and there the best signal of whether the answer is right); a "
        "question the pair reader read (read: true) keeps a part for 'none of these', more "
        "where no candidate reads as its answer, so its answers' scores sum to less than 1. "
        "Answers are ranked by it."
    )
    reader_score: float | None = Field(
        default=None,
        description="The reader's own probability (null from a server that did not send it).",
    )
    support: float | None = Field(
        default=None,
        description="Whether the document supports this answer, 0 to 1: the largest share of "
        "the question's words (its other names, its words but common ones) that stand in the "
        "sentence of one mention of this entity in the text. Near 0: the text says nothing "
        "like the question near it (a question about something the text never mentions gets "
        "near 0 for every answer). How well it tells right answers from wrong ones is "
        "measured in RESULTS.md. Null for a document indexed before it was kept (post it "
        "again).",
    )
    support_share: float | None = Field(
        default=None,
        description="This answer's share of the support among the reader's 32 likeliest "
        "answers, exp(8 · support) / Σ exp(8 · support'), 0 to 1: near 1 when the text "
        "singles this answer out (no other likely answer stands beside the question's words), "
        "1/n when n answers do equally well, low for all when the text supports none "
        "better. How well it tells right top answers from wrong ones is measured in "
        "RESULTS.md. Null when support is unknown.",
    )
    spans: list[list[int]] = Field(
        default_factory=list,
        description="Where the text names this entity: [start, end) offsets in characters "
        "(Unicode code points) of its first 64 mentions, an appended text's counted after "
        "the text before it; empty when unknown (indexed before they were kept).",
    )


class QueryError(BaseModel):
    code: str = Field(description="`bad_query`: not a question the service can ask.")
    message: str = Field(description="Why, and which forms work.")


class QueryAnswers(BaseModel):
    query: str
    cloze: str | None = Field(
        description="The cloze sentence asked: the query itself, or the plain question turned "
        "into one; null when the query is no form the service reads."
    )
    answers: list[Answer] = Field(description="Empty when the question has an error.")
    read: bool = Field(
        default=False,
        description="Whether the pair reader read this question beside its likeliest answers' "
        "sentences and ranked them again (a question asked in words, on a server serving the "
        "reader, the request not turning it off); false: ranked by the lookup and the fitted "
        "features alone.",
    )
    error: QueryError | None = Field(
        default=None,
        description="Why this question was not answered (the request's other questions are); "
        "null when it was. A request none of whose questions can be asked is a 400 bad_query.",
    )


class AnswersOut(BaseModel):
    id: str
    mode: str
    model_id: str
    results: list[QueryAnswers]


class TrainedOn(BaseModel):
    """What a reader was trained on, from its checkpoint's meta (empty when it says nothing)."""

    recipes: list[str] = Field(
        default=[],
        description="The training recipes, oldest first (a reader can go on from another's "
        "checkpoint), each named by its stages joined with '+'.",
    )
    stages: int = Field(default=0, description="Training stages in all the recipes.")
    data_sets: list[str] = Field(
        default=[], description="The data sets the stages read, in order of first use."
    )


class ModelInfo(BaseModel):
    mode: str
    model_id: str
    k: int = Field(description="Hidden size: the state is k×k (linear, gated) or k (none).")
    entity_slots: int | None = Field(
        description="The reader's output slots (the paper's four modes); a document naming more "
        "entities shares them: entity i takes slot i mod entity_slots, its probability split "
        "among the entities sharing it. Null for the mentions mode, which scores each entity "
        "from its mentions."
    )
    every_entity: bool = Field(
        default=False,  # servers before the mentions mode had slot modes only
        description="Whether every entity of a document can be the answer, however many it "
        "names: true in every mode of this server (older servers: the mentions mode only).",
    )
    vocabulary: int = Field(description="Words in the vocabulary.")
    trained_on: TrainedOn = Field(description="What it was trained on, from the checkpoint's meta.")
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
    workers: int | None = Field(
        default=None,
        description="Workers that read the ingestion queue lately (this process's own too): 0 "
        "means documents are accepted but nothing indexes them; null when the queue cannot "
        "tell (the embedded queue with no worker in this process).",
    )


class ErrorInfo(BaseModel):
    code: str
    message: str
    detail: Any = None


class ErrorBody(BaseModel):
    """The one JSON body of every error answer."""

    error: ErrorInfo
