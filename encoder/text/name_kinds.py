"""What a name's own words say it is: a person's or a place's, before the text says anything.

`encoder.text.kinds` reads what news says around a name ("analyst Orla Keane", "in Ghent");
a story often names a person or a town with no such cue ("Rodrigo Garza said ...", "Nuevo
León"). Their words still tell: "rodrigo" is a given name, "garza" a surname, "león" a town,
and GloVe's word vectors put such words beside their kind. `name_kind` reads a table of every
GloVe word's probability of being a person's or a place's name word, learnt from the people
and places WordNet names (`encoder.training.name_kinds`, `cheapqa data name-kinds`), and gives
a name the mean over its words; a word the table lacks (unknown to GloVe, or a plain word
such as "chemicals" or "express") counts 0 for both, so "Odra Chemicals" is neither.

The table is `encoder/checkpoints/name_kinds.tsv.gz` (word, person %, place %); without it
every name is neither, and the service ranks by the text's cues alone.

Beside it, `person_nouns` lists the plain words that say what a person is ("forecaster",
"alderman", "cellist": WordNet's nouns for a person), for the entity finder: a sentence that
opens "Forecaster Elena Vlad said" names Elena Vlad, not "Forecaster Elena Vlad". Without
the list (`encoder/checkpoints/person_nouns.txt.gz`) the finder keeps such openers.
"""

from __future__ import annotations

import functools
import gzip
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

TABLE = Path(__file__).resolve().parent.parent / "checkpoints" / "name_kinds.tsv.gz"
PERSON_NOUNS = TABLE.with_name("person_nouns.txt.gz")


class NameKind(NamedTuple):
    person: float = 0.0  # 0..1: how much the name's words look like a person's
    place: float = 0.0  # 0..1: ... like a place's


@functools.cache
def _table(path: Path = TABLE) -> dict[str, tuple[float, float]]:
    if not path.is_file():
        return {}
    out = {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            word, person, place = line.rstrip("\n").split("\t")
            out[word] = (int(person) / 100, int(place) / 100)
    return out


class PersonNouns(NamedTuple):
    """The lower-case nouns for a person, by what they are most often."""

    nouns: frozenset[str] = frozenset()  # a noun ("forecaster", "member", "sponsor")
    adjectives: frozenset[str] = frozenset()  # an adjective or adverb ("general", "senior")


@functools.cache
def person_nouns(path: Path = PERSON_NOUNS) -> PersonNouns:
    """The nouns for a person (one a line; "<word>\tadjective" for one most often an
    adjective or adverb); none without the list."""
    if not path.is_file():
        return PersonNouns()
    nouns: set[str] = set()
    adjectives: set[str] = set()
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            word, _, tag = line.strip().partition("\t")
            if word:
                (adjectives if tag else nouns).add(word)
    return PersonNouns(frozenset(nouns), frozenset(adjectives))


def load() -> int:
    """Read the table and the person nouns now (about 0.2 s; the service does it with its
    readers, before it is ready), not on the first question or document that needs them:
    how many words the table holds."""
    person_nouns()
    return len(_table())


def name_kind(
    words: Sequence[str], table: dict[str, tuple[float, float]] | None = None
) -> NameKind:
    """A name's lower-cased words -> the mean of their (person, place) probabilities."""
    if not words:
        return NameKind()
    found = table if table is not None else _table()
    rows = [found.get(w, (0.0, 0.0)) for w in words]
    return NameKind(sum(r[0] for r in rows) / len(rows), sum(r[1] for r in rows) / len(rows))
