import asyncio
import sqlite3
from pathlib import Path

import pytest

from store.embedded import SqliteDocumentStore
from store.errors import StateCodecError, StoreError, StoreUnavailable
from store.factory import EMBEDDED_FILE, open_store
from tests.store.test_contract import assert_same_state, make_record


async def test_documents_survive_closing_and_reopening(tmp_path: Path) -> None:
    first = open_store("", data_dir=tmp_path / "data")
    record = make_record("doc-1")
    await first.put(record)
    await first.close()
    reopened = open_store("embedded", data_dir=tmp_path / "data")
    try:
        got = await reopened.get("doc-1", modes=("linear", "softmax"))
        assert got is not None and got.entities == record.entities
        for mode in ("linear", "softmax"):
            assert_same_state(got.states[mode], record.states[mode])
    finally:
        await reopened.close()


async def test_two_stores_on_one_file_see_each_others_writes(tmp_path: Path) -> None:
    # As an API process and a worker process would share the file.
    writer = SqliteDocumentStore(tmp_path / "s.sqlite3")
    reader = SqliteDocumentStore(tmp_path / "s.sqlite3")
    try:
        await asyncio.gather(*(writer.put(make_record(f"d{i}", n=i + 1)) for i in range(8)))
        got = await reader.get_many([f"d{i}" for i in range(8)], modes=("gated",))
        assert [r.states["gated"].n if r else None for r in got] == list(range(1, 9))
        assert await reader.delete("d0")
        assert await writer.get("d0") is None
    finally:
        await writer.close()
        await reader.close()


async def test_closed_store_is_unavailable(tmp_path: Path) -> None:
    store = SqliteDocumentStore(tmp_path / "s.sqlite3")
    await store.close()
    with pytest.raises(StoreUnavailable):
        await store.get("doc-1")
    with pytest.raises(StoreUnavailable):
        await store.ping()


async def test_corrupted_state_raises_instead_of_returning_numbers(tmp_path: Path) -> None:
    store = SqliteDocumentStore(tmp_path / "s.sqlite3")
    try:
        await store.put(make_record("doc-1"))
        with sqlite3.connect(store.path) as conn:
            query = "SELECT data FROM states WHERE doc_id = 'doc-1' AND mode = 'linear'"
            data = bytearray(conn.execute(query).fetchone()[0])
            data[40] ^= 0x10
            conn.execute("UPDATE states SET data = ? WHERE mode = 'linear'", (bytes(data),))
        with pytest.raises(StateCodecError, match="checksum"):
            await store.get("doc-1")
        got = await store.get("doc-1", modes=("gated",))  # the other states stay readable
        assert got is not None and set(got.states) == {"gated"}
    finally:
        await store.close()


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / EMBEDDED_FILE) as conn:
        conn.execute("PRAGMA user_version = 7")
    with pytest.raises(StoreError, match="schema version 7"):
        open_store("", data_dir=tmp_path)
