"""Going on from a trained reader: its checkpoint, checked against the recipe's model, and
loaded (a gated reader may start from a linear one, its gate open)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, replace
from pathlib import Path

import torch

from encoder.model.attention import GatedAttention
from encoder.model.checkpoint import Checkpoint, load_checkpoint
from encoder.model.config import ReaderConfig
from encoder.model.modes import Mode
from encoder.model.reader import MENTION_PRIOR_WEIGHTS, Reader
from encoder.model.vocab import Vocabulary
from encoder.training.recipe import Recipe, RecipeError

GATE_OPENED = ("linear", "gated")  # a start from another mode's reader (open_gate)
# The mentions mode goes on from softmax's GRUs and embeddings; its pointer starts as H q.
POINTED = ("softmax", "mentions")
OUTPUT_LAYER = ("W_r.", "W_q.", "W_o.", "W_p.", "b_o", *MENTION_PRIOR_WEIGHTS)
GATE_OPEN_BIAS = 5.0  # sigmoid(5) = 0.993: the gate starts (almost) fully open


def init_checkpoint(recipe: Recipe, mode: Mode) -> Checkpoint | None:
    path = recipe.init_path(mode)
    if path is None:
        return None
    if not path.is_file():
        raise RecipeError(f"the recipe starts from {path}, which does not exist")
    start = load_checkpoint(path)
    wanted = recipe.init_from.get(mode, mode)
    if wanted != mode and (wanted, mode) not in (GATE_OPENED, POINTED):
        raise RecipeError(f"a {mode} reader cannot start from a {wanted} one")
    if start.model.config.mode != wanted:
        raise RecipeError(f"{path} holds a {start.model.config.mode} reader, not {wanted}")
    return start


def check_same_shape(start: ReaderConfig, config: ReaderConfig, path: Path | None) -> None:
    """Everything that shapes a weight must match; length_norm and dropout may change, and
    the mention prior may be added (its weight starts at zero, so the reader is unchanged)."""
    keep = {"length_norm", "dropout"}
    if config.mention_prior and not start.mention_prior:
        keep.add("mention_prior")
    if (start.mode, config.mode) == GATE_OPENED:
        keep.add("mode")
    if (start.mode, config.mode) == POINTED:
        keep |= {"mode", "mention_prior", "mention_offset", "output", "max_entities"}
    a = {k: v for k, v in asdict(start).items() if k not in keep}
    b = {k: v for k, v in asdict(config).items() if k not in keep}
    if a != b:
        diff = ", ".join(f"{k} {a[k]!r} -> {b[k]!r}" for k in a if a[k] != b[k])
        raise RecipeError(f"the recipe's model differs from {path}: {diff}")


def load_start(model: Reader, start: Reader) -> None:
    """The starting reader's weights; only a mention prior it lacked may stay as initialised,
    and a gated reader started from a linear one gets its gate, open (see open_gate)."""
    weights = start.state_dict()
    if (start.config.mode, model.config.mode) == POINTED:
        weights = {k: v for k, v in weights.items() if not k.startswith(OUTPUT_LAYER)}
    missing, unexpected = model.load_state_dict(weights, strict=False)
    allowed = set(MENTION_PRIOR_WEIGHTS) | {"pointer.weight", "pointer.bias"}
    opening = (start.config.mode, model.config.mode) == GATE_OPENED
    if opening:
        allowed |= {"attention.gate.weight", "attention.gate.bias"}
    if unexpected or set(missing) - allowed:
        raise RecipeError(f"cannot go on from that reader: missing {missing}, extra {unexpected}")
    if opening:
        open_gate(model)


def open_gate(model: Reader) -> None:
    """A gated reader that answers as the linear reader it was loaded from: the gate is
    sigmoid(GATE_OPEN_BIAS) = s for every state, so C and R shrink by s², which W_r takes
    back. Training then closes the gate where forgetting a state helps."""
    attention = model.attention
    assert isinstance(attention, GatedAttention)
    with torch.no_grad():
        attention.gate.weight.zero_()
        attention.gate.bias.fill_(GATE_OPEN_BIAS)
        s = torch.sigmoid(torch.tensor(GATE_OPEN_BIAS, dtype=model.W_r.weight.dtype))
        model.W_r.weight.div_(s * s)


def grow_vocabulary(
    start: Checkpoint,
    corpus: Iterable[list[str]],
    size: int,
    min_count: int,
    glove_words: Sequence[str],
    vectors_of: Callable[[list[str]], tuple[torch.Tensor, torch.Tensor]] | None,
) -> Checkpoint:
    """The starting reader with its vocabulary grown to `size` tokens: the words of `corpus`
    (tokenised training text) it lacks, at least `min_count` times, commonest first, then
    `glove_words` in their order. A new word's row is its GloVe vector (`vectors_of`, as
    embeddings.glove_vectors: the trained rows are still within a few degrees of GloVe's), or
    a random row of GloVe's scale; every old row and weight is kept, so the reader answers as
    before until training moves the new rows."""
    have = set(start.vocab.tokens)
    room = size - len(have)
    counts = Counter(t for tokens in corpus for t in tokens if t not in have)
    new = [w for w, c in counts.most_common() if c >= min_count and w.isalpha()][: max(0, room)]
    taken = have | set(new)
    new += [w for w in glove_words if w not in taken][: max(0, room - len(new))]
    if not new:
        return start
    old = start.model.embedding.weight.detach()
    rows = torch.randn(len(new), old.shape[1], generator=torch.Generator().manual_seed(0))
    none_found = torch.zeros(len(new), dtype=torch.bool)
    vectors, found = vectors_of(new) if vectors_of is not None else (rows, none_found)
    rows = rows * float(vectors[found].std() if bool(found.any()) else old.std())
    rows[found] = vectors[found]
    config = replace(start.model.config, vocab_size=len(start.vocab) + len(new))
    model = Reader(config)
    weights = dict(start.model.state_dict())
    weights["embedding.weight"] = torch.cat([old, rows.to(old.dtype)])
    model.load_state_dict(weights)
    return replace(start, model=model, vocab=Vocabulary([*start.vocab.tokens, *new]))
