"""Training the reader on entity-cloze questions: seeded, resumable, keeps the best checkpoint.

Each time an example is drawn its entity markers are renumbered by a fresh random permutation
of the E slots (document, question, answer and candidates alike), so an entity's number carries
no meaning and the reader has to answer from the text around the markers.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from encoder.checkpoint import save_checkpoint
from encoder.config import ReaderConfig
from encoder.data.questions import Question, read_questions
from encoder.model import Reader, pad_sequences
from encoder.modes import Mode
from encoder.text import entity_index, tokenize
from encoder.vocab import Vocabulary

RESUME_FORMAT = 1


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
    vocab_size: int = 10_000
    min_count: int = 2
    glove: bool = True  # initialise word embeddings from GloVe when it is installed
    embedding_lr_scale: float = 1.0  # 0 freezes the embeddings
    entity_scale: float = 1.5  # marker vectors: orthogonal, this many times a word's norm (0: off)
    shuffle_entities: bool = True
    max_train: int | None = None  # use only the first N training questions (quick trials)
    resume: bool = True
    threads: int | None = None


@dataclass
class Encoded:
    """Questions as id tensors, plus the answer slot and the candidate mask."""

    docs: list[Tensor]  # 1-D long
    queries: list[Tensor]
    answers: Tensor  # (N,) slot index
    candidates: Tensor  # (N, E) bool

    def __len__(self) -> int:
        return len(self.docs)


def encode_questions(questions: Sequence[Question], vocab: Vocabulary) -> Encoded:
    E = vocab.max_entities
    answers = torch.empty(len(questions), dtype=torch.long)
    candidates = torch.zeros(len(questions), E, dtype=torch.bool)
    docs, queries = [], []
    for i, q in enumerate(questions):
        slot = entity_index(q.answer)
        slots = [entity_index(c) for c in q.candidates]
        if slot is None or slot >= E or any(s is None or s >= E for s in slots):
            raise ValueError(f"{q.id}: entity slots beyond the model's {E}")
        answers[i] = slot
        candidates[i, [s for s in slots if s is not None]] = True
        docs.append(torch.tensor(vocab.encode(tokenize(q.document)), dtype=torch.long))
        queries.append(torch.tensor(vocab.encode(tokenize(q.query)), dtype=torch.long))
    return Encoded(docs, queries, answers, candidates)


@dataclass
class Batch:
    doc_ids: Tensor  # (B, n)
    doc_lengths: Tensor  # (B,)
    query_ids: Tensor  # (B, m)
    query_lengths: Tensor  # (B,)
    candidate_mask: Tensor  # (B, E)
    answers: Tensor  # (B,)


def make_batch(data: Encoded, idx: Sequence[int], pad_id: int) -> Batch:
    doc_ids, doc_lengths = pad_sequences([data.docs[i] for i in idx], pad_id)
    query_ids, query_lengths = pad_sequences([data.queries[i] for i in idx], pad_id)
    return Batch(
        doc_ids, doc_lengths, query_ids, query_lengths, data.candidates[idx], data.answers[idx]
    )


def permute_entities(batch: Batch, offset: int, generator: torch.Generator) -> Batch:
    """Renumber each example's entities by its own random permutation of the slots it uses.

    Permuting among the used slots (not all E) keeps the numbers where serving puts them
    (an n-entity document uses @entity0..@entity{n-1}), so every slot the service uses is
    trained often.
    """
    B, E = batch.candidate_mask.shape
    perm = torch.arange(E).repeat(B, 1)  # (B, E): old slot -> new slot
    for b in range(B):
        ids = torch.cat([batch.doc_ids[b], batch.query_ids[b]]) - offset
        used = torch.unique(ids[(ids >= 0) & (ids < E)])
        perm[b, used] = used[torch.randperm(len(used), generator=generator)]

    def remap(ids: Tensor) -> Tensor:
        slot = ids - offset  # (B, L)
        is_entity = (slot >= 0) & (slot < E)
        new = perm.gather(1, slot.clamp(0, E - 1)) + offset
        return torch.where(is_entity, new, ids)

    mask = torch.zeros_like(batch.candidate_mask).scatter_(1, perm, batch.candidate_mask)
    return Batch(
        remap(batch.doc_ids),
        batch.doc_lengths,
        remap(batch.query_ids),
        batch.query_lengths,
        mask,
        perm.gather(1, batch.answers.unsqueeze(1)).squeeze(1),
    )


def batches(
    n: int, batch_size: int, lengths: Sequence[int], generator: torch.Generator | None
) -> Iterator[list[int]]:
    """Batches of similar-length examples (less padding); random order when a generator is
    given, in length order otherwise."""
    if generator is None:
        order = sorted(range(n), key=lambda i: lengths[i])
        chunks = [order[i : i + batch_size] for i in range(0, n, batch_size)]
        yield from chunks
        return
    order = torch.randperm(n, generator=generator).tolist()
    pool = batch_size * 50
    chunks = []
    for start in range(0, n, pool):
        part = sorted(order[start : start + pool], key=lambda i: lengths[i])
        chunks += [part[i : i + batch_size] for i in range(0, len(part), batch_size)]
    for j in torch.randperm(len(chunks), generator=generator).tolist():
        yield chunks[j]


@torch.no_grad()
def predict(model: Reader, data: Encoded, batch_size: int = 128) -> Tensor:
    """The predicted slot of every question, in order."""
    was_training = model.training
    model.eval()
    out = torch.empty(len(data), dtype=torch.long)
    lengths = [len(d) for d in data.docs]
    for idx in batches(len(data), batch_size, lengths, None):
        b = make_batch(data, idx, model.config.pad_id)
        d = model.device
        scores = model(
            b.doc_ids.to(d),
            b.doc_lengths.to(d),
            b.query_ids.to(d),
            b.query_lengths.to(d),
            b.candidate_mask.to(d),
        )
        out[idx] = scores.argmax(dim=1).cpu()
    model.train(was_training)
    return out


def accuracy(model: Reader, data: Encoded) -> float:
    if len(data) == 0:
        return 0.0
    return float((predict(model, data) == data.answers).float().mean())


def _init_embeddings(
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
        if use_glove:
            from encoder.embeddings import glove_available, glove_vectors

            if glove_available():
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


@dataclass
class History:
    epochs: list[dict[str, float]] = field(default_factory=list)
    best_accuracy: float = -1.0
    best_epoch: int = 0


def data_meta(data_dir: Path) -> dict[str, Any]:
    """The data set's meta.json (how its questions were built), {} when there is none."""
    path = data_dir / "meta.json"
    if not path.is_file():
        return {}
    meta: dict[str, Any] = json.loads(path.read_text())
    return meta


