"""Real text for load: documents of about n tokens, each with cloze questions about it.

Two sources. A built data set (`cheapqa data build`, JSONL): its windows are already
anonymised, so a document is consecutive windows joined, its candidates are the `@entityN`
markers it holds (the service anonymises them once more) and its questions are the windows'
queries. Or a plain text file: passages are paragraphs, candidates are left to the service's
name detection, and a question is a sentence with one detected name replaced by @placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from encoder.text.entities import find_entities
from encoder.text.tokens import PLACEHOLDER, entity_index, split_sentences, tokenize
from encoder.training.data.questions import read_questions


class CorpusError(ValueError):
    """The source text is missing or too small to build the requested load."""


@dataclass(frozen=True)
class Passage:
    text: str
    tokens: int  # len(tokenize(text))
    questions: tuple[str, ...]


@dataclass(frozen=True)
class LoadDocument:
    id: str
    text: str
    tokens: int  # by encoder.text.tokens.tokenize; the service's count can differ by a few
    candidates: list[str] | None  # None: the service detects names itself
    questions: list[str]


@dataclass(frozen=True)
class Corpus:
    passages: tuple[Passage, ...]
    anonymised: bool  # passages hold @entityN markers (from a data set)
    source: str

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.passages)

    def documents(self, count: int, tokens: int, prefix: str) -> list[LoadDocument]:
        """`count` documents of about `tokens` tokens, each starting at another passage.

        Passages are joined in order (wrapping around when the corpus is short); the last one
        is cut at a word so the document holds `tokens` tokens, give or take one word.
        """
        if count < 1 or tokens < 1:
            raise CorpusError("need at least one document of at least one token")
        if self.tokens == 0:
            raise CorpusError(f"{self.source} holds no text")
        stride = max(1, len(self.passages) // count)
        return [
            self._document(f"{prefix}-{i}", (i * stride) % len(self.passages), tokens)
            for i in range(count)
        ]

    def _document(self, doc_id: str, start: int, target: int) -> LoadDocument:
        parts: list[str] = []
        questions: list[str] = []
        total = 0
        for passage in _cycle(self.passages, start):
            if total + passage.tokens <= target:
                parts.append(passage.text)
                total += passage.tokens
            else:
                cut, cut_tokens = _cut_words(passage.text, target - total)
                if cut:
                    parts.append(cut)
                    total += cut_tokens
            questions.extend(passage.questions)
            if total >= target:
                break
        text = "\n\n".join(parts)
        candidates = _markers(text) if self.anonymised else None
        if not questions:
            raise CorpusError(f"{self.source}: no cloze question could be made from the text")
        return LoadDocument(doc_id, text, total, candidates, questions)


def _cycle(passages: Sequence[Passage], start: int) -> Iterator[Passage]:
    while True:  # the caller stops; documents() has checked that the passages hold tokens
        for i in range(len(passages)):
            yield passages[(start + i) % len(passages)]


def _cut_words(text: str, budget: int) -> tuple[str, int]:
    """The longest prefix of whole words holding at most `budget` tokens (at least one word)."""
    words = text.split()
    kept: list[str] = []
    used = 0
    for word in words:
        n = len(tokenize(word))
        if used + n > budget and kept:
            break
        kept.append(word)
        used += n
        if used >= budget:
            break
    return " ".join(kept), used


def _markers(text: str) -> list[str]:
    """The @entityN markers of an anonymised text, in order of first appearance."""
    return list(dict.fromkeys(t for t in tokenize(text) if entity_index(t) is not None))


def load_dataset_corpus(path: str | Path) -> Corpus:
    """Windows of a built data set (JSONL), in file order, each with the queries asked on it."""
    order: list[str] = []
    queries: dict[str, list[str]] = {}
    for q in read_questions(path):
        if q.document not in queries:
            order.append(q.document)
            queries[q.document] = []
        queries[q.document].append(q.query)
    passages = tuple(Passage(d, len(tokenize(d)), tuple(queries[d])) for d in order)
    return Corpus(passages, anonymised=True, source=str(path))


def load_corpus(data: Path, text_file: Path | None) -> Corpus:
    """A plain text file when one is given, else the built data set at `data`."""
    return load_dataset_corpus(data) if text_file is None else load_text_corpus(text_file)


def load_text_corpus(path: str | Path) -> Corpus:
    """Paragraphs of a plain text file; questions blank out one detected name per sentence."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"no text file at {path}")
    text = path.read_text(encoding="utf-8")
    return text_corpus(text, source=str(path))


def text_corpus(text: str, source: str = "text") -> Corpus:
    names = [e.name for e in find_entities(text)]
    paragraphs = [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
    passages = tuple(
        Passage(p, len(tokenize(p)), tuple(cloze_questions(p, names))) for p in paragraphs
    )
    return Corpus(passages, anonymised=False, source=source)


def cloze_questions(paragraph: str, names: Sequence[str]) -> list[str]:
    """Each sentence naming one of `names` (longest first) with that name's first mention
    replaced by @placeholder."""
    by_length = sorted(names, key=len, reverse=True)
    out = []
    for sentence in split_sentences(paragraph):
        for name in by_length:
            hit = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", sentence)
            if hit is not None:
                out.append(sentence[: hit.start()] + PLACEHOLDER + sentence[hit.end() :])
                break
    return out
