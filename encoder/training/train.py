"""Training the reader on entity-cloze questions: staged, seeded, resumable, keeps the best
checkpoint by validation."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from encoder.model.checkpoint import save_checkpoint
from encoder.model.config import ReaderConfig
from encoder.model.modes import Mode
from encoder.model.reader import Reader
from encoder.model.vocab import Vocabulary
from encoder.text.tokens import tokenize
from encoder.training.batches import (
    POINTER_ENTITIES,
    Encoded,
    batches,
    concat,
    document_key,
    encode_questions,
    make_batch,
    permute_entities,
    permute_mentions,
    permute_shared,
    spread_entities,
)
from encoder.training.data.questions import numbered_as_served, read_questions, without_named
from encoder.training.embeddings import (
    glove_available,
    glove_common_words,
    glove_vectors,
    init_embeddings,
)
from encoder.training.predict import accuracy
from encoder.training.recipe import ModelShape, Recipe, Stage, check_data
from encoder.training.warm_start import (
    check_same_shape,
    grow_vocabulary,
    init_checkpoint,
    load_start,
)

RESUME_FORMAT = 2
PRIOR_LR_SCALE = 10.0  # the mention prior's weight learns this many times faster
POINTER_LR_SCALE = 3.0  # the mentions mode's new pointer, beside GRUs trained already
MENTION_OFFSET = ReaderConfig.mention_offset  # the field's default


@dataclass(frozen=True)
class TrainOptions:
    mode: Mode
    data_dir: Path  # holds train.jsonl and validation.jsonl
    out: Path  # the best checkpoint; `<out>.resume` holds the state to resume from
    epochs: int = 8
    batch_size: int = 32
    lr: float = 2e-3
    clip: float = 5.0
    seed: int = 13
    embed_dim: int = 50
    hidden_size: int = 100
    max_entities: int = 50
    dropout: float = 0.2
    length_norm: str = "n"  # see ReaderConfig
    output: str = "slots"
    vocab_size: int = 10_000
    min_count: int = 2
    glove: bool = True  # initialise word embeddings from GloVe when it is installed
    embedding_lr_scale: float = 1.0  # 0 freezes the embeddings
    entity_scale: float = 1.5  # marker vectors: orthogonal, this many times a word's norm (0: off)
    shuffle_entities: bool = True
    entity_slots: str = "used"  # renumber into all E slots, or "used" ones only
    freeze_markers: bool = False  # marker embeddings stay their random initial vectors
    max_train: int | None = None  # use only the first N training questions (quick trials)
    resume: bool = True
    threads: int | None = None


@dataclass
class History:
    epochs: list[dict[str, Any]] = field(default_factory=list)
    best_accuracy: float = -1.0
    best_epoch: int = 0


def data_meta(data_dir: Path) -> dict[str, Any]:
    """How the data set's questions were built (its meta.json, each split's baselines left
    out: a checkpoint carries this for every set of its recipe chain and must stay a few MB;
    `cheapqa data build` prints them again), {} when there is no meta.json."""
    path = data_dir / "meta.json"
    if not path.is_file():
        return {}
    meta: dict[str, Any] = json.loads(path.read_text())
    splits = meta.get("splits", {})
    meta["splits"] = {k: {"questions": v.get("questions")} for k, v in splits.items()}
    return meta


def _resume_path(out: Path) -> Path:
    return out.with_name(out.name + ".resume")


def recipe_of(options: TrainOptions) -> Recipe:
    """`cheapqa train --data DIR`: one stage over one data set, validated on the same."""
    return Recipe(
        stages=(Stage("train", ((options.data_dir, 1.0),), options.epochs, options.lr),),
        validation=(options.data_dir,),
        model=ModelShape(
            embed_dim=options.embed_dim,
            hidden_size=options.hidden_size,
            max_entities=options.max_entities,
            dropout=options.dropout,
            length_norm=options.length_norm,
            output=options.output,
        ),
        vocab_size=options.vocab_size,
        min_count=options.min_count,
        batch_size=options.batch_size,
        clip=options.clip,
        seed=options.seed,
        glove=options.glove,
        embedding_lr_scale=options.embedding_lr_scale,
        entity_scale=options.entity_scale,
        shuffle_entities=options.shuffle_entities,
        entity_slots=options.entity_slots,
        freeze_markers=options.freeze_markers,
        max_validation=10**9,
        max_train=options.max_train,
    )


def train(
    options: TrainOptions, log: Callable[[str], None] = print, progress: bool | None = None
) -> History:
    """Train one stage on one data set (see `train_recipe`)."""
    return train_recipe(
        recipe_of(options),
        options.mode,
        options.out,
        log=log,
        progress=progress,
        resume=options.resume,
        threads=options.threads,
    )


@dataclass
class _Position:
    """Where a run stands: stage, epoch within it, batches done of this epoch's order."""

    stage: int = 0
    epoch: int = 0
    batch: int = 0
    order: list[list[int]] = field(default_factory=list)  # this epoch's batches
    loss: float = 0.0
    correct: int = 0
    seen: int = 0
    started: float = 0.0  # seconds spent on this epoch before the last save


