"""Questions as id tensors, and the batches training and evaluation read them in.

Each time training draws an example its entity markers are renumbered by a fresh random
permutation of the E slots (`permute_entities`), so an entity's number carries no meaning
and the reader has to answer from the text around the markers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any

import torch
from torch import Tensor

from encoder.model.reader import pad_sequences
from encoder.model.vocab import Vocabulary
from encoder.text.tokens import entity_index, tokenize
from encoder.training.data.questions import Question

# The entity indices the mentions mode is trained and evaluated over: every entity a data set
# question can name (the data builder keeps windows of at most this many).
POINTER_ENTITIES = 256


@dataclass
class Encoded:
    """Questions as id tensors, plus the answer slot and the candidate mask."""

    docs: list[Tensor]  # 1-D long
    queries: list[Tensor]
    answers: Tensor  # (N,) slot index (mentions mode: entity index)
    candidates: Tensor  # (N, E) bool (mentions mode: (N, S) over entity indices)
    # mentions mode: each token's entity index, -1 for other words (its marker's input id is
    # that index modulo E: the marker embeddings are features, the answer points at mentions)
    doc_entities: list[Tensor] | None = None
    query_entities: list[Tensor] | None = None

    def __len__(self) -> int:
        return len(self.docs)


def encode_questions(
    questions: Sequence[Question], vocab: Vocabulary, entity_space: int | None = None
) -> Encoded:
    """Questions as ids. With entity_space S (the mentions mode) every entity up to S can be
    the answer, whatever the vocabulary's E markers: marker i reads as marker i mod E."""
    if entity_space is not None:
        return _encode_pointed(questions, vocab, entity_space)
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


def _marked_ids(tokens: list[str], vocab: Vocabulary) -> tuple[Tensor, Tensor]:
    """Token ids and each token's entity index (-1 for other words); marker i -> marker i mod E."""
    ids, entities = vocab.encode_marked(tokens)
    return torch.tensor(ids, dtype=torch.long), torch.tensor(entities, dtype=torch.long)


def _encode_pointed(questions: Sequence[Question], vocab: Vocabulary, space: int) -> Encoded:
    answers = torch.empty(len(questions), dtype=torch.long)
    candidates = torch.zeros(len(questions), space, dtype=torch.bool)
    docs, queries, doc_entities, query_entities = [], [], [], []
    for i, q in enumerate(questions):
        slot = entity_index(q.answer)
        if slot is None or slot >= space:
            raise ValueError(f"{q.id}: answer {q.answer} beyond the {space} entities kept")
        answers[i] = slot
        slots = [entity_index(c) for c in q.candidates]
        candidates[i, [s for s in slots if s is not None and s < space]] = True
        ids, marks = _marked_ids(tokenize(q.document), vocab)
        docs.append(ids)
        doc_entities.append(marks.clamp(max=space - 1))
        ids, marks = _marked_ids(tokenize(q.query), vocab)
        queries.append(ids)
        query_entities.append(marks.clamp(max=space - 1))
    return Encoded(docs, queries, answers, candidates, doc_entities, query_entities)


@dataclass
class Batch:
    doc_ids: Tensor  # (B, n)
    doc_lengths: Tensor  # (B,)
    query_ids: Tensor  # (B, m)
    query_lengths: Tensor  # (B,)
    candidate_mask: Tensor  # (B, E)
    answers: Tensor  # (B,)
    doc_entities: Tensor | None = None  # (B, n) mentions mode, -1 off mentions and padding
    query_entities: Tensor | None = None  # (B, m)

    def to(self, device: torch.device | str) -> Batch:
        """The same batch on `device` (training on a GPU; a no-op on the CPU)."""
        moved: dict[str, Any] = {}
        for f in fields(self):
            t = getattr(self, f.name)
            moved[f.name] = None if t is None else t.to(device)
        return Batch(**moved)


def make_batch(data: Encoded, idx: Sequence[int], pad_id: int) -> Batch:
    doc_ids, doc_lengths = pad_sequences([data.docs[i] for i in idx], pad_id)
    query_ids, query_lengths = pad_sequences([data.queries[i] for i in idx], pad_id)
    doc_entities = query_entities = None
    if data.doc_entities is not None and data.query_entities is not None:
        doc_entities = _pad_entities([data.doc_entities[i] for i in idx])
        query_entities = _pad_entities([data.query_entities[i] for i in idx])
    return Batch(
        doc_ids,
        doc_lengths,
        query_ids,
        query_lengths,
        data.candidates[idx],
        data.answers[idx],
        doc_entities,
        query_entities,
    )


