"""Fixtures for the benchmark tests: tiny random readers over the test story's words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from bench.random_readers import corpus_vocabulary
from encoder.model.checkpoint import save_checkpoint
from encoder.model.config import ReaderConfig
from encoder.model.modes import MODES
from encoder.model.reader import Reader
from service.settings import Settings
from tests.bench.texts import QUESTIONS_JSONL, STORY

MAX_ENTITIES = 20


@pytest.fixture(scope="session")
def tiny_checkpoints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tiny-checkpoints")
    vocab = corpus_vocabulary([STORY], max_entities=MAX_ENTITIES)
    for i, mode in enumerate(MODES):
        torch.manual_seed(i)
        config = ReaderConfig(
            mode=mode,
            vocab_size=len(vocab),
            embed_dim=8,
            hidden_size=12,
            max_entities=MAX_ENTITIES,
            dropout=0.0,
        )
        save_checkpoint(directory / f"{mode}.pt", Reader(config).eval(), vocab, {"test": True})
    return directory


@pytest.fixture
def story_file(tmp_path: Path) -> Path:
    path = tmp_path / "story.txt"
    path.write_text(STORY)
    return path


@pytest.fixture
def questions_file(tmp_path: Path) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS_JSONL))
    return path


@pytest.fixture
def settings(tmp_path: Path, tiny_checkpoints: Path) -> Settings:
    return Settings(
        store_url="",
        data_dir=tmp_path / "data",
        checkpoint_dir=tiny_checkpoints,
        modes=["linear", "softmax"],
        state_dtype="float32",
        ingest_block_ms=50,
    )