def train_recipe(
    recipe: Recipe,
    mode: Mode,
    out: Path,
    log: Callable[[str], None] = print,
    progress: bool | None = None,
    resume: bool = True,
    threads: int | None = None,
    save_every_s: float = 300.0,
    device: str = "cpu",
) -> History:
    """Run the recipe's stages in order, keeping at `out` the checkpoint with the best mean
    validation accuracy. `<out>.resume` is written after every epoch and every `save_every_s`
    seconds within one, so a stopped run picks up at the batch where it stopped. On another
    `device` (a GPU) the weights train there; checkpoints and resume files are the same (the
    dropout draws of a GPU are not kept, so a resumed GPU run is not bit-exact)."""
    if threads:
        torch.set_num_threads(threads)
    check_data(recipe)
    torch.manual_seed(recipe.seed)
    generator = torch.Generator().manual_seed(recipe.seed)
    # Candidates as the service answers them (without_named); validation numbered as the
    # service numbers names, as evaluate reads them.
    train_sets = {
        p: [without_named(q) for q in list(read_questions(p / "train.jsonl"))[: recipe.max_train]]
        for p in recipe.data_dirs()
    }
    valid_sets = {
        p: [
            without_named(numbered_as_served(q))
            for q in list(read_questions(p / "validation.jsonl"))[: recipe.max_validation]
        ]
        for p in recipe.validation
    }

    def corpus() -> Iterator[list[str]]:  # the training text, what a vocabulary is built from
        return (tokenize(q.document) + tokenize(q.query) for qs in train_sets.values() for q in qs)

    start = init_checkpoint(recipe, mode)
    if start is not None and recipe.grow_vocab > len(start.vocab):
        glove = recipe.glove and glove_available()
        start = grow_vocabulary(
            start,
            corpus(),
            recipe.grow_vocab,
            recipe.min_count,
            glove_common_words(recipe.grow_vocab) if glove else [],
            glove_vectors if glove else None,
        )
    vocab = (
        start.vocab
        if start is not None
        else Vocabulary.build(
            corpus(),
            max_entities=recipe.model.max_entities,
            max_size=recipe.vocab_size,
            min_count=recipe.min_count,
        )
    )
    shared = mode == "mentions" or recipe.entity_slots == "shared"  # every entity is read
    space = POINTER_ENTITIES if shared else None
    train_data = {p: encode_questions(qs, vocab, space) for p, qs in train_sets.items()}
    valid_data = {p: encode_questions(qs, vocab, space) for p, qs in valid_sets.items()}
    if recipe.entity_slots == "all" and space is None:
        # Validation's names take slots 0..n-1, where a reader trained on the used slots only
        # already answers; spread once (fixed seed) into all E, they select for what training
        # asks: answering from any slot, as a document with many names needs.
        spread = torch.Generator().manual_seed(recipe.seed)
        valid_data = {
            p: spread_entities(d, vocab.entity_offset, vocab.pad_id, spread)
            for p, d in valid_data.items()
        }
    shape = recipe.model
    config = ReaderConfig(
        mode=mode,
        vocab_size=len(vocab),
        embed_dim=shape.embed_dim,
        hidden_size=shape.hidden_size,
        max_entities=shape.max_entities,
        dropout=shape.dropout,
        pad_id=vocab.pad_id,
        length_norm=shape.length_norm,  # type: ignore[arg-type]
        output=shape.output,  # type: ignore[arg-type]
        mention_prior=shape.mention_prior and mode != "mentions",
        entity_offset=vocab.entity_offset,
        # a field of the mentions mode only: the other readers keep their configs (and ids)
        mention_offset=shape.mention_offset if mode == "mentions" else MENTION_OFFSET,
    )
    model = Reader(config)
    if start is not None:
        check_same_shape(start.model.config, config, recipe.init_path(mode))
        load_start(model, start.model)
        glove_words = int(start.meta.get("glove_words", 0))
    else:
        glove_words = init_embeddings(
            model,
            vocab,
            recipe.glove,
            recipe.entity_scale,
            torch.Generator().manual_seed(recipe.seed),
        )
    model.to(device)
    embed_params = list(model.embedding.parameters())
    other_params = [
        p
        for n, p in model.named_parameters()
        if not n.startswith("embedding.") and n != "mention_weight"
    ]
    if mode == "mentions":
        # going on from another mode's GRUs: the new pointer learns faster at first
        pointer = [model.pointer.weight, model.pointer.bias]
        other_params = [p for p in other_params if all(p is not q for q in pointer)]
    groups: list[dict[str, Any]] = [{"params": other_params}]
    if mode == "mentions":
        groups.append({"params": pointer, "lr_scale": POINTER_LR_SCALE})
    if config.mention_prior:
        # One scalar: Adam moves it by about lr a step, too slowly for a few epochs of going on
        # from a reader without it.
        groups.append({"params": [model.mention_weight], "lr_scale": PRIOR_LR_SCALE})
    if recipe.embedding_lr_scale > 0:
        groups.append({"params": embed_params, "lr_scale": recipe.embedding_lr_scale})
    else:
        model.embedding.weight.requires_grad_(False)
    if recipe.freeze_markers and recipe.embedding_lr_scale > 0:
        # Fixed random marker vectors: every slot is alike, so what is learnt for one entity
        # number holds for all E, trained often or not.
        markers = torch.arange(
            vocab.entity_offset, vocab.entity_offset + vocab.max_entities, device=device
        )
        model.embedding.weight.register_hook(lambda g: g.index_fill(0, markers, 0.0))
    optimizer = torch.optim.Adam(groups, lr=recipe.stages[0].lr)
    history = History()
    pos = _Position()
    resume_path = _resume_path(out)
    if resume and resume_path.is_file():
        state = torch.load(resume_path, weights_only=True, map_location="cpu")
        if state["format"] != RESUME_FORMAT or state["config"] != asdict(config):
            raise ValueError(f"{resume_path} was written for another configuration")
        if _without_epochs(state["recipe"]) != _without_epochs(recipe.as_dict()):
            # More epochs may be asked for; any other change makes it another run.
            raise ValueError(f"{resume_path} was written for another recipe")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])
        generator.set_state(state["generator"])
        history = History(state["epochs"], state["best_accuracy"], state["best_epoch"])
        pos = _Position(**state["position"])
        log(
            f"resuming {mode} after epoch {len(history.epochs)} (stage {pos.stage + 1}, "
            f"epoch {pos.epoch + 1}, batch {pos.batch}) from {resume_path}"
        )
    log(
        f"{mode}: {sum(len(d) for d in train_data.values())} train / "
        f"{sum(len(d) for d in valid_data.values())} validation questions, "
        f"vocabulary {len(vocab)} ({glove_words} GloVe), "
        f"{sum(p.numel() for p in model.parameters())} parameters, "
        f"{len(recipe.stages)} stages, on {device}"
    )
    described = {str(p): data_meta(p) for p in [*recipe.data_dirs(), *recipe.validation]}
    meta_base = {
        "recipe": recipe.as_dict(),
        "train_questions": {str(p): len(d) for p, d in train_data.items()},
        "validation_questions": {str(p): len(d) for p, d in valid_data.items()},
        "glove_words": glove_words,
        "data": described,
    }
    if start is not None:  # what the starting weights were trained on, kept for the record
        init: dict[str, Any] = {"checkpoint": str(recipe.init_path(mode))}
        init["model_id"] = start.model_id
        # ... and what that checkpoint went on from in turn: the whole chain of recipes. A data
        # set this run describes too is not described again (checkpoints stay a few MB).
        keep = ("recipe", "history", "init")
        init.update({k: start.meta[k] for k in keep if k in start.meta})
        earlier_data = start.meta.get("data", {})
        init["data"] = {k: v for k, v in earlier_data.items() if k not in described}
        meta_base["init"] = init

    if start is not None and not history.epochs and pos == _Position():
        # The starting weights are a candidate too (epoch 0): kept unless an epoch beats them.
        history.best_accuracy, accuracies = _validate(model, valid_data)
        meta = {**meta_base, "epoch": 0, "stage": "init", "history": []}
        meta.update(validation_accuracy=history.best_accuracy, validation=accuracies)
        out.parent.mkdir(parents=True, exist_ok=True)
        save_checkpoint(out, model, vocab, meta)
        log(
            f"epoch 0 ({recipe.init_path(mode)}): validation acc {history.best_accuracy:.4f} "
            + _per_set(accuracies)
        )

    def save_resume() -> None:
        tmp = resume_path.with_name(resume_path.name + ".tmp")
        torch.save(
            {
                "format": RESUME_FORMAT,
                "config": asdict(config),
                "recipe": recipe.as_dict(),
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "torch_rng": torch.get_rng_state(),
                "generator": generator.get_state(),
                "epochs": history.epochs,
                "best_accuracy": history.best_accuracy,
                "best_epoch": history.best_epoch,
                "position": asdict(pos),
            },
            tmp,
        )
        tmp.replace(resume_path)  # a kill mid-write leaves the previous resume file whole

    out.parent.mkdir(parents=True, exist_ok=True)
    loss_fn = nn.CrossEntropyLoss()
    while pos.stage < len(recipe.stages):
        stage = recipe.stages[pos.stage]
        for group in optimizer.param_groups:
            group["lr"] = stage.lr * group.get("lr_scale", 1.0)
        while pos.epoch < stage.epochs:
            data = concat([train_data[p] for p, _ in stage.data])
            if not pos.order:
                pos.order = _epoch_order(stage, train_data, recipe.batch_size, generator)
            model.train()
            clock = time.perf_counter()
            last_save = clock
            label = f"{stage.name} {pos.epoch + 1}/{stage.epochs}"
            bar = _progress(len(pos.order), label, progress)
            if bar is not None:
                bar.update(pos.batch)
            while pos.batch < len(pos.order):
                idx = pos.order[pos.batch]
                b = make_batch(data, idx, vocab.pad_id)
                if recipe.shuffle_entities and mode == "mentions":
                    b = permute_mentions(b, vocab.entity_offset, vocab.max_entities, generator)
                elif recipe.shuffle_entities and space is not None:
                    b = permute_shared(b, vocab.entity_offset, vocab.max_entities, generator)
                elif recipe.shuffle_entities:
                    b = permute_entities(
                        b, vocab.entity_offset, generator, recipe.entity_slots == "all"
                    )
                b = b.to(device)
                scores = model(
                    b.doc_ids,
                    b.doc_lengths,
                    b.query_ids,
                    b.query_lengths,
                    b.candidate_mask,
                    b.doc_entities,
                )
                loss = loss_fn(scores, b.answers)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), recipe.clip)
                optimizer.step()
                pos.loss += float(loss.detach()) * len(idx)
                pos.correct += int((scores.argmax(1) == b.answers).sum())
                pos.seen += len(idx)
                pos.batch += 1
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(
                        loss=f"{pos.loss / pos.seen:.3f}", acc=f"{pos.correct / pos.seen:.3f}"
                    )
                if time.perf_counter() - last_save > save_every_s:
                    pos.started += time.perf_counter() - clock
                    clock = last_save = time.perf_counter()
                    save_resume()
            if bar is not None:
                bar.close()
            valid_acc, accuracies = _validate(model, valid_data)
            record = {
                "epoch": len(history.epochs) + 1,
                "stage": stage.name,
                "train_loss": pos.loss / max(1, pos.seen),
                "train_accuracy": pos.correct / max(1, pos.seen),
                "validation_accuracy": valid_acc,
                "validation": accuracies,
                "seconds": pos.started + time.perf_counter() - clock,
            }
            history.epochs.append(record)
            improved = valid_acc > history.best_accuracy
            if improved:
                history.best_accuracy, history.best_epoch = valid_acc, len(history.epochs)
                meta = {**meta_base, "epoch": len(history.epochs), "stage": stage.name}
                meta["validation_accuracy"] = valid_acc
                meta["validation"] = accuracies
                meta["history"] = list(history.epochs)
                save_checkpoint(out, model, vocab, meta)
            log(
                f"epoch {record['epoch']} ({label}): loss {record['train_loss']:.4f} train acc "
                f"{record['train_accuracy']:.3f} validation acc {valid_acc:.4f} "
                + _per_set(accuracies)
                + f" ({record['seconds']:.0f}s){' *best, saved' if improved else ''}"
            )
            pos = _Position(stage=pos.stage, epoch=pos.epoch + 1)
            save_resume()
        if pos.stage == len(recipe.stages) - 1:
            break  # stay on the last stage, so asking for more epochs continues it
        pos = _Position(stage=pos.stage + 1)
        save_resume()
    return history


