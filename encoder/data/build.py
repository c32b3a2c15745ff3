"""`cheapqa data build`: the entity-cloze data set from the Austen novels (and the Wikipedia
sample when gensim is there), split by novel so that no text is shared between the splits.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from encoder.data.cloze import ClozeOptions, build_questions
from encoder.data.questions import Question, baselines, write_questions
from encoder.data.sources import Text, wiki_articles
from encoder.text import find_candidates

SPLITS: dict[str, tuple[str, ...]] = {
    "train": ("emma", "mansfieldpark", "prideprejudice", "sensesensibility"),
    "validation": ("northangerabbey",),
    "test": ("persuasion",),
}
MIN_NAME_COUNT = 3  # a name must recur to be an entity: fewer one-off capitalised words


def questions_of(text: Text, options: ClozeOptions, seed: int) -> list[Question]:
    candidates = find_candidates(" ".join(text.paragraphs), min_count=MIN_NAME_COUNT)
    return build_questions(text, candidates, options, seed)


def build_dataset(
    out_dir: Path,
    novels: dict[str, Text],
    options: ClozeOptions,
    seed: int,
    wiki_sample: Path | None = None,
) -> dict[str, Any]:
    """Write <split>.jsonl files and meta.json into out_dir; return the summary (meta)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    splits: dict[str, list[Question]] = {
        split: [q for name in names for q in questions_of(novels[name], options, seed)]
        for split, names in SPLITS.items()
    }
    sources = {split: list(names) for split, names in SPLITS.items()}
    if wiki_sample is not None:
        # A second domain, for testing only: does a reader trained on novels read encyclopedias?
        articles = list(wiki_articles(wiki_sample))
        splits["wiki_test"] = [q for a in articles for q in questions_of(a, options, seed)]
        sources["wiki_test"] = [f"{wiki_sample.name} ({len(articles)} articles)"]
    summary: dict[str, Any] = {
        "task": "entity cloze on real text (see docs/DATA.md)",
        "seed": seed,
        "options": asdict(options),
        "sources": sources,
        "splits": {},
    }
    for split, questions in splits.items():
        write_questions(out_dir / f"{split}.jsonl", questions)
        b = baselines(questions)
        summary["splits"][split] = {
            "questions": b.count,
            "windows": len({q.id.rsplit("-", 2)[0] for q in questions}),
            "mean_document_tokens": round(
                sum(len(q.document.split()) for q in questions) / max(1, b.count), 1
            ),
            "mean_candidates": round(
                sum(len(q.candidates) for q in questions) / max(1, b.count), 2
            ),
            "baselines": {k: round(v, 4) for k, v in asdict(b).items() if k != "count"},
        }
    (out_dir / "meta.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
