"""Paraphrased questions: WordNet parsing (on a tiny fake database), inflection, the held-out
split of synonym pairs, and the paraphrase itself."""

from __future__ import annotations

import random
import shutil
from collections import Counter
from pathlib import Path

import pytest

from encoder.text.tokens import PLACEHOLDER
from encoder.training.data.paraphrase import (
    ParaphraseOptions,
    fetch_wordnet,
    load_synonyms,
    overlap,
    paraphrase,
    split_synonyms,
)
from encoder.training.data.sources import SourceError

HEADER = "  1 This software and database is being provided to you, the LICENSEE, by  \n"
# The real formats (wndb(5WN)): data lines give offset, lexfile, type, hex word count, then
# word/lex_id pairs; index lines give lemma, pos, synset count, pointer count, pointers, sense
# counts, then the synset offsets in sense order.
FAKE = {
    "data.noun": [
        "00000001 05 n 03 dog 0 hound 0 Canis_familiaris 0 000 | a domestic animal",
        "00000002 06 n 02 house 0 home 0 000 | a dwelling",
        "00000003 18 n 02 dog 0 cad 0 000 | a bad man",
        "00000004 15 n 02 Paris 0 Lutetia 0 000 | a city",
        "00000005 06 n 02 letter 0 missive 0 000 | a written message",
    ],
    "index.noun": [
        "cad n 1 0 1 0 00000003",
        "dog n 2 1 @ 2 1 00000001 00000003",
        "home n 1 0 1 0 00000002",
        "hound n 1 0 1 0 00000001",
        "house n 1 0 1 0 00000002",
        "letter n 1 0 1 0 00000005",
        "missive n 1 0 1 0 00000005",
        "paris n 1 0 1 0 00000004",
    ],
    "data.verb": [
        "00000011 38 v 02 walk 0 stroll 0 000 | go on foot",
        "00000012 38 v 02 run 0 sprint 0 000 | go fast",
        "00000013 38 v 02 stop 0 halt 0 000 | come to a halt",
        "00000014 38 v 02 sing 0 chant 0 000 | make music",
    ],
    "index.verb": [
        "chant v 1 0 1 0 00000014",
        "halt v 1 0 1 0 00000013",
        "run v 1 0 1 0 00000012",
        "sing v 1 0 1 0 00000014",
        "sprint v 1 0 1 0 00000012",
        "stop v 1 0 1 0 00000013",
        "stroll v 1 0 1 0 00000011",
        "walk v 1 0 1 0 00000011",
    ],
    "data.adj": ["00000021 00 a 02 happy(a) 0 glad 0 000 | feeling joy"],
    "index.adj": ["glad a 1 0 1 0 00000021", "happy a 1 0 1 0 00000021"],
    "data.adv": [],
    "index.adv": [],
    "verb.exc": [
        "ran run",
        "running run",
        "sang sing",
        "sung sing",
        "stopped stop",
        "stopping stop",
    ],
    "noun.exc": [],
}


@pytest.fixture
def wordnet(tmp_path: Path) -> Path:
    for name, lines in FAKE.items():
        (tmp_path / name).write_text(HEADER + "".join(line + "  \n" for line in lines))
    return tmp_path


def test_load_synonyms_first_sense_lower_case_single_words(wordnet: Path) -> None:
    syn = load_synonyms(wordnet, glove_min_cosine=None)
    assert syn["dog"] == ("hound",)  # not the second sense's "cad", not the Latin name
    assert syn["house"] == ("home",)
    assert syn["happy"] == ("glad",)  # adjective markers like "(a)" are stripped
    assert "paris" not in syn and "lutetia" not in syn  # names (capitalised in data.*)
    assert set(load_synonyms(wordnet, senses=2, glove_min_cosine=None)["dog"]) == {"hound", "cad"}


def test_inflection_of_regular_and_irregular_verbs(wordnet: Path) -> None:
    syn = load_synonyms(wordnet, glove_min_cosine=None)
    assert syn["walked"] == ("strolled",)
    assert syn["strolled"] == ("walked",)
    assert syn["walking"] == ("strolling",)
    assert syn["strolls"] == ("walks",)
    assert syn["dogs"] == ("hounds",)
    assert syn["ran"] == ("sprinted",)  # through verb.exc
    assert syn["sprinted"] == ("ran",)
    assert syn["halted"] == ("stopped",)  # the doubled form comes from verb.exc
    assert syn["halting"] == ("stopping",)
    assert "runned" not in syn and "stoped" not in syn.values()
    assert "chanted" not in syn  # "sang" or "sung"? unsure, so skipped
    assert syn.bases["strolled"] == "stroll" and syn.bases["walked"] == "walk"


