"""The readers the service serves with: one checkpoint per configured mode."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from cheapqa_client.schemas import ModelInfo, ModelsOut, TrainedOn
from encoder.model.checkpoint import CHECKPOINT_DIR, load_checkpoint
from encoder.model.modes import READOUT_MODES
from encoder.model.serving import Serving, for_serving
from encoder.model.state import DocumentState
from encoder.model.vocab import Vocabulary
from encoder.text import meaning, name_kinds, ranking, reading, roles
from encoder.text.anonymise import AnonymisedText, anonymise_document
from encoder.text.ranking import Weights
from encoder.text.tokens import plain_text, plain_text_with_offsets
from service.errors import Unavailable
from service.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedModel:
    mode: str
    reader: Serving  # a ServingReader on the CPU in float32 (see encoder.model.serving)
    vocab: Vocabulary
    model_id: str
    # (tokens before, tokens after) @placeholder that the reader's training questions kept;
    # served questions are cut the same way. None: questions are used whole.
    query_window: tuple[int, int] | None = None
    trained_on: TrainedOn = field(default_factory=TrainedOn)  # from the checkpoint's meta
    test_accuracy: float | None = None  # recorded for this very checkpoint, or unknown
    # How a question asked in words ranks its answers, fitted for this very checkpoint
    # (encoder.text.ranking); None: the hand-set ranking of a cloze sentence. `plain`: the
    # weights fitted without meaning(e), for a question or record without sentence vectors.
    ranking: Weights | None = None
    plain_ranking: Weights | None = None

    @property
    def max_entities(self) -> int:
        return self.reader.config.max_entities

    @property
    def entity_slots(self) -> int:
        """The reader's entity slots: the reader's, or fewer when the vocabulary holds fewer
        entity markers. A document naming more shares them (encoder.model.shared_slots)."""
        return min(self.max_entities, self.vocab.max_entities)

    @property
    def pointed(self) -> bool:
        """Whether the reader points at the entities' mentions (the mentions mode) rather than
        scoring output slots."""
        return self.mode not in READOUT_MODES

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Tokens -> this reader's input ids: marker i reads as marker i mod E
        (`Vocabulary.encode_marked`), so every entity has one however many a text names."""
        return self.vocab.encode_marked(tokens)[0]

    def _inputs(self, tokens: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """A text's ids (n,) and, for the mentions mode, each token's entity index (n,)."""
        ids, entities = self.vocab.encode_marked(tokens)
        if not self.pointed:
            return torch.tensor(ids, dtype=torch.long), None
        return torch.tensor(ids, dtype=torch.long), torch.tensor(entities, dtype=torch.long)

    def read(self, token_lists: Sequence[Sequence[str]]) -> list[DocumentState]:
        """Each anonymised document's state in this mode (blocking)."""
        inputs = [self._inputs(tokens) for tokens in token_lists]
        if not self.pointed:
            return self.reader.encode_documents([ids for ids, _ in inputs])
        entities = [e for _, e in inputs if e is not None]
        return self.reader.encode_documents([ids for ids, _ in inputs], entities)

    def extend(self, state: DocumentState, tokens: Sequence[str]) -> DocumentState:
        """The state with the appended tokens read (blocking); their markers number the
        document's entities as indexing the whole text would."""
        ids, entities = self._inputs(tokens)
        return self.reader.extend(state, ids, entities)


@dataclass
class ServedModels:
    """The models this server serves: empty until loading them (in a thread, once the app
    has started) ends; `error` says why loading failed."""

    by_mode: dict[str, LoadedModel] = field(default_factory=dict)
    error: str | None = None

    def ready(self) -> dict[str, LoadedModel]:
        """The loaded models; 503 while they load or once loading them failed."""
        if not self.by_mode:
            message = "the models failed to load" if self.error else "the models are loading"
            raise Unavailable(message, code="not_ready")
        return self.by_mode


def entity_slots(models: Mapping[str, LoadedModel]) -> int:
    """The fewest entity slots among the models (kept with a record): a document naming more
    entities shares them in the slot modes (encoder.model.shared_slots)."""
    return min(m.entity_slots for m in models.values())


def anonymise(
    text: str,
    candidates: list[str] | None = None,
    known: list[str] | None = None,
) -> AnonymisedText:
    """Tokens with entity markers for every entity the text names (every mode can answer
    with each: encoder.model.shared_slots), and where each is named in the text; raises
    ValueError when the text holds no tokens. The reader reads the text (and candidates) as
    `plain_text` makes them; the spans point into the text as
    posted, and its stored hash is that text's."""
    plain, offsets = plain_text_with_offsets(text)
    given = None if candidates is None else [plain_text(c) for c in candidates]
    anon = anonymise_document(plain, given, max_entities=None, known=known or (), with_spans=True)
    if not anon.tokens:
        raise ValueError("the text holds no tokens")
    if offsets is None:
        return anon
    spans = [[(offsets[a], offsets[b]) for a, b in found] for found in anon.spans]
    return replace(anon, spans=spans)


def trained_on(meta: dict[str, Any]) -> TrainedOn:
    """What the checkpoint's meta says it was trained on: the recipes of its chain (those of
    the checkpoints it went on from first, oldest first), each named by its stages joined
    with "+", how many stages in all, and the data sets they read in order of first use. An
    older run's meta names only its data folder; a meta that says neither gives nothing."""
    recipes = _recipe_chain(meta) if _stages(meta.get("recipe")) else []
    if recipes:
        stages = [stage for recipe in recipes for stage in recipe]
        return TrainedOn(
            recipes=["+".join(name for name, _ in recipe) for recipe in recipes],
            stages=len(stages),
            data_sets=list(dict.fromkeys(d for _, folders in stages for d in folders)),
        )
    options = meta.get("train_options")
    if isinstance(options, dict) and options.get("data_dir"):
        return TrainedOn(data_sets=[str(options["data_dir"])])
    return TrainedOn()


Stage = tuple[str, list[str]]  # its name, the data folders it reads


def _recipe_chain(meta: dict[str, Any]) -> list[list[Stage]]:
    """The stages of each recipe from the first checkpoint of the chain to this one."""
    init = meta.get("init")
    earlier = _recipe_chain(init) if isinstance(init, dict) else []
    own = _stages(meta.get("recipe"))
    return [*earlier, own] if own else earlier


def _stages(recipe: Any) -> list[Stage]:
    stages = recipe.get("stages") if isinstance(recipe, dict) else None
    parts = []
    for stage in stages if isinstance(stages, list) else []:
        if isinstance(stage, dict):
            folders = [str(d[0]) for d in stage.get("data", ()) if isinstance(d, list | tuple)]
            parts.append((str(stage.get("name", "?")), folders))
    return parts


def recorded_test_accuracy(
    meta: dict[str, Any], index_path: Path, mode: str, model_id: str
) -> float | None:
    """The checkpoint's own test accuracy, else the one the folder's index.json records for
    this mode, if the index names this very model; None when neither does."""
    own = meta.get("test_accuracy")
    if isinstance(own, int | float):
        return float(own)
    try:
        entry = json.loads(index_path.read_text())["modes"][mode]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    accuracy = entry.get("test_accuracy") if isinstance(entry, dict) else None
    if entry.get("model_id") != model_id or not isinstance(accuracy, int | float):
        return None
    return float(accuracy)


def describe_models(models: Mapping[str, LoadedModel]) -> ModelsOut:
    return ModelsOut(
        models=[
            ModelInfo(
                mode=mode,
                model_id=m.model_id,
                k=m.reader.config.hidden_size,
                entity_slots=None if m.pointed else m.entity_slots,
                every_entity=True,
                vocabulary=len(m.vocab),
                trained_on=m.trained_on,
                test_accuracy=m.test_accuracy,
            )
            for mode, m in models.items()
        ]
    )


def checkpoint_dir(settings: Settings) -> Path:
    """The folder the `<mode>.pt` checkpoints are loaded from: the setting, else the shipped
    readers' (encoder/checkpoints)."""
    return CHECKPOINT_DIR if settings.checkpoint_dir is None else Path(settings.checkpoint_dir)


def checkpoint_path(settings: Settings, mode: str) -> Path:
    return checkpoint_dir(settings) / f"{mode}.pt"


def pair_reader_path(settings: Settings) -> Path | None:
    """Where the served pair reader is kept: None where the settings serve none (it reads
    beside meaning(e), so both must be on) or the checkpoints hold none."""
    path = checkpoint_dir(settings) / reading.FILE
    return path if settings.reading and settings.meaning and path.is_file() else None


def _load_pair_reader(settings: Settings) -> None:
    """The pair reader loaded now, where it is fitted; on by default, checkpoints without one
    are served without it (logged), but asked for by name a missing one fails the start."""
    found = pair_reader_path(settings)
    if found is not None:
        reading.loaded(found)
        log.info("loaded the pair reader from %s", found)
        return
    path = checkpoint_dir(settings) / reading.FILE
    if "reading" in settings.model_fields_set:
        raise FileNotFoundError(
            f"CHEAPQA_READING is on but there is no pair reader at {path}: fit one "
            "with `cheapqa bench fit-reading`, or set CHEAPQA_READING=false"
        )
    log.warning("no pair reader at %s: questions are answered without it", path)


def load_models(settings: Settings, answering: bool = True) -> dict[str, LoadedModel]:
    """Loads every configured mode; blocking (call it from a thread). `answering`: and what
    only answers need (the pair reader); a worker, which indexes alone, goes without.

    Modes named in the settings must all load. Left at the default (every mode), a mode
    without a checkpoint file is skipped with a warning, as long as the default mode loads.
    """
    # Process-wide; set here because serve and worker both load their models through this.
    torch.set_num_threads(settings.torch_threads)
    explicit = "modes" in settings.model_fields_set
    fitted = ranking.read(checkpoint_dir(settings))  # every mode's, from the one folder
    models: dict[str, LoadedModel] = {}
    for mode in dict.fromkeys(settings.modes):
        path = checkpoint_path(settings, mode)
        if not explicit and not path.is_file():
            log.warning("no %s checkpoint at %s: mode %s not served", mode, path, mode)
            continue
        ckpt = load_checkpoint(path, device=settings.device)
        if ckpt.model.config.mode != mode:
            raise ValueError(f"{path} holds a {ckpt.model.config.mode!r} model, not {mode!r}")
        weights = fitted.get(mode)
        if weights is not None and weights.model_id != ckpt.model_id:
            log.warning(
                "%s's ranking weights were fitted for model %s, not %s: not used",
                mode,
                weights.model_id,
                ckpt.model_id,
            )
            weights = None
        models[mode] = LoadedModel(
            mode,
            for_serving(ckpt.model),  # eval() for good; the lean path's tables built now
            ckpt.vocab,
            ckpt.model_id,
            ckpt.query_window,
            trained_on(ckpt.meta),
            recorded_test_accuracy(ckpt.meta, path.parent / "index.json", mode, ckpt.model_id),
            None if weights is None else weights.weights if settings.meaning else weights.plain,
            None if weights is None else weights.plain,
        )
        log.info("loaded %s model %s from %s", mode, ckpt.model_id, path)
    log.info("read what %d words say of a name (%s)", name_kinds.load(), name_kinds.TABLE)
    if settings.meaning:  # loaded now: a missing package fails the start, not a document
        log.info("loaded the sentence model (%d-d vectors)", meaning.load())
        head = roles.shipped()
        log.info("role(e): %s", f"the head at {roles.SHIPPED}" if head else "no head shipped")
        if answering and settings.reading:
            _load_pair_reader(settings)
    if settings.default_mode not in models:
        if settings.default_mode not in settings.modes:  # CHEAPQA_MODES=softmax alone
            raise ValueError(
                f"the default mode {settings.default_mode!r} is not among the modes served "
                f"({', '.join(settings.modes)}): set CHEAPQA_DEFAULT_MODE to one of them"
            )
        raise FileNotFoundError(
            f"no checkpoint for the default mode {settings.default_mode!r} at "
            f"{checkpoint_path(settings, settings.default_mode)}"
        )
    return models
