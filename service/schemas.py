"""The request bodies of the HTTP API (v1), with the service's limits. The response bodies
are defined once, in the client's package (cheapqa_client.schemas), and used from there."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from encoder.model.modes import Mode
from store.record import DOC_ID_PATTERN, MAX_DOC_ID_CHARS

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


def _posting_form(value: Any) -> str:
    """A body with `documents` is a batch, any other one document: a body that fails is told
    what is wrong with the form it was written as, not with both forms."""
    return "DocumentBatchIn" if isinstance(value, dict) and "documents" in value else "DocumentIn"


# POST /v1/documents takes one document or a batch.
DocumentPosting = Annotated[
    Annotated[DocumentIn, Tag("DocumentIn")] | Annotated[DocumentBatchIn, Tag("DocumentBatchIn")],
    Discriminator(_posting_form),
]


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
        "starting with Who, Whom, Whose, '(In) Which/What <noun>' or Where, or asking what a "
        "thing is called ('What will the new firm be called?'), turned into cloze sentences. "
        "Answers are the document's names (people, organisations, places), never a nationality "
        "word ('Palestinian'): ask for the country or group by its name.",
    )
    mode: Mode | None = Field(default=None, description="Attention mode; default from settings.")
    top_k: int = Field(default=5, ge=1)
    support_weight: float | None = Field(
        default=None,
        ge=0.0,
        le=100.0,
        description="λ of the ranking p(e) ∝ p_reader(e) · exp(λ · support(e)): how much an "
        "answer's support (the question's words near its mentions) outweighs the reader. 0 "
        "ranks by the reader alone; default from settings (CHEAPQA_SUPPORT_WEIGHT).",
    )
    exclude_question_entities: bool = Field(
        default=True,
        description='Leave the entities a question names out of its answers ("Who rejected '
        'two offers from Halden?" is not answered "Halden"), and the one entity the text '
        "gives a role the question names someone else by, a possessor or the one its verb "
        'is done to ("Who is the cyclist\'s lawyer?" and "Who represents the cyclist?" are '
        'not answered by the one "cyclist Juan Ortega"); false answers from all of the '
        "document's entities.",
    )
    reading: bool = Field(
        default=True,
        description="Where the service serves the pair reader (CHEAPQA_READING), read each "
        "question asked in words beside the sentences naming its likeliest answers and rank "
        "those again (about 0.1-0.15 s a question not read lately, on one CPU thread: "
        "BENCHMARKS.md); false ranks by the lookup and the fitted features alone, in about a "
        "millisecond. Each result's `read` says whether it was read.",
    )
