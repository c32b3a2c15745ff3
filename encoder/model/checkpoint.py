"""Checkpoints: weights + the reader's config + the vocabulary + a format version + metadata.

One `torch.save` of plain data (tensors, strings, numbers, lists, dicts), read back with
`torch.load(weights_only=True)`: loading never unpickles code. The model is rebuilt from its
config, as nanoGPT does.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from encoder.model.config import ReaderConfig
from encoder.model.reader import Reader
from encoder.model.vocab import Vocabulary

FORMAT_VERSION = 1
CHECKPOINT_DIR = Path(__file__).parents[1] / "checkpoints"  # encoder/checkpoints


class CheckpointError(Exception):
    """A checkpoint file is missing, unreadable, or of another format version."""


@dataclass(frozen=True)
class Checkpoint:
    model: Reader
    vocab: Vocabulary
    model_id: str  # "<mode>-<first 12 hex digits of model_digest>": config, vocabulary, weights
    meta: dict[str, Any]

    @property
    def query_window(self) -> tuple[int, int] | None:
        return query_window(self.meta)


def query_window(meta: dict[str, Any]) -> tuple[int, int] | None:
    """(tokens before, tokens after) @placeholder that the reader's training questions kept,
    from the checkpoint's meta; questions are cut the same way wherever they are asked.
    A recipe's data sets may differ (sentence questions keep 3 words after the blank, clause
    questions 16): the widest on each side, so no question is cut below what the reader has
    read. None when not recorded (questions are then used whole)."""
    data = meta.get("data")
    if not isinstance(data, dict):
        return None
    # One data set ({"options": ...}) or a recipe's several ({path: {"options": ...}}).
    metas = [data] if "options" in data else [d for d in data.values() if isinstance(d, dict)]
    windows = [w for w in (_window(m.get("options")) for m in metas) if w is not None]
    if not windows:
        return None
    return max(b for b, _ in windows), max(a for _, a in windows)


def _window(options: Any) -> tuple[int, int] | None:
    if not isinstance(options, dict):
        return None
    before, after = options.get("query_tokens_before"), options.get("query_tokens_after")
    if isinstance(before, int) and isinstance(after, int) and before >= 0 and after >= 0:
        return before, after
    return None


def default_checkpoint_path(mode: str) -> Path:
    """The shipped checkpoint of a mode: encoder/checkpoints/<mode>.pt."""
    return CHECKPOINT_DIR / f"{mode}.pt"


def weights_digest(state_dict: dict[str, torch.Tensor]) -> str:
    """sha256 over the weights (names, dtypes, shapes and bytes, in name order)."""
    h = hashlib.sha256()
    for name in sorted(state_dict):
        t = state_dict[name].detach().to("cpu").contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def model_digest(config: ReaderConfig, vocab: Vocabulary, weights_hex: str) -> str:
    """sha256 over everything that decides a model's output: its config, its vocabulary (the
    same weights read other words under another one) and its weights."""
    fields = asdict(config)
    if config.mode != "mentions":  # added with that mode: the other readers keep their ids
        del fields["mention_offset"]
    h = hashlib.sha256()
    h.update(json.dumps(fields, sort_keys=True).encode())
    h.update(b"\0".join(token.encode() for token in vocab.tokens))
    h.update(weights_hex.encode())
    return h.hexdigest()


def save_checkpoint(
    path: str | os.PathLike[str], model: Reader, vocab: Vocabulary, meta: dict[str, Any]
) -> None:
    """Write the checkpoint atomically (a temporary file renamed into place)."""
    if len(vocab) != model.config.vocab_size:
        raise ValueError(f"vocabulary has {len(vocab)} tokens, model {model.config.vocab_size}")
    payload = {
        "format_version": FORMAT_VERSION,
        "config": asdict(model.config),
        "vocab": list(vocab.tokens),
        "meta": dict(meta),
        "state_dict": {k: _stored(k, v) for k, v in model.state_dict().items()},
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(payload, f)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a checkpoint is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# The word embedding is most of a checkpoint's bytes (a 35,000-word vocabulary: 7 of 8 MB in
# float32); it is stored in float16 (a relative rounding of 2^-11, far below what training
# moves a row) and read back into the float32 model. Every other weight stays float32.
HALF_STORED = ("embedding.weight",)


def _stored(name: str, tensor: torch.Tensor) -> torch.Tensor:
    tensor = tensor.detach().to("cpu")
    return tensor.half() if name in HALF_STORED and tensor.is_floating_point() else tensor


def load_checkpoint(path: str | os.PathLike[str], device: str = "cpu") -> Checkpoint:
    """Rebuild the reader (in eval mode, on `device`) and its vocabulary from a checkpoint."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint file at {path}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises several types for truncated or foreign files
        raise CheckpointError(f"{path} is not a readable checkpoint: {e}") from e
    if not isinstance(payload, dict) or "format_version" not in payload:
        raise CheckpointError(f"{path} is not a cheapqa checkpoint (no format_version)")
    version = payload["format_version"]
    if version != FORMAT_VERSION:
        raise CheckpointError(
            f"{path} has checkpoint format {version}; this version reads format {FORMAT_VERSION}"
        )
    try:
        config = ReaderConfig(**payload["config"])
        vocab = Vocabulary(payload["vocab"])
        state_dict = payload["state_dict"]
        model = Reader(config)
        model.load_state_dict(state_dict)
    except (KeyError, TypeError, ValueError, RuntimeError) as e:
        raise CheckpointError(f"{path} is an inconsistent checkpoint: {e}") from e
    if len(vocab) != config.vocab_size:
        raise CheckpointError(f"{path}: vocabulary of {len(vocab)} but config {config.vocab_size}")
    model.to(device).eval()
    # Computed at load time, never stored: a checkpoint cannot carry a stale id.
    model_id = f"{config.mode}-{model_digest(config, vocab, weights_digest(state_dict))[:12]}"
    return Checkpoint(model=model, vocab=vocab, model_id=model_id, meta=dict(payload["meta"]))
