"""A staged training recipe: one JSON file names the model, the validation sets and the stages.

    {"model": {"hidden_size": 100, "length_norm": "sqrt", "output": "markers", ...},
     "vocab_size": 20000, "batch_size": 32, "seed": 13,
     "validation": ["data/para-200", "data/para-800", "data/infer-200"],
     "stages": [{"name": "para-200", "data": [["data/para-200", 1.0]], "epochs": 4, "lr": 2e-3},
                ...]}

A stage trains `epochs` passes over its data sets (each entry: a folder built by `cheapqa data
build`, and the share of its training questions drawn each epoch); the checkpoint kept is the
one with the best mean accuracy over the validation sets, whatever stage it came from. Every
mode gets the same stages, so their accuracies compare.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Stage:
    name: str
    data: tuple[tuple[Path, float], ...]  # (folder with train.jsonl, share drawn per epoch)
    epochs: int
    lr: float


@dataclass(frozen=True)
class ModelShape:
    embed_dim: int = 50  # 50 so GloVe 6B 50-d vectors can initialise the embedding
    hidden_size: int = 100
    max_entities: int = 256
    dropout: float = 0.2
    length_norm: str = "n"
    output: str = "slots"
    mention_prior: bool = False
    mention_offset: int = 3  # the mentions mode's key offset (ReaderConfig.mention_offset)


@dataclass(frozen=True)
class Recipe:
    stages: tuple[Stage, ...]
    validation: tuple[Path, ...]  # folders with validation.jsonl; selection on their mean
    model: ModelShape = field(default_factory=ModelShape)
    vocab_size: int = 10_000
    min_count: int = 2
    batch_size: int = 32
    clip: float = 5.0
    seed: int = 13
    glove: bool = True  # initialise word embeddings from GloVe when it is installed
    # Going on from a checkpoint, grow its vocabulary to this many tokens (0: keep it): the
    # training data's new words, then GloVe's commonest, their rows from GloVe
    # (warm_start.grow_vocabulary). A reader of novels lacks "goalkeeper" and "regulator".
    grow_vocab: int = 0
    embedding_lr_scale: float = 1.0  # 0 freezes the embeddings
    entity_scale: float = 1.5  # marker vectors: orthogonal, this many times a word's norm
    shuffle_entities: bool = True
    # Renumber a slot mode's entities into all E slots ("all"), among the used ("used"), or
    # read every entity with shared slots ("shared": numbered among the document's own, markers
    # i mod E, as the service reads them; encoder.model.shared_slots)
    entity_slots: str = "all"
    freeze_markers: bool = False  # marker embeddings stay fixed random vectors
    max_validation: int = 2000  # questions per validation set (the first N)
    max_train: int | None = None  # per data set, the first N questions (quick trials)
    # A checkpoint to go on from ("{mode}" is filled in), e.g. the output of an earlier recipe:
    # its vocabulary and weights are the start; the model shape must be the same (length_norm
    # and dropout, which hold no weights, may differ).
    init: str | None = None
    # A mode that starts from another mode's checkpoint: {"gated": "linear"} starts the gated
    # reader from the linear one with its gate open (the only such start allowed).
    init_from: dict[str, str] = field(default_factory=dict)
    # `cheapqa data build` arguments of a data folder whose name does not say them (e.g. one
    # built with another --seed and --stride-tokens), for the hint when it is missing.
    builds: dict[str, str] = field(default_factory=dict)

    def init_path(self, mode: str) -> Path | None:
        return Path(self.init.format(mode=self.init_from.get(mode, mode))) if self.init else None

    def data_dirs(self) -> list[Path]:
        return list(dict.fromkeys([p for s in self.stages for p, _ in s.data]))

    def as_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(self, default=_plain))


def _plain(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "__dataclass_fields__"):
        return {k: getattr(o, k) for k in o.__dataclass_fields__}
    raise TypeError(type(o))


class RecipeError(ValueError):
    """The recipe file is missing, malformed, or names data that is not built."""


def load_recipe(path: Path, overrides: dict[str, Any] | None = None) -> Recipe:
    """Read a recipe; data paths are relative to the working directory."""
    try:
        raw: dict[str, Any] = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise RecipeError(f"cannot read recipe {path}: {e}") from e
    raw.update(overrides or {})
    try:
        stages = tuple(
            Stage(
                name=str(s["name"]),
                data=tuple((Path(p), float(share)) for p, share in s["data"]),
                epochs=int(s["epochs"]),
                lr=float(s["lr"]),
            )
            for s in raw.pop("stages")
        )
        validation = tuple(Path(p) for p in raw.pop("validation"))
        model = ModelShape(**raw.pop("model", {}))
        return Recipe(stages=stages, validation=validation, model=model, **raw)
    except (KeyError, TypeError, ValueError) as e:
        raise RecipeError(f"recipe {path}: {e}") from e


def check_data(recipe: Recipe) -> None:
    """Raise RecipeError naming the command that builds any missing data set."""
    missing = [p / "train.jsonl" for p in recipe.data_dirs() if not (p / "train.jsonl").is_file()]
    missing += [
        p / "validation.jsonl" for p in recipe.validation if not (p / "validation.jsonl").is_file()
    ]
    if missing:
        hints = [
            f"cheapqa data build {recipe.builds.get(str(p.parent)) or _task_of(p.parent)} "
            f"--out {p.parent}"
            for p in missing
        ]
        raise RecipeError(
            "missing data: "
            + ", ".join(map(str, missing))
            + "\nbuild it with:\n  "
            + "\n  ".join(dict.fromkeys(hints))
        )


def _task_of(folder: Path) -> str:
    task, _, window = folder.name.partition("-")
    return f"--task {task}" + (f" --window-tokens {window}" if window.isdigit() else "")
