"""The attention modes and what state each keeps: the one definition, imported by the model,
the settings, the codec, the benches and the CLI. No torch here, so importing it is cheap.

| mode      | kept beside last_hidden h_n | shape  |
|-----------|-----------------------------|--------|
| `none`    | nothing                     |        |
| `linear`  | C = Σ_t h_t h_tᵀ            | (k, k) |
| `gated`   | C = Σ_t f_t f_tᵀ            | (k, k) |
| `softmax` | H                           | (n, k) |
| `mentions`| K, one key per entity mention| (M, k) |
"""

from __future__ import annotations

from typing import Literal, get_args

# The one definition of the attention modes; settings, codec, benches and the CLI import it.
Mode = Literal["none", "linear", "gated", "softmax", "mentions"]
MODES: tuple[Mode, ...] = get_args(Mode)

# The paper's four modes: each reads a vector R the output layer scores the E slots from (the
# mentions mode points at the document's mentions instead).
READOUT_MODES: tuple[Mode, ...] = ("none", "linear", "gated", "softmax")

# What each mode keeps beside last_hidden: C (k, k), H (n, k), or nothing.
Memory = Literal["C", "H", "K"]
MEMORY: dict[Mode, Memory | None] = {
    "none": None,
    "linear": "C",
    "gated": "C",
    "softmax": "H",
    "mentions": "K",
}


def memory_shape(mode: Mode, k: int, n: int, mentions: int = 0) -> tuple[int, int] | None:
    """The shape of the memory a state of this mode keeps (None: it keeps none); the mentions
    mode keeps one row per mention of an entity."""
    kept = MEMORY[mode]
    if kept is None:
        return None
    return {"C": (k, k), "H": (n, k), "K": (mentions, k)}[kept]
