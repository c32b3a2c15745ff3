"""Answering cloze questions about one stored document.

tokens  = anonymise_query(question, document's entity map)   per question
Q       = query GRU over all questions                        (m, k)  via the batcher
R       = lookup(state, Q)                                   (m, k)  the state used once
scores  = W_o tanh(W_r R + W_q Q), masked to the document's entities   (m, E)
answers = top_k of softmax(scores) over those entities, mapped back to names
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from encoder.state import DocumentState
from encoder.text import anonymise_query, cut_around_placeholder
from service.models import LoadedModel
from service.schemas import Answer, AnswersOut, QueryAnswers


@dataclass(frozen=True)
class RankedAnswers:
    slots: list[list[int]]  # per question, the best entity slots, best first
    scores: list[list[float]]  # their probabilities


def query_token_ids(
    model: LoadedModel, queries: list[str], entities: list[str]
) -> list[torch.Tensor]:
    """Raises ValueError naming the question at fault (e.g. not exactly one @placeholder)."""
    out = []
    for i, query in enumerate(queries):
        try:
            tokens = anonymise_query(query, entities)
        except ValueError as exc:
            raise ValueError(f"query {i}: {exc}") from exc
        if model.query_window is not None:
            tokens = cut_around_placeholder(tokens, *model.query_window)
        out.append(model.token_ids(tokens))
    return out


def candidate_mask(n_queries: int, n_entities: int, max_entities: int) -> torch.Tensor:
    """(m, E) True on the slots the document's entities use."""
    mask = torch.zeros(n_queries, max_entities, dtype=torch.bool)
    mask[:, :n_entities] = True
    return mask


def rank_answers(
    model: LoadedModel, state: DocumentState, Q: torch.Tensor, n_entities: int, top_k: int
) -> RankedAnswers:
    """Lookup and scoring for one document's questions (blocking: run it in a thread)."""
    mask = candidate_mask(Q.shape[0], n_entities, model.max_entities)  # (m, E)
    with torch.inference_mode():
        R = model.reader.lookup(state, Q)  # (m, k)
        scores = model.reader.score(R, Q, mask)  # (m, E)
        probs = torch.softmax(scores[:, :n_entities], dim=-1)  # (m, n_entities)
        top = torch.topk(probs, k=min(top_k, n_entities), dim=-1)
    return RankedAnswers(slots=top.indices.tolist(), scores=top.values.tolist())


def answers_body(
    doc_id: str,
    mode: str,
    model_id: str,
    queries: list[str],
    entities: list[str],
    ranked: RankedAnswers,
) -> AnswersOut:
    """The response: each question's best slots mapped back to the document's entity names."""
    results = [
        QueryAnswers(
            query=query,
            answers=[
                Answer(entity=entities[slot], score=score)
                for slot, score in zip(slots, scores, strict=True)
            ],
        )
        for query, slots, scores in zip(queries, ranked.slots, ranked.scores, strict=True)
    ]
    return AnswersOut(id=doc_id, mode=mode, model_id=model_id, results=results)
