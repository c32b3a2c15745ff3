"""The readers the service serves with: one checkpoint per configured mode."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from encoder.checkpoint import default_checkpoint_path, load_checkpoint
from encoder.model import Reader
from encoder.vocab import Vocabulary
from service.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedModel:
    mode: str
    reader: Reader
    vocab: Vocabulary
    model_id: str
    # (tokens before, tokens after) @placeholder that the reader's training questions kept;
    # served questions are cut the same way. None: questions are used whole.
    query_window: tuple[int, int] | None = None

    @property
    def max_entities(self) -> int:
        return self.reader.config.max_entities

    def token_ids(self, tokens: Sequence[str]) -> torch.Tensor:
        """Tokens -> 1-D long tensor of this model's vocabulary ids."""
        return torch.tensor(self.vocab.encode(list(tokens)), dtype=torch.long)


def query_window(meta: dict[str, Any]) -> tuple[int, int] | None:
    """The question window of the training data, from the checkpoint's meta (if recorded)."""
    data = meta.get("data")
    options = data.get("options") if isinstance(data, dict) else None
    if not isinstance(options, dict):
        return None
    before, after = options.get("query_tokens_before"), options.get("query_tokens_after")
    if isinstance(before, int) and isinstance(after, int) and before >= 0 and after >= 0:
        return before, after
    return None


def checkpoint_path(settings: Settings, mode: str) -> Path:
    if settings.checkpoint_dir is not None:
        return Path(settings.checkpoint_dir) / f"{mode}.pt"
    return default_checkpoint_path(mode)


def load_models(settings: Settings) -> dict[str, LoadedModel]:
    """Loads every configured mode; blocking (call it from a thread).

    Modes named in the settings must all load. Left at the default (every mode), a mode
    without a checkpoint file is skipped with a warning, as long as the default mode loads.
    """
    # Process-wide; set here because serve and worker both load their models through this.
    torch.set_num_threads(settings.torch_threads)
    explicit = "modes" in settings.model_fields_set
    models: dict[str, LoadedModel] = {}
    for mode in dict.fromkeys(settings.modes):
        path = checkpoint_path(settings, mode)
        if not explicit and not path.is_file():
            log.warning("no %s checkpoint at %s: mode %s not served", mode, path, mode)
            continue
        ckpt = load_checkpoint(path, device=settings.device)
        if ckpt.model.config.mode != mode:
            raise ValueError(f"{path} holds a {ckpt.model.config.mode!r} model, not {mode!r}")
        ckpt.model.prepare_serving()  # eval(), and the query GRU's input table now
        models[mode] = LoadedModel(
            mode, ckpt.model, ckpt.vocab, ckpt.model_id, query_window(ckpt.meta)
        )
        log.info("loaded %s model %s from %s", mode, ckpt.model_id, path)
    if settings.default_mode not in models:
        raise FileNotFoundError(
            f"no checkpoint for the default mode {settings.default_mode!r} at "
            f"{checkpoint_path(settings, settings.default_mode)}"
        )
    return models
