"""Checkpoint save/load round trip and clear errors for bad files."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from encoder.model.checkpoint import (
    FORMAT_VERSION,
    CheckpointError,
    default_checkpoint_path,
    load_checkpoint,
    save_checkpoint,
)
from encoder.model.config import ReaderConfig
from encoder.model.modes import Mode
from encoder.model.reader import Reader
from encoder.model.vocab import Vocabulary


def _model(mode: Mode = "linear") -> tuple[Reader, Vocabulary]:
    vocab = Vocabulary.build([["the", "cat", "sat", "the"]], max_entities=4, min_count=1)
    torch.manual_seed(0)
    config = ReaderConfig(
        mode=mode,
        vocab_size=len(vocab),
        embed_dim=8,
        hidden_size=6,
        max_entities=4,
    )
    return Reader(config), vocab


@pytest.mark.parametrize("mode", ["none", "linear", "gated", "softmax"])
def test_round_trip(tmp_path: Path, mode: Mode) -> None:
    model, vocab = _model(mode)
    path = tmp_path / "m.pt"
    save_checkpoint(path, model, vocab, {"epochs": 2, "note": "x"})
    ckpt = load_checkpoint(path)
    assert ckpt.vocab == vocab
    assert ckpt.meta == {"epochs": 2, "note": "x"}
    assert ckpt.model.config == model.config
    assert not ckpt.model.training
    assert ckpt.model_id.startswith(f"{mode}-") and len(ckpt.model_id) == len(mode) + 13
    for name, tensor in model.state_dict().items():
        loaded = ckpt.model.state_dict()[name]
        assert loaded.dtype == tensor.dtype  # read back into the float32 model
        # The embedding is stored in half precision (most of the file), the rest exactly.
        expected = tensor.half().float() if name == "embedding.weight" else tensor
        assert torch.equal(loaded, expected), name
    assert torch.load(path, weights_only=True)["state_dict"]["embedding.weight"].dtype == (
        torch.float16
    )
    # Same weights, same id; different weights, different id.
    assert load_checkpoint(path).model_id == ckpt.model_id
    with torch.no_grad():
        model.W_o.bias.add_(1.0)
    save_checkpoint(path, model, vocab, {})
    assert load_checkpoint(path).model_id != ckpt.model_id


def test_file_holds_no_pickled_code(tmp_path: Path) -> None:
    model, vocab = _model()
    path = tmp_path / "m.pt"
    save_checkpoint(path, model, vocab, {})
    payload = torch.load(path, weights_only=True)
    assert payload["format_version"] == FORMAT_VERSION
    assert set(payload) == {"format_version", "config", "vocab", "meta", "state_dict"}


def test_missing_corrupt_and_wrong_version(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no checkpoint"):
        load_checkpoint(tmp_path / "absent.pt")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="not a readable"):
        load_checkpoint(bad)
    model, vocab = _model()
    path = tmp_path / "m.pt"
    save_checkpoint(path, model, vocab, {})
    truncated = tmp_path / "trunc.pt"
    truncated.write_bytes(path.read_bytes()[:200])
    with pytest.raises(CheckpointError):
        load_checkpoint(truncated)
    payload = torch.load(path, weights_only=True)
    payload["format_version"] = FORMAT_VERSION + 1
    torch.save(payload, path)
    with pytest.raises(CheckpointError, match="format"):
        load_checkpoint(path)


def test_vocab_size_mismatch_is_refused(tmp_path: Path) -> None:
    model, vocab = _model()
    with pytest.raises(ValueError):
        save_checkpoint(tmp_path / "m.pt", model, Vocabulary(vocab.tokens[:-1]), {})


def test_default_path() -> None:
    assert default_checkpoint_path("gated").name == "gated.pt"
    assert default_checkpoint_path("gated").parent.name == "checkpoints"


@pytest.mark.parametrize("mode", ["none", "linear", "gated", "softmax"])
def test_shipped_checkpoints_load(mode: Mode) -> None:
    path = default_checkpoint_path(mode)
    assert path.stat().st_size < 5_000_000  # shipped in the package: a few MB at most
    ckpt = load_checkpoint(path)
    assert ckpt.model.config.mode == mode
    assert len(ckpt.vocab) == ckpt.model.config.vocab_size
    assert ckpt.vocab.max_entities == ckpt.model.config.max_entities
    assert 0.0 < ckpt.meta["validation_accuracy"] <= 1.0
    assert ckpt.query_window is not None and ckpt.query_window[0] > 0


def test_shipped_linear_reader_reads_the_built_test_set() -> None:
    from encoder.training.batches import encode_questions
    from encoder.training.data.questions import numbered_as_served, read_questions
    from encoder.training.predict import accuracy

    test_file = Path("data/para-200/test.jsonl")
    if not test_file.is_file():
        pytest.skip("run `cheapqa data build --task para --window-tokens 200` first")
    questions = [
        numbered_as_served(q) for _, q in zip(range(200), read_questions(test_file), strict=False)
    ]
    ckpt = load_checkpoint(default_checkpoint_path("linear"))
    # RESULTS.md reports 0.875 on the first 2,000 test questions; the bag-of-words baseline is 0.58.
    assert accuracy(ckpt.model, encode_questions(questions, ckpt.vocab)) > 0.7


def test_query_window_of_a_recipe_is_the_widest_of_its_data_sets() -> None:
    from encoder.model.checkpoint import query_window

    def described(before: int, after: int) -> dict[str, object]:
        return {"options": {"query_tokens_before": before, "query_tokens_after": after}}

    # Sentence questions keep 3 words after the blank, clause questions 16: a served
    # subject-blank question ("@placeholder rejected two offers from X") keeps its 16.
    meta = {"data": {"data/para-200": described(16, 3), "data/para-clause-400": described(16, 16)}}
    assert query_window(meta) == (16, 16)
    assert query_window({"data": described(16, 3)}) == (16, 3)
    assert query_window({"data": {"data/old": {"options": {}}}}) is None
    assert query_window({}) is None
