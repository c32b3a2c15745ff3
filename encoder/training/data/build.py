"""`cheapqa data build`: an entity-cloze data set (JSONL) from real text, split by source.

Sources: Jane Austen's six novels (split by novel), Moby Dick (split by chapter), gensim's
Wikipedia sample (a second domain, split by article: tested beside every books build, or a
build of its own with `domain="wiki"`) and 70 Reuters stories (real news, test only). The
names are found by `encoder.text.entities`, the finder the service uses too.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from encoder.text.entities import Entity, find_entities
from encoder.training.data.choices import DOMAINS, MIN_NAME_COUNT, TASKS
from encoder.training.data.cloze import (
    ClozeOptions,
    Paraphrase,
    Restate,
    build_lead_questions,
    build_questions,
)
from encoder.training.data.questions import Question, baselines, write_questions
from encoder.training.data.sources import Text

SPLITS: dict[str, tuple[str, ...]] = {
    "train": ("emma", "mansfieldpark", "prideprejudice", "sensesensibility"),
    "validation": ("northangerabbey",),
    "test": ("persuasion",),
}
LEAD_MIN_TOKENS = 800  # a lead question's body is read this far at least (CNN: ~760 tokens)


def moby_dick_split(chapter_name: str) -> str:
    """Chapters 8, 18, 28, ... validate; 9, 19, 29, ... test; the rest train."""
    number = int(chapter_name.rsplit(":", 1)[1])
    return {8: "validation", 9: "test"}.get(number % 10, "train")


WIKI_SPLIT = (("train", 0.45), ("validation", 0.15), ("test", 0.40))  # shares of the words


def wiki_splits(articles: Iterable[Text]) -> dict[str, str]:
    """Article name -> split: the articles in the order of a hash of their names, cut where
    the running word count passes 45% (train) and 60% (validation; the rest test). Articles
    differ a hundredfold in length, so shares of words, not of articles. Books builds test on
    the test articles only (wiki_test, lead_test): a reader trained on the wiki domain's train
    split is tested on articles it never read."""
    ordered = sorted(articles, key=lambda a: zlib.crc32(a.name.encode()))
    words = [sum(len(p.split()) for p in a.paragraphs) for a in ordered]
    total, seen, out = sum(words), 0, {}
    for article, n in zip(ordered, words, strict=True):
        cut = 0.0
        for split, share in WIKI_SPLIT:
            cut += share
            if seen < cut * total or split == "test":
                out[article.name] = split
                break
        seen += n
    return out


@dataclass(frozen=True)
class Sources:
    novels: dict[str, Text]  # Austen, by name (see SPLITS)
    moby_dick: list[Text]  # chapters, named "mobydick:NNN"
    wiki: list[Text]  # articles; empty without gensim
    # Austen's chapters, named "<novel>:NNN", for the lead task (a novel without: one chapter)
    novel_chapters: dict[str, list[Text]] = field(default_factory=dict)
    news: list[Text] = field(default_factory=list)  # Reuters stories "news:...": test only


def cloze_options(task: str, **kwargs: Any) -> ClozeOptions:
    """Options of a task: infer removes the question's sentence and blanks only names the rest
    of the window mentions; find and para keep it."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    return ClozeOptions(
        keep_query_sentence=task != "infer", answer_elsewhere=task == "infer", **kwargs
    )


def _articles_by_split(articles: list[Text]) -> dict[str, list[Text]]:
    """Wikipedia's articles grouped by `wiki_splits`."""
    of = wiki_splits(articles)
    out: dict[str, list[Text]] = {split: [] for split in SPLITS}
    for article in articles:
        out[of[article.name]].append(article)
    return out


def _books_by_split(sources: Sources, chapters: bool) -> dict[str, list[Text]]:
    """The books of each split: whole novels (windows run across chapters) or, for the lead
    task, their chapters; Moby Dick by chapter either way."""
    out: dict[str, list[Text]] = {
        split: [
            t
            for n in names
            for t in (
                sources.novel_chapters.get(n, [sources.novels[n]])
                if chapters
                else [sources.novels[n]]
            )
        ]
        for split, names in SPLITS.items()
    }
    for chapter in sources.moby_dick:
        out[moby_dick_split(chapter.name)].append(chapter)
    return out