def _pad_entities(rows: list[Tensor]) -> Tensor:
    return torch.nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=-1)


def permute_mentions(batch: Batch, offset: int, E: int, generator: torch.Generator) -> Batch:
    """The mentions mode's renumbering: each example's entities take a random permutation of
    the S entity indices, and their markers read as the new index mod E."""
    assert batch.doc_entities is not None and batch.query_entities is not None
    S = batch.candidate_mask.shape[1]
    # one permutation per document, so questions about one document still share its pass
    unique, rows = torch.unique(batch.doc_ids, dim=0, return_inverse=True)
    perm = torch.stack([torch.randperm(S, generator=generator) for _ in range(len(unique))])
    return _renumbered(batch, perm[rows], offset, E)


def permute_shared(batch: Batch, offset: int, E: int, generator: torch.Generator) -> Batch:
    """The slot modes' renumbering when they read every entity (recipe entity_slots "shared"):
    a document's U entities take a random order among the indices 0..U-1, as the service
    numbers a document's names, and their markers read as the new index mod E, so a document
    of at most E names has a slot to each and a longer one shares them as served
    (encoder.model.shared_slots)."""
    assert batch.doc_entities is not None and batch.query_entities is not None
    S = batch.candidate_mask.shape[1]
    unique, rows = torch.unique(batch.doc_ids, dim=0, return_inverse=True)
    perm = torch.empty(len(unique), S, dtype=torch.long)  # (U, S): old index -> new index
    for u in range(len(unique)):
        mine = rows == u
        named = torch.cat([batch.doc_entities[mine].flatten(), batch.query_entities[mine].ravel()])
        used = torch.unique(named[named >= 0])  # sorted
        unused = torch.ones(S, dtype=torch.bool)
        unused[used] = False
        perm[u, used] = torch.randperm(len(used), generator=generator)
        perm[u, unused] = torch.arange(len(used), S)
    return _renumbered(batch, perm[rows], offset, E)


def _renumbered(batch: Batch, perm: Tensor, offset: int, E: int) -> Batch:
    """The batch with each example's entity i renumbered perm[b, i], markers the new index mod E."""
    assert batch.doc_entities is not None and batch.query_entities is not None

    def remap(ids: Tensor, entities: Tensor) -> tuple[Tensor, Tensor]:
        new = perm.gather(1, entities.clamp(min=0))
        is_entity = entities >= 0
        return torch.where(is_entity, offset + new % E, ids), torch.where(is_entity, new, -1)

    doc_ids, doc_entities = remap(batch.doc_ids, batch.doc_entities)
    query_ids, query_entities = remap(batch.query_ids, batch.query_entities)
    mask = torch.zeros_like(batch.candidate_mask).scatter_(1, perm, batch.candidate_mask)
    return Batch(
        doc_ids,
        batch.doc_lengths,
        query_ids,
        batch.query_lengths,
        mask,
        perm.gather(1, batch.answers.unsqueeze(1)).squeeze(1),
        doc_entities,
        query_entities,
    )


def permute_entities(
    batch: Batch, offset: int, generator: torch.Generator, all_slots: bool = True
) -> Batch:
    """Renumber each example's entities: its used slots go to random slots among all E.

    Drawing from all E slots (not only the used ones) trains every slot, so a long document
    whose entities fill slots far beyond a training window's can still be answered.
    """
    E = batch.candidate_mask.shape[1]
    # One permutation per document, so questions about one document still share its pass.
    unique, rows = torch.unique(batch.doc_ids, dim=0, return_inverse=True)  # (U, n), (B,)
    perm = torch.empty(len(unique), E, dtype=torch.long)  # (U, E): old slot -> new slot
    for b in range(len(unique)):
        ids = torch.cat([unique[b], *batch.query_ids[rows == b]]) - offset
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
    perm = perm[rows]  # (B, E)

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


def document_key(doc: Tensor) -> int:
    """A batching key: the document's length first, then its content, so that the questions
    about one document sort next to each other and share a batch (and its pass)."""
    return len(doc) << 32 | (hash(tuple(doc[:64].tolist())) & 0xFFFFFFFF)


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
        doc_entities=_joined([p.doc_entities for p in parts]),
        query_entities=_joined([p.query_entities for p in parts]),
    )


def _joined(parts: Sequence[list[Tensor] | None]) -> list[Tensor] | None:
    if any(p is None for p in parts):
        return None
    return [t for p in parts if p is not None for t in p]
