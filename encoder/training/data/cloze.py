"""Entity-cloze questions from running text.

A document is a window of consecutive sentences (about `window_tokens` tokens; windows
overlap). A sentence of the window gives one question per entity mention it holds, the
mention blanked to `@placeholder`. The tasks:

- find (`keep_query_sentence=True`, the default): the sentence stays in the document, so the
  reader has to find it again and read off the name: a retrieval task, like most of CNN's
  questions. Word matching solves it; what it measures is how much a fixed-size document
  state can still retrieve.
- infer (`keep_query_sentence=False`): the sentence is removed and only mentions of entities
  that the rest of the window also mentions are blanked, so the answer has to be inferred
  from the other sentences (which names go together, who speaks to whom).
- para: find, with the question paraphrased (`paraphrase` given to `build_questions`):
  synonyms, dropped and reordered words, so the evidence is there but not verbatim.
- question form "clause" (`ClozeOptions.question`, any task that keeps the sentence): the
  question is only the clause that holds the blank, as a person asks it: "@placeholder
  rejected two earlier offers from Vestlys" of "Eriksen rejected two earlier offers
  from Vestlys, saying ...", "@placeholder owns 34 percent" of "Eriksen, who owns 34
  percent, ..." (`clause_question`): the words up to the nearest comma, semicolon or quote,
  the blank often first. A sentence-form question keeps at most 3 words after its blank,
  so a reader trained only on those never learns to read a subject-blank question.
- question form "restated": only the names whose sentence a person would restate
  (`restate.restatements`: a role for a verb, the passive turned active and back, an
  appositive left out), asked as restated: "@placeholder founded Solvind" of "Solvind 's
  founder , Tor Eriksen , ...". About 2% of a text's names; not paraphrased further. Mixed
  with clause questions in training.
- lead (`build_lead_questions`): a name blanked in an article's first paragraph, answered
  from the body that follows (CNN's construction; the document never holds the sentence).

The n entities of a question take the markers @entity0 .. @entity{n-1} in a seeded random
order, so nothing can be read from the numbers themselves.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from encoder.text.anonymise import EntityMatcher, entity_surfaces
from encoder.text.entities import Entity
from encoder.text.tokens import PLACEHOLDER, cut_around_placeholder, entity_marker, split_sentences
from encoder.training.data.choices import QUESTION_FORMS
from encoder.training.data.questions import Question
from encoder.training.data.sources import Text

# Rewrites a question's tokens (markers and the placeholder kept); None: verbatim.
Paraphrase = Callable[[list[str], random.Random], list[str]]
# A sentence's tokens and a name's position -> restated questions about it (restate.py).
Restate = Callable[[Sequence[str], int], list[list[str]]]


@dataclass(frozen=True)
class ClozeOptions:
    window_tokens: int = 200  # document length target (whole sentences)
    stride_tokens: int | None = 100  # a window starts every N tokens (<= window); None: no overlap
    # Question sentences are cut around the blank. Readers and questions run left to right,
    # so the words just before the blank are the ones the last query state remembers best.
    query_tokens_before: int = 16
    query_tokens_after: int = 3
    min_query_tokens: int = 6
    keep_query_sentence: bool = True
    # Only blank entities that the rest of the window mentions too (always so when the
    # sentence is removed, since the answer must be in the document); this also keeps the
    # most-frequent baseline from profiting from the mention in the kept sentence.
    answer_elsewhere: bool = False
    max_questions_per_window: int = 8
    max_entities: int = 256
    min_candidates: int = 2
    question: str = "sentence"  # QUESTION_FORMS: the whole sentence, or its clause (above)

    def __post_init__(self) -> None:
        if self.question not in QUESTION_FORMS:
            raise ValueError(f"question must be one of {QUESTION_FORMS}, got {self.question!r}")


# Tokens that end a clause. "who"/"which" after a name's comma open a relative clause about
# it ("Eriksen , who owns ...": "@placeholder owns ..."); leading conjunctions are dropped.
CLAUSE_BREAKS = frozenset({",", ";", ":", '"', "(", ")", "--", "-", ".", "!", "?", "'"})
_RELATIVE = frozenset({"who", "which"})
_LEADING = frozenset({"and", "but", "or", "so", "yet", "then", "while", "when", "as"})
_MIN_CLAUSE_WORDS = 3  # tokens besides the blank: "of @placeholder" asks nothing


def clause_end(tokens: Sequence[str], start: int) -> int:
    """Where the clause running from `start` ends: the first clause break, or the end."""
    end = start
    while end < len(tokens) and tokens[end] not in CLAUSE_BREAKS:
        end += 1
    return end


def clause_question(tokens: Sequence[str], pos: int) -> list[str] | None:
    """The clause of `tokens` that holds position `pos`, blanked there; None when it is
    shorter than `_MIN_CLAUSE_WORDS` words besides the blank."""
    after = pos + 1
    if (
        after + 1 < len(tokens) and tokens[after] == "," and tokens[after + 1] in _RELATIVE
    ):  # "X , who owns ..." asks about X: "@placeholder owns ..."
        start, after = pos, after + 2
    else:
        start = pos
        while start > 0 and tokens[start - 1] not in CLAUSE_BREAKS:
            start -= 1
        while start < pos and tokens[start] in _LEADING:
            start += 1
    clause = [*tokens[start:pos], PLACEHOLDER, *tokens[after : clause_end(tokens, after)]]
    if len(clause) - 1 < _MIN_CLAUSE_WORDS:
        return None
    return clause


@dataclass(frozen=True)
class _Sentence:
    tokens: list[str]  # anonymised with the text's entity map: markers "@entity{i}"


def _anonymised_sentences(text: Text, entities: Sequence[Entity]) -> list[_Sentence]:
    """Every sentence, entities replaced with one text-wide numbering (slot = entity index)."""
    matcher = EntityMatcher(entity_surfaces(entities))
    sentences: list[_Sentence] = []
    for paragraph in text.paragraphs:
        for sentence in split_sentences(paragraph):
            marked = matcher.mark(sentence)
            tokens = [low if owner is None else entity_marker(owner) for low, owner in marked]
            if tokens:
                sentences.append(_Sentence(tokens))
    return sentences


def _windows(
    sentences: list[_Sentence], window_tokens: int, stride_tokens: int
) -> Iterator[list[_Sentence]]:
    """Runs of whole sentences of about window_tokens tokens, one starting about every
    stride_tokens tokens (stride < window: overlapping windows, more distinct documents)."""
    start = 0
    while start < len(sentences):
        window: list[_Sentence] = []
        size = 0
        for s in sentences[start:]:
            if window and size + len(s.tokens) > window_tokens:
                break
            window.append(s)
            size += len(s.tokens)
        yield window
        if start + len(window) >= len(sentences):
            return
        advanced = 0
        step = 0
        while step < len(window) and advanced < stride_tokens:
            advanced += len(window[step].tokens)
            step += 1
        start += max(1, step)


def build_questions(
    text: Text,
    entities: Sequence[Entity],
    options: ClozeOptions,
    seed: int,
    paraphrase: Paraphrase | None = None,
    restate: Restate | None = None,
) -> list[Question]:
    """Cloze questions from one text, deterministic given `seed`; `restate` is needed by the
    question form "restated"."""
    if options.question == "restated" and restate is None:
        raise ValueError('the question form "restated" needs restate')
    rng = random.Random(f"{seed}:{text.name}")
    sentences = _anonymised_sentences(text, entities)
    is_entity = {entity_marker(i) for i in range(len(entities))}
    stride = options.stride_tokens or options.window_tokens
    questions: list[Question] = []
    for w, window in enumerate(
        _windows(sentences, options.window_tokens, min(stride, options.window_tokens))
    ):
        window_questions: list[tuple[int, int, list[str], list[str], str]] = []
        for s_idx, sentence in enumerate(window):
            if len(sentence.tokens) < options.min_query_tokens:
                continue
            rest = [t for j, s in enumerate(window) if j != s_idx for t in s.tokens]
            document = (
                [t for s in window for t in s.tokens] if options.keep_query_sentence else rest
            )
            answerable = {t for t in document if t in is_entity}
            if options.answer_elsewhere:
                answerable &= set(rest)
            for pos, tok in enumerate(sentence.tokens):
                if tok not in answerable or sentence.tokens.count(tok) != 1:
                    continue  # answer not (elsewhere) in the document, or given away by a repeat
                query: list[str] | None
                if options.question == "sentence":
                    query = list(sentence.tokens)
                    query[pos] = PLACEHOLDER
                elif options.question == "clause":
                    query = clause_question(sentence.tokens, pos)
                    if query is None:
                        continue
                else:
                    ways = restate(sentence.tokens, pos) if restate else []
                    if not ways:
                        continue
                    query = rng.choice(ways)
                window_questions.append((s_idx, pos, document, query, tok))
        rng.shuffle(window_questions)
        restated = options.question == "restated"  # already a paraphrase: asked as it is
        for s_idx, pos, document, sentence_query, answer in window_questions[
            : options.max_questions_per_window
        ]:
            query = (
                paraphrase(sentence_query, rng) if paraphrase and not restated else sentence_query
            )
            query = cut_around_placeholder(
                query, options.query_tokens_before, options.query_tokens_after
            )
            question = _question(
                f"{text.name}-{w:04d}-{s_idx:02d}-{pos:02d}",
                document,
                query,
                answer,
                is_entity,
                options,
                rng,
            )
            if question is not None:
                questions.append(question)
    return questions


def _question(
    qid: str,
    document: list[str],
    query: list[str],
    answer: str,
    is_entity: set[str],
    options: ClozeOptions,
    rng: random.Random,
) -> Question | None:
    """The question with its entities renumbered at random; None when it has too few
    candidates or too many entities."""
    in_document = list(dict.fromkeys(t for t in document if t in is_entity))
    # Entities of the question that the document lacks are markers too, but no answers.
    mentioned = list(dict.fromkeys([*in_document, *(t for t in query if t in is_entity)]))
    if len(in_document) < options.min_candidates or len(mentioned) > options.max_entities:
        return None
    # Renumber: the n entities take the slots 0..n-1 in a random order, as in CNN's
    # data; the text-wide numbering would otherwise leak names through numbers.
    slots = rng.sample(range(len(mentioned)), len(mentioned))
    renumber = {e: entity_marker(s) for e, s in zip(mentioned, slots, strict=True)}
    return Question(
        id=qid,
        document=" ".join(renumber.get(t, t) for t in document),
        query=" ".join(renumber.get(t, t) for t in query),
        answer=renumber[answer],
        candidates=sorted((renumber[e] for e in in_document), key=lambda m: int(m[7:])),
    )


def build_lead_questions(
    article: Text, entities: Sequence[Entity], options: ClozeOptions, seed: int
) -> list[Question]:
    """Names blanked in the first paragraph, answered from the body (its first
    `window_tokens` tokens, whole sentences), which never holds the question's sentence."""
    rng = random.Random(f"{seed}:lead:{article.name}")
    lead = _anonymised_sentences(Text(article.name, article.paragraphs[:1]), entities)
    body_sentences = _anonymised_sentences(Text(article.name, article.paragraphs[1:]), entities)
    body = next(_windows(body_sentences, options.window_tokens, options.window_tokens), [])
    document = [t for s in body for t in s.tokens]
    is_entity = {entity_marker(i) for i in range(len(entities))}
    answerable = {t for t in document if t in is_entity}
    candidates = [
        (s_idx, pos, sentence.tokens)
        for s_idx, sentence in enumerate(lead)
        for pos, tok in enumerate(sentence.tokens)
        if tok in answerable and sentence.tokens.count(tok) == 1
    ]
    rng.shuffle(candidates)
    questions = []
    for s_idx, pos, tokens in candidates[: options.max_questions_per_window]:
        query = [*tokens[:pos], PLACEHOLDER, *tokens[pos + 1 :]]
        query = cut_around_placeholder(
            query, options.query_tokens_before, options.query_tokens_after
        )
        qid = f"{article.name}-lead-{s_idx:02d}-{pos:02d}"
        question = _question(qid, document, query, tokens[pos], is_entity, options, rng)
        if question is not None:
            questions.append(question)
    return questions
