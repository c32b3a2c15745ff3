"""`cheapqa evaluate` prepares a user's plain-text question exactly as the answers route does."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from encoder.model.checkpoint import load_checkpoint, save_checkpoint
from encoder.text.anonymise import anonymise_document
from encoder.text.tokens import entity_index
from encoder.training.batches import encode_questions
from encoder.training.evaluate import evaluate, read_any_questions
from tests.service.conftest import AppClient, wait_status
from tests.service.helpers import build_checkpoints
from tests.service.texts import HARBOUR

# A whole sentence, longer than the reader's question window on both sides of the blank.
QUESTION = "When the sky turned grey the captain @placeholder said that Gull Rock would be hard."


async def test_evaluate_scores_equal_the_answers_route(
    app_client: AppClient, tmp_path: Path
) -> None:
    # A reader trained on questions cut to 3 words before and 2 after the blank.
    checkpoints = build_checkpoints(tmp_path / "ckpt")
    path = checkpoints / "linear.pt"
    ckpt = load_checkpoint(path)
    window = {"query_tokens_before": 3, "query_tokens_after": 2}
    save_checkpoint(path, ckpt.model, ckpt.vocab, {"data": {"options": window}})
    ckpt = load_checkpoint(path)
    assert ckpt.query_window == (3, 2)

    async with app_client(modes=["linear"], checkpoint_dir=checkpoints) as client:
        response = await client.post("/v1/documents", json={"id": "h", "text": HARBOUR})
        assert response.status_code == 202, response.text
        await wait_status(client, "h", "indexed")
        response = await client.post(
            "/v1/documents/h/answers", json={"queries": [QUESTION], "top_k": 20}
        )
        assert response.status_code == 200, response.text
        answers = response.json()["results"][0]["answers"]
        route = {a["entity"]: a["reader_score"] for a in answers}

    data = tmp_path / "mine.jsonl"
    line = {"id": "q", "document": HARBOUR, "query": QUESTION, "answer": "Halvard"}
    data.write_text(json.dumps(line) + "\n")
    questions, not_entities = read_any_questions(data, ckpt)
    assert not_entities == 0 and len(questions) == 1
    assert len(questions[0].query.split()) == 3 + 1 + 2  # cut to the window, as served
    encoded = encode_questions(questions, ckpt.vocab)
    with torch.no_grad():
        scores = ckpt.model(
            encoded.docs[0].unsqueeze(0),
            torch.tensor([len(encoded.docs[0])]),
            encoded.queries[0].unsqueeze(0),
            torch.tensor([len(encoded.queries[0])]),
            encoded.candidates,
        )
    # The candidates are the document's entities less Gull Rock, which the question names.
    names = anonymise_document(HARBOUR, max_entities=ckpt.model.config.max_entities).entities
    slots = [entity_index(c) for c in questions[0].candidates]
    assert [names[s] for s in slots if s is not None] == [n for n in names if n != "Gull Rock"]
    probs = torch.softmax(scores[0, slots], dim=0).tolist()
    assert set(route) == set(names) - {"Gull Rock"}
    for slot, p in zip(slots, probs, strict=True):
        assert slot is not None and abs(route[names[slot]] - p) < 1e-4, (slot, route, p)

    result = evaluate(path, data)
    best = max(route, key=lambda name: route[name])
    assert result.accuracy == (1.0 if best == "Halvard" else 0.0)


def test_a_data_set_question_is_numbered_as_the_service_numbers_names(tmp_path: Path) -> None:
    # The data builder numbers a window's names in a random order; the service numbers them
    # in order of first mention. evaluate reads a built question as the service would see it.
    checkpoints = build_checkpoints(tmp_path / "ckpt")
    ckpt = load_checkpoint(checkpoints / "linear.pt")
    served = anonymise_document(HARBOUR, max_entities=ckpt.model.config.max_entities)
    n = len(served.entities)
    assert n >= 3
    shuffled = {f"@entity{i}": f"@entity{(i * 5 + 2) % n}" for i in range(n)}  # a permutation
    assert len(set(shuffled.values())) == n and shuffled["@entity0"] != "@entity0"

    def built(text: str) -> str:
        return " ".join(shuffled.get(t, t) for t in text.split())

    line = {
        "id": "q",
        "document": built(" ".join(served.tokens)),
        "query": "the captain @placeholder said that @entity1 would be hard .",
        "answer": shuffled["@entity0"],
        "candidates": sorted(shuffled.values(), key=lambda m: int(m[7:])),
    }
    data = tmp_path / "built.jsonl"
    data.write_text(json.dumps(line) + "\n")
    [question], not_entities = read_any_questions(data, ckpt)
    assert not_entities == 0
    assert question.document == " ".join(served.tokens)  # the service's numbering, back again
    assert question.answer == "@entity0"
    # Every entity but the one the question names, as the service answers it.
    named = [t for t in question.query.split() if entity_index(t) is not None]
    assert len(named) == 1
    assert question.candidates == [f"@entity{i}" for i in range(n) if f"@entity{i}" != named[0]]
    # the question's own markers follow: the built @entity1 is served name shuffled^-1(1)
    back = {v: k for k, v in shuffled.items()}
    assert f" {back['@entity1']} " in f" {question.query} "
