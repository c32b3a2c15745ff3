"""Issues 11 and 15 through the real app: entities with mention counts, names beyond the
entity slots, candidates not found, re-indexing on new candidates, plain questions with the
cloze sentence echoed, the paged document list, and the models route."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from cheapqa_client.schemas import TrainedOn
from encoder.model.checkpoint import load_checkpoint
from service.indexing import document_entities, document_info
from service.readers import recorded_test_accuracy, trained_on
from store.record import DocumentRecord, Status, text_hash
from tests.service.conftest import AppClient, wait_status
from tests.service.helpers import (
    HIDDEN,
    MAX_ENTITIES,
    assert_matches_forward,
    build_checkpoints,
    forward_probabilities,
    load,
)
from tests.service.texts import APPENDIX, HARBOUR, ORCHARD


async def index(client: httpx.AsyncClient, doc_id: str, text: str, **extra: Any) -> dict[str, Any]:
    response = await client.post("/v1/documents", json={"id": doc_id, "text": text, **extra})
    assert response.status_code == 202, response.text
    accepted: dict[str, Any] = response.json()["documents"][0]
    return accepted


async def entities(client: httpx.AsyncClient, doc_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/documents/{doc_id}/entities")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_entities_with_mention_counts_in_order_of_first_mention(
    app_client: AppClient,
) -> None:
    async with app_client(modes=["linear"]) as client:
        await index(client, "h", HARBOUR)
        info = await wait_status(client, "h", "indexed")
        assert (info["entity_slots"], info["entities_unplaced"], info["candidates_not_found"]) == (
            MAX_ENTITIES,
            0,
            [],
        )
        # Counted by hand in HARBOUR: Tobias four times, Gull Rock and Halvard twice each.
        assert await entities(client, "h") == {
            "id": "h",
            "entities": [
                {"entity": "Port Ellery", "mentions": 1},
                {"entity": "Marigold Ashby", "mentions": 1},
                {"entity": "Tobias", "mentions": 4},
                {"entity": "Gull Rock", "mentions": 2},
                {"entity": "Marigold", "mentions": 2},
                {"entity": "Halvard", "mentions": 2},
            ],
            "entity_slots": MAX_ENTITIES,
            "unplaced": [],
        }
        # Appending adds the counts up; a new name takes the next slot.
        response = await client.post("/v1/documents/h/text", json={"text": APPENDIX})
        assert response.status_code == 200, response.text
        counts = {e["entity"]: e["mentions"] for e in (await entities(client, "h"))["entities"]}
        assert list(counts)[-1] == "Rosalind"
        assert (counts["Tobias"], counts["Gull Rock"], counts["Marigold"], counts["Halvard"]) == (
            5,
            3,
            3,
            2,
        )
        assert counts["Rosalind"] == 1
        assert (await client.get("/v1/documents/nobody/entities")).status_code == 404


async def test_entities_of_a_queued_document_are_409(app_client: AppClient) -> None:
    async with app_client(modes=["linear"], serve_worker=False) as client:  # nobody indexes
        await index(client, "later", ORCHARD)
        info = (await client.get("/v1/documents/later")).json()
        assert (info["status"], info["entity_slots"], info["entities_unplaced"]) == (
            "queued",
            None,
            0,
        )
        response = await client.get("/v1/documents/later/entities")
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "not_indexed"


async def test_names_beyond_the_entity_slots_share_them(
    app_client: AppClient, tmp_path: Path
) -> None:
    few = build_checkpoints(tmp_path / "three-slots", max_entities=3)
    async with app_client(checkpoint_dir=few, modes=["linear"]) as client:
        await index(client, "h", HARBOUR)
        info = await wait_status(client, "h", "indexed")
        assert (info["entities"], info["entity_slots"], info["entities_unplaced"]) == (6, 3, 0)
        body = await entities(client, "h")
        everyone = ["Port Ellery", "Marigold Ashby", "Tobias", "Gull Rock", "Marigold", "Halvard"]
        assert [e["entity"] for e in body["entities"]] == everyone
        assert (body["unplaced"], body["entity_slots"]) == ([], 3)

        # Every name can be the answer, two to a slot.
        response = await client.post(
            "/v1/documents/h/answers", json={"queries": ["Who kept the lighthouse?"], "top_k": 10}
        )
        names = {a["entity"] for a in response.json()["results"][0]["answers"]}
        assert names == set(everyone)

        # On append, a new name takes the next index (and shares a slot) too.
        response = await client.post("/v1/documents/h/text", json={"text": APPENDIX})
        assert response.status_code == 200, response.text
        assert (response.json()["entities"], response.json()["entities_unplaced"]) == (7, 0)
        assert [e["entity"] for e in (await entities(client, "h"))["entities"]] == [
            *everyone,
            "Rosalind",
        ]
        models = (await client.get("/v1/models")).json()["models"]
        assert [m["entity_slots"] for m in models] == [3]


async def test_candidates_not_found_and_new_candidates_reindex(app_client: AppClient) -> None:
    async with app_client(modes=["linear"]) as client:
        given = ["Halvard", "Tobias", "Zebedee Nobody"]
        first = await index(client, "h", HARBOUR, candidates=given)
        info = await wait_status(client, "h", "indexed")
        assert info["candidates_not_found"] == ["Zebedee Nobody"]
        assert [e["entity"] for e in (await entities(client, "h"))["entities"]] == [
            "Tobias",
            "Halvard",
        ]

        # The same text and candidates: the same document, nothing re-encoded.
        again = await index(client, "h", HARBOUR, candidates=given)
        assert again["enqueued"] is False and again["text_hash"] == first["text_hash"]
        assert (await wait_status(client, "h", "indexed"))["updated_at"] == info["updated_at"]

        # The same text with other candidates: indexed again with them.
        other = await index(client, "h", HARBOUR, candidates=["Gull Rock", "Tobias"])
        assert other["enqueued"] is True and other["text_hash"] != first["text_hash"]
        reindexed = await wait_status(client, "h", "indexed")
        while reindexed["text_hash"] != other["text_hash"]:
            reindexed = await wait_status(client, "h", "indexed")
        assert reindexed["candidates_not_found"] == []
        body = await entities(client, "h")
        assert body["entities"] == [
            {"entity": "Tobias", "mentions": 4},
            {"entity": "Gull Rock", "mentions": 2},
        ]

        # No candidates: the detected entities, and the text hash is the text's own.
        plain = await index(client, "h", HARBOUR)
        assert plain["enqueued"] is True and plain["text_hash"] == text_hash(HARBOUR)
        # One batch cannot hold the same id twice with different candidates.
        response = await client.post(
            "/v1/documents",
            json={"documents": [{"id": "x", "text": ORCHARD},
                                {"id": "x", "text": ORCHARD, "candidates": ["Agnes"]}]},
        )  # fmt: skip
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "duplicate_id"


async def test_plain_questions_are_asked_as_their_cloze_sentence(
    app_client: AppClient, checkpoint_dir: Path
) -> None:
    async with app_client(modes=["linear"]) as client:
        await index(client, "h", HARBOUR)
        await wait_status(client, "h", "indexed")
        queries = [
            "Who kept the lighthouse on Gull Rock?",
            "@placeholder let her sit in the wheelhouse.",
            "Whom did Halvard let sit in the wheelhouse?",
            "Whose brother kept the lighthouse?",
        ]
        clozes = [
            "@placeholder kept the lighthouse on Gull Rock",
            "@placeholder let her sit in the wheelhouse.",
            "Halvard let @placeholder sit in the wheelhouse",
            "@placeholder 's brother kept the lighthouse",
        ]
        response = await client.post(
            "/v1/documents/h/answers", json={"queries": queries, "top_k": 20}
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert [r["query"] for r in body["results"]] == queries
        assert [r["cloze"] for r in body["results"]] == clozes
        # A plain question is read exactly as its cloze sentence is (a Who-question's answers
        # are then weighed by what their names are: people's rise).
        ckpt = load(checkpoint_dir, "linear")
        expected = [forward_probabilities(ckpt, HARBOUR, c) for c in clozes]
        assert_matches_forward(body, expected, top_k=20, kind_weighed=[True, False, True, True])
        # Answers are whole names.
        assert "Marigold Ashby" in {a["entity"] for a in body["results"][0]["answers"]}

        response = await client.post(
            "/v1/documents/h/answers",
            json={"queries": ["Who kept the lighthouse?", "What did Tobias keep?"]},
        )
        assert response.status_code == 200, response.text
        asked, refused = response.json()["results"]
        assert asked["error"] is None and asked["answers"]
        assert refused["cloze"] is None and refused["answers"] == []
        error = refused["error"]
        assert error["code"] == "bad_query"
        assert "Who, Whom, Whose" in error["message"] and "@placeholder" in error["message"]


async def _list_all(client: httpx.AsyncClient, limit: int) -> tuple[list[dict[str, Any]], int]:
    seen: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": limit}
    pages = 0
    while True:
        response = await client.get("/v1/documents", params=params)
        assert response.status_code == 200, response.text
        body = response.json()
        assert set(body) == {"documents", "next_cursor"} and len(body["documents"]) <= limit
        seen += body["documents"]
        pages += 1
        if body["next_cursor"] is None:
            return seen, pages
        params["cursor"] = body["next_cursor"]


@pytest.mark.parametrize("backend", ["embedded", pytest.param("redis", marks=pytest.mark.redis)])
async def test_documents_are_listed_in_pages(
    app_client: AppClient, request: pytest.FixtureRequest, backend: str
) -> None:
    store: dict[str, Any] = {}
    if backend == "redis":
        store = {"store_url": request.getfixturevalue("redis_url"), "serve_worker": True}
    async with app_client(modes=["linear"], **store) as client:
        listed = (await client.get("/v1/documents")).json()
        assert listed == {"documents": [], "next_cursor": None}
        ids = ["b-2", "a-1", "c-3", "a-0", "d"]
        for doc_id in ids:
            await index(client, doc_id, ORCHARD)
        for doc_id in ids:
            await wait_status(client, doc_id, "indexed")
        seen, pages = await _list_all(client, 2)
        assert seen == [{"id": i, "status": "indexed"} for i in sorted(ids)] and pages == 3
        assert (await client.delete("/v1/documents/c-3")).status_code == 204
        seen, _ = await _list_all(client, 50)
        assert [d["id"] for d in seen] == ["a-0", "a-1", "b-2", "d"]
        for bad in ({"limit": 0}, {"limit": 501}, {"limit": "many"}, {"cursor": ["a-1", "d"]}):
            response = await client.get("/v1/documents", params=bad)
            assert response.status_code == 422
            assert response.json()["error"]["code"] == "validation_error"
        # A parameter given twice is refused, not read as its last value.
        response = await client.get("/v1/documents", params={"limit": [2, 3]})
        assert "limit" in response.json()["error"]["message"], response.text
        assert "more than once" in response.json()["error"]["message"]
        many = [{"id": f"m{i:03d}", "text": f"Agnes met Cuthbert {i} times."} for i in range(60)]
        await client.post("/v1/documents", json={"documents": many})
        first = (await client.get("/v1/documents")).json()  # default limit 50
        assert len(first["documents"]) == 50 and first["next_cursor"] is not None


async def test_models_route_reports_the_loaded_readers(
    app_client: AppClient, checkpoint_dir: Path, tmp_path: Path
) -> None:
    async with app_client(modes=["linear", "softmax"]) as client:
        response = await client.get("/v1/models")
        assert response.status_code == 200, response.text
        models = response.json()["models"]
        assert [m["mode"] for m in models] == ["linear", "softmax"]
        ready = (await client.get("/readyz")).json()["models"]
        for m in models:
            ckpt = load(checkpoint_dir, m["mode"])
            assert m == {
                "mode": m["mode"],
                "model_id": ready[m["mode"]],
                "k": HIDDEN,
                "entity_slots": MAX_ENTITIES,
                "every_entity": True,
                "vocabulary": len(ckpt.vocab),
                # the test checkpoints' meta says nothing of it
                "trained_on": {"recipes": [], "stages": 0, "data_sets": []},
                "test_accuracy": None,
            }

    # Meta that records a recipe and an accuracy is reported.
    meta = {
        "recipe": {"stages": [{"name": "para-200", "data": [["data/para-200", 1.0]]}]},
        "test_accuracy": 0.5,
    }
    described = build_checkpoints(tmp_path / "described", meta=meta)
    async with app_client(
        checkpoint_dir=described, modes=["gated"], default_mode="gated"
    ) as client:
        [model] = (await client.get("/v1/models")).json()["models"]
        assert model["trained_on"] == {
            "recipes": ["para-200"], "stages": 1, "data_sets": ["data/para-200"]
        }  # fmt: skip
        assert model["test_accuracy"] == 0.5


async def test_models_route_on_the_shipped_checkpoints(app_client: AppClient) -> None:
    index = json.loads(
        (Path(__file__).parents[2] / "encoder" / "checkpoints" / "index.json").read_text()
    )
    async with app_client(checkpoint_dir=None, modes=["linear"]) as client:
        [model] = (await client.get("/v1/models")).json()["models"]
    entry = index["modes"]["linear"]
    if model["model_id"] == entry["model_id"]:
        assert model["test_accuracy"] == entry["test_accuracy"]
    else:  # the index describes another checkpoint: its accuracy is not this one's
        assert model["test_accuracy"] is None
    # The shipped readers went on from each other's checkpoints: several recipes, small.
    summary = model["trained_on"]
    assert len(summary["recipes"]) > 1 and summary["stages"] >= len(summary["recipes"])
    assert summary["data_sets"] and len(json.dumps(summary)) < 1000


def test_recorded_accuracy_belongs_to_this_very_checkpoint(
    checkpoint_dir: Path, tmp_path: Path
) -> None:
    ckpt = load_checkpoint(checkpoint_dir / "linear.pt")
    path = tmp_path / "index.json"
    entry = {"model_id": ckpt.model_id, "test_accuracy": 0.75}
    path.write_text(json.dumps({"modes": {"linear": entry}}))
    assert recorded_test_accuracy({}, path, "linear", ckpt.model_id) == 0.75
    assert recorded_test_accuracy({}, path, "linear", "linear-000000000000") is None
    assert recorded_test_accuracy({}, path, "gated", ckpt.model_id) is None
    assert recorded_test_accuracy({}, tmp_path / "missing.json", "linear", ckpt.model_id) is None
    assert recorded_test_accuracy({"test_accuracy": 0.9}, path, "linear", "x") == 0.9
    old_run = trained_on({"train_options": {"data_dir": "data/cloze"}})
    assert old_run == TrainedOn(recipes=[], stages=0, data_sets=["data/cloze"])
    assert trained_on({}) == TrainedOn(recipes=[], stages=0, data_sets=[])
    first = {"stages": [{"name": "find", "data": [["data/find-200", 1.0]]}]}
    more = {
        "stages": [
            {"name": "mix", "data": [["data/infer-200", 1.0], ["data/find-200", 0.5]]},
            {"name": "mix-slow", "data": [["data/infer-200", 1.0]]},
        ]
    }
    assert trained_on({"recipe": more, "init": {"recipe": first}}) == TrainedOn(
        recipes=["find", "mix+mix-slow"], stages=3, data_sets=["data/find-200", "data/infer-200"]
    )


async def test_openapi_documents_the_new_routes(app_client: AppClient) -> None:
    async with app_client(modes=["linear"]) as client:
        spec = (await client.get("/openapi.json")).json()
    operations = {op["operationId"]: op for path in spec["paths"].values() for op in path.values()}
    for name, schema in (
        ("list_documents", "DocumentList"),
        ("get_document_entities", "DocumentEntities"),
        ("list_models", "ModelsOut"),
    ):
        ok = operations[name]["responses"]["200"]["content"]["application/json"]["schema"]
        assert ok["$ref"].endswith(f"/{schema}")
        assert operations[name]["responses"]["401"]
    schemas = spec["components"]["schemas"]
    assert {"entity_slots", "entities_unplaced", "candidates_not_found"} <= set(
        schemas["DocumentInfo"]["properties"]
    )
    assert "cloze" in schemas["QueryAnswers"]["properties"]
    assert set(schemas["ModelInfo"]["properties"]) == {
        "mode", "model_id", "k", "entity_slots", "every_entity", "vocabulary", "trained_on",
        "test_accuracy",
    }  # fmt: skip


def test_a_format_1_record_has_unknown_mention_counts() -> None:
    old = DocumentRecord(
        id="old", text_hash="h", status=Status.INDEXED, entities=["Tobias", "Halvard"]
    )
    body = document_entities(old).model_dump()
    assert body == {
        "id": "old",
        "entities": [
            {"entity": "Tobias", "mentions": None},
            {"entity": "Halvard", "mentions": None},
        ],
        "entity_slots": None,
        "unplaced": [],
    }
    info = document_info(old)
    assert (info.entity_slots, info.entities_unplaced, info.candidates_not_found) == (None, 0, [])


def test_trained_on_lists_every_recipe_of_the_chain_oldest_first() -> None:
    def recipe(name: str) -> dict[str, object]:
        return {"stages": [{"name": name, "data": [[f"data/{name}", 1.0]]}]}

    meta = {
        "recipe": recipe("third"),
        "init": {"recipe": recipe("second"), "init": {"recipe": recipe("first")}},
    }
    assert trained_on(meta).recipes == ["first", "second", "third"]
    assert trained_on(meta).data_sets == ["data/first", "data/second", "data/third"]
    assert trained_on({"init": {"recipe": recipe("first")}}) == TrainedOn()  # no own recipe
