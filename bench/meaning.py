"""What meaning(e) costs (encoder/text/meaning.py), beside what the reader costs, on one
hand-written story set, in process:

    cheapqa bench meaning [--set test20] [--rounds 7]

Per story (medians over the stories, each the median of `rounds` timings after a warm-up
call, `bench.lookup.median_seconds`):
  index   the linear reader reading the story (its tokens, one document a call) against
          where_meant (its sentences split, the entities' sentences embedded and packed)
  ask     the story's questions as one request: `rank_answers` in linear (the lookup,
          scoring, support and the fitted ranking) against `question_meanings` (the
          questions embedded, each entity's nearest sentence), for questions new to the
          process and asked before (kept embedded); the same for one question
          and, where a pair reader is fitted (reading.pt), `rank_answers` with it reading
          each question's likeliest candidates (no reading kept from before)
  bytes   the linear state (float16, encoded as stored) against the packed sentence vectors
and, for a long document, the set's stories joined into one text: its indexing both ways, and
its sentences embedded per sentence (of like length together, where a story's are one chunk).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from functools import partial

import torch

from bench.lookup import median_seconds
from bench.realistic.stories import Story, load_stories, set_path
from encoder.text import meaning, reading
from encoder.text.meaning import DIM
from service.answering import (
    Meanings,
    PreparedQueries,
    Reading,
    pair_reading,
    prepare_queries,
    question_meanings,
    rank_answers,
    reading_candidates,
)
from service.readers import LoadedModel, anonymise, checkpoint_dir, load_models
from service.settings import SUPPORT_WEIGHT, Settings
from service.support import where_meant, where_named
from store.codec import encode_state
from store.record import DocumentRecord, Status


def _median_us(call: Callable[[], object], rounds: int) -> float:
    return 1e6 * median_seconds(call, rounds)


def _afresh(call: Callable[[], object]) -> object:
    """The call with no question embedded before (`embed_questions` keeps them)."""
    meaning._questions.clear()
    return call()


def _story(
    model: LoadedModel,
    story: Story,
    rounds: int,
    add: Callable[[str, float], None],
    pair: tuple[reading.PairReader, list[float]] | None,
) -> None:
    """Times one story's indexing and asking, both ways (and with the pair reader, where
    one is fitted)."""
    anon = anonymise(story.text)
    spans, contexts = where_named(anon)
    add("index: linear reader, µs a story", _median_us(partial(model.read, [anon.tokens]), rounds))
    meant = partial(where_meant, story.text, spans)
    add("index: sentences embedded, µs a story", _median_us(meant, rounds))
    made = meant()
    kept = meaning.count(made.sentence_vectors)
    add("sentences kept a story", kept)
    add("mentions kept a story", meaning.count(made.mention_vectors))
    state = model.read([anon.tokens])[0]
    add("bytes: linear state (float16)", len(encode_state(state, model_id="-", dtype="float16")))
    add("bytes: sentence vectors (int8)", kept * DIM)
    add("bytes: mention vectors (int8)", meaning.count(made.mention_vectors) * DIM)
    record = DocumentRecord(
        story.id, "-", Status.INDEXED, entities=anon.entities, mentions=anon.mentions,
        spans=spans, contexts=contexts, sentences=made.sentences,
        sentence_vectors=made.sentence_vectors, named=made.named,
        mention_vectors=made.mention_vectors, sentence_texts=made.texts,
        sentence_starts=made.starts,
    )  # fmt: skip
    questions = [a.question for a in story.questions]
    read_first: list[float] = []
    for label, asked in (("1 question", questions[:1]), ("a request", questions)):
        prepared = prepare_queries(model, asked, record.entities)
        with torch.inference_mode():
            Q = model.reader.encode_queries(prepared.ids)
        meanings = question_meanings(record, asked, prepared)

        def ranked(
            prepared: PreparedQueries = prepared,
            Q: torch.Tensor = Q,
            meanings: list[Meanings | None] = meanings,
            read: Reading | None = None,
        ) -> object:
            record._evidence.clear()  # as a request reads them, afresh
            return rank_answers(
                model, state, Q, len(record.entities), 5, record.mentions, prepared.named,
                record.evidence, prepared.terms, SUPPORT_WEIGHT, prepared.kinds,
                prepared.in_words, meanings, read,
            )  # fmt: skip

        add(f"ask, {label}: rank_answers, µs", _median_us(ranked, rounds))
        if pair is not None:
            reader, weights = pair

            def values(
                row: int,
                slots: list[int],
                asked: list[str] = asked,
                prepared: PreparedQueries = prepared,
                meanings: list[Meanings | None] = meanings,
                reader: reading.PairReader = reader,
            ) -> list[float] | None:
                query = asked[prepared.asked[row]]
                return pair_reading(reader, record, query, meanings[row], slots)

            reread = partial(ranked, read=Reading(values, weights))
            add(f"ask, {label}: rank_answers with the pair reader, µs", _median_us(reread, rounds))
            # What it reads of the first question: a record without its mentions' spans, none.
            slots = list(range(min(reading.TOP, len(record.entities))))
            found = reading_candidates(record, meanings[0], slots) or []
            read_first.append(sum(map(len, found)) / len(slots))
        asking = partial(question_meanings, record, asked, prepared)
        add(f"ask, {label}: question_meanings, µs", _median_us(partial(_afresh, asking), rounds))
        add(f"ask, {label}: question_meanings, asked before, µs", _median_us(asking, rounds))
    if read_first:  # the same first question in both labels
        add("ask: sentences the pair reader reads a candidate", read_first[0])


def _long(model: LoadedModel, text: str, rounds: int) -> dict[str, float]:
    """One long document's indexing, both ways."""
    anon = anonymise(text)
    spans, _ = where_named(anon)
    meant = partial(where_meant, text, spans)
    kept = meaning.count(meant().sentence_vectors)
    embedded = _median_us(meant, rounds)
    return {
        "long document: linear reader, µs": _median_us(partial(model.read, [anon.tokens]), rounds),
        "long document: sentences embedded, µs": embedded,
        "long document: sentences kept": kept,
        "long document: µs a sentence embedded": embedded / max(kept, 1),
    }


