"""Accuracy of a checkpoint on a JSONL data set, beside the baselines that do not read."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import torch
from torch import Tensor

from encoder.model.checkpoint import Checkpoint, load_checkpoint
from encoder.text.anonymise import anonymise_document, prepare_question
from encoder.text.entities import name_key
from encoder.text.support import (
    RERANK_POOL,
    Evidence,
    entity_evidence,
    evidence_support,
    mention_windows,
    question_terms,
    support_order,
)
from encoder.text.tokens import entity_index, entity_marker, tokenize
from encoder.training.batches import POINTER_ENTITIES, encode_questions
from encoder.training.data.questions import (
    DataError,
    Question,
    baselines,
    json_lines,
    numbered_as_served,
    question_from_json,
)
from encoder.training.predict import Choose, Progress, accuracy


@dataclass(frozen=True)
class Evaluation:
    checkpoint: str
    model_id: str
    mode: str
    data: str
    count: int
    accuracy: float
    random: float
    most_frequent: float
    most_recent: float
    context_match: float
    bag_of_words: float
    answers_not_entities: int  # user questions whose answer is no entity of the document
    seconds: float
    support_weight: float = 0.0  # 0: the reader's own answers; else ranked as the service does
    reader_accuracy: float | None = None  # with a support_weight: the reader's own, same pass

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_any_questions(
    path: str | os.PathLike[str], ckpt: Checkpoint, exclude_named: bool = True
) -> tuple[list[Question], int]:
    """Questions of a JSONL file, prepared exactly as the answers route prepares them.

    A line is either a data set question (`encoder.training.data.questions`: markers already in
    place, renumbered in order of first mention as the service numbers names) or a user's own:
    {"document": text, "query": cloze question, "answer": name, "candidates"?: [names]} in
    plain text. Those go through the service's own steps: the entity finder (or the given
    candidates), the document's entity map for the question, the reader's question window.
    exclude_named: as the service answers by default, the entities a question names are
    not among its candidates. Returns the questions and how many answers the reader cannot
    give (no entity of their document, a marker beyond its slots, or, excluding, an entity
    the question names): they count as wrong.
    """
    window = ckpt.query_window
    E = POINTER_ENTITIES  # every mode answers among every entity (shared slots beyond E)
    questions: list[Question] = []
    not_entities = 0
    for lineno, raw in json_lines(path):
        try:
            if entity_index(str(raw.get("answer", ""))) is not None:
                q = numbered_as_served(question_from_json(raw))
                if (entity_index(q.answer) or 0) >= E:
                    not_entities += 1  # beyond the reader's slots: it cannot answer it
                    continue
                query = prepare_question(q.query, [], window)
                named = query.named if exclude_named else frozenset()
                kept = [c for c in q.candidates if (entity_index(c) or 0) not in named]
                kept = [c for c in kept if (entity_index(c) or 0) < E]
                if q.answer not in kept:
                    not_entities += 1  # named in its own question: not answered with it
                    continue
                questions.append(replace(q, query=" ".join(query.tokens), candidates=kept))
                continue
            doc = anonymise_document(str(raw["document"]), raw.get("candidates"), max_entities=E)
            query = prepare_question(str(raw["query"]), doc.entities, window)
            keys = [name_key(e) for e in doc.entities]
            answer = name_key(str(raw["answer"]))
        except (KeyError, TypeError, ValueError) as e:
            raise DataError(f"{path}:{lineno}: {e}") from e
        named = query.named if exclude_named else frozenset()
        if answer not in keys or keys.index(answer) in named:
            not_entities += 1
            continue
        questions.append(
            Question(
                id=str(raw.get("id", lineno)),
                document=" ".join(doc.tokens),
                query=" ".join(query.tokens),
                answer=entity_marker(keys.index(answer)),
                candidates=[entity_marker(i) for i in range(len(doc.entities)) if i not in named],
            )
        )
    return questions, not_entities


def support_chooser(questions: Sequence[Question], weight: float) -> Choose:
    """Picks each question's answer as the service ranks them with support_weight `weight`:
    among the reader's RERANK_POOL likeliest, by p_reader(e) · exp(λ · support(e))
    (encoder.text.support), the support read from the document's mention windows. Unlike the
    service's, it counts no name's words (a built question holds markers, not names): a
    Which-question's noun found only in the answer's name ("the bank" of "Fjord Bank"), or a
    question's word only in another name in the window ("union" of "the Polish Musicians'
    Union"), is support the service sees and this does not. A question asked in words is
    ranked by the hand-set weights here, not by the reader's fitted ones."""
    # Per document, its entities' windows as word sets, split once for all its questions.
    evidence: dict[str, list[Evidence]] = {}

    def choose(i: int, scores: Tensor) -> int:
        q = questions[i]
        probs = torch.softmax(scores, dim=0)
        candidates = int((probs > 0).sum())
        top = torch.topk(probs, k=max(1, min(RERANK_POOL, candidates)))
        slots, values = top.indices.tolist(), top.values.tolist()
        if q.document not in evidence:
            if len(evidence) >= 256:  # batches hold a few documents' questions: bounded
                evidence.clear()
            windows = mention_windows(tokenize(q.document), len(scores))
            evidence[q.document] = [entity_evidence(w) for w in windows]
        kept = evidence[q.document]
        terms = question_terms(tokenize(q.query))
        found = [evidence_support(terms, kept[s]) if s < len(kept) else None for s in slots]
        order, _ = support_order(values, found, weight)
        return slots[order[0]]

    return choose


def evaluate(
    checkpoint_path: str | os.PathLike[str],
    data_path: str | os.PathLike[str],
    device: str = "cpu",
    progress: Progress | None = None,
    exclude_named: bool = True,
    support_weight: float = 0.0,
) -> Evaluation:
    """Accuracy and baselines; `progress` wraps the batches of questions (a bar, say);
    exclude_named: as `read_any_questions`; support_weight: rank answers as the service does
    with it (0: the reader alone)."""
    ckpt = load_checkpoint(checkpoint_path, device=device)
    started = time.perf_counter()
    questions, not_entities = read_any_questions(data_path, ckpt, exclude_named)
    if not questions and not not_entities:
        raise DataError(f"{data_path} holds no questions (an empty file, or blank lines only)")
    data = encode_questions(questions, ckpt.vocab, POINTER_ENTITIES)
    total = len(questions) + not_entities
    choose, best = None, {}
    if support_weight > 0:
        by_support = support_chooser(questions, support_weight)

        def choose(i: int, scores: Tensor) -> int:
            best[i] = int(scores.argmax())  # the reader's own answer, from the same pass
            return by_support(i, scores)

    acc = accuracy(ckpt.model, data, progress, choose) * len(questions) / max(1, total)
    reader_acc = None
    if best:
        right = sum(best[i] == int(data.answers[i]) for i in range(len(questions)))
        reader_acc = right / max(1, total)
    b = baselines(questions)
    share = len(questions) / max(1, total)  # baselines, too, miss what is not an entity
    return Evaluation(
        checkpoint=str(checkpoint_path),
        model_id=ckpt.model_id,
        mode=ckpt.model.config.mode,
        data=str(data_path),
        count=total,
        accuracy=acc,
        random=b.random * share,
        most_frequent=b.most_frequent * share,
        most_recent=b.most_recent * share,
        context_match=b.context_match * share,
        bag_of_words=b.bag_of_words * share,
        answers_not_entities=not_entities,
        seconds=time.perf_counter() - started,
        support_weight=support_weight,
        reader_accuracy=reader_acc,
    )