def _resume_path(out: Path) -> Path:
    return out.with_name(out.name + ".resume")


def train(
    options: TrainOptions, log: Callable[[str], None] = print, progress: bool | None = None
) -> History:
    """Train, keeping the checkpoint with the best validation accuracy at `options.out`."""
    if options.threads:
        torch.set_num_threads(options.threads)
    torch.manual_seed(options.seed)
    generator = torch.Generator().manual_seed(options.seed)
    train_q = list(read_questions(options.data_dir / "train.jsonl"))[: options.max_train]
    valid_q = list(read_questions(options.data_dir / "validation.jsonl"))
    vocab = Vocabulary.build(
        [tokenize(q.document) + tokenize(q.query) for q in train_q],
        max_entities=options.max_entities,
        max_size=options.vocab_size,
        min_count=options.min_count,
    )
    train_data, valid_data = encode_questions(train_q, vocab), encode_questions(valid_q, vocab)
    config = ReaderConfig(
        mode=options.mode,
        vocab_size=len(vocab),
        embed_dim=options.embed_dim,
        hidden_size=options.hidden_size,
        max_entities=options.max_entities,
        dropout=options.dropout,
        pad_id=vocab.pad_id,
    )
    model = Reader(config)
    glove_words = _init_embeddings(
        model,
        vocab,
        options.glove,
        options.entity_scale,
        torch.Generator().manual_seed(options.seed),
    )
    embed_params = list(model.embedding.parameters())
    other_params = [p for n, p in model.named_parameters() if not n.startswith("embedding.")]
    groups: list[dict[str, Any]] = [{"params": other_params}]
    if options.embedding_lr_scale > 0:
        groups.append({"params": embed_params, "lr": options.lr * options.embedding_lr_scale})
    else:
        model.embedding.weight.requires_grad_(False)
    optimizer = torch.optim.Adam(groups, lr=options.lr)
    history = History()
    start_epoch = 0
    resume_path = _resume_path(options.out)
    if options.resume and resume_path.is_file():
        state = torch.load(resume_path, weights_only=True)
        if state["format"] != RESUME_FORMAT or state["config"] != asdict(config):
            raise ValueError(f"{resume_path} was written for another configuration")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])
        generator.set_state(state["generator"])
        history = History(state["epochs"], state["best_accuracy"], state["best_epoch"])
        start_epoch = len(history.epochs)
        log(f"resuming {options.mode} after epoch {start_epoch} from {resume_path}")
    log(
        f"{options.mode}: {len(train_data)} train / {len(valid_data)} validation questions, "
        f"vocabulary {len(vocab)} ({glove_words} GloVe), "
        f"{sum(p.numel() for p in model.parameters())} parameters"
    )
    meta_base = {
        "train_options": {
            k: str(v) if isinstance(v, Path) else v for k, v in asdict(options).items()
        },
        "train_questions": len(train_data),
        "validation_questions": len(valid_data),
        "glove_words": glove_words,
        "data": data_meta(options.data_dir),
    }
    loss_fn = nn.CrossEntropyLoss()
    lengths = [len(d) for d in train_data.docs]
    n_batches = math.ceil(len(train_data) / options.batch_size)
    for epoch in range(start_epoch, options.epochs):
        model.train()
        started = time.perf_counter()
        total_loss, correct, seen = 0.0, 0, 0
        bar = _progress(n_batches, f"epoch {epoch + 1}/{options.epochs}", progress)
        for idx in batches(len(train_data), options.batch_size, lengths, generator):
            b = make_batch(train_data, idx, vocab.pad_id)
            if options.shuffle_entities:
                b = permute_entities(b, vocab.entity_offset, generator)
            scores = model(b.doc_ids, b.doc_lengths, b.query_ids, b.query_lengths, b.candidate_mask)
            loss = loss_fn(scores, b.answers)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), options.clip)
            optimizer.step()
            total_loss += float(loss.detach()) * len(idx)
            correct += int((scores.argmax(1) == b.answers).sum())
            seen += len(idx)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{total_loss / seen:.3f}", acc=f"{correct / seen:.3f}")
        if bar is not None:
            bar.close()
        valid_acc = accuracy(model, valid_data)
        record = {
            "epoch": epoch + 1,
            "train_loss": total_loss / max(1, seen),
            "train_accuracy": correct / max(1, seen),
            "validation_accuracy": valid_acc,
            "seconds": time.perf_counter() - started,
        }
        history.epochs.append(record)
        improved = valid_acc > history.best_accuracy
        if improved:
            history.best_accuracy, history.best_epoch = valid_acc, epoch + 1
            meta = {**meta_base, "epoch": epoch + 1, "validation_accuracy": valid_acc}
            meta["history"] = list(history.epochs)
            save_checkpoint(options.out, model, vocab, meta)
        log(
            f"epoch {epoch + 1}: loss {record['train_loss']:.4f} train acc "
            f"{record['train_accuracy']:.3f} validation acc {valid_acc:.4f} "
            f"({record['seconds']:.0f}s){' *best, saved' if improved else ''}"
        )
        torch.save(
            {
                "format": RESUME_FORMAT,
                "config": asdict(config),
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "torch_rng": torch.get_rng_state(),
                "generator": generator.get_state(),
                "epochs": history.epochs,
                "best_accuracy": history.best_accuracy,
                "best_epoch": history.best_epoch,
            },
            resume_path,
        )
    return history


def _progress(total: int, desc: str, enabled: bool | None) -> Any:
    if enabled is False:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    # None: a bar only on a terminal, so logs of background runs stay readable.
    return tqdm(total=total, desc=desc, file=sys.stderr, disable=enabled is None and None)
