"""Answering cloze questions about one stored document.

cloze   = to_cloze(question)  (a plain Who/Whom/Whose question rewritten; encoder/text/questions;
          a question that is neither gets its own error, the others are answered)
tokens  = anonymise_query(cloze, document's entity map)      per question
Q       = query GRU over all questions                        (m, k)  via the batcher
R       = lookup(state, Q)                                   (m, k)  the state used once
scores  = W_o tanh(W_r R + W_q Q) (+ the mention prior), masked to the document's
          entities                                                    (m, E)
          (the mentions mode: its lookup scores every entity from its mentions, (m, max(E, n)))
p       = softmax(scores) over the entities the reader reaches (a slot mode: the first E;
          the mentions mode: all)
answers = top_k of p(e) · exp(λ · support(e)), renormalised (λ = support_weight; the
          support of the reader's 32 likeliest: encoder/text/support.py; p(e) weighed first
          by what the question asks for: a Who-question's answer is no place), mapped back
          to names; a question asked in words: top_k of a softmax over the same features,
          weighted as fitted for the reader (encoder/text/ranking.py), where it has them,
          with how near the question comes in meaning to the sentences naming each answer
          (encoder/text/meaning.py: the question embedded here, the sentences when indexed)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pydantic_core
import torch

from encoder.model.modes import Mode
from encoder.model.state import DocumentState
from encoder.text import reading, roles
from encoder.text.anonymise import prepare_question
from encoder.text.meaning import embed_questions
from encoder.text.possessors import (
    Possessor,
    possessor_slots,
    question_object_role,
    question_possessor,
)
from encoder.text.questions import asks_for, to_cloze
from encoder.text.ranking import features, probabilities
from encoder.text.support import (
    RERANK_POOL,
    Evidence,
    Terms,
    evidence_support,
    kind_logs,
    kind_weighted,
    question_terms,
    rare_support,
    support_order,
    support_shares,
    who_person,
    word_weights,
)
from encoder.text.tokens import PLACEHOLDER, plain_text
from service.batcher import QueryBatcher
from service.errors import BadRequest, TooLarge
from service.held_states import HeldStates
from service.indexing import require_current
from service.metrics import Metrics
from service.readers import LoadedModel, ServedModels, pair_reader_path
from service.schemas import AnswersIn
from service.settings import Settings
from store.base import DocumentStore
from store.record import DocumentRecord

# States up to this many numbers are looked up on the event loop (k = 256 gives 65,536).
INLINE_LOOKUP_MAX_NUMBERS = 65_536
# The pair reader's reading(e) of the questions asked lately, by document version, question
# and candidates: a question asked again costs no model run.
READINGS_KEPT = 4096


@dataclass(frozen=True)
class RankedAnswers:
    slots: list[list[int]]  # per question, the best entity slots, best first
    scores: list[list[float]]  # their probabilities: the reader's weighted by their support
    reader_scores: list[list[float]]  # the reader's own probabilities
    supports: list[list[float | None]]  # their support (None: the record kept no windows)
    # their share of the support among the question's RERANK_POOL likeliest answers
    shares: list[list[float | None]]
    read: list[bool]  # per question, whether the pair reader ranked its answers again


@dataclass(frozen=True)
class PreparedQueries:
    """A request's questions as the reader takes them; a question that cannot be asked
    keeps its error and is left out of `ids` and `named`."""

    clozes: list[str | None]  # per question, the cloze sentence asked (None: not a question)
    errors: list[str | None]  # per question, why it cannot be asked, or None
    ids: list[list[int]]  # per question asked, its token ids
    named: list[frozenset[int]]  # per question asked, the entity slots it names
    terms: list[Terms]  # per question asked, what its support is measured by
    kinds: list[str | None]  # per question asked, what it asks for (questions.asks_for)
    in_words: list[bool]  # per question asked, whether it was asked in words (not a cloze)
    # per question asked, the roles it names someone other than its answer by: a possessor
    # ("the cyclist" of "the cyclist's lawyer"), the one its verb is done to ("Who is defending
    # the judge?")
    others: list[tuple[Possessor, ...]]

    @property
    def asked(self) -> list[int]:
        """The indices of the questions asked, in order."""
        return [i for i, error in enumerate(self.errors) if error is None]


def prepare_queries(model: LoadedModel, queries: list[str], entities: list[str]) -> PreparedQueries:
    """Each question as a cloze sentence, its token ids as `ServingReader.encode_queries`
    takes them (plain lists: a tensor per question would cost more than tokenising it) and
    the entities it names; or, for a question that is neither a cloze sentence nor a form
    the converter reads, nor has exactly one @placeholder, why not."""
    names = tuple(entities)  # the key of the document's cached question matcher
    out = PreparedQueries([], [], [], [], [], [], [], [])
    for query in queries:
        cloze = None
        try:
            question = plain_text(query, question=True)
            cloze = to_cloze(question)
            prepared = prepare_question(cloze, names, model.query_window)
        except ValueError as exc:  # UnsupportedQuestion is one
            out.clozes.append(cloze)
            out.errors.append(str(exc))
            continue
        out.clozes.append(cloze)
        out.errors.append(None)
        out.ids.append(model.encode(prepared.tokens))
        out.named.append(prepared.named)
        out.terms.append(question_terms(prepared.whole))
        out.kinds.append(asks_for(question))
        out.in_words.append(PLACEHOLDER not in question)
        found = (question_possessor(question), question_object_role(question))
        out.others.append(tuple(role for role in found if role is not None))
    return out


def excluded_slots(record: DocumentRecord, prepared: PreparedQueries) -> list[frozenset[int]]:
    """Per question asked, the slots it may not be answered with: the entities it names, and
    the one the document gives each role it names someone else by ("the cyclist" of "Who is
    the cyclist's lawyer?", "the judge" of "Who is defending the judge?";
    encoder.text.possessors)."""
    if not any(prepared.others) or not record.contexts:
        return prepared.named
    roles = [record.evidence(slot).roles for slot in range(len(record.entities))]
    return [
        named.union(*(possessor_slots(role, roles) for role in others))
        for named, others in zip(prepared.named, prepared.others, strict=True)
    ]


def candidate_mask(
    n_queries: int,
    n_entities: int,
    max_entities: int,
    excluded: Sequence[frozenset[int]] = (),
) -> torch.Tensor:
    """(m, E) True on the slots the document's entities use, less each question's
    `excluded` slots (unless that would leave it none: its answers are then all dropped,
    after a softmax that stays defined)."""
    mask = torch.zeros(n_queries, max_entities, dtype=torch.bool)
    mask[:, :n_entities] = True
    for row, slots in enumerate(excluded):
        kept = [s for s in slots if s < n_entities]
        if kept and len(kept) < n_entities:
            mask[row, kept] = False
    return mask


def mention_counts(model: LoadedModel, mentions: Sequence[int], width: int) -> torch.Tensor | None:
    """(width,) the document's count of each entity (by entity, so entities sharing a slot
    keep their own), for a reader with the mention prior; None for a reader without it or a
    record that kept no counts (format 1: no prior)."""
    if not model.reader.config.mention_prior or not mentions:
        return None
    # Through numpy: a fifth of what torch.zeros plus torch.tensor cost here (measured).
    counts = np.zeros(width, dtype=np.float32)
    kept = mentions[:width]
    counts[: len(kept)] = kept
    return torch.from_numpy(counts)


def candidate_features(
    kept: Sequence[tuple[int, float]],
    found: Sequence[float | None],
    evidence: Callable[[int], Evidence],
    terms: Terms,
    kind: str | None,
    mentions: Sequence[int],
    meaning: Meanings | None = None,
) -> list[tuple[float, ...]]:
    """One question's candidates (slot, reader probability) and their support -> each one's
    `encoder.text.ranking.features`; meaning: per entity slot, how near the question comes to
    the sentences naming it and to the part its mentions play (none: 0 for all)."""
    known = [evidence(s) for s, _ in kept]
    logs = kind_logs(known, kind) or [0.0] * len(kept)
    weights = word_weights(terms, known)
    return [
        features(
            p,
            sup,
            x,
            terms.noun is not None and terms.noun in e.name,
            count(mentions, s),
            rare_support(terms, e, weights),
            who_person(e, kind),
            meaning.meaning[s] if meaning else 0.0,
            meaning.role[s] if meaning and meaning.role else 0.0,
        )
        for (s, p), sup, x, e in zip(kept, found, logs, known, strict=True)
    ]


class Meanings(NamedTuple):
    """One question against a record's vectors, per entity slot: meaning(e), how near it comes
    to a sentence naming e (encoder.text.meaning), and role(e), how well a mention of e plays
    the part its asking word asks about (encoder.text.roles; empty where the record keeps no
    mention vectors or no head is shipped)."""

    meaning: list[float]
    role: list[float]
    cosines: Sequence[float] = ()  # its cosine with each of the record's kept sentences


def question_meanings(
    record: DocumentRecord, queries: Sequence[str], prepared: PreparedQueries
) -> list[Meanings | None]:
    """Per question asked, its `Meanings`, for those asked in words of a record that keeps
    sentence vectors; None for the rest (blocking: the sentence model runs here)."""
    rows: list[Meanings | None] = [None] * len(prepared.asked)
    wanted = [row for row, words in enumerate(prepared.in_words) if words]
    if not record.sentence_vectors or not wanted:
        return rows
    vectors, asking = embed_questions([queries[prepared.asked[row]] for row in wanted])
    head = roles.shipped()
    for row, vector, word in zip(wanted, vectors, asking, strict=True):
        cosines = record.cosines(vector)
        meaning = record.meanings(cosines)
        assert meaning is not None  # the record keeps sentence vectors
        rows[row] = Meanings(meaning, record.roles(word, head) or [], cosines)
    return rows


def count(mentions: Sequence[int], slot: int) -> int:
    """How often the record says the text names entity `slot` (0 when it does not say)."""
    return mentions[slot] if slot < len(mentions) else 0


def reading_candidates(
    record: DocumentRecord, meaning: Meanings | None, slots: Sequence[int]
) -> list[list[tuple[str, list[list[int]]]]] | None:
    """Per candidate (entity slot), its sentences nearest the question with its mentions in
    them, as the pair reader reads them; None where the record keeps no sentences' text or
    the question no cosines with them."""
    texts = record.sentence_texts
    if meaning is None or not texts or len(texts) != len(meaning.cosines):
        return None
    return [
        reading.candidate_sentences(
            record.sentences[s] if s < len(record.sentences) else [],
            meaning.cosines,
            texts,
            record.sentence_starts,
            record.spans[s] if s < len(record.spans) else [],
        )
        for s in slots
    ]


def pair_reading(
    reader: reading.PairReader,
    record: DocumentRecord,
    query: str,
    meaning: Meanings | None,
    slots: Sequence[int],
) -> list[float] | None:
    """reading(e) of a question's candidates (entity slots), each read beside its sentences
    nearest the question (blocking: the model runs here); None where none can be read."""
    candidates = reading_candidates(record, meaning, slots)
    return None if candidates is None else reading.reading_values(reader, query, candidates)


class Reading(NamedTuple):
    """The pair reader's second look at a question's likeliest candidates
    (encoder.text.reading): their reading(e) (None: not read) and the weights it was fitted
    with."""

    values: Callable[[int, list[int]], list[float] | None]  # (question row, slots)
    weights: Sequence[float]
    candidates: int = reading.TOP  # how many of the likeliest it reads
    abstain: float = float("-inf")  # the logit of "none of these" (PairReader.abstain)


def rank_answers(
    model: LoadedModel,
    state: DocumentState,
    Q: torch.Tensor,
    n_entities: int,
    top_k: int,
    mentions: Sequence[int] = (),
    excluded: Sequence[frozenset[int]] = (),
    evidence: Callable[[int], Evidence] | None = None,
    terms: Sequence[Terms] = (),
    support_weight: float = 0.0,
    kinds: Sequence[str | None] = (),
    in_words: Sequence[bool] = (),
    meanings: Sequence[Meanings | None] = (),
    read: Reading | None = None,
) -> RankedAnswers:
    """Lookup and scoring for one document's questions (blocking: run it in a thread), among
    all n_entities of its entities (beyond the reader's slots they share them: encoder.model.
    shared_slots); mentions: the record's count of each
    entity (empty when unknown); excluded: per question, the slots it may not be answered
    with (the entities it names), or none. A question that names every entity it could be
    answered with gets no answers.

    evidence (slot -> its kept windows) and terms (per question) give each answer its
    support; with support_weight λ > 0 the reader's RERANK_POOL likeliest answers are ranked
    by p(e) ∝ p_reader(e) · exp(λ · support(e)) (encoder.text.support.support_ranked), p_reader
    first weighed by what the question asks for (kinds, per question: a Who-question's answer
    is no place; encoder.text.support.kind_weighted). A question asked in words (in_words, per
    question) is ranked instead by the weights fitted for the model (model.ranking:
    encoder.text.ranking), where it has them: with meanings (per question, its `Meanings`, or
    None) the weights with meaning(e) and role(e), without them the plain ones; with `read`,
    the likeliest of those (read.candidates) are ranked again with their reading(e)."""
    width = max(model.max_entities, n_entities)  # beyond E when the document names more
    # The support shares are over the reader's RERANK_POOL likeliest, whatever the ranking.
    pool = min(n_entities, max(top_k, RERANK_POOL) if evidence is not None else top_k)
    # One inference-mode context for the whole step: the ServingReader's lean path then neither
    # switches modes nor copies its results.
    with torch.inference_mode():
        mask = candidate_mask(Q.shape[0], n_entities, width, excluded)  # (m, width)
        R = model.reader.lookup(state, Q)  # (m, k)
        scores = model.reader.score(
            R, Q, mask, mention_counts(model, mentions, width)
        )  # (m, width)
        probs = torch.softmax(scores[:, :n_entities], dim=-1)  # (m, n_entities)
        top = torch.topk(probs, k=pool, dim=-1)
        slots, values = top.indices.tolist(), top.values.tolist()
    out = RankedAnswers([], [], [], [], [], [])
    for row, (row_slots, row_values) in enumerate(zip(slots, values, strict=True)):
        kept = list(zip(row_slots, row_values, strict=True))
        if excluded and excluded[row]:
            kept = [(s, v) for s, v in kept if s not in excluded[row]]
        found = [
            None if evidence is None else evidence_support(terms[row], evidence(s)) for s, _ in kept
        ]
        meaning = meanings[row] if meanings else None
        fitted = None
        again = None
        if in_words and in_words[row]:
            fitted = model.plain_ranking if meaning is None else model.ranking
        if support_weight > 0 and evidence is not None and fitted is not None:
            rows = candidate_features(
                kept, found, evidence, terms[row], kinds[row], mentions, meaning
            )
            ranked = probabilities(rows, fitted)
            order = sorted(range(len(ranked)), key=lambda i: -ranked[i])
            if read is not None and meaning is not None:
                likeliest = order[: read.candidates]
                again = read.values(row, [kept[i][0] for i in likeliest])
                if again is not None:
                    ranked = reading.reranked(
                        rows, ranked, likeliest, again, read.weights, read.abstain
                    )
                    order = sorted(range(len(ranked)), key=lambda i: -ranked[i])
        else:
            weighed = [v for _, v in kept]
            if support_weight > 0 and evidence is not None and kinds:
                weighed = kind_weighted(weighed, [evidence(s) for s, _ in kept], kinds[row])
            order, ranked = support_order(weighed, found, support_weight)
        shares = support_shares(found)
        order = order[:top_k]
        out.slots.append([kept[i][0] for i in order])
        out.scores.append([ranked[i] for i in order])
        out.reader_scores.append([kept[i][1] for i in order])
        out.supports.append([found[i] for i in order])
        out.shares.append([shares[i] for i in order])
        out.read.append(bool(again))  # none read where no candidate was left
    return out


def answers_body(
    doc_id: str,
    mode: str,
    model_id: str,
    queries: list[str],
    prepared: PreparedQueries,
    record: DocumentRecord,
    ranked: RankedAnswers | None,
) -> bytes:
    """The response, as the JSON bytes of an `AnswersOut`: each question asked, its best
    slots mapped back to the document's entity names with their support and where the text
    names them (ranked None: no entities, no answers; its rows are the questions asked, in
    order); each question not asked, its error.

    Plain dicts through pydantic-core's serializer: every field is built here from typed
    values, so validating them again with pydantic (and FastAPI's second pass over a response
    model) would only cost time (measured in BENCHMARKS.md); tests check the bytes against
    the model."""
    entities = record.entities
    answers: list[list[dict[str, object]]] = [[] for _ in queries]
    read = [False] * len(queries)
    if ranked is not None:
        for row, i in enumerate(prepared.asked):
            read[i] = ranked.read[row]
            answers[i] = [
                {
                    "entity": entities[slot],
                    "score": score,
                    "reader_score": reader_score,
                    "support": found,
                    "support_share": share,
                    "spans": record.span_pairs(slot),
                }
                for slot, score, reader_score, found, share in zip(
                    ranked.slots[row],
                    ranked.scores[row],
                    ranked.reader_scores[row],
                    ranked.supports[row],
                    ranked.shares[row],
                    strict=True,
                )
            ]
    results = [
        {
            "query": query,
            "cloze": cloze,
            "answers": found,
            "read": was_read,
            "error": None if error is None else {"code": "bad_query", "message": error},
        }
        for query, cloze, found, was_read, error in zip(
            queries, prepared.clozes, answers, read, prepared.errors, strict=True
        )
    ]
    body: dict[str, object] = {"id": doc_id, "mode": mode, "model_id": model_id, "results": results}
    return _json_bytes(body)


def _json_bytes(body: dict[str, object]) -> bytes:
    # pydantic-core's serializer on plain data: compact UTF-8, as AnswersOut.model_dump_json
    # writes it (a non-finite score as null), about 3x faster than json.dumps here (measured).
    return pydantic_core.to_json(body, inf_nan_mode="null")


class AnswerService:
    """What the answers route and its fast lane call, built once by the app's lifespan."""

    def __init__(
        self,
        settings: Settings,
        store: DocumentStore,
        models: ServedModels,
        batcher: QueryBatcher,
        metrics: Metrics,
    ) -> None:
        self.settings = settings
        self.store = store
        self.models = models
        self.batcher = batcher
        self.metrics = metrics
        self.states = HeldStates(store, settings.answer_states_max_bytes)
        self._readings: OrderedDict[tuple[str, int, str, tuple[int, ...]], list[float]] = (
            OrderedDict()
        )
        self._readings_lock = threading.Lock()
        # The pair reader runs in a thread of its own (it reads one request at a time): the
        # default executor's few threads stay free for the store and the rest.
        self._reading_thread = ThreadPoolExecutor(1, thread_name_prefix="pair-reader")
        self._reading_waiting = 0

    def _may_wait(self, asked: int) -> bool:
        """Whether a request reading `asked` questions may queue for the pair reader: none
        wait, or they and it stay within the setting (so a wait stays seconds, not minutes)."""
        limit = self.settings.reading_max_waiting
        waiting = self._reading_waiting
        return limit > 0 and (waiting == 0 or waiting + asked <= limit)

    def close(self) -> None:
        """Lets a reading in hand finish and frees its thread."""
        self._reading_thread.shutdown(wait=True, cancel_futures=True)

    @functools.cached_property
    def _pair_reader(self) -> tuple[reading.PairReader, list[float], float] | None:
        """The pair reader, its weights and its abstain logit, where the settings serve it
        and it is fitted (loaded with the readers, which log where it is missing:
        service.readers)."""
        path = pair_reader_path(self.settings)
        if path is None:
            return None
        reader = reading.loaded(path)
        return reader, reader.weights.detach().tolist(), float(reader.abstain)

    def _read(
        self,
        reader: reading.PairReader,
        record: DocumentRecord,
        queries: Sequence[str],
        prepared: PreparedQueries,
        meanings: Sequence[Meanings | None],
        row: int,
        slots: list[int],
    ) -> list[float] | None:
        """reading(e) of question `row`'s candidates `slots` (blocking: the model runs here,
        unless they were read lately); None where the record keeps no sentences' text."""
        meaning = meanings[row] if row < len(meanings) else None
        query = queries[prepared.asked[row]]
        key = (record.id, record.version, query, tuple(slots))
        with self._readings_lock:
            found = self._readings.get(key)
            if found is not None:
                self._readings.move_to_end(key)
                return found
        values = pair_reading(reader, record, query, meaning, slots)
        if values is None:
            return None
        with self._readings_lock:
            self._readings[key] = values
            while len(self._readings) > READINGS_KEPT:
                self._readings.popitem(last=False)
        return values

    def _check_request(self, body: AnswersIn) -> None:
        settings = self.settings
        if len(body.queries) > settings.max_queries:
            raise TooLarge(
                f"at most {settings.max_queries} queries per request, got {len(body.queries)}",
                {"max_queries": settings.max_queries},
                code="too_many_queries",
            )
        if body.top_k > settings.max_top_k:
            raise BadRequest(
                f"top_k is at most {settings.max_top_k}",
                {"max_top_k": settings.max_top_k},
                code="top_k_too_large",
            )

    async def answer(self, doc_id: str, body: AnswersIn) -> bytes:
        """The questions' best answers among the document's entities, from its state of the
        requested mode, as the JSON bytes of an `AnswersOut`; 409 unless that state was built
        by the loaded model, 503 while the models load."""
        models = self.models.ready()
        self._check_request(body)
        mode = body.mode or self.settings.default_mode
        model = models.get(mode)
        if model is None:
            raise BadRequest(
                f"mode {mode!r} is not loaded", {"loaded": sorted(models)}, code="mode_not_loaded"
            )
        async with contextlib.AsyncExitStack() as held:
            return await self._answer(doc_id, body, mode, model, models, held)

    async def _answer(
        self,
        doc_id: str,
        body: AnswersIn,
        mode: Mode,
        model: LoadedModel,
        models: dict[str, LoadedModel],
        held: contextlib.AsyncExitStack,
    ) -> bytes:
        batcher = self.batcher
        # From here to encode this request is on its way to the batcher: a batch gathered
        # meanwhile waits for it (and runs at once when no request is on its way).
        with batcher.coming():
            # The decoded state is held (counted against the budget) until the answer is made.
            k = model.reader.config.hidden_size
            record = await held.enter_async_context(self.states.hold(doc_id, mode, k))
            require_current(record, models, (mode,))
            state = record.states[mode]
            prepared = prepare_queries(model, body.queries, record.entities)
            if not prepared.asked:
                raise BadRequest(
                    "; ".join(f"query {i}: {e}" for i, e in enumerate(prepared.errors)),
                    {"errors": prepared.errors},
                    code="bad_query",
                )
            n_entities = len(record.entities)
            if n_entities == 0:
                return answers_body(
                    doc_id, mode, model.model_id, body.queries, prepared, record, None
                )

        Q = await batcher.encode(model, prepared.ids)  # (m, k)
        excluded = excluded_slots(record, prepared) if body.exclude_question_entities else ()
        weight = (
            self.settings.support_weight if body.support_weight is None else body.support_weight
        )
        # A record indexed before windows were kept (format < 3) has no support to weigh.
        evidence = record.evidence if record.contexts or not record.entities else None
        meanings: list[Meanings | None] = []
        if (
            self.settings.meaning
            and model.ranking is not None
            and weight > 0
            and record.sentence_vectors
            and any(prepared.in_words)
        ):  # a thread hop only where a question is embedded (cloze sentences are not)
            meanings = await asyncio.to_thread(question_meanings, record, body.queries, prepared)
        read = None
        pair = self._pair_reader if body.reading and meanings and record.sentence_texts else None
        asked = sum(prepared.in_words)  # the questions it would read
        if pair is not None and not self._may_wait(asked):
            pair = None  # too many wait: answered without it, `read` false
            self.metrics.readings_skipped.inc()
        if pair is not None:
            values = functools.partial(
                self._read, pair[0], record, body.queries, prepared, meanings
            )
            read = Reading(values, pair[1], self.settings.reading_candidates, pair[2])
        rank = functools.partial(
            rank_answers,
            model,
            state,
            Q,
            n_entities,
            body.top_k,
            record.mentions,
            excluded,
            evidence,
            prepared.terms,
            weight,
            prepared.kinds,
            prepared.in_words,
            meanings,
            read,
        )
        start = time.perf_counter()
        if read is not None:  # the pair reader runs the sentence model
            self._reading_waiting += asked
            try:
                loop = asyncio.get_running_loop()
                ranked = await loop.run_in_executor(self._reading_thread, rank)
            finally:
                self._reading_waiting -= asked
        elif state.memory is not None and state.memory.numel() > INLINE_LOOKUP_MAX_NUMBERS:
            # Softmax mode reads all of H (n×k): a long document would hold up the event loop.
            ranked = await asyncio.to_thread(rank)
        else:
            # A k×k (or k) state answers in well under a millisecond: cheaper than a thread hop.
            ranked = rank()
        self.metrics.lookup_seconds.labels(mode=mode).observe(time.perf_counter() - start)
        return answers_body(doc_id, mode, model.model_id, body.queries, prepared, record, ranked)
