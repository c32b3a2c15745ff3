"""Which checkpoints the service loads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from encoder.model.checkpoint import save_checkpoint
from encoder.model.serving import ServingReader
from service.answering import prepare_queries
from service.readers import load_models
from service.settings import Settings
from tests.service.helpers import load


def test_named_modes_must_all_load(tmp_path: Path, checkpoint_dir: Path) -> None:
    shutil.copy(checkpoint_dir / "linear.pt", tmp_path / "linear.pt")
    with pytest.raises(Exception, match="gated"):
        load_models(Settings(checkpoint_dir=tmp_path, modes=["linear", "gated"]))


def test_default_modes_skip_missing_files_but_need_the_default_mode(
    tmp_path: Path, checkpoint_dir: Path
) -> None:
    shutil.copy(checkpoint_dir / "linear.pt", tmp_path / "linear.pt")
    models = load_models(Settings(checkpoint_dir=tmp_path))
    assert list(models) == ["linear"] and models["linear"].model_id.startswith("linear-")
    assert isinstance(models["linear"].reader, ServingReader)  # the lean path serves
    with pytest.raises(FileNotFoundError, match="default mode 'none'"):
        load_models(Settings(checkpoint_dir=tmp_path, default_mode="none"))


def test_a_default_mode_that_is_not_served_is_named_as_such(
    tmp_path: Path, checkpoint_dir: Path
) -> None:
    # CHEAPQA_MODES=softmax alone: the linear file is there, the setting is what is wrong.
    shutil.copy(checkpoint_dir / "linear.pt", tmp_path / "linear.pt")
    shutil.copy(checkpoint_dir / "gated.pt", tmp_path / "gated.pt")
    with pytest.raises(ValueError, match=r"not among the modes served.*CHEAPQA_DEFAULT_MODE"):
        load_models(Settings(checkpoint_dir=tmp_path, modes=["gated"]))


def test_a_checkpoint_of_another_mode_is_refused(tmp_path: Path, checkpoint_dir: Path) -> None:
    shutil.copy(checkpoint_dir / "gated.pt", tmp_path / "linear.pt")
    with pytest.raises(ValueError, match="holds a 'gated' model"):
        load_models(Settings(checkpoint_dir=tmp_path, modes=["linear"]))


def test_questions_are_cut_as_the_training_questions_were(
    tmp_path: Path, checkpoint_dir: Path
) -> None:
    ckpt = load(checkpoint_dir, "linear")
    meta = {"data": {"options": {"query_tokens_before": 2, "query_tokens_after": 1}}}
    save_checkpoint(tmp_path / "linear.pt", ckpt.model, ckpt.vocab, meta)
    [model] = load_models(Settings(checkpoint_dir=tmp_path, modes=["linear"])).values()
    assert model.query_window == (2, 1)
    entities = ["Tobias", "Marigold"]
    question = "In the winter , Marigold said that @placeholder kept the lighthouse ."
    [ids] = prepare_queries(model, [question], entities).ids
    assert model.vocab.decode(ids) == ["said", "that", "@placeholder", "kept"]
    # Without the window in the meta, the question is used whole.
    [whole] = prepare_queries(
        load_models(Settings(checkpoint_dir=checkpoint_dir, modes=["linear"]))["linear"],
        [question],
        entities,
    ).ids
    assert len(whole) == len(question.split())
