"""One contract, run against the embedded store and against a real Redis."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import time

import pytest
import torch

from encoder.model.modes import MODES, READOUT_MODES
from encoder.model.state import DocumentState
from store.base import DocumentStore
from store.embedded import SqliteDocumentStore
from store.record import DocumentRecord, Status
from store.redis_store import RedisDocumentStore
from tests.store.states import make_state

K = 8


def make_record(doc_id: str, text_hash: str = "h1", modes=MODES, n: int = 5) -> DocumentRecord:
    return DocumentRecord(
        id=doc_id,
        text_hash=text_hash,
        status=Status.INDEXED,
        tokens=n,
        entities=["Elizabeth", "Mr. Darcy", "Pemberley"],
        mentions=[4, 2, 1],
        unplaced=["Lady Catherine"],
        candidates_not_found=["Wickham"],
        entity_slots=3,
        model_ids={mode: f"{mode}-k{K}-abc" for mode in modes},
        created_at=1_700_000_000.5,
        updated_at=1_700_000_001.25,
        states={mode: make_state(mode, K, n, seed=n) for mode in modes},
    )


def assert_same_state(got: DocumentState, want: DocumentState) -> None:
    assert (got.mode, got.n, got.k) == (want.mode, want.n, want.k)
    torch.testing.assert_close(got.last_hidden, want.last_hidden, rtol=1e-3, atol=1e-4)
    if want.memory is None:
        assert got.memory is None
    else:
        assert got.memory is not None
        torch.testing.assert_close(got.memory, want.memory, rtol=1e-3, atol=1e-3)
    if want.mentions is None:  # only the mentions mode keeps them
        assert got.mentions is None
    else:
        assert got.mentions is not None and torch.equal(got.mentions, want.mentions)


async def test_put_then_get_returns_the_record(store: DocumentStore) -> None:
    record = make_record("doc-1")
    assert await store.put(record)
    got = await store.get("doc-1")
    assert got is not None
    assert (got.id, got.text_hash, got.status, got.tokens) == ("doc-1", "h1", Status.INDEXED, 5)
    assert got.entities == record.entities and got.model_ids == record.model_ids
    assert (got.mentions, got.unplaced, got.candidates_not_found, got.entity_slots) == (
        [4, 2, 1],
        ["Lady Catherine"],
        ["Wickham"],
        3,
    )
    assert (got.created_at, got.updated_at, got.error) == (
        record.created_at,
        record.updated_at,
        None,
    )
    assert set(got.states) == set(MODES)
    for mode in MODES:
        assert_same_state(got.states[mode], record.states[mode])
    assert set(got.state_bytes) == set(MODES)
    # float16 by default: the softmax H of 5×8 values plus last_hidden, behind a small header.
    assert 2 * (K + 5 * K) < got.state_bytes["softmax"] < 2 * (K + 5 * K) + 64


async def test_a_record_of_the_four_earlier_modes_still_reads(store: DocumentStore) -> None:
    """Written before the mentions mode (one state key per mode, four of them): it reads
    whole, and a read that asks for every mode gets the four it has."""
    record = make_record("doc-4", modes=READOUT_MODES)
    assert await store.put(record)
    for modes in (None, MODES):
        got = await store.get("doc-4", modes=modes)
        assert got is not None and set(got.states) == set(READOUT_MODES)
        for mode in READOUT_MODES:
            assert_same_state(got.states[mode], record.states[mode])
    # Indexed again with five modes, and back to four: the mentions state comes and goes.
    assert await store.put(make_record("doc-4", n=7))
    got = await store.get("doc-4", modes=("mentions",))
    assert got is not None and set(got.states) == {"mentions"}
    assert_same_state(got.states["mentions"], make_record("doc-4", n=7).states["mentions"])
    assert await store.put(make_record("doc-4", modes=READOUT_MODES, n=9))
    got = await store.get("doc-4")
    assert got is not None and set(got.states) == set(READOUT_MODES)


async def test_get_reads_only_the_modes_asked_for(store: DocumentStore) -> None:
    await store.put(make_record("doc-1"))
    only_linear = await store.get("doc-1", modes=("linear",))
    assert only_linear is not None and set(only_linear.states) == {"linear"}
    meta_only = await store.get("doc-1", modes=())
    assert meta_only is not None and meta_only.states == {}
    assert set(meta_only.state_bytes) == set(MODES)  # sizes come with the metadata
    with pytest.raises(ValueError, match="unknown modes"):
        await store.get("doc-1", modes=("cubic",))


async def test_unknown_document_is_none(store: DocumentStore) -> None:
    assert await store.get("nobody") is None
    assert await store.delete("nobody") is False


async def test_get_many_keeps_order_and_marks_missing(store: DocumentStore) -> None:
    for i in range(3):
        await store.put(make_record(f"d{i}", n=i + 1))
    got = await store.get_many(["d2", "missing", "d0", "d2"], modes=("gated",))
    assert [r.id if r else None for r in got] == ["d2", None, "d0", "d2"]
    assert got[0] is not None and got[0].states["gated"].n == 3
    assert await store.get_many([]) == []
    many = await store.get_many([f"d{i % 1200}" for i in range(1200)], modes=())
    assert [r.id if r else None for r in many[:4]] == ["d0", "d1", "d2", None]
    assert sum(r is not None for r in many) == 3


async def test_put_replaces_metadata_and_drops_other_modes(store: DocumentStore) -> None:
    await store.put(make_record("doc-1"))
    newer = make_record("doc-1", text_hash="h2", modes=("linear",), n=9)
    newer.status, newer.error = Status.FAILED, "encoder exploded"
    assert await store.put(newer)
    got = await store.get("doc-1")
    assert got is not None and set(got.states) == {"linear"} and set(got.state_bytes) == {"linear"}
    assert (got.text_hash, got.tokens, got.status, got.error) == (
        "h2",
        9,
        "failed",
        "encoder exploded",
    )


async def test_queued_record_without_states(store: DocumentStore) -> None:
    queued = DocumentRecord(id="q", text_hash="h", status=Status.QUEUED)
    assert await store.put(queued)
    got = await store.get("q")
    assert got is not None and got.status is Status.QUEUED and got.states == {}
    assert got.created_at > 1e9 and got.updated_at > 1e9  # 0.0 means "now"


async def test_queued_lists_old_queued_records_only(store: DocumentStore) -> None:
    await store.put(DocumentRecord(id="q-1", text_hash="a", status=Status.QUEUED))
    await store.put(DocumentRecord(id="q-2", text_hash="b", status=Status.QUEUED))
    await store.put(make_record("i-1", text_hash="c"))
    later = time.time() + 60
    assert sorted(r.id for r in await store.queued(later, 100)) == ["q-1", "q-2"]
    assert len(await store.queued(later, 1)) == 1
    assert await store.queued(time.time() - 60, 100) == []  # none queued that long


async def test_expect_status_writes_only_over_that_status(store: DocumentStore) -> None:
    queued = DocumentRecord(id="doc-s", text_hash="h", status=Status.QUEUED, version=3)
    assert await store.put(queued)
    with pytest.raises(ValueError):
        await store.put(queued, expect_status=Status.QUEUED)  # needs the version too
    assert not await store.put(queued, expect_version=3, expect_status=Status.INDEXED)
    assert await store.put(queued, expect_version=3, expect_status=Status.QUEUED)
    assert not await store.put(queued, expect_version=4, expect_status=Status.QUEUED)


async def test_expect_version_guards_against_late_writes(store: DocumentStore) -> None:
    late = dataclasses.replace(make_record("doc-1", text_hash="a"), version=1)
    assert await store.put(late, expect_version=1) is False  # nothing stored yet
    assert await store.get("doc-1") is None
    # A -> B -> A: the text hash is A's again, the version is not.
    await store.put(DocumentRecord(id="doc-1", text_hash="a", status=Status.QUEUED, version=5))
    assert await store.put(late, expect_version=1) is False
    got = await store.get("doc-1")
    assert got is not None and got.version == 5 and got.states == {}
    assert await store.put(dataclasses.replace(late, version=5), expect_version=5)
    got = await store.get("doc-1", modes=())
    assert got is not None and got.status is Status.INDEXED and got.version == 5


async def test_a_record_without_a_version_reads_as_version_0(store: DocumentStore) -> None:
    await store.put(DocumentRecord(id="old", text_hash="h", status=Status.QUEUED))
    got = await store.get("old", modes=())
    assert got is not None and got.version == 0
    assert await store.put(DocumentRecord(id="old", text_hash="h", status=Status.FAILED),
                           expect_version=0)  # fmt: skip


async def test_new_versions_are_never_handed_out_twice(store: DocumentStore) -> None:
    # One call first: redis-py's asyncio cluster client discovers the cluster on first use,
    # and twenty first commands at once on a fresh client race inside it (a closed connection
    # surfaces as AttributeError). What is tested is the counter under concurrency.
    first = await store.new_versions(1)
    taken = await asyncio.gather(*(store.new_versions(n) for n in (1, 3, 1, 2) * 5))
    numbers = [v for r in taken for v in r]
    assert len(numbers) == len(set(numbers)) == 35 and min(numbers) > max(first)
    assert all(list(r) == sorted(r) and len(r) > 0 for r in taken)
    assert min(await store.new_versions(1)) > max(numbers)
    with pytest.raises(ValueError):
        await store.new_versions(0)


async def test_delete_removes_record_and_states(store: DocumentStore) -> None:
    await store.put(make_record("doc-1"))
    assert await store.delete("doc-1") is True
    assert await store.get("doc-1") is None
    await store.put(DocumentRecord(id="doc-1", text_hash="h", status=Status.QUEUED))
    got = await store.get("doc-1")
    assert got is not None and got.states == {} and got.state_bytes == {}


async def test_ids_that_look_like_keys_stay_distinct(store: DocumentStore) -> None:
    ids = ["x:y:meta", "x:y", "x", "x:y:state:linear", "a.b_c-d", "a"]
    for i, doc_id in enumerate(ids):
        await store.put(make_record(doc_id, text_hash=f"h{i}", modes=("none",)))
    got = await store.get_many(ids)
    assert [(r.id, r.text_hash) for r in got if r] == [(d, f"h{i}") for i, d in enumerate(ids)]


@pytest.mark.parametrize("doc_id", ["", "a}b{c", "a%7D", "é 文書", "-a", "x" * 129])
async def test_ids_outside_the_id_rule_are_refused(store: DocumentStore, doc_id: str) -> None:
    with pytest.raises(ValueError, match="document id"):
        await store.put(make_record(doc_id, modes=("none",)))
    with pytest.raises(ValueError, match="document id"):
        await store.get(doc_id)


async def test_malformed_records_are_refused_before_writing(store: DocumentStore) -> None:
    no_model = make_record("doc-1")
    no_model.model_ids.pop("gated")
    with pytest.raises(ValueError, match="model id"):
        await store.put(no_model)
    swapped = make_record("doc-1")
    swapped.states["linear"] = swapped.states["gated"]
    with pytest.raises(ValueError, match="holds a 'gated' state"):
        await store.put(swapped)
    with pytest.raises(ValueError):
        await store.get("")
    assert await store.get("doc-1") is None


async def test_readers_never_see_a_half_written_document(store: DocumentStore) -> None:
    await store.put(make_record("doc-1", text_hash="h1", n=1))
    done = asyncio.Event()

    async def write() -> None:
        for n in range(2, 30):
            modes = MODES if n % 2 else ("linear",)
            await store.put(make_record("doc-1", text_hash=f"h{n}", modes=modes, n=n))
        done.set()

    async def read() -> int:
        seen = 0
        while not done.is_set():
            got = await store.get("doc-1")
            assert got is not None
            # tokens, text hash and every state come from the same write
            assert got.text_hash == f"h{got.tokens}"
            assert {s.n for s in got.states.values()} == {got.tokens}
            assert set(got.states) == set(got.state_bytes)
            seen += 1
        return seen

    _, *reads = await asyncio.gather(write(), read(), read(), read())
    assert sum(reads) > 0


async def test_ping_answers(store: DocumentStore) -> None:
    await store.ping()


# A record as format 1 wrote it: no schema, mentions, unplaced, candidates_not_found or slots.
FORMAT_1_META = {
    "id": "old-1",
    "text_hash": "h-old",
    "status": "indexed",
    "tokens": 12,
    "entities": ["Elizabeth", "Mr. Darcy"],
    "model_ids": {},
    "error": None,
    "created_at": 1_600_000_000.0,
    "updated_at": 1_600_000_001.0,
    "state_bytes": {},
}


async def _write_raw_meta(store: DocumentStore, meta: dict[str, object]) -> None:
    raw = json.dumps(meta)
    if isinstance(store, SqliteDocumentStore):
        conn = store._writer
        conn.execute(
            "INSERT INTO documents (id, text_hash, meta) VALUES (?, ?, ?)",
            (meta["id"], meta["text_hash"], raw),
        )
    else:
        assert isinstance(store, RedisDocumentStore)
        await store.client.set(store.doc_key(str(meta["id"]), "meta"), raw.encode())
        await store.client.zadd(store.ids_key, {str(meta["id"]).encode(): 0})


async def test_a_format_1_record_still_reads(store: DocumentStore) -> None:
    await _write_raw_meta(store, FORMAT_1_META)
    got = await store.get("old-1")
    assert got is not None and got.entities == ["Elizabeth", "Mr. Darcy"] and got.tokens == 12
    assert (got.mentions, got.unplaced, got.candidates_not_found, got.entity_slots) == (
        [],
        [],
        [],
        None,
    )
    assert (await store.list_documents(10)).documents == [("old-1", Status.INDEXED)]


async def test_listing_pages_through_every_document_in_id_order(store: DocumentStore) -> None:
    ids = [f"doc-{i:02d}" for i in range(11)] + ["A", "z:1", "doc.x"]
    for doc_id in random.Random(0).sample(ids, len(ids)):
        await store.put(DocumentRecord(id=doc_id, text_hash="h", status=Status.QUEUED))
    await store.put(make_record("doc-03", modes=("linear",)))
    seen: list[tuple[str, Status]] = []
    cursor = None
    pages = 0
    while True:
        page = await store.list_documents(4, cursor)
        assert len(page.documents) <= 4
        seen += page.documents
        pages += 1
        if page.next_cursor is None:
            break
        assert page.next_cursor == page.documents[-1][0]
        cursor = page.next_cursor
    assert [doc_id for doc_id, _ in seen] == sorted(ids)
    assert pages == 4  # 14 documents: 4 + 4 + 4 + 2, and no empty last page
    assert dict(seen)["doc-03"] is Status.INDEXED and dict(seen)["A"] is Status.QUEUED


async def test_listing_skips_deleted_documents_and_ends_exactly(store: DocumentStore) -> None:
    assert (await store.list_documents(5)).documents == []
    assert (await store.list_documents(5)).next_cursor is None
    for i in range(6):
        await store.put(DocumentRecord(id=f"d{i}", text_hash="h", status=Status.QUEUED))
    assert await store.delete("d1") and await store.delete("d4")
    first = await store.list_documents(2)
    assert [d for d, _ in first.documents] == ["d0", "d2"] and first.next_cursor == "d2"
    last = await store.list_documents(2, first.next_cursor)
    assert [d for d, _ in last.documents] == ["d3", "d5"] and last.next_cursor is None
    # A late conditional write of a deleted document does not bring it back to the listing.
    assert not await store.put(make_record("d1", text_hash="h"), expect_version=0)
    assert [d for d, _ in (await store.list_documents(10)).documents] == ["d0", "d2", "d3", "d5"]
    with pytest.raises(ValueError, match="limit"):
        await store.list_documents(0)
