"""Random-init readers: of the default size, for timing before trained checkpoints exist, and
tiny ones (other sizes) for the tests that need a checkpoint folder.

Lookup and encoding time depend on the shapes (k, E, vocabulary, n), not on the weights, so a
random reader of the shipped configuration times the same as a trained one. Its vocabulary is
built from the load's own text, so real words map to real ids.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from encoder.model.checkpoint import save_checkpoint
from encoder.model.config import ReaderConfig
from encoder.model.modes import Mode
from encoder.model.reader import Reader
from encoder.model.vocab import Vocabulary
from encoder.text.anonymise import anonymise_document

DEFAULT_VOCAB_SIZE = 5000


def corpus_vocabulary(
    texts: Iterable[str], max_entities: int = 50, max_size: int = DEFAULT_VOCAB_SIZE
) -> Vocabulary:
    """The most frequent words of the texts, after the reserved tokens and entity markers."""
    token_lists = (anonymise_document(t, max_entities=max_entities).tokens for t in texts)
    return Vocabulary.build(token_lists, max_entities=max_entities, max_size=max_size, min_count=1)


def random_reader(
    mode: Mode, vocab: Vocabulary, seed: int = 0, sizes: Mapping[str, Any] | None = None
) -> Reader:
    """A reader with random weights, in eval: the default configuration (k=100, d=50, E the
    vocabulary's entity markers), or with `sizes` (ReaderConfig fields) in their place."""
    torch.manual_seed(seed)
    config = ReaderConfig(mode=mode, vocab_size=len(vocab), max_entities=vocab.max_entities)
    return Reader(dataclasses.replace(config, **(sizes or {}))).eval()


def write_random_checkpoints(
    directory: Path,
    modes: Sequence[Mode],
    vocab: Vocabulary,
    seed: int = 0,
    *,
    sizes: Callable[[Mode], Mapping[str, Any]] | None = None,
    adjust: Callable[[Reader], None] | None = None,
    meta: dict[str, Any] | None = None,
) -> Path:
    """<directory>/<mode>.pt for each mode: what `CHEAPQA_CHECKPOINT_DIR` points a server to.
    `sizes(mode)`: ReaderConfig fields in place of the defaults (the tests' tiny readers);
    `adjust` changes a reader's weights before it is saved (drawn after its own, from the
    same seeded generator); `meta` goes into each checkpoint."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, mode in enumerate(modes):
        reader = random_reader(mode, vocab, seed * 100 + i, sizes(mode) if sizes else None)
        if adjust is not None:
            with torch.no_grad():
                adjust(reader)
        save_checkpoint(directory / f"{mode}.pt", reader, vocab, meta or {"random_init": True})
    return directory