ARTICLE_PREFIXES = ("wiki:", "news:")  # texts with names of their own, every one counted


def _book(name: str) -> str:
    """A book's chapters share their names ("mobydick:chapter-12" -> "mobydick"); an article
    ("wiki:Anarchism", "news:crude-reut-00002") is a text of its own, with its own names."""
    return name if name.startswith(ARTICLE_PREFIXES) else name.split(":", 1)[0]


def _entities_of(
    texts: Iterable[Text], min_name_count: int = MIN_NAME_COUNT
) -> Callable[[Text], list[Entity]]:
    """The finder run over a whole book once (names recur across chapters), cached per book;
    a book's names count from `min_name_count` mentions, an article's from one."""
    texts = list(texts)
    cache: dict[str, list[Entity]] = {}

    def entities(text: Text) -> list[Entity]:
        book = _book(text.name)
        if book not in cache:
            whole = " ".join(p for t in texts if _book(t.name) == book for p in t.paragraphs)
            min_count = 1 if text.name.startswith(ARTICLE_PREFIXES) else min_name_count
            cache[book] = find_entities(whole, min_count=min_count)
        return cache[book]

    return entities


def build_dataset(
    out_dir: Path,
    sources: Sources,
    task: str,
    options: ClozeOptions,
    seed: int,
    paraphrasers: dict[str, Paraphrase] | None = None,
    progress: Callable[[Iterable[Text]], Iterable[Text]] = lambda texts: texts,
    min_name_count: int = MIN_NAME_COUNT,
    domain: str = "books",
    restate: Restate | None = None,
) -> dict[str, Any]:
    """Write <split>.jsonl files and meta.json into out_dir; return the summary (meta).

    domain: "books" (novels and Moby Dick; with Wikipedia, `wiki_test` adds the same task on
    the test articles and, but for the lead task, whose `wiki_test` it is, `lead_test` their
    lead -> body questions; with the Reuters stories, `news_test` the task on them) or "wiki"
    (every split from Wikipedia, by article).
    paraphrasers: split -> paraphrase (the para task; test and validation use synonym pairs
    the training split never sees). restate: the question form "restated" (`make_restater`).
    The lead task asks about the first paragraph of a chapter
    (an article) from its body.
    """
    if task == "para" and not paraphrasers:
        raise ValueError("the para task needs paraphrasers")
    if domain not in DOMAINS:
        raise ValueError(f"domain must be one of {DOMAINS}, got {domain!r}")
    if domain == "wiki" and not sources.wiki:
        raise ValueError("the wiki domain needs gensim's Wikipedia sample: pip install gensim")
    out_dir.mkdir(parents=True, exist_ok=True)
    wiki = _articles_by_split(sources.wiki)
    by_split = wiki if domain == "wiki" else _books_by_split(sources, chapters=task == "lead")
    tested = [] if domain == "wiki" else wiki["test"]
    news = [] if domain == "wiki" else list(sources.news)
    all_texts = [t for texts in by_split.values() for t in texts] + tested + news
    entities = _entities_of(all_texts, min_name_count)
    train_para, test_para = ((paraphrasers or {}).get(s) for s in ("train", "test"))

    def ask(texts: list[Text], para: Paraphrase | None) -> list[Question]:
        if task == "lead":
            return _lead_questions(texts, entities, options, seed, progress)
        return [
            q
            for text in progress(texts)
            for q in build_questions(text, entities(text), options, seed, para, restate)
        ]

    splits = {
        split: ask(texts, train_para if split == "train" else test_para)
        for split, texts in by_split.items()
    }
    if tested:
        splits["wiki_test"] = ask(tested, test_para)
        if task != "lead":
            splits["lead_test"] = _lead_questions(tested, entities, options, seed)
    if news:
        splits["news_test"] = ask(news, test_para)
    summary: dict[str, Any] = {
        "task": task,
        "description": "entity cloze on real text (see docs/DATA.md)",
        "seed": seed,
        "domain": domain,
        "options": asdict(options),
        "min_name_count": min_name_count,
        "sources": {
            split: sorted({t.name.split(":", 1)[0] for t in texts})
            for split, texts in by_split.items()
        },
        "splits": {},
    }
    for split, questions in splits.items():
        write_questions(out_dir / f"{split}.jsonl", questions)
        summary["splits"][split] = split_summary(questions)
    (out_dir / "meta.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _lead_questions(
    articles: list[Text],
    entities: Callable[[Text], list[Entity]],
    options: ClozeOptions,
    seed: int,
    progress: Callable[[Iterable[Text]], Iterable[Text]] = lambda texts: texts,
) -> list[Question]:
    """Lead -> body questions; the body is read up to LEAD_MIN_TOKENS at least."""
    lead = replace(options, window_tokens=max(options.window_tokens, LEAD_MIN_TOKENS))
    return [q for a in progress(articles) for q in build_lead_questions(a, entities(a), lead, seed)]


