"""What the API does with text before it is queued or appended (issue 26, MEDIUM 9 and LOW
findings): no quadratic work on the event loop, distinct hashes for appends and candidates,
literal `@entity0` escaped, NFKC normalisation, and the token limit checked at the door."""

from __future__ import annotations

import asyncio
import gc
import random
import time
import unicodedata
from typing import Any

import httpx

from tests.service.conftest import wait_status
from tests.service.texts import APPENDIX, HARBOUR

QUESTION = "@placeholder rang the bell."


def distinct_names(n: int, seed: int) -> str:
    """n sentences, each naming a different two-word person."""
    rng = random.Random(seed)

    def word() -> str:
        return "".join(rng.choice("bcdfghklmnprstvz") + rng.choice("aeiou") for _ in range(3))

    return " ".join(f"{word().capitalize()} {word().capitalize()} waved." for _ in range(n))


async def post(client: httpx.AsyncClient, doc_id: str, text: str, **extra: Any) -> httpx.Response:
    return await client.post("/v1/documents", json={"id": doc_id, "text": text, **extra})


async def test_appending_many_new_names_does_not_block_the_event_loop(app_client: Any) -> None:
    names = 5000
    async with app_client(modes=["linear"]) as client:
        assert (await post(client, "n", distinct_names(names, seed=1))).status_code == 202
        info = await wait_status(client, "n", "indexed", timeout_s=60)
        longest = 0.0
        done = asyncio.Event()

        async def tick() -> None:
            # CPU time of the loop's own thread between two ticks: what one stretch of work
            # on the loop took, whatever else the (shared, busy) machine runs meanwhile.
            nonlocal longest
            while not done.is_set():
                before = time.thread_time()
                await asyncio.sleep(0.005)
                longest = max(longest, time.thread_time() - before)

        # What the whole suite has allocated before this test is not this code's work: a full
        # collection of it takes ~0.47 s at this point of a whole run (600,000 objects), and
        # one landing on the loop thread in the window failed a CI run at 0.50 s (0.02-0.03 s
        # otherwise). Collect it first and freeze it out of the window.
        gc.collect()
        gc.freeze()
        ticker = asyncio.create_task(tick())
        try:
            appended = await client.post(
                "/v1/documents/n/text",
                json={
                    "text": distinct_names(names, seed=2),
                    "expected_text_hash": info["text_hash"],
                },
            )
        finally:
            done.set()
            await ticker
            gc.unfreeze()
        assert appended.status_code == 200, appended.text
        assert appended.json()["entities"] > 1.9 * names  # every name placed, none beyond
        assert appended.json()["entities_unplaced"] == 0
        assert longest < 0.5, f"the event loop was busy for {longest:.2f} s at a stretch"


async def test_append_and_candidates_hash_apart(app_client: Any) -> None:
    """Text T with the appendix '["Tobias"]' and T posted with the candidates ["Tobias"] are
    two different documents: a re-POST with the candidates must index again."""
    async with app_client(modes=["linear"]) as client:
        assert (await post(client, "h", HARBOUR)).status_code == 202
        info = await wait_status(client, "h", "indexed")
        appendix = '["Tobias"]'
        appended = await client.post(
            "/v1/documents/h/text", json={"text": appendix, "expected_text_hash": info["text_hash"]}
        )
        assert appended.status_code == 200, appended.text
        again = await post(client, "h", HARBOUR, candidates=["Tobias"])
        assert again.status_code == 202
        assert again.json()["documents"][0]["enqueued"] is True
        assert again.json()["documents"][0]["text_hash"] != appended.json()["text_hash"]


async def answers(client: httpx.AsyncClient, doc_id: str, question: str) -> list[Any]:
    response = await client.post(f"/v1/documents/{doc_id}/answers", json={"queries": [question]})
    assert response.status_code == 200, response.text
    found: list[Any] = response.json()["results"][0]["answers"]
    return found


async def test_a_literal_entity_marker_is_escaped(app_client: Any) -> None:
    """`@entity0` typed in a document is two words, not the marker of its first entity: the
    document reads as if it had been written `@ entity0`."""
    literal = "Then @entity0 rang the bell. Marigold Ashby rang the bell again."
    spaced = literal.replace("@entity0", "@ entity0")
    async with app_client(modes=["linear"]) as client:
        assert (await post(client, "lit", literal)).status_code == 202
        assert (await post(client, "spaced", spaced)).status_code == 202
        a = await wait_status(client, "lit", "indexed")
        b = await wait_status(client, "spaced", "indexed")
        assert a["tokens"] == b["tokens"]
        [found] = await answers(client, "lit", QUESTION)
        assert found["entity"] == "Marigold Ashby"
        # The escape's space is not in the posted text: the name's place is the posted one.
        assert [literal[start:end] for start, end in found["spans"]] == ["Marigold Ashby"]
        spaced_found = await answers(client, "spaced", QUESTION)
        assert [{**found, "spans": []}] == [{**a, "spans": []} for a in spaced_found]
        # Appended text too.
        appended = await client.post(
            "/v1/documents/lit/text",
            json={"text": "@entity0 smiled.", "expected_text_hash": a["text_hash"]},
        )
        assert appended.status_code == 200
        assert appended.json()["tokens"] == a["tokens"] + 4


async def test_text_is_nfkc_normalised(app_client: Any) -> None:
    composed = "Amélie Poulain"
    decomposed = unicodedata.normalize("NFD", composed)
    assert decomposed != composed
    text = f"{composed} rang the bell. Later {decomposed} rang the bell again."
    async with app_client(modes=["linear"]) as client:
        assert (await post(client, "nf", text)).status_code == 202
        await wait_status(client, "nf", "indexed")
        entities = (await client.get("/v1/documents/nf/entities")).json()["entities"]
        assert entities == [{"entity": composed, "mentions": 2}]
        assert (await post(client, "c", text.replace(decomposed, composed))).status_code == 202
        tokens = (await wait_status(client, "c", "indexed"))["tokens"]
        assert (await client.get("/v1/documents/nf")).json()["tokens"] == tokens
        # A question typed either way asks the same thing.
        asked = [
            await answers(client, "nf", f"Later {name} rang @placeholder.")
            for name in (decomposed, composed)
        ]
        assert asked[0] == asked[1]
        # Where the text names her points into the text as posted, either way it was typed.
        [found] = await answers(client, "nf", "@placeholder rang the bell.")
        assert [text[start:end] for start, end in found["spans"]] == [composed, decomposed]


async def test_token_limit_is_checked_at_the_door(app_client: Any) -> None:
    async with app_client(modes=["linear"], max_document_tokens=60) as client:
        short = await post(client, "short", "Marigold Ashby rang the bell.")
        assert short.status_code == 202
        body = {"documents": [{"id": "ok", "text": APPENDIX[:40]}, {"id": "long", "text": HARBOUR}]}
        refused = await client.post("/v1/documents", json=body)
        assert refused.status_code == 413, refused.text
        error = refused.json()["error"]
        assert error["code"] == "document_too_long"
        assert error["detail"]["index"] == 1 and error["detail"]["max_document_tokens"] == 60
        assert (await client.get("/v1/documents/long")).status_code == 404
