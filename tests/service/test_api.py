"""The API in-process (embedded store and worker): indexing, answers, append, delete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from encoder.model.modes import MODES
from encoder.text.anonymise import anonymise_document, anonymise_query
from tests.service.conftest import AppClient, wait_status
from tests.service.helpers import (
    MAX_ENTITIES,
    assert_matches_forward,
    forward_probabilities,
    load,
)
from tests.service.texts import APPENDIX, DOCUMENTS, HARBOUR, ORCHARD, QUESTIONS


async def test_index_then_answer_equals_forward_pass_in_every_mode(
    app_client: AppClient, checkpoint_dir: Path
) -> None:
    async with app_client() as client:
        batch = [{"id": doc_id, "text": text} for doc_id, text in DOCUMENTS.items()]
        response = await client.post("/v1/documents", json={"documents": batch})
        assert response.status_code == 202, response.text
        accepted = response.json()["documents"]
        assert [d["id"] for d in accepted] == list(DOCUMENTS)
        assert all(d["status"] == "queued" and d["enqueued"] for d in accepted)
        assert accepted[0]["status_url"].endswith("/v1/documents/harbour")
        for doc_id in DOCUMENTS:
            info = await wait_status(client, doc_id, "indexed")
            assert info["modes"] == sorted(MODES)
            assert info["tokens"] > 50 and info["entities"] > 2 and info["error"] is None
            assert set(info["bytes_stored"]) == set(MODES)
            # k×k states (packed triangle) do not grow with the text; H (n×k) does.
            assert info["bytes_stored"]["softmax"] > info["bytes_stored"]["linear"]

        for mode in MODES:
            ckpt = load(checkpoint_dir, mode)
            for doc_id, questions in QUESTIONS.items():
                response = await client.post(
                    f"/v1/documents/{doc_id}/answers",
                    json={"queries": questions, "mode": mode, "top_k": 3},
                )
                assert response.status_code == 200, response.text
                body = response.json()
                assert body["mode"] == mode and body["model_id"] == ckpt.model_id
                expected = [forward_probabilities(ckpt, DOCUMENTS[doc_id], q) for q in questions]
                assert_matches_forward(body, expected, top_k=3)


async def test_default_mode_and_client_candidates(app_client: AppClient) -> None:
    async with app_client(modes=["linear", "none"]) as client:
        candidates = ["Marigold Ashby", "Tobias", "Halvard", "Gull Rock"]
        response = await client.post(
            "/v1/documents", json={"id": "h1", "text": HARBOUR, "candidates": candidates}
        )
        assert response.status_code == 202
        info = await wait_status(client, "h1", "indexed")
        assert info["entities"] == 4 and info["modes"] == ["linear", "none"]
        response = await client.post(
            "/v1/documents/h1/answers", json={"queries": [QUESTIONS["harbour"][0]], "top_k": 10}
        )
        body = response.json()
        assert body["mode"] == "linear"
        answers = body["results"][0]["answers"]
        # The question ("... kept the lighthouse on Gull Rock.") is not answered with the
        # place it names, unless the request asks for every entity.
        assert {a["entity"] for a in answers} == set(candidates) - {"Gull Rock"}
        assert sum(a["score"] for a in answers) == pytest.approx(1.0, abs=1e-5)
        response = await client.post(
            "/v1/documents/h1/answers",
            json={
                "queries": [QUESTIONS["harbour"][0]],
                "top_k": 10,
                "exclude_question_entities": False,
            },
        )
        answers = response.json()["results"][0]["answers"]
        assert {a["entity"] for a in answers} == set(candidates)
        assert sum(a["score"] for a in answers) == pytest.approx(1.0, abs=1e-5)


async def test_a_question_naming_every_entity_has_no_answer(app_client: AppClient) -> None:
    async with app_client(modes=["linear", "softmax"]) as client:
        text = "Anna walked to the market with Tom. Later Tom drove Anna home."
        await client.post("/v1/documents", json={"id": "two", "text": text})
        await wait_status(client, "two", "indexed")
        queries = ["Who drove Anna home?", "Whom did Tom drive home?", "Anna met @placeholder Tom"]
        for mode in ("linear", "softmax"):
            body = {"queries": queries, "mode": mode}
            results = (await client.post("/v1/documents/two/answers", json=body)).json()["results"]
            answers = [[a["entity"] for a in r["answers"]] for r in results]
            assert answers[:2] == [["Tom"], ["Anna"]]
            assert answers[2] == []  # no entity left that the question does not name
            assert results[0]["answers"][0]["score"] == pytest.approx(1.0)


async def test_a_question_naming_a_role_is_not_answered_by_its_one_holder(
    app_client: AppClient,
) -> None:
    async with app_client(modes=["linear"]) as client:
        text = (
            "Colombian cyclist Ortega tested positive for a banned drug. His lawyer, Oquendo, said "
            "Ortega would appeal. Race director Vidal said the result stands."
        )
        await client.post("/v1/documents", json={"id": "rider", "text": text})
        await wait_status(client, "rider", "indexed")
        question = "Who is acting as the cyclist's lawyer?"
        found = []
        for exclude in (True, False):
            body = {"queries": [question], "top_k": 10, "exclude_question_entities": exclude}
            response = await client.post("/v1/documents/rider/answers", json=body)
            found.append({a["entity"] for a in response.json()["results"][0]["answers"]})
        assert found == [{"Oquendo", "Vidal"}, {"Ortega", "Oquendo", "Vidal"}]
        # named as the one the verb is done to: "Who represents the cyclist?"
        body = {"queries": ["Who represents the cyclist?"], "top_k": 10}
        response = await client.post("/v1/documents/rider/answers", json=body)
        assert {a["entity"] for a in response.json()["results"][0]["answers"]} == {
            "Oquendo",
            "Vidal",
        }


async def test_same_id_same_text_is_one_document_new_text_reindexes(
    app_client: AppClient,
) -> None:
    async with app_client(modes=["linear"]) as client:
        first = (await client.post("/v1/documents", json={"id": "d", "text": HARBOUR})).json()
        indexed = await wait_status(client, "d", "indexed")
        again = (await client.post("/v1/documents", json={"id": "d", "text": HARBOUR})).json()
        assert again["documents"][0]["enqueued"] is False
        assert again["documents"][0]["status"] == "indexed"
        assert (await wait_status(client, "d", "indexed"))["updated_at"] == indexed["updated_at"]

        other = (await client.post("/v1/documents", json={"id": "d", "text": ORCHARD})).json()
        assert other["documents"][0]["enqueued"] is True
        assert other["documents"][0]["text_hash"] != first["documents"][0]["text_hash"]
        reindexed = await wait_status(client, "d", "indexed")
        assert reindexed["text_hash"] == other["documents"][0]["text_hash"]
        assert reindexed["created_at"] == indexed["created_at"]
        answers = await client.post(
            "/v1/documents/d/answers", json={"queries": [QUESTIONS["orchard"][0]], "top_k": 20}
        )
        names = {a["entity"] for a in answers.json()["results"][0]["answers"]}
        assert "Agnes" in names and "Tobias" not in names

        # Without an id, the id comes from the text: posting it twice is one document.
        a = (await client.post("/v1/documents", json={"text": ORCHARD})).json()["documents"][0]
        b = (await client.post("/v1/documents", json={"text": ORCHARD})).json()["documents"][0]
        assert a["id"] == b["id"] and a["id"].startswith("doc-")


async def test_append_equals_encoding_the_whole_text(
    app_client: AppClient, checkpoint_dir: Path
) -> None:
    async with app_client(modes=["linear", "softmax"]) as client:
        await client.post("/v1/documents", json={"id": "h", "text": HARBOUR})
        before = await wait_status(client, "h", "indexed")
        response = await client.post("/v1/documents/h/text", json={"text": APPENDIX})
        assert response.status_code == 200, response.text
        after = response.json()
        assert after["text_hash"] != before["text_hash"]
        assert after["entities"] > before["entities"]  # Rosalind joins the entity map
        assert after["bytes_stored"]["linear"] == before["bytes_stored"]["linear"]

        # The reference: both parts anonymised as the service does, read in one pass.
        first = anonymise_document(HARBOUR, max_entities=MAX_ENTITIES)
        second = anonymise_document(APPENDIX, max_entities=MAX_ENTITIES, known=first.entities)
        assert after["tokens"] == len(first.tokens) + len(second.tokens)
        question = "@placeholder returned to Gull Rock with her daughter."
        for mode in ("linear", "softmax"):
            ckpt = load(checkpoint_dir, mode)
            ids = torch.tensor([ckpt.vocab.encode(first.tokens + second.tokens)])
            q = torch.tensor([ckpt.vocab.encode(anonymise_query(question, second.entities))])
            mask = torch.zeros(1, MAX_ENTITIES, dtype=torch.bool)
            mask[0, : len(second.entities)] = True
            with torch.no_grad():
                scores = ckpt.model(
                    ids, torch.tensor([ids.shape[1]]), q, torch.tensor([q.shape[1]]), mask
                )
            probs = torch.softmax(scores[0, : len(second.entities)], -1)
            expected = dict(zip(second.entities, probs.tolist(), strict=True))
            # Every entity, as the reference scores them (the question names Gull Rock).
            body = {"queries": [question], "mode": mode, "exclude_question_entities": False}
            response = await client.post("/v1/documents/h/answers", json=body)
            assert_matches_forward(response.json(), [expected], top_k=5)


async def test_delete(app_client: AppClient) -> None:
    async with app_client(modes=["linear"]) as client:
        await client.post("/v1/documents", json={"id": "gone", "text": ORCHARD})
        await wait_status(client, "gone", "indexed")
        assert (await client.delete("/v1/documents/gone")).status_code == 204
        assert (await client.get("/v1/documents/gone")).status_code == 404
        assert (await client.delete("/v1/documents/gone")).status_code == 404
        response = await client.post(
            "/v1/documents/gone/answers", json={"queries": [QUESTIONS["orchard"][0]]}
        )
        assert response.status_code == 404


async def test_health_readiness_metrics_and_openapi(app_client: AppClient) -> None:
    async with app_client(modes=["linear"]) as client:
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        ready = (await client.get("/readyz")).json()
        assert ready["store"] is True and list(ready["models"]) == ["linear"] and ready["worker"]
        await client.post("/v1/documents", json={"id": "m", "text": ORCHARD})
        await wait_status(client, "m", "indexed")
        await client.post("/v1/documents/m/answers", json={"queries": QUESTIONS["orchard"]})
        text = (await client.get("/metrics")).text
        for series in (
            'cheapqa_request_seconds_count{method="POST",route="/v1/documents/{doc_id}/answers"',
            "cheapqa_ingest_queue_depth 0.0",
            "cheapqa_query_batch_size_count",
            "cheapqa_ingest_batch_size_count 1.0",
            "cheapqa_documents_indexed_total 1.0",
            "cheapqa_documents_failed_total 0.0",
            'cheapqa_lookup_seconds_count{mode="linear"} 1.0',
        ):
            assert series in text, series

        spec = (await client.get("/openapi.json")).json()
        operations = {
            op["operationId"]: op for path in spec["paths"].values() for op in path.values()
        }
        assert {"index_documents", "get_document", "delete_document", "append_text",
                "answer_queries", "healthz", "readyz", "metrics"} <= set(operations)  # fmt: skip
        for name in ("index_documents", "answer_queries", "append_text", "get_document"):
            responses = operations[name]["responses"]
            for status in ("401", "422", "503"):
                schema = responses[status]["content"]["application/json"]["schema"]
                assert schema["$ref"].endswith("/ErrorBody")
        assert "429" in operations["answer_queries"]["responses"]
        assert "409" in operations["answer_queries"]["responses"]
        assert "413" in operations["index_documents"]["responses"]


async def test_float16_states_answer_close_to_the_forward_pass(
    app_client: AppClient, checkpoint_dir: Path
) -> None:
    async with app_client(modes=["linear", "gated"], state_dtype="float16") as client:
        await client.post("/v1/documents", json={"id": "h", "text": HARBOUR})
        info = await wait_status(client, "h", "indexed")
        for mode in ("linear", "gated"):
            ckpt = load(checkpoint_dir, mode)
            questions = QUESTIONS["harbour"]
            response = await client.post(
                "/v1/documents/h/answers", json={"queries": questions, "mode": mode, "top_k": 20}
            )
            expected = [forward_probabilities(ckpt, HARBOUR, q) for q in questions]
            for result, probs in zip(response.json()["results"], expected, strict=True):
                got = {a["entity"]: a["reader_score"] for a in result["answers"]}
                assert got.keys() == probs.keys()
                for name, p in probs.items():
                    assert got[name] == pytest.approx(p, abs=2e-3)
        # Half the bytes of float32 for the packed k×k triangle (plus a small header).
        assert info["bytes_stored"]["linear"] < 16 * 17 / 2 * 4


async def test_answers_bytes_are_an_answers_out_as_pydantic_writes_it(
    app_client: AppClient,
) -> None:
    """The answers route writes its JSON itself (no response-model pass): it must be an
    AnswersOut with the values pydantic would write (names outside ASCII as UTF-8, not
    escaped), and a document without entities answers every question with no answers."""
    from cheapqa_client.schemas import AnswersOut

    async with app_client(modes=["linear"]) as client:
        candidates = ["Zoë Ångström", "Tobias", "Halvard"]
        text = HARBOUR + " Zoë Ångström sailed with Tobias and Halvard."
        await client.post("/v1/documents", json={"id": "u", "text": text, "candidates": candidates})
        await client.post("/v1/documents", json={"id": "bare", "text": "the sea was calm ."})
        await wait_status(client, "u", "indexed")
        await wait_status(client, "bare", "indexed")
        queries = ["@placeholder sailed with Tobias", "Who sailed with Halvard?"]
        for doc_id in ("u", "bare"):
            response = await client.post(
                f"/v1/documents/{doc_id}/answers", json={"queries": queries, "top_k": 3}
            )
            assert response.status_code == 200, response.text
            assert response.headers["content-type"] == "application/json"
            parsed = AnswersOut.model_validate_json(response.content)
            assert json.loads(response.content) == json.loads(parsed.model_dump_json())
            assert "Zoë".encode() in response.content or doc_id == "bare"
            assert [r.query for r in parsed.results] == queries
            if doc_id == "bare":
                assert all(r.answers == [] for r in parsed.results)
            else:
                assert {a.entity for r in parsed.results for a in r.answers} <= set(candidates)
                # Three entities, less the one each question names.
                assert all(len(r.answers) == 2 for r in parsed.results)
