"""Tiny random-init checkpoints and the model's own forward pass, for checking the service."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch

from bench.random_readers import write_random_checkpoints
from encoder.model.checkpoint import Checkpoint, load_checkpoint
from encoder.model.modes import MODES, Mode
from encoder.model.reader import Reader
from encoder.model.vocab import Vocabulary
from encoder.text.anonymise import anonymise_document, anonymise_query
from encoder.text.tokens import entity_index
from service.settings import Settings
from tests.service.texts import APPENDIX, DOCUMENTS, QUESTIONS

MAX_ENTITIES = 20
HIDDEN = 16


def base_env(checkpoint_dir: Path, data_dir: Path) -> dict[str, str]:
    """The CHEAPQA_* settings of a `cheapqa` process the tests start (bench/spawn.py)."""
    return {
        "CHEAPQA_CHECKPOINT_DIR": str(checkpoint_dir),
        "CHEAPQA_DATA_DIR": str(data_dir),
        "CHEAPQA_STATE_DTYPE": "float32",
        "CHEAPQA_INGEST_BLOCK_MS": "100",
    }


def build_checkpoints(
    directory: Path,
    seed: int = 0,
    max_entities: int = MAX_ENTITIES,
    meta: dict[str, Any] | None = None,
) -> Path:
    """One tiny random reader per mode, with a vocabulary of the test texts, in `directory`."""
    token_lists = [
        anonymise_document(text, max_entities=MAX_ENTITIES).tokens
        for text in [*DOCUMENTS.values(), APPENDIX]
    ]
    token_lists += [q.lower().split() for qs in QUESTIONS.values() for q in qs]
    vocab = Vocabulary.build(token_lists, max_entities=MAX_ENTITIES, min_count=1)

    def sizes(mode: Mode) -> dict[str, Any]:
        # The mentions mode points at the mentions themselves: it has no mention prior.
        return {"embed_dim": 12, "hidden_size": HIDDEN, "max_entities": max_entities,
                "dropout": 0.0, "mention_prior": mode != "mentions"}  # fmt: skip

    def strong_mention_prior(reader: Reader) -> None:
        # Large enough that an answer route which dropped or miscounted the document's
        # mentions would no longer match the forward pass (which counts its markers).
        if reader.config.mention_prior:
            reader.mention_weight.fill_(1.0)
            reader.mention_gate.normal_(0.0, 0.3)

    return write_random_checkpoints(
        directory, MODES, vocab, seed, sizes=sizes, adjust=strong_mention_prior,
        meta=meta or {"test": True},
    )  # fmt: skip


def forward_probabilities(
    ckpt: Checkpoint,
    text: str,
    question: str,
    candidates: list[str] | None = None,
    exclude_named: bool = True,
) -> dict[str, float]:
    """entity name -> probability, from one padded-batch `forward` over the whole text,
    among the document's entities less those the question names (as the API answers by
    default; exclude_named=False: all of them)."""
    anon = anonymise_document(text, candidates, max_entities=MAX_ENTITIES)
    q_tokens = anonymise_query(question, anon.entities)
    doc_ids = torch.tensor([ckpt.vocab.encode(anon.tokens)])
    query_ids = torch.tensor([ckpt.vocab.encode(q_tokens)])
    mask = torch.zeros(1, ckpt.model.config.max_entities, dtype=torch.bool)
    mask[0, : len(anon.entities)] = True
    named = {i for t in q_tokens if (i := entity_index(t)) is not None} if exclude_named else ()
    if named and len(named) < len(anon.entities):
        mask[0, sorted(named)] = False
    ckpt.model.eval()
    with torch.no_grad():
        scores = ckpt.model(
            doc_ids,
            torch.tensor([doc_ids.shape[1]]),
            query_ids,
            torch.tensor([query_ids.shape[1]]),
            mask,
        )
    probs = torch.softmax(scores[0, : len(anon.entities)], dim=-1)
    allowed = mask[0, : len(anon.entities)].tolist()
    return {n: float(p) for n, p, a in zip(anon.entities, probs, allowed, strict=True) if a}


def load(directory: Path, mode: str) -> Checkpoint:
    return load_checkpoint(directory / f"{mode}.pt")


def assert_matches_forward(
    body: dict[str, Any],
    expected: list[dict[str, float]],
    top_k: int,
    tol: float = 1e-4,
    support_weight: float = Settings().support_weight,
    kind_weighed: Sequence[bool] | None = None,
) -> None:
    """An answers body against the forward pass's probabilities, one dict per question: each
    answer's reader_score is the forward pass's probability, and its score that weighted by
    exp(λ · support) and renormalised, the answers ranked by it. A question whose kind weighs
    its answers too (kind_weighed: "Who ...?" of names that read as people's) is checked for
    its reader scores and its order only."""
    weighed = kind_weighed or [False] * len(expected)
    for result, probs, by_kind in zip(body["results"], expected, weighed, strict=True):
        names = [a["entity"] for a in result["answers"]]
        assert len(names) == min(top_k, len(probs))
        assert set(names) <= set(probs)  # answers are entities of the document
        scores = [a["score"] for a in result["answers"]]
        assert scores == sorted(scores, reverse=True)
        boosted = []
        for a in result["answers"]:
            assert a["reader_score"] == pytest.approx(probs[a["entity"]], abs=tol)
            boosted.append(a["reader_score"] * math.exp(support_weight * (a["support"] or 0.0)))
        if by_kind:
            continue
        # score ∝ reader_score · exp(λ · support): one normaliser for every answer
        norms = [b / s for b, s in zip(boosted, scores, strict=True) if s > tol]
        assert all(n == pytest.approx(norms[0], rel=1e-3) for n in norms)
        # Without support to tell them apart, the best answer is the forward pass's best.
        if len({a["support"] for a in result["answers"]}) == 1:
            best = max(probs.values())
            assert probs[names[0]] == pytest.approx(best, abs=tol)