def test_split_is_disjoint_symmetric_and_keeps_inflections_together(wordnet: Path) -> None:
    words = [f"w{i}" for i in range(40)]
    synonyms = {w: tuple(v for v in words if v != w) for w in words}
    train, test = split_synonyms(synonyms, seed=3, held_out=0.3)
    pairs = {(a, b) for a, bs in synonyms.items() for b in bs}
    train_pairs = {(a, b) for a, bs in train.items() for b in bs}
    test_pairs = {(a, b) for a, bs in test.items() for b in bs}
    assert train_pairs | test_pairs == pairs and not train_pairs & test_pairs
    assert all((b, a) in test_pairs for a, b in test_pairs)
    assert 0.15 < len(test_pairs) / len(pairs) < 0.45
    assert split_synonyms(synonyms, seed=3, held_out=0.3) == (train, test)
    assert split_synonyms(synonyms, seed=4, held_out=0.3)[1] != test

    syn = load_synonyms(wordnet, glove_min_cosine=None)
    for seed in range(20):
        train, test = split_synonyms(syn, seed)
        side = "walk" in test
        assert ("walked" in test) == side and ("strolling" in test) == side


def words(text: str) -> list[str]:
    return text.split()


SENTENCE = words(
    "@entity1 walked to the house with her dog , and @placeholder ran home "
    "to read the letter , said @entity2 ."
)
SYNONYMS = {
    "walked": ("strolled", "ambled"),
    "house": ("home", "dwelling"),
    "dog": ("hound",),
    "ran": ("sprinted",),
    "home": ("house",),
    "letter": ("missive", "note"),
    "read": ("peruse",),
}


def test_markers_kept_and_one_placeholder() -> None:
    rng = random.Random(0)
    options = ParaphraseOptions(drop_near_blank_prob=1.0, reorder_prob=0.5)
    for _ in range(200):
        out = paraphrase(SENTENCE, SYNONYMS, rng, options)
        assert out.count(PLACEHOLDER) == 1
        assert [t for t in out if t.startswith("@")] in (
            ["@entity1", PLACEHOLDER, "@entity2"],
            [PLACEHOLDER, "@entity2", "@entity1"],  # clauses swapped
        )
    with pytest.raises(ValueError):
        paraphrase(["no", "blank"], SYNONYMS, rng)


def test_deterministic_for_a_seed() -> None:
    runs = [[paraphrase(SENTENCE, SYNONYMS, random.Random(s)) for s in range(20)] for _ in "ab"]
    assert runs[0] == runs[1]
    assert len({tuple(p) for p in runs[0]}) > 5


def test_replaces_words_with_sampled_synonyms() -> None:
    options = ParaphraseOptions(
        replace_prob=1.0, drop_near_blank_prob=0.0, drop_adjacent_prob=0.0, reorder_prob=0.0
    )
    seen: set[str] = set()
    for s in range(30):
        out = paraphrase(SENTENCE, SYNONYMS, random.Random(s), options)
        assert len(out) == len(SENTENCE)
        for old, new in zip(SENTENCE, out, strict=True):
            if old in SYNONYMS:
                assert new in SYNONYMS[old]
        seen.add(out[1])
        assert out[-3] in options.speech_verbs
    assert seen == {"strolled", "ambled"}  # sampled per occurrence, not always the first
    assert overlap(SENTENCE, out) < 0.7


def test_reorder_keeps_tokens_minus_drops() -> None:
    options = ParaphraseOptions(
        replace_prob=0.0, speech_verb_prob=0.0, reorder_prob=1.0, drop_adjacent_prob=0.0
    )
    tokens = words("when the rain stopped at last , @entity0 saw @placeholder in the garden .")
    swapped = 0
    for s in range(50):
        out = paraphrase(tokens, {}, random.Random(s), options)
        assert not Counter(out) - Counter(tokens)  # nothing added
        assert out[-1] == "." and out[0] != PLACEHOLDER
        swapped += out[0] == "@entity0"
    assert swapped >= 40  # drops near the blank may leave a clause too short to move
    still = ParaphraseOptions(
        drop_near_blank_prob=0.0, drop_adjacent_prob=0.0, replace_prob=0.0, reorder_prob=1.0
    )
    out = paraphrase(tokens, {}, random.Random(0), still)
    assert Counter(out) == Counter(tokens) and out != tokens
    assert overlap(tokens, out) == 1.0


def test_real_wordnet(tmp_path: Path) -> None:
    """Fetches Debian's wordnet-base (needs apt sources); skipped where that cannot be done."""
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        pytest.skip("no apt-get/dpkg-deb here")
    try:
        folder = fetch_wordnet(tmp_path)
    except (SourceError, OSError) as e:
        pytest.skip(f"wordnet-base could not be fetched: {e}")
    assert (folder / "data.noun").is_file() and (folder / "verb.exc").is_file()
    assert fetch_wordnet(tmp_path) == folder  # cached
