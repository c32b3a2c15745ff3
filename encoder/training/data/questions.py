"""The data set format: one cloze question per JSONL line, and the baselines beside every accuracy.

    {"id": str, "document": str, "query": str,
     "answer": "@entityN", "candidates": ["@entityN", ...]}

`document` and `query` are text in which entities are already `@entityN` markers (tokens are
separated by spaces, but any text that `encoder.text.tokens.tokenize` reads will do); `query` holds
exactly one `@placeholder`; `answer` is one of `candidates`, and every candidate occurs in the
document.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from encoder.text.tokens import PLACEHOLDER, STOP_WORDS, entity_index, entity_marker, tokenize


class DataError(ValueError):
    """A data set file or line does not follow the format."""


@dataclass(frozen=True)
class Question:
    id: str
    document: str
    query: str
    answer: str
    candidates: list[str]

    def check(self) -> None:
        """Raise DataError unless the question follows the format."""
        if entity_index(self.answer) is None:
            raise DataError(f"{self.id}: answer {self.answer!r} is not an @entityN marker")
        if self.answer not in self.candidates:
            raise DataError(f"{self.id}: answer {self.answer} is not among the candidates")
        if any(entity_index(c) is None for c in self.candidates):
            raise DataError(f"{self.id}: every candidate must be an @entityN marker")
        if tokenize(self.query).count(PLACEHOLDER) != 1:
            raise DataError(f"{self.id}: the query needs exactly one {PLACEHOLDER}")
        doc = set(tokenize(self.document))
        absent = [c for c in self.candidates if c not in doc]
        if absent:
            raise DataError(f"{self.id}: candidates {absent} do not occur in the document")


def write_questions(path: str | os.PathLike[str], questions: Iterable[Question]) -> int:
    """Write JSONL; returns the number of lines."""
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for q in questions:
            f.write(json.dumps(asdict(q), ensure_ascii=False) + "\n")
            n += 1
    return n


def json_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a JSONL file; DataError naming the
    line when it is not a JSON object."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"no data file at {path}")
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{lineno}: {e}") from e
            if not isinstance(item, dict):
                raise DataError(f"{path}:{lineno}: not a JSON object")
            yield lineno, item


def read_questions(path: str | os.PathLike[str]) -> Iterator[Question]:
    """Read and check JSONL questions; a bad line raises DataError with its line number."""
    for lineno, raw in json_lines(path):
        try:
            q = question_from_json(raw)
        except (KeyError, TypeError, DataError) as e:
            raise DataError(f"{path}:{lineno}: {e}") from e
        yield q


def question_from_json(raw: dict[str, Any]) -> Question:
    """A checked Question from one parsed JSONL line (KeyError/TypeError/DataError if not)."""
    q = Question(
        id=str(raw["id"]),
        document=str(raw["document"]),
        query=str(raw["query"]),
        answer=str(raw["answer"]),
        candidates=[str(c) for c in raw["candidates"]],
    )
    q.check()
    return q


@dataclass(frozen=True)
class Baselines:
    """Accuracies of answers that do not read the question (plus one that matches words)."""

    count: int
    random: float  # expected accuracy of a uniform pick among the candidates
    most_frequent: float  # the candidate mentioned most often in the document
    most_recent: float  # the candidate mentioned last in the document
    context_match: float  # the candidate whose neighbouring words best match the blank's
    bag_of_words: float  # the candidate with most question words near one of its mentions


def _share_of_best(scores: dict[str, float], answer: str) -> float:
    """1/ties when the answer is among the best-scoring candidates, else 0 (expected accuracy)."""
    best = max(scores.values())
    winners = [c for c, s in scores.items() if s == best]
    return 1.0 / len(winners) if answer in winners else 0.0


def context_match_scores(
    doc: Sequence[str], query: Sequence[str], candidates: Sequence[str], width: int = 3
) -> dict[str, float]:
    """For each candidate, the best count over its mentions of neighbouring words (up to `width`
    each side) equal to the words at the same offsets around the placeholder."""
    p = list(query).index(PLACEHOLDER)
    offsets = [o for o in range(-width, width + 1) if o and 0 <= p + o < len(query)]
    scores = dict.fromkeys(candidates, 0.0)
    for i, tok in enumerate(doc):
        if tok in scores:
            hits = sum(1 for o in offsets if 0 <= i + o < len(doc) and doc[i + o] == query[p + o])
            scores[tok] = max(scores[tok], float(hits))
    return scores


def window_overlap_scores(
    doc: Sequence[str], query: Sequence[str], candidates: Sequence[str], width: int = 10
) -> dict[str, float]:
    """For each candidate, the most distinct question words found within `width` tokens of
    one of its mentions: word matching that survives paraphrase's reordering."""
    words = {t for t in query if t.isalpha() and t not in STOP_WORDS}
    scores = dict.fromkeys(candidates, 0.0)
    for i, tok in enumerate(doc):
        if tok in scores:
            near = set(doc[max(0, i - width) : i + width + 1])
            scores[tok] = max(scores[tok], float(len(words & near)))
    return scores


def baselines(questions: Iterable[Question]) -> Baselines:
    n = 0
    rnd = freq = recent = match = bow = 0.0
    for q in questions:
        doc = tokenize(q.document)
        counts = Counter(t for t in doc if t in set(q.candidates))
        rnd += 1.0 / len(q.candidates)
        freq += _share_of_best({c: float(counts[c]) for c in q.candidates}, q.answer)
        last = {t: float(i) for i, t in enumerate(doc) if t in counts}
        recent += _share_of_best({c: last.get(c, -1.0) for c in q.candidates}, q.answer)
        query = tokenize(q.query)
        match += _share_of_best(context_match_scores(doc, query, q.candidates), q.answer)
        bow += _share_of_best(window_overlap_scores(doc, query, q.candidates), q.answer)
        n += 1
    if n == 0:
        return Baselines(0, 0.0, 0.0, 0.0, 0.0, 0.0)
    return Baselines(n, rnd / n, freq / n, recent / n, match / n, bow / n)


def without_named(q: Question) -> Question:
    """The question less the entities its query names among its candidates: the service does
    not answer a question with its own entities (`exclude_question_entities`, the default),
    and a built question's answer is never named in it, so training scores the candidates
    serving does."""
    named = {t for t in q.query.split() if entity_index(t) is not None} - {q.answer}
    return replace(q, candidates=[c for c in q.candidates if c not in named])


def numbered_as_served(q: Question) -> Question:
    """A data set question with its markers renumbered as the service numbers names: in
    order of first mention in the document (`anonymise_document`), then any the question or
    the candidates add. The data builder numbers them in a random order; a reader whose
    slots were not all trained alike answers the two differently."""
    order: dict[str, str] = {}
    for token in [*q.document.split(), *q.query.split(), *q.candidates]:
        if token not in order and entity_index(token) is not None:
            order[token] = entity_marker(len(order))

    def renumber(text: str) -> str:
        return " ".join(order.get(t, t) for t in text.split())

    candidates = sorted((order[c] for c in q.candidates), key=lambda m: entity_index(m) or 0)
    return replace(
        q,
        document=renumber(q.document),
        query=renumber(q.query),
        answer=order.get(q.answer, q.answer),
        candidates=candidates,
    )
