"""Many short distinct documents made from the service tests' sentences (so every word is in
the tiny checkpoints' vocabulary), and the reference each stored state must equal."""

from __future__ import annotations

import random
from collections.abc import Mapping

import torch

from encoder.model.state import DocumentState
from service.readers import LoadedModel, anonymise
from tests.service.texts import APPENDIX, DOCUMENTS


def make_documents(count: int, seed: int = 0, words: tuple[int, int] = (8, 16)) -> dict[str, str]:
    """`count` documents `doc-0000`… of a few words each (a random window of the test texts),
    no two texts alike."""
    corpus = " ".join([*DOCUMENTS.values(), APPENDIX]).split()
    rng = random.Random(seed)
    texts: dict[str, str] = {}
    seen: set[str] = set()
    for _ in range(count * 20):  # bounded: a few thousand distinct windows exist
        if len(texts) == count:
            break
        length = rng.randint(*words)
        start = rng.randrange(len(corpus) - length)
        text = " ".join(corpus[start : start + length])
        if text not in seen:
            seen.add(text)
            texts[f"doc-{len(texts):04d}"] = text
    assert len(texts) == count, "not enough distinct documents"
    return texts


def encode_alone(models: Mapping[str, LoadedModel], text: str) -> dict[str, DocumentState]:
    """mode -> the state of this one document encoded by itself (no batch, no padding)."""
    anon = anonymise(text)
    with torch.inference_mode():
        return {mode: m.read([anon.tokens])[0] for mode, m in models.items()}


def state_difference(got: DocumentState, want: DocumentState) -> float:
    """Largest absolute difference between two states (inf when their shapes differ)."""
    if (got.mode, got.n, got.k) != (want.mode, want.n, want.k):
        return float("inf")
    diff = float((got.last_hidden - want.last_hidden).abs().max())
    if (got.memory is None) != (want.memory is None):
        return float("inf")
    if got.memory is not None and want.memory is not None:
        if got.memory.shape != want.memory.shape:
            return float("inf")
        if got.memory.numel():  # a mentions state of a document without mentions is empty
            diff = max(diff, float((got.memory - want.memory).abs().max()))
    if got.mentions is not None or want.mentions is not None:
        if got.mentions is None or want.mentions is None:
            return float("inf")
        if not torch.equal(got.mentions, want.mentions):
            return float("inf")
    return diff