def split_summary(questions: list[Question]) -> dict[str, Any]:
    b = baselines(questions)
    return {
        "questions": b.count,
        "mean_document_tokens": round(
            sum(len(q.document.split()) for q in questions) / max(1, b.count), 1
        ),
        "mean_candidates": round(sum(len(q.candidates) for q in questions) / max(1, b.count), 2),
        "baselines": {k: round(v, 4) for k, v in asdict(b).items() if k != "count"},
    }


def load_sources(cache_dir: Path, source_dir: Path | None, wiki: bool | None) -> Sources:
    """Fetch (once, into cache_dir) and read the texts. wiki: None = when gensim is there."""
    from encoder.training.data.sources import (
        SourceError,
        austen_chapters,
        find_wiki_sample,
        locate_janeaustenr,
        moby_dick_chapters,
        reuters_articles,
        whole_novel,
        wiki_articles,
    )

    chapters = austen_chapters(locate_janeaustenr(source_dir, cache_dir))
    novels = {name: whole_novel(name, texts) for name, texts in chapters.items()}
    sample = find_wiki_sample() if wiki is not False else None
    if sample is None and wiki:
        raise SourceError("--wiki needs gensim (pip install gensim) and its test data")
    articles = list(wiki_articles(sample)) if sample is not None else []
    return Sources(
        novels,
        moby_dick_chapters(cache_dir),
        articles,
        novel_chapters=chapters,
        news=reuters_articles(cache_dir),
    )


# The synonym pairs held out for validation and test are the same whatever a build's --seed:
# a training set built with another seed (more questions from the same text) must not
# train on a pair that the seed-13 sets test. 13 is the seed those sets were first built with.
SYNONYM_SPLIT_SEED = 13


def make_paraphrasers(cache_dir: Path, question: str = "sentence") -> dict[str, Paraphrase]:
    """split -> paraphrase: "train" with 70% of WordNet's synonym pairs, "test" (validation and
    test) with the other 30%, so no swap seen in training is tested. Clause questions are
    paraphrased more gently (paraphrase.CLAUSE_OPTIONS)."""
    from encoder.training.data.paraphrase import (
        CLAUSE_OPTIONS,
        ParaphraseOptions,
        fetch_wordnet,
        load_synonyms,
        paraphrase,
        split_synonyms,
    )

    pairs = load_synonyms(fetch_wordnet(cache_dir))
    train_map, test_map = split_synonyms(pairs, SYNONYM_SPLIT_SEED)
    options = CLAUSE_OPTIONS if question in ("clause", "restated") else ParaphraseOptions()
    return {
        "train": lambda tokens, rng: paraphrase(tokens, train_map, rng, options),
        "test": lambda tokens, rng: paraphrase(tokens, test_map, rng, options),
    }


def make_restater(cache_dir: Path) -> Restate:
    """The question form "restated": `restate.restatements` with WordNet's role nouns."""
    from functools import partial

    from encoder.training.data.paraphrase import fetch_wordnet
    from encoder.training.data.restate import read_roles, restatements

    return partial(restatements, roles=read_roles(fetch_wordnet(cache_dir)))
