"""`cheapqa data build`: an entity-cloze data set (JSONL) from real text, split by source.

Sources: Jane Austen's six novels (split by novel), Moby Dick (split by chapter), and gensim's
Wikipedia sample (a second domain, test only). The names are found by `encoder.entities`, the
finder the service uses too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from encoder.data.cloze import ClozeOptions, Paraphrase, build_lead_questions, build_questions
from encoder.data.questions import Question, baselines, write_questions
from encoder.data.sources import Text
from encoder.entities import Entity, find_entities

TASKS = ("find", "para", "infer", "lead")  # lead: a test set only (Wikipedia, gensim)
SPLITS: dict[str, tuple[str, ...]] = {
    "train": ("emma", "mansfieldpark", "prideprejudice", "sensesensibility"),
    "validation": ("northangerabbey",),
    "test": ("persuasion",),
}
LEAD_MIN_TOKENS = 800  # a lead question's body is read this far at least (CNN: ~760 tokens)
MIN_NAME_COUNT = 3  # a name must recur in its book to be an entity: fewer one-off capitals


def moby_dick_split(chapter_name: str) -> str:
    """Chapters 8, 18, 28, ... validate; 9, 19, 29, ... test; the rest train."""
    number = int(chapter_name.rsplit(":", 1)[1])
    return {8: "validation", 9: "test"}.get(number % 10, "train")


@dataclass(frozen=True)
class Sources:
    novels: dict[str, Text]  # Austen, by name (see SPLITS)
    moby_dick: list[Text]  # chapters, named "mobydick:NNN"
    wiki: list[Text]  # articles; empty without gensim


def cloze_options(task: str, **kwargs: Any) -> ClozeOptions:
    """Options of a task: infer removes the question's sentence and blanks only names the rest
    of the window mentions; find and para keep it."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    return ClozeOptions(
        keep_query_sentence=task != "infer", answer_elsewhere=task == "infer", **kwargs
    )


def _texts_by_split(sources: Sources) -> dict[str, list[Text]]:
    out: dict[str, list[Text]] = {
        split: [sources.novels[n] for n in names] for split, names in SPLITS.items()
    }
    for chapter in sources.moby_dick:
        out[moby_dick_split(chapter.name)].append(chapter)
    return out


def _book(name: str) -> str:
    """A book's chapters share their names ("mobydick:chapter-12" -> "mobydick"); a Wikipedia
    article ("wiki:Anarchism") is a text of its own, with its own names."""
    return name if name.startswith("wiki:") else name.split(":", 1)[0]


def _entities_of(texts: Iterable[Text]) -> Callable[[Text], list[Entity]]:
    """The finder run over a whole book once (names recur across chapters), cached per book."""
    texts = list(texts)
    cache: dict[str, list[Entity]] = {}

    def entities(text: Text) -> list[Entity]:
        book = _book(text.name)
        if book not in cache:
            whole = " ".join(p for t in texts if _book(t.name) == book for p in t.paragraphs)
            min_count = 1 if text.name.startswith("wiki:") else MIN_NAME_COUNT
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
) -> dict[str, Any]:
    """Write <split>.jsonl files and meta.json into out_dir; return the summary (meta).

    paraphrasers: split -> paraphrase (the para task; test and validation use synonym pairs
    the training split never sees). With Wikipedia, `wiki_test` holds the same task on
    articles and `lead_test` the lead -> body questions.
    """
    if task == "para" and not paraphrasers:
        raise ValueError("the para task needs paraphrasers")
    if task == "lead" and not sources.wiki:
        raise ValueError("the lead task needs gensim's Wikipedia sample: pip install gensim")
    out_dir.mkdir(parents=True, exist_ok=True)
    by_split = _texts_by_split(sources)
    all_texts = [t for texts in by_split.values() for t in texts] + list(sources.wiki)
    entities = _entities_of(all_texts)
    splits: dict[str, list[Question]] = {}
    if task == "lead":  # Wikipedia only, all of it a test set: nothing trains on it
        by_split = {"test": list(sources.wiki)}
        splits["test"] = _lead_questions(sources.wiki, entities, options, seed, progress)
    else:
        for split, texts in [*by_split.items(), ("wiki_test", list(sources.wiki))]:
            para = (paraphrasers or {}).get("train" if split == "train" else "test")
            splits[split] = [
                q
                for text in progress(texts)
                for q in build_questions(text, entities(text), options, seed, para)
            ]
        if sources.wiki:
            splits["lead_test"] = _lead_questions(sources.wiki, entities, options, seed)
        else:
            del splits["wiki_test"]
    summary: dict[str, Any] = {
        "task": task,
        "description": "entity cloze on real text (see docs/DATA.md)",
        "seed": seed,
        "options": asdict(options),
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
    from encoder.data.sources import (
        SourceError,
        austen_novels,
        find_wiki_sample,
        locate_janeaustenr,
        moby_dick_chapters,
        wiki_articles,
    )

    novels = austen_novels(locate_janeaustenr(source_dir, cache_dir))
    sample = find_wiki_sample() if wiki is not False else None
    if sample is None and wiki:
        raise SourceError("--wiki needs gensim (pip install gensim) and its test data")
    articles = list(wiki_articles(sample)) if sample is not None else []
    return Sources(novels=novels, moby_dick=moby_dick_chapters(cache_dir), wiki=articles)


# The synonym pairs held out for validation and test are the same whatever a build's --seed:
# a training set built with another seed (more questions from the same text) must not
# train on a pair that the seed-13 sets test. 13 is the seed those sets were first built with.
SYNONYM_SPLIT_SEED = 13


def make_paraphrasers(cache_dir: Path) -> dict[str, Paraphrase]:
    """split -> paraphrase: "train" with 70% of WordNet's synonym pairs, "test" (validation and
    test) with the other 30%, so no swap seen in training is tested."""
    from encoder.data.paraphrase import fetch_wordnet, load_synonyms, paraphrase, split_synonyms

    pairs = load_synonyms(fetch_wordnet(cache_dir))
    train_map, test_map = split_synonyms(pairs, SYNONYM_SPLIT_SEED)
    return {
        "train": lambda tokens, rng: paraphrase(tokens, train_map, rng),
        "test": lambda tokens, rng: paraphrase(tokens, test_map, rng),
    }
