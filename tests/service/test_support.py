"""The answers' support (the question's words near the answer) and where the text names them."""

from __future__ import annotations

import pytest

from encoder.text.anonymise import anonymise_document, anonymise_query
from service.support import MAX_WINDOWS, mention_windows, question_terms, support
from store.record import DocumentRecord, Status, meta_from_json, meta_to_json
from tests.service.conftest import AppClient, wait_status

STORY = (
    "Halden Group buys Nordvik Shipping\n\n"
    "OSLO, March 14 - Halden Group agreed to buy Nordvik Shipping for 4 billion crowns. "
    "Nordvik's founder, Jan Haugen, rejected two earlier offers from Halden. "
    "The new debt was arranged by Fjord Bank, chief executive Kari Lund said in Oslo."
)


def test_support_is_the_share_of_the_question_near_the_answer() -> None:
    anon = anonymise_document(STORY, max_entities=20)
    windows = mention_windows(anon.tokens, len(anon.entities))
    slot = {name: i for i, name in enumerate(anon.entities)}
    terms = question_terms(anonymise_query("@placeholder arranged the new debt", anon.entities))
    assert terms == {"arranged", "new", "debt"}
    assert support(terms, windows[slot["Fjord Bank"]]) == 1.0
    assert support(terms, windows[slot["Kari Lund"]]) == 1.0  # "... said": beside it too
    assert support(terms, windows[slot["Jan Haugen"]]) == pytest.approx(1 / 3)  # "new"
    # The noun of a Which-question counts where the answer's name holds it.
    terms = question_terms(anonymise_query("the bank @placeholder arranged", anon.entities))
    assert support(terms, windows[slot["Fjord Bank"]], "Fjord Bank") == 1.0
    assert support(terms, windows[slot["Kari Lund"]], "Kari Lund") == 0.5
    # The other names a question mentions count as its words: Halden is near Jan Haugen.
    terms = question_terms(
        anonymise_query("@placeholder rejected two offers from Halden", anon.entities)
    )
    assert terms == {"rejected", "two", "offers", f"@entity{slot['Halden Group']}"}
    assert support(terms, windows[slot["Jan Haugen"]]) == 1.0
    assert support(terms, windows[slot["Kari Lund"]]) < 0.5
    assert support(frozenset(), windows[0]) == 0.0 and support(terms, []) is None


def test_windows_are_bounded_per_entity() -> None:
    text = " ".join(f"Anna met friend number {i} today." for i in range(3 * MAX_WINDOWS))
    anon = anonymise_document(text, max_entities=4)
    [windows] = mention_windows(anon.tokens, len(anon.entities))
    assert len(windows) == MAX_WINDOWS
    assert "met" in windows[0].split() and "today" in windows[0].split()


def test_a_format_3_record_keeps_spans_and_contexts() -> None:
    record = DocumentRecord(
        "d", "h", Status.INDEXED, tokens=3, entities=["Anna"], chars=12, spans=[[0, 4]],
        contexts=[["met tom"]],
    )  # fmt: skip
    back = meta_from_json(meta_to_json(record, {}, 1.0))
    assert (back.chars, back.spans, back.contexts) == (12, [[0, 4]], [["met tom"]])
    older = meta_from_json(b'{"id": "d", "text_hash": "h", "status": "indexed", "tokens": 3,'
        b' "entities": ["Anna"], "model_ids": {}, "error": null, "created_at": 1,'
        b' "updated_at": 1, "state_bytes": {}}')  # fmt: skip
    assert (older.chars, older.spans, older.contexts) == (0, [], [])


async def test_answers_carry_support_and_where_the_text_names_them(
    app_client: AppClient,
) -> None:
    async with app_client(modes=["linear"]) as client:
        await client.post("/v1/documents", json={"id": "deal", "text": STORY})
        await wait_status(client, "deal", "indexed")
        questions = ["Which bank arranged the new debt?", "Who is Barack Obama?"]
        body = {"queries": questions, "top_k": 20}
        response = await client.post("/v1/documents/deal/answers", json=body)
        assert response.status_code == 200, response.text
        arranged, obama = response.json()["results"]
        by_name = {a["entity"]: a for a in arranged["answers"]}
        assert by_name["Fjord Bank"]["support"] == 1.0
        assert max(a["support"] for a in arranged["answers"]) == 1.0
        # A question about someone the story never mentions: no answer is supported.
        assert obama["answers"] and all(a["support"] == 0.0 for a in obama["answers"])
        # Spans are offsets into the text: each one is a mention of its entity.
        halden = by_name["Halden Group"]
        assert [STORY[s:e] for s, e in halden["spans"]] == ["Halden Group"] * 2 + ["Halden"]
        assert [STORY[s:e] for s, e in by_name["Oslo"]["spans"]] == ["OSLO", "Oslo"]

        # Appended text's mentions are counted after the text before it.
        more = " Kari Lund thanked Fjord Bank."
        response = await client.post("/v1/documents/deal/text", json={"text": more})
        assert response.status_code == 200, response.text
        body = {"queries": ["Who thanked Fjord Bank?"], "top_k": 20}
        answers = (await client.post("/v1/documents/deal/answers", json=body)).json()
        lund = next(a for a in answers["results"][0]["answers"] if a["entity"] == "Kari Lund")
        whole = STORY + more
        assert [whole[s:e] for s, e in lund["spans"]] == ["Kari Lund", "Kari Lund"]
        assert lund["support"] == pytest.approx(1.0)
