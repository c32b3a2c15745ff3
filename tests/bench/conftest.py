"""Fixtures for the benchmark tests: tiny random readers over the test story's words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.random_readers import corpus_vocabulary, write_random_checkpoints
from encoder.model.modes import MODES
from service.settings import Settings
from tests.bench.texts import QUESTIONS_JSONL, STORY

MAX_ENTITIES = 20
TINY = {"embed_dim": 8, "hidden_size": 12, "dropout": 0.0}


@pytest.fixture(scope="session")
def tiny_checkpoints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    vocab = corpus_vocabulary([STORY], max_entities=MAX_ENTITIES)
    directory = tmp_path_factory.mktemp("tiny-checkpoints")
    return write_random_checkpoints(
        directory, MODES, vocab, sizes=lambda mode: TINY, meta={"test": True}
    )


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
