"""The table of what a name's words say it is (`encoder.text.name_kinds`), learnt from GloVe.

WordNet lists some thousands of people and places by name as *instances* ("Albert Einstein"
is an instance of a physicist, in its lexicographer file noun.person; "Rabat" of a city, in
noun.location). Their words are the labels: a person's words ("albert", "einstein"), a
place's ("rabat", "andalusia"), and every plain word of WordNet ("chemicals", "express") for
neither. A small network on each word's GloVe 6B 50-d vector learns the two, and it is then
asked of every word GloVe knows, so that names WordNet never lists ("Beatriz Olvera",
"Gliwice") are told by their vectors' company: given names and surnames of many languages
stand together in GloVe, as towns and regions do.

    cheapqa data name-kinds        # writes encoder/checkpoints/name_kinds.tsv.gz (~1 MB)
                                   # and person_nouns.txt.gz beside it (~30 KB)

The person nouns are WordNet's nouns whose commonest senses are in noun.person ("dean",
"forecaster", `encoder.training.data.restate.read_roles`), those SemCor tags more often
as adjectives or adverbs marked ("general", "senior"): no network, the list as it is.

It needs the `data` extra (GloVe) and fetches WordNet as the data builder does. It prints the
network's precision and recall on a tenth of the labelled words held out.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from encoder.text.name_kinds import PERSON_NOUNS, TABLE
from encoder.training.data.paraphrase import (
    commonest_pos,
    synset_pointers,
    synset_words,
    wordnet_rows,
)
from encoder.training.data.restate import read_roles

# WordNet's lexicographer files whose instances are named people and places.
_PERSON_FILES = frozenset({"18"})  # noun.person
_PLACE_FILES = frozenset({"15", "17"})  # noun.location, noun.object (rivers, mountains)
_POS = ("noun", "verb", "adj", "adv")
MIN_KEPT = 0.1  # a word whose both probabilities are below this is left out (reads as 0)
HIDDEN = 64
STEPS = 300
SEED = 0


@dataclass(frozen=True)
class Labels:
    person: frozenset[str]  # the words of WordNet's named people
    place: frozenset[str]  # the words of its named places
    plain: frozenset[str]  # its plain lower-case words: neither


def _name_words(lemmas: Iterable[str], plain: frozenset[str]) -> frozenset[str]:
    """ "Albert_Einstein", "Nuevo_Leon" -> their words, less WordNet's plain words ("new",
    "river") and words under three letters ("de", "al")."""
    out = set()
    for lemma in lemmas:
        for word in re.split(r"[_\-]", lemma.lower()):
            if word.isalpha() and len(word) >= 3 and word not in plain:
                out.add(word)
    return frozenset(out)


def wordnet_labels(wordnet_dir: Path) -> Labels:
    """The labelled words of a WordNet 3.0 database folder."""
    plain: set[str] = set()
    people: list[str] = []
    places: list[str] = []
    for pos in _POS:
        for f in wordnet_rows(wordnet_dir / f"data.{pos}"):
            words = synset_words(f)
            if pos == "noun" and any(symbol == "@i" for symbol, *_ in synset_pointers(f)):
                if f[1] in _PERSON_FILES:
                    people.extend(words)
                elif f[1] in _PLACE_FILES:
                    places.extend(words)
            else:
                plain.update(w for w in words if w.isalpha() and w.islower())
    frozen = frozenset(plain)
    return Labels(_name_words(people, frozen), _name_words(places, frozen), frozen)


def train_classifier(
    vectors: torch.Tensor, targets: torch.Tensor, steps: int = STEPS, seed: int = SEED
) -> nn.Module:
    """A 50-64-2 network, full-batch Adam on binary cross-entropy: (person, place) logits."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(vectors.shape[1], HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-5)
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.binary_cross_entropy_with_logits(model(vectors), targets)
        loss.backward()
        opt.step()
    return model.eval()


def precision_recall(
    model: nn.Module, vectors: torch.Tensor, targets: torch.Tensor
) -> list[tuple[float, float]]:
    """(precision, recall) of each output at 0.5."""
    with torch.no_grad():
        said = torch.sigmoid(model(vectors)) > 0.5
    truth = targets > 0.5
    out = []
    for j in range(targets.shape[1]):
        hit = (said[:, j] & truth[:, j]).sum().item()
        out.append((hit / max(1, said[:, j].sum().item()), hit / max(1, truth[:, j].sum().item())))
    return out


def build_table(wordnet_dir: Path, out: Path = TABLE, log: Callable[[str], None] = print) -> Path:
    """Train on WordNet's labelled words (a tenth held out to report), then write each GloVe
    word's (person, place) probabilities in percent, where either reaches MIN_KEPT."""
    from encoder.training.embeddings import glove_files

    labels = wordnet_labels(wordnet_dir)
    index, matrix = glove_files()
    row = {w: i for i, w in enumerate(index)}
    words = sorted(w for w in labels.person | labels.place | labels.plain if w in row)
    vectors = torch.from_numpy(np.asarray(matrix[[row[w] for w in words]], np.float32))
    targets = torch.tensor(
        [[w in labels.person, w in labels.place] for w in words], dtype=torch.float32
    )
    order = torch.randperm(len(words), generator=torch.Generator().manual_seed(SEED))
    held, kept = order[: len(words) // 10], order[len(words) // 10 :]
    log(
        f"{len(words)} labelled words GloVe knows: {int(targets[:, 0].sum())} people's, "
        f"{int(targets[:, 1].sum())} places'"
    )
    model = train_classifier(vectors[kept], targets[kept])
    scores = precision_recall(model, vectors[held], targets[held])
    for kind, (p, r) in zip(("person", "place"), scores, strict=True):
        log(f"held-out {kind}: precision {p:.3f}, recall {r:.3f}")
    model = train_classifier(vectors, targets)  # the table's: every labelled word
    names = [w for w in index if w.isalpha()]
    lines = []
    with torch.no_grad():
        for start in range(0, len(names), 50_000):
            chunk = names[start : start + 50_000]
            x = torch.from_numpy(np.asarray(matrix[[row[w] for w in chunk]], np.float32))
            probs = torch.sigmoid(model(x)).tolist()
            lines += [
                f"{w}\t{round(100 * a)}\t{round(100 * b)}"
                for w, (a, b) in zip(chunk, probs, strict=True)
                if max(a, b) >= MIN_KEPT
            ]
    _write(out, lines)
    log(f"wrote {len(lines)} words to {out}")
    return out


def write_person_nouns(
    wordnet_dir: Path, out: Path = PERSON_NOUNS, log: Callable[[str], None] = print
) -> Path:
    """WordNet's nouns for a person, one a line, sorted; "<word>\tadjective" for those SemCor
    tags more often as an adjective or an adverb than as a noun ("general", "senior", which
    open "General Electric Co" and "Senior Engineering Group" as much as a person's name)."""
    commonest = commonest_pos(wordnet_dir / "cntlist.rev")
    lines = []
    for word in sorted(read_roles(wordnet_dir).people):
        kinds = commonest.get(word, {"noun"})
        noun = "noun" in kinds or not kinds & {"adj", "adv"}
        lines.append(word if noun else f"{word}\tadjective")
    _write(out, lines)
    log(f"wrote {len(lines)} person nouns to {out}")
    return out


def _write(out: Path, lines: list[str]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    # mtime 0: the same words give the same bytes
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(("\n".join(lines) + "\n").encode())
    tmp.replace(out)
