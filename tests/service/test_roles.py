"""Which of a sentence's names plays the part a question asks about (encoder.text.roles): the
mentions' vectors kept when a document is indexed or appended, the asking word's vector of a
question, the fitted head, and the fitter."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from bench.realistic.stories import Asked, Story
from encoder.text.meaning import (
    DIM,
    MAX_SENTENCES,
    asking_span,
    embed,
    embed_questions,
    embed_spans,
    mention_places,
    pack,
    unpack,
)
from encoder.text.ranking import Weights
from encoder.text.roles import (
    MAX_MENTIONS,
    MENTIONS_PER_ENTITY,
    SHIPPED,
    RoleHead,
    read,
    shipped,
)
from service.settings import Settings
from store.record import DocumentRecord, Status, meta_from_json, meta_to_json
from tests.service.conftest import AppClient, SettingsFactory, wait_status
from tests.service.test_meaning import STORY
from tests.service.test_ranking import TEXT


def test_the_asking_word_is_found_where_it_stands() -> None:
    assert asking_span("Who rejected the offer?") == (0, 3)
    question = "In which city did Halden open an office?"
    start, end = asking_span(question)
    assert question[start:end] == "which"
    # No asking word: the whole question asks.
    assert asking_span("Name the conductor.") == (0, len("Name the conductor."))


def test_a_span_is_read_in_its_sentence() -> None:
    texts = ["Kari Lund conducted the orchestra.", "The orchestra hired Kari Lund."]
    vectors, parts = embed_spans(texts, [[(0, 9)], [(20, 29), (4, 13)]])
    assert np.allclose(vectors, embed(texts), atol=1e-5)  # one run gives both
    assert [p.shape for p in parts] == [(1, DIM), (2, DIM)]
    assert np.allclose(np.linalg.norm(parts[1], axis=1), 1.0, atol=1e-4)
    # The same name reads otherwise in another sentence, and unlike another word.
    same = float(parts[0][0] @ parts[1][0])
    assert 0.5 < same < 0.999 and float(parts[1][0] @ parts[1][1]) < same
    # A span past the model's 256 tokens reads as nothing.
    long = "word " * 400 + "Kari Lund."
    _, far = embed_spans([long], [[(len(long) - 10, len(long) - 1)]])
    assert not far[0].any()


def test_the_asking_word_of_a_question_is_kept_with_its_vector() -> None:
    vectors, asking = embed_questions(["Who led the musicians?", "Which bank lent the money?"])
    _, parts = embed_spans(["Which bank lent the money?"], [[(0, 5)]])
    assert vectors.shape == asking.shape == (2, DIM)
    assert np.allclose(asking[1], parts[0][0], atol=1e-5)


def test_each_entity_keeps_its_first_mentions_in_kept_sentences() -> None:
    kept = [(0, 20), (30, 400)]  # the sentence at 20-30 is not kept
    spans = [[2, 6, 22, 26, 31, 35], list(range(0, 40 * MENTIONS_PER_ENTITY, 4)), [21, 25]]
    places = mention_places(spans, kept, MENTIONS_PER_ENTITY, at_most=100)
    assert places[0] == [(0, 2, 6), (1, 1, 5)]  # 22-26 lies in no kept sentence
    assert len(places[1]) == MENTIONS_PER_ENTITY and places[2] == []
    # At most `at_most` in all, the first entities' first.
    assert [len(p) for p in mention_places(spans, kept, MENTIONS_PER_ENTITY, at_most=3)] == [
        2, 1, 0,
    ]  # fmt: skip


def test_the_head_scores_each_entity_by_its_best_mention(tmp_path: Path) -> None:
    U = np.zeros((DIM, 2), np.float32)
    V = np.zeros((DIM, 2), np.float32)
    U[0, 0] = V[1, 0] = 2.0
    head = RoleHead(0.5, U, V)
    asking = np.eye(1, DIM, 0, dtype=np.float32)[0]
    mentions = np.stack([np.eye(1, DIM, k, dtype=np.float32)[0] for k in (0, 1, 2)])
    # mention 0: cosine 1 -> 0.5; mention 1: (U'a)(V'm) = 2 * 2 -> 4; the best counts.
    assert head.scores(asking, mentions, [[0], [0, 1], [2], []]) == [0.5, 4.0, 0.0, 0.0]
    path = tmp_path / "roles.json"
    path.write_text(json.dumps(head.to_json()), encoding="utf-8")
    back = read(path)
    assert back is not None and back.scores(asking, mentions, [[1]]) == [4.0]
    assert read(tmp_path / "none.json") is None


def test_a_head_is_shipped_beside_the_checkpoints() -> None:
    head = shipped()
    assert SHIPPED.is_file() and head is not None
    assert head.asking.shape == head.named.shape and head.asking.shape[0] == DIM


def test_a_format_5_record_keeps_its_mentions() -> None:
    head = RoleHead(1.0, np.zeros((DIM, 1), np.float32), np.zeros((DIM, 1), np.float32))
    record = DocumentRecord(
        "d", "h", Status.INDEXED, tokens=3, entities=["Anna", "Tom", "Bo"], named=[[0], [1]],
        mention_vectors=pack(np.eye(2, DIM, dtype=np.float32)),
    )  # fmt: skip
    back = meta_from_json(meta_to_json(record, {}, 1.0))
    assert (back.named, back.mention_vectors) == (record.named, record.mention_vectors)
    assert back.roles(np.eye(1, DIM, 1, dtype=np.float32)[0], head) == [0.0, 1.0, 0.0]
    assert back.roles(np.zeros(DIM), None) is None  # no head: unknown
    copy = dataclasses.replace(back, mention_vectors=pack(np.eye(2, DIM, 1, dtype=np.float32)))
    assert copy.roles(np.eye(1, DIM, 1, dtype=np.float32)[0], head) == [1.0, 0.0, 0.0]
    older = meta_from_json(meta_to_json(DocumentRecord("d", "h", Status.INDEXED), {}, 1.0))
    assert (older.named, older.mention_vectors, older.roles(np.zeros(DIM), head)) == (
        [], "", None
    )  # fmt: skip


async def test_indexing_and_appending_keep_each_entitys_mentions(app_client: AppClient) -> None:
    async with app_client(modes=["linear"]) as client:
        await client.post("/v1/documents", json={"id": "d", "text": STORY})
        await wait_status(client, "d", "indexed")
        store = client.app.state.indexing.store  # type: ignore[attr-defined]
        record = await store.get("d", modes=())
        vectors = unpack(record.mention_vectors)
        lund = record.entities.index("Kari Lund")
        assert len(record.named[lund]) == 2 and len(vectors) == sum(map(len, record.named))
        # Kari Lund's last mention, read in its sentence.
        sentence = "Kari Lund once studied in Bergen."
        _, parts = embed_spans([sentence], [[(0, 9)]])
        assert np.allclose(vectors[record.named[lund][1]], parts[0][0], atol=0.01)

        more = " Maja Berg joined Kari Lund in Bergen."
        response = await client.post("/v1/documents/d/text", json={"text": more})
        assert response.status_code == 200, response.text
        after = await store.get("d", modes=())
        # Three mentions more (Maja Berg, Kari Lund, Bergen), after the old ones.
        assert len(unpack(after.mention_vectors)) == len(vectors) + 3
        assert after.named[lund][:2] == record.named[lund] and after.named[lund][2] >= len(vectors)
        assert len(after.named[after.entities.index("Maja Berg")]) == 1
        assert np.array_equal(unpack(after.mention_vectors)[: len(vectors)], vectors)

    async with app_client(modes=["linear"], meaning=False) as client:
        await client.post("/v1/documents", json={"id": "d", "text": STORY})
        await wait_status(client, "d", "indexed")
        store = client.app.state.indexing.store  # type: ignore[attr-defined]
        record = await store.get("d", modes=())
        assert (record.named, record.mention_vectors) == ([], "")


def test_the_role_fitter_fits_and_scores_by_folds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.realistic.roles import add_arguments, fit_roles

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        ["--sets", "dev,test", "--folds", "2", "--out", str(tmp_path / "roles.json")]
    )
    assert fit_roles(args, Settings()) == 0
    printed = capsys.readouterr().out
    assert "| with role(e) |" in printed and "| without role(e) |" in printed
    head = read(tmp_path / "roles.json")
    assert head is not None and head.asking.shape[0] == DIM


def test_the_role_fitter_refuses_a_set_kept_unscored() -> None:
    from bench.realistic.roles import add_arguments, fit_roles
    from bench.realistic.stories import FROZEN

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert FROZEN[0] not in parser.parse_args([]).sets
    assert fit_roles(parser.parse_args(["--sets", f"dev,{FROZEN[0]}"]), Settings()) == 2


def test_a_question_in_words_reads_each_candidates_role(make_settings: SettingsFactory) -> None:
    from bench.realistic.fit import collect

    story = Story(
        "deal", TEXT, {}, [Asked("q1", "Who signed the deal for Nordvik Shipping?", "Kari Lund")]
    )
    found, _ = collect({"one": [story]}, make_settings(meaning=True), ["linear"])
    (question,) = found["linear"]
    assert question.asking is not None and len(question.named) == len(question.rows)
    # Each candidate its own role(e), from the shipped head, in the features it is ranked by.
    roles = [row[Weights._fields.index("role")] for row in question.rows]
    assert all(len(v) for v in question.named) and len(set(roles)) == len(roles)


def test_appending_to_a_full_record_embeds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from service import support

    def never(*args: object) -> object:
        raise AssertionError("the appended text was embedded")

    full = DocumentRecord(
        "d", "h", Status.INDEXED, entities=["Anna"], chars=10, sentences=[[0]],
        sentence_vectors=pack(np.zeros((MAX_SENTENCES, DIM), np.float32)), named=[[0]],
        mention_vectors=pack(np.zeros((MAX_MENTIONS, DIM), np.float32)),
    )  # fmt: skip
    monkeypatch.setattr(support, "where_meant", never)
    meant = support.appended_where_meant(full, " Tom came.", [[], [11, 14]])
    assert meant.sentences == meant.named == [[0], []]  # Tom's: none kept
    assert meant.sentence_vectors == full.sentence_vectors
    assert meant.mention_vectors == full.mention_vectors
    # Room for one mention more: the text is read.
    roomy = dataclasses.replace(
        full, mention_vectors=pack(np.zeros((MAX_MENTIONS - 1, DIM), np.float32))
    )
    with pytest.raises(AssertionError, match="embedded"):
        support.appended_where_meant(roomy, " Tom came.", [[], [11, 14]])
