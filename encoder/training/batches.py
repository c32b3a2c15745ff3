"""Questions as id tensors, and the batches training and evaluation read them in.

Each time training draws an example its entity markers are renumbered by a fresh random
permutation of the E slots (`permute_entities`), so an entity's number carries no meaning
and the reader has to answer from the text around the markers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from encoder.model.reader import pad_sequences
from encoder.model.vocab import Vocabulary
from encoder.text.tokens import entity_index, tokenize
from encoder.training.data.questions import Question


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
        if slot is None or slot >= E:
            raise ValueError(
                f"{q.id}: entity slots beyond the model's {E} (build the set with "
                f"`cheapqa data build --max-entities {E}`)"
            )
        answers[i] = slot
        # Markers beyond E read as unknown words; they cannot be answers.
        candidates[i, [s for s in slots if s is not None and s < E]] = True
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


def permute_entities(
    batch: Batch, offset: int, generator: torch.Generator, all_slots: bool = True
) -> Batch:
    """Renumber each example's entities: its used slots go to random slots among all E.

    Drawing from all E slots (not only the used ones) trains every slot, so a long document
    whose entities fill slots far beyond a training window's can still be answered.
    """
    B, E = batch.candidate_mask.shape
    perm = torch.empty(B, E, dtype=torch.long)  # (B, E): old slot -> new slot
    for b in range(B):
        ids = torch.cat([batch.doc_ids[b], batch.query_ids[b]]) - offset
        used = torch.unique(ids[(ids >= 0) & (ids < E)])
        unused = torch.ones(E, dtype=torch.bool)
        unused[used] = False
        if all_slots:
            targets = torch.randperm(E, generator=generator)
        else:  # among the used slots only; the others stay where they are
            shuffled = used[torch.randperm(len(used), generator=generator)]
            targets = torch.cat([shuffled, unused.nonzero().squeeze(1)])
        # used slots take the first targets, the rest fill the remaining slots (a permutation)
        perm[b, used] = targets[: len(used)]
        perm[b, unused] = targets[len(used) :]

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


def spread_entities(data: Encoded, offset: int, pad_id: int, generator: torch.Generator) -> Encoded:
    """Every question's entities renumbered into random slots among all E, as training draws
    them: one batch of all the questions, cut back to each one's own length."""
    b = permute_entities(make_batch(data, range(len(data)), pad_id), offset, generator)
    return Encoded(
        [ids[:n].clone() for ids, n in zip(b.doc_ids, b.doc_lengths.tolist(), strict=True)],
        [ids[:n].clone() for ids, n in zip(b.query_ids, b.query_lengths.tolist(), strict=True)],
        b.answers,
        b.candidate_mask,
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


def concat(parts: Sequence[Encoded]) -> Encoded:
    if len(parts) == 1:
        return parts[0]
    return Encoded(
        docs=[d for p in parts for d in p.docs],
        queries=[q for p in parts for q in p.queries],
        answers=torch.cat([p.answers for p in parts]),
        candidates=torch.cat([p.candidates for p in parts]),
    )
