"""What a name's own words say it is: the shipped table, how a name reads it, how it is built,
and how it weighs a question's answers where the text says nothing."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import torch

from encoder.text import name_kinds
from encoder.text.name_kinds import PERSON_NOUNS, TABLE, NameKind, name_kind
from encoder.text.questions import AGENT, ORGANISATION, PERSON, PLACE
from encoder.text.support import entity_evidence, kind_weighted
from encoder.training import name_kinds as build
from encoder.training.data.restate import Roles
from encoder.training.name_kinds import Labels, precision_recall, train_classifier


def test_a_name_is_the_mean_of_its_words_and_an_unknown_word_is_neither() -> None:
    table = {"rodrigo": (0.9, 0.1), "garza": (0.7, 0.1), "rabat": (0.0, 1.0)}
    assert name_kind(["rodrigo", "garza"], table) == pytest.approx(NameKind(0.8, 0.1))
    assert name_kind(["rodrigo", "chemicals"], table) == pytest.approx(NameKind(0.45, 0.05))
    assert name_kind([], table) == NameKind() == name_kind(["zzq"], table)


def test_the_shipped_table_tells_people_from_places_it_never_saw_named() -> None:
    """Names of the hand-written stories' kind, none of them WordNet's: given names and
    surnames of several languages, towns and regions."""
    assert TABLE.is_file(), "cheapqa data name-kinds writes it; the service ships it"
    assert name_kinds.load() > 100_000  # what the service reads with its readers
    for person in (["beatriz", "olvera"], ["ravi", "sandhu"], ["katrin", "vogel"]):
        kind = name_kind(person)
        assert kind.person > 0.6 and kind.place < 0.3, (person, kind)
    for place in (["medellín"], ["nova", "scotia"], ["ostrava"], ["uttar", "pradesh"]):
        kind = name_kind(place)
        assert kind.place > 0.6 and kind.person < 0.3, (place, kind)
    for neither in (["mensa", "express"], ["blue", "gum", "racing"]):
        assert max(name_kind(neither)) < 0.2, neither


def test_a_who_question_prefers_a_name_that_reads_as_a_persons() -> None:
    """No cue in the text: the name's words decide, and a name whose own words say it is an
    organisation's or a place's ("Fjord Bank", "Tagus River") is not read by the table."""
    town, person = (
        entity_evidence(["plain ^|"], "Ostrava"),
        entity_evidence(["plain ^|"], "Katrin Vogel"),
    )
    assert town.name_place > 0.6 and person.name_person > 0.6
    bank = entity_evidence(["plain ^|"], "Vogel Bank")
    assert bank.name_person == bank.name_place == 0.0 and bank.organisation == 1.0
    for kind in (AGENT, PERSON):
        assert kind_weighted([0.7, 0.3], [town, person], kind)[1] > 0.5
    assert kind_weighted([0.3, 0.7], [town, person], PLACE)[0] > 0.5
    company = entity_evidence(["plain ^|"], "Mensa Express")
    assert kind_weighted([0.4, 0.6], [company, person], ORGANISATION)[0] > 0.5


def test_the_classifier_learns_two_kinds_from_vectors() -> None:
    generator = torch.Generator().manual_seed(1)
    centres = torch.tensor([[3.0, 0.0], [0.0, 3.0], [-3.0, -3.0]])
    labels = torch.arange(3).repeat_interleave(50)
    vectors = centres[labels] + torch.randn(150, 2, generator=generator)
    targets = torch.stack([labels == 0, labels == 1], 1).float()
    model = train_classifier(vectors, targets, steps=200)
    for precision, recall in precision_recall(model, vectors, targets):
        assert precision > 0.9 and recall > 0.9


def test_the_table_is_built_from_labelled_words_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cheapqa data name-kinds` end to end, on a made-up GloVe of six words."""
    words = ["anna", "marek", "lodz", "gdansk", "table", "express"]
    rng = np.random.default_rng(0)
    centres = {"anna": 0, "marek": 0, "lodz": 1, "gdansk": 1, "table": 2, "express": 2}
    matrix = np.stack([np.eye(3)[centres[w]] * 4 + rng.normal(0, 0.1, 3) for w in words])
    monkeypatch.setattr(build, "wordnet_labels", lambda folder: Labels(
        frozenset({"anna", "marek"}), frozenset({"lodz", "gdansk"}), frozenset({"table", "express"})
    ))  # fmt: skip
    monkeypatch.setattr(
        "encoder.training.embeddings.glove_files", lambda: (words, matrix.astype(np.float32))
    )
    out = build.build_table(tmp_path, tmp_path / "kinds.tsv.gz", log=lambda line: None)
    first = out.read_bytes()
    table = name_kinds._table.__wrapped__(out)
    assert table["anna"][0] > 0.5 > table["anna"][1]
    assert table["gdansk"][1] > 0.5 > table["gdansk"][0]
    assert "table" not in table or max(table["table"]) < 0.5
    # The same words give the same bytes: the table can be rebuilt and compared.
    assert build.build_table(tmp_path, out, log=lambda line: None).read_bytes() == first
    assert gzip.decompress(first).decode().count("\n") == len(table)