def _validate(model: Reader, valid_data: dict[Path, Encoded]) -> tuple[float, dict[str, float]]:
    """(the mean accuracy over the validation sets, each set's): what selects a checkpoint."""
    accuracies = {str(p): accuracy(model, d) for p, d in valid_data.items()}
    return sum(accuracies.values()) / max(1, len(accuracies)), accuracies


def _per_set(accuracies: dict[str, float]) -> str:
    return " ".join(f"{Path(k).name}={v:.3f}" for k, v in accuracies.items())


def _without_epochs(recipe: dict[str, Any]) -> dict[str, Any]:
    """What makes a run itself: not its epochs (a run may be taken further) nor how its data
    is built (a hint for whoever lacks it)."""
    stages = [{k: v for k, v in s.items() if k != "epochs"} for s in recipe["stages"]]
    return {k: v for k, v in recipe.items() if k != "builds"} | {"stages": stages}


def _epoch_order(
    stage: Stage, train_data: dict[Path, Encoded], batch_size: int, generator: torch.Generator
) -> list[list[int]]:
    """Batches of one epoch over the stage's data sets (indices into their concatenation),
    each set contributing its share, drawn at random."""
    chosen: list[int] = []
    offset = 0
    for path, share in stage.data:
        n = len(train_data[path])
        take = min(n, round(n * share))
        chosen += [offset + i for i in torch.randperm(n, generator=generator)[:take].tolist()]
        offset += n
    lengths_all = [document_key(d) for p, _ in stage.data for d in train_data[p].docs]
    lengths = [lengths_all[i] for i in chosen]
    return [[chosen[j] for j in b] for b in batches(len(chosen), batch_size, lengths, generator)]


def _progress(total: int, desc: str, enabled: bool | None) -> Any:
    if enabled is False:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    # None: a bar only on a terminal, so logs of background runs stay readable.
    return tqdm(total=total, desc=desc, file=sys.stderr, disable=enabled is None and None)
