"""The Python client against a real `cheapqa serve` subprocess, sync and async: index, ask,
status and delete. client/tests holds the client's own tests (parsing, errors, retries)."""

from __future__ import annotations

import pytest

from cheapqa_client import AsyncClient, CheapqaError, Client, DocumentInfo, NewDocument
from tests.service.texts import DOCUMENTS, QUESTIONS


@pytest.mark.slow
def test_index_wait_ask_status_and_delete(live_server_url: str) -> None:
    with Client(live_server_url) as client:
        status = client.index(DOCUMENTS["harbour"], id="harbour", wait=True, timeout=60)
        assert isinstance(status, DocumentInfo)
        assert status.status == "indexed" and status.entities > 0
        assert set(status.bytes_stored) == set(status.modes)
        answers = client.ask("harbour", QUESTIONS["harbour"][:2], mode="softmax", top_k=2)
        assert answers.mode == "softmax" and len(answers.results) == 2
        names = {a.entity for r in answers.results for a in r.answers}
        assert names and all(name in DOCUMENTS["harbour"] for name in names)
        assert answers.server_ms is not None and answers.server_ms > 0
        assert client.status("harbour").text_hash == status.text_hash
        client.delete("harbour")
        with pytest.raises(CheapqaError) as raised:
            client.status("harbour")
        assert (raised.value.status_code, raised.value.code) == (404, "document_not_found")
        with pytest.raises(CheapqaError) as raised:
            client.ask("orchard", "no placeholder here")
        assert raised.value.status_code in (400, 404)


@pytest.mark.slow
async def test_the_async_client_against_the_server(live_server_url: str) -> None:
    async with AsyncClient(live_server_url) as client:
        [status] = await client.index_many(
            [NewDocument(DOCUMENTS["orchard"], "orchard")], timeout=60
        )
        assert status.status == "indexed"
        answers = await client.ask("orchard", QUESTIONS["orchard"][0], top_k=3)
        assert len(answers.results[0].answers) == 3
        await client.delete("orchard")