def test_wordnet_labels_are_the_words_of_named_people_and_places(tmp_path: Path) -> None:
    """A WordNet data file's instances (pointer @i) in noun.person (18) and noun.location
    (15): their words, less WordNet's plain words and words under three letters."""
    (tmp_path / "data.noun").write_text(
        "  1 This license header line starts with two spaces.\n"
        "00000001 18 n 01 Albert_Einstein 0 001 @i 00000009 n 0000 | a physicist\n"
        "00000002 15 n 02 Nuevo_Leon 0 San_Pedro_de_Lima 0 001 @i 00000008 n 0000 | a state\n"
        "00000003 06 n 01 table 0 000 | furniture\n"
        "00000004 18 n 01 physicist 0 001 @ 00000005 n 0000 | a scientist\n",
        encoding="latin-1",
    )
    (tmp_path / "data.verb").write_text(
        "00000001 30 v 02 new 0 san 0 000 00 | not a verb; plain all the same\n",
        encoding="latin-1",
    )
    labels = build.wordnet_labels(tmp_path)
    assert labels.person == {"albert", "einstein"}
    assert labels.place == {"nuevo", "leon", "pedro", "lima"}  # not "new", "san" or "de"
    assert {"table", "physicist", "new", "san"} <= labels.plain


def test_the_person_nouns_are_wordnets_and_shipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cheapqa data name-kinds` writes WordNet's nouns for a person beside the table (read_roles,
    encoder.training.data.restate); the entity finder reads the shipped list."""
    monkeypatch.setattr(
        build, "read_roles", lambda folder: Roles({}, frozenset({"forecaster", "dean", "senior"}))
    )
    # SemCor's counts: "senior" is an adjective more often than a noun, "dean" a noun.
    (tmp_path / "cntlist.rev").write_text(
        "senior%3:00:00:: 1 40\nsenior%1:18:00:: 1 3\ndean%1:18:00:: 1 5\n", encoding="latin-1"
    )
    out = build.write_person_nouns(tmp_path, tmp_path / "nouns.txt.gz", log=lambda line: None)
    first = out.read_bytes()
    assert name_kinds.person_nouns.__wrapped__(out) == name_kinds.PersonNouns(
        frozenset({"forecaster", "dean"}), frozenset({"senior"})
    )
    assert build.write_person_nouns(tmp_path, out, log=lambda line: None).read_bytes() == first
    assert name_kinds.person_nouns.__wrapped__(tmp_path / "none.txt.gz") == (
        name_kinds.PersonNouns()
    )
    shipped = name_kinds.person_nouns()
    assert PERSON_NOUNS.is_file() and len(shipped.nouns) > 5_000
    assert {"forecaster", "alderman", "cellist", "member"} <= shipped.nouns
    assert {"national", "senior", "general"} <= shipped.adjectives
    assert not {"north", "health", "near", "john"} & (shipped.nouns | shipped.adjectives)