def _add(rows: dict[str, list[float]], key: str, value: float) -> None:
    rows.setdefault(key, []).append(value)


def run(name: str, rounds: int) -> dict[str, float]:
    """The figures' medians over the set's stories, then the long document's."""
    settings = Settings(modes=["linear"], meaning=True)
    model = load_models(settings)["linear"]
    path = checkpoint_dir(settings) / reading.FILE
    pair = None
    if path.is_file():
        reader = reading.loaded(path)
        pair = reader, reader.weights.detach().tolist()
    rows: dict[str, list[float]] = {}
    stories = load_stories(set_path(name))
    for story in stories:
        add = partial(_add, rows)
        _story(model, story, rounds, add, pair)
    figures = {key: statistics.median(values) for key, values in rows.items()}
    long_rounds = max(1, rounds // 2)  # a second or more a call
    return figures | _long(model, "\n\n".join(s.text for s in stories), long_rounds)


def main(args: argparse.Namespace) -> int:
    figures = run(args.set, args.rounds)
    print(f"| {args.set}, median over its stories | value |")
    print("|---|---:|")
    for key, value in figures.items():
        print(f"| {key} | {value:,.0f} |" if value >= 10 else f"| {key} | {value:.1f} |")
    index = figures["index: sentences embedded, µs a story"]
    read = figures["index: linear reader, µs a story"]
    print(f"| index: sentences / reader | {index / read:.1f}× |")
    index = figures["long document: sentences embedded, µs"]
    read = figures["long document: linear reader, µs"]
    print(f"| long document: sentences / reader | {index / read:.1f}× |")
    for label in ("1 question", "a request"):
        ratio = figures[f"ask, {label}: question_meanings, µs"]
        ratio /= figures[f"ask, {label}: rank_answers, µs"]
        print(f"| ask, {label}: meanings / rank_answers | {ratio:.1f}× |")
        with_reader = figures.get(f"ask, {label}: rank_answers with the pair reader, µs")
        if with_reader is not None:
            ratio = with_reader / figures[f"ask, {label}: rank_answers, µs"]
            print(f"| ask, {label}: with the pair reader / rank_answers | {ratio:.1f}× |")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", default="test20", help="a story set (bench/realistic/)")
    p.add_argument("--rounds", type=int, default=7, help="timings a story (median)")
