"""Every name can be the answer (issue 25 item 2), in every mode: a document naming more
entities than the readers' slots. The test readers have MAX_ENTITIES = 20 slots; the document
names 80 people, and the question's answer is the 70th. The mentions mode points at their
mentions; a slot mode shares its slots (entity i reads as marker i mod E and takes its slot's
score, split among the candidates sharing it: encoder.model.shared_slots)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import torch

from encoder.model.checkpoint import Checkpoint
from encoder.text.anonymise import anonymise_document, anonymise_query
from tests.service.conftest import AppClient, wait_status
from tests.service.helpers import MAX_ENTITIES, assert_matches_forward, load
from tests.service.texts import CROWD_DEEDS, crowd_text, many_names

NAMES = many_names(80)
CROWD = crowd_text(NAMES)
SEVENTIETH = NAMES[69]
# The sentence of the 70th name, its name blanked: it is the answer (no other deed of its
# kind is its sentence word for word, but a random reader need not know that).
QUESTION = f"@placeholder {CROWD_DEEDS[69 % 4]} near the river."


def forward_probabilities(ckpt: Checkpoint, text: str, question: str) -> dict[str, float]:
    """name -> probability from one `forward` over the whole text, every entity a candidate
    (the question's own names kept in), each token's entity given: marker i reads as marker
    i mod E in every mode."""
    anon = anonymise_document(text, max_entities=None)
    q_tokens = anonymise_query(question, anon.entities)
    config, vocab = ckpt.model.config, ckpt.vocab
    ids, entities = vocab.encode_marked(anon.tokens)
    q_ids = vocab.encode_marked(q_tokens)[0]
    reach = len(anon.entities)
    mask = torch.zeros(1, max(reach, config.max_entities), dtype=torch.bool)
    mask[0, :reach] = True
    doc, query = torch.tensor([ids]), torch.tensor([q_ids])
    with torch.no_grad():
        scores = ckpt.model.eval()(
            doc,
            torch.tensor([doc.shape[1]]),
            query,
            torch.tensor([query.shape[1]]),
            mask,
            torch.tensor([entities]),
        )
    probs = torch.softmax(scores[0, :reach], dim=-1)
    return dict(zip(anon.entities, probs.tolist(), strict=True))


async def ask(client: httpx.AsyncClient, doc_id: str, mode: str, **body: Any) -> dict[str, Any]:
    response = await client.post(
        f"/v1/documents/{doc_id}/answers", json={"queries": [QUESTION], "mode": mode, **body}
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def test_every_mode_answers_among_every_entity(
    app_client: AppClient, checkpoint_dir: Path
) -> None:
    async with app_client(max_top_k=100) as client:  # every mode, the mentions mode among them
        await client.post("/v1/documents", json={"id": "crowd", "text": CROWD})
        info = await wait_status(client, "crowd", "indexed")
        assert (info["entities"], info["entities_unplaced"]) == (80, 0)
        assert info["entity_slots"] == MAX_ENTITIES  # what the slot modes answer among
        found = (await client.get("/v1/documents/crowd/entities")).json()
        assert [e["entity"] for e in found["entities"]] == NAMES
        assert found["unplaced"] == []

        # The mentions mode scores all 80, the 70th among them, as its forward pass does.
        mentions = load(checkpoint_dir, "mentions")
        expected = forward_probabilities(mentions, CROWD, QUESTION)
        assert len(expected) == 80
        body = await ask(client, "crowd", "mentions", top_k=80)
        assert_matches_forward(body, [expected], top_k=80)
        answers = {a["entity"]: a["reader_score"] for a in body["results"][0]["answers"]}
        assert set(answers) == set(NAMES) and answers[SEVENTIETH] > 0

        # A slot mode answers among all 80 too, four to a slot, as its forward pass does.
        linear = load(checkpoint_dir, "linear")
        expected = forward_probabilities(linear, CROWD, QUESTION)
        assert len(expected) == 80
        body = await ask(client, "crowd", "linear", top_k=80)
        assert_matches_forward(body, [expected], top_k=80)
        answers = {a["entity"]: a["reader_score"] for a in body["results"][0]["answers"]}
        assert set(answers) == set(NAMES) and answers[SEVENTIETH] > 0


async def test_the_70th_name_is_the_answer_when_it_is_the_only_candidate(
    app_client: AppClient, checkpoint_dir: Path
) -> None:
    others = [n for n in NAMES if n != SEVENTIETH]
    question = f"@placeholder met {', '.join(others)}."
    async with app_client(modes=["linear", "mentions"]) as client:
        await client.post("/v1/documents", json={"id": "crowd", "text": CROWD})
        await wait_status(client, "crowd", "indexed")
        body = {"queries": [question], "top_k": 5}
        response = await client.post(
            "/v1/documents/crowd/answers", json=body | {"mode": "mentions"}
        )
        assert response.status_code == 200, response.text
        [answer] = response.json()["results"][0]["answers"]
        assert answer["entity"] == SEVENTIETH and answer["score"] == pytest.approx(1.0)
        # So in a slot mode: the 70th shares its slot with three named entities, left out.
        response = await client.post("/v1/documents/crowd/answers", json=body | {"mode": "linear"})
        [answer] = response.json()["results"][0]["answers"]
        assert answer["entity"] == SEVENTIETH and answer["score"] == pytest.approx(1.0)
        # Kept in, the named entities are scored as the forward pass scores them.
        mentions = load(checkpoint_dir, "mentions")
        expected = forward_probabilities(mentions, CROWD, question)
        response = await client.post(
            "/v1/documents/crowd/answers",
            json=body | {"mode": "mentions", "exclude_question_entities": False},
        )
        assert_matches_forward(response.json(), [expected], top_k=5)


async def test_append_to_a_crowd_equals_indexing_it_whole(app_client: AppClient) -> None:
    # The first part ends on a name, so its mention's key waits for the appended tokens; the
    # second names old and new people, the new ones numbered past the slots.
    first = crowd_text(NAMES[:50]) + f" The last to arrive was {NAMES[3]}."
    second = f"{NAMES[3]} greeted {NAMES[60]}. " + crowd_text(NAMES[50:])
    async with app_client(modes=["linear", "mentions"]) as client:
        await client.post("/v1/documents", json={"id": "parts", "text": first})
        await client.post("/v1/documents", json={"id": "whole", "text": f"{first} {second}"})
        await wait_status(client, "parts", "indexed")
        await wait_status(client, "whole", "indexed")
        response = await client.post("/v1/documents/parts/text", json={"text": second})
        assert response.status_code == 200, response.text
        assert (response.json()["entities"], response.json()["entities_unplaced"]) == (80, 0)

        store = client.app.state.indexing.store  # type: ignore[attr-defined]
        parts, whole = await store.get("parts", modes=None), await store.get("whole", modes=None)
        assert parts.entities == whole.entities and set(whole.entities) == set(NAMES)
        assert parts.mentions == whole.mentions and parts.tokens == whole.tokens
        for mode in ("linear", "mentions"):
            got, want = parts.states[mode], whole.states[mode]
            assert got.n == want.n
            torch.testing.assert_close(got.last_hidden, want.last_hidden, atol=1e-5, rtol=0)
            assert got.memory is not None and want.memory is not None
            torch.testing.assert_close(got.memory, want.memory, atol=1e-4, rtol=1e-5)
        got, want = parts.states["mentions"], whole.states["mentions"]
        assert got.mentions is not None and want.mentions is not None
        assert torch.equal(got.mentions, want.mentions)
        assert int(got.mentions[:, 0].max()) == 79  # the 80th name has its mentions


async def test_without_the_mentions_mode_every_name_is_placed(app_client: AppClient) -> None:
    async with app_client(modes=["linear", "softmax"], max_top_k=100) as client:
        await client.post("/v1/documents", json={"id": "crowd", "text": CROWD})
        info = await wait_status(client, "crowd", "indexed")
        assert (info["entities"], info["entities_unplaced"]) == (80, 0)
        found = (await client.get("/v1/documents/crowd/entities")).json()
        assert [e["entity"] for e in found["entities"]] == NAMES and found["unplaced"] == []
        body = await ask(client, "crowd", "softmax", top_k=80)
        assert {a["entity"] for a in body["results"][0]["answers"]} == set(NAMES)


async def test_models_route_says_every_mode_reaches_every_entity(
    app_client: AppClient,
) -> None:
    async with app_client(modes=["linear", "mentions"]) as client:
        models = {m["mode"]: m for m in (await client.get("/v1/models")).json()["models"]}
    assert (models["mentions"]["entity_slots"], models["mentions"]["every_entity"]) == (None, True)
    assert (models["linear"]["entity_slots"], models["linear"]["every_entity"]) == (
        MAX_ENTITIES,
        True,
    )
