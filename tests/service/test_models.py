"""Which checkpoints the service loads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from service.models import load_models
from service.settings import Settings


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
    with pytest.raises(FileNotFoundError, match="default mode 'none'"):
        load_models(Settings(checkpoint_dir=tmp_path, default_mode="none"))


def test_a_checkpoint_of_another_mode_is_refused(tmp_path: Path, checkpoint_dir: Path) -> None:
    shutil.copy(checkpoint_dir / "gated.pt", tmp_path / "linear.pt")
    with pytest.raises(ValueError, match="holds a 'gated' model"):
        load_models(Settings(checkpoint_dir=tmp_path, modes=["linear"]))
