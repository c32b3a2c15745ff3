"""The ingestion and limits audit (issue 14): one test per finding, each failing before its fix.

Fault tests run a redis-server of their own (`private_redis`) and stop it; every wait is
bounded. RELIABILITY.md ("Ingestion and limits audit") lists each finding, fix and test.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from bench.spawn import free_port
from encoder.model.checkpoint import load_checkpoint, save_checkpoint
from encoder.model.vocab import Vocabulary
from service.errors import Overloaded, install_error_handlers
from service.ingest import worker as worker_module
from service.ingest.worker import IngestWorker
from service.readers import load_models
from store.factory import open_queue, open_store
from store.queue.base import IngestJob, QueueUnavailable
from store.record import DocumentRecord, Status, text_hash
from tests.redis_server import RedisProcess
from tests.service.conftest import SettingsFactory, wait_status
from tests.service.texts import HARBOUR, ORCHARD

QUESTION = "@placeholder kept the lighthouse on Gull Rock."


async def post(client: httpx.AsyncClient, doc_id: str, text: str, **kw: Any) -> httpx.Response:
    return await client.post("/v1/documents", json={"id": doc_id, "text": text}, **kw)


# --- 1. record + enqueue: a 503 never leaves a document queued forever -------------------


async def test_retry_after_failed_enqueue_indexes_the_document(
    app_client: Any, private_redis: RedisProcess
) -> None:
    admin = redis.Redis.from_url(private_redis.url)
    # The production claim-idle time: a retry comes well within it.
    async with app_client(
        modes=["linear"], store_url=private_redis.url, serve_worker=True,
        ingest_claim_idle_ms=30_000,
    ) as client:  # fmt: skip
        admin.execute_command("ACL", "SETUSER", "default", "-xadd")
        try:
            failed = await post(client, "a", HARBOUR)
        finally:
            admin.execute_command("ACL", "SETUSER", "default", "+xadd")
        assert failed.status_code == 503, failed.text
        retry = await post(client, "a", HARBOUR)
        assert retry.status_code == 202, retry.text
        assert retry.json()["documents"][0]["enqueued"] is True
        await wait_status(client, "a", "indexed", timeout_s=20)
    admin.close()


async def test_failed_reindex_keeps_the_indexed_state(
    app_client: Any, private_redis: RedisProcess
) -> None:
    admin = redis.Redis.from_url(private_redis.url)
    async with app_client(
        modes=["linear"], store_url=private_redis.url, serve_worker=True
    ) as client:
        assert (await post(client, "b", HARBOUR)).status_code == 202
        await wait_status(client, "b", "indexed")
        admin.execute_command("ACL", "SETUSER", "default", "-xadd")
        try:
            failed = await post(client, "b", ORCHARD)
        finally:
            admin.execute_command("ACL", "SETUSER", "default", "+xadd")
        assert failed.status_code == 503, failed.text
        info = (await client.get("/v1/documents/b")).json()
        assert info["status"] == "indexed" and info["text_hash"] == text_hash(HARBOUR)
        answer = await client.post("/v1/documents/b/answers", json={"queries": [QUESTION]})
        assert answer.status_code == 200, answer.text
    admin.close()


async def test_embedded_retry_after_failed_enqueue_and_durable_queue(
    app_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with app_client(modes=["linear"], ingest_claim_idle_ms=30_000) as client:
        queue = client.app.state.runtime.queue  # type: ignore[attr-defined]
        real = queue.enqueue

        async def down(job: IngestJob) -> str:
            raise QueueUnavailable("ingestion queue unavailable: simulated")

        monkeypatch.setattr(queue, "enqueue", down)
        assert (await post(client, "e", HARBOUR)).status_code == 503
        monkeypatch.setattr(queue, "enqueue", real)
        retry = await post(client, "e", HARBOUR)
        assert retry.status_code == 202 and retry.json()["documents"][0]["enqueued"] is True
        await wait_status(client, "e", "indexed")
        # The queue commits as durably as the store: FULL (2), not NORMAL (1).
        assert queue._db.execute("PRAGMA synchronous").fetchone()[0] == 2


async def test_sweeper_fails_a_queued_record_that_lost_its_entry(
    make_settings: SettingsFactory,
) -> None:
    settings = make_settings(modes=["linear"], ingest_sweep_after_ms=100)
    store = open_store("", data_dir=settings.data_dir, dtype="float32")
    queue = open_queue(settings)
    try:
        # What a crash between the record and the enqueue leaves: a record, no entry.
        await store.put(DocumentRecord(id="orphan", text_hash="h", status=Status.QUEUED))
        worker = IngestWorker(settings, store, queue, load_models(settings), consumer="w")
        await asyncio.sleep(0.2)
        await worker.sweep()
        record = await store.get("orphan", modes=())
        assert record is not None and record.status == Status.FAILED
        assert record.error is not None and "post it again" in record.error
    finally:
        await queue.close()
        await store.close()


async def test_entry_id_write_never_clobbers_a_fast_worker(
    rig: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from service.indexing import IndexingService
    from service.readers import ServedModels
    from service.schemas import DocumentIn

    settings, store, queue, worker = rig
    real = queue.enqueue

    async def enqueue_then_index(job: IngestJob) -> str:
        entry_id = await real(job)
        await drain(queue, worker, rounds=1)  # indexed before the API notes the entry id
        return entry_id

    monkeypatch.setattr(queue, "enqueue", enqueue_then_index)
    docs = [DocumentIn(id="fast", text=HARBOUR)]
    await IndexingService(settings, store, queue, ServedModels(worker.models)).index(docs)
    record = await store.get("fast", modes=None)
    assert record is not None and record.status == Status.INDEXED and record.states


async def test_reindex_whose_record_is_marked_while_the_worker_encodes(
    rig: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _settings, store, queue, worker = rig
    await enqueue_document(store, queue, "r", HARBOUR)
    await drain(queue, worker)
    new = text_hash(ORCHARD)
    [old, version] = await store.new_versions(2)
    indexed = await store.get("r", modes=None)
    assert await store.put(dataclasses.replace(indexed, version=old))
    # The API's order for an indexed document: the job first (replacing the old version) ...
    await queue.enqueue(IngestJob("r", ORCHARD, new, version=version, replaces=old))
    loop = asyncio.get_running_loop()
    real = worker_module.encode_group
    marked = DocumentRecord(id="r", text_hash=new, status=Status.QUEUED, version=version)

    def encode_while_the_api_marks(models: Any, token_lists: Any) -> Any:
        # ... then the record, written while the worker encodes (after it read the record).
        mark = store.put(marked, expect_version=old)
        assert asyncio.run_coroutine_threadsafe(mark, loop).result(10)
        return real(models, token_lists)

    monkeypatch.setattr(worker_module, "encode_group", encode_while_the_api_marks)
    await drain(queue, worker, rounds=1)
    record = await store.get("r", modes=())
    assert record is not None and record.status == Status.INDEXED and record.text_hash == new
    assert await queue.depth() == 0


# --- 2. append precondition -------------------------------------------------------------


async def test_append_with_expected_hash_is_applied_once(app_client: Any) -> None:
    async with app_client(modes=["linear"]) as client:
        await post(client, "p", HARBOUR)
        before = await wait_status(client, "p", "indexed")
        body = {"text": "Marigold waved from the pier.", "expected_text_hash": before["text_hash"]}
        first = await client.post("/v1/documents/p/text", json=body)
        assert first.status_code == 200, first.text
        again = await client.post("/v1/documents/p/text", json=body)
        assert again.status_code == 412, again.text
        assert again.json()["error"]["code"] == "precondition_failed"
        after = (await client.get("/v1/documents/p")).json()
        assert after["tokens"] == first.json()["tokens"]


# --- 3. key and size checked before the body is read ------------------------------------


async def raw_post(
    app: Any,
    path: str,
    chunks: list[bytes],
    headers: list[tuple[bytes, bytes]],
    complete: bool = True,
) -> tuple[int, int, dict[str, str]]:
    """Sends a body chunk by chunk through the ASGI app; (status, chunks read, headers).
    Not `complete`: the last chunk says more is coming, and nothing more comes."""
    read = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal read
        if read < len(chunks):
            read += 1
            return {"type": "http.request", "body": chunks[read - 1],
                    "more_body": read < len(chunks) or not complete}  # fmt: skip
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "headers": [(b"host", b"test"), (b"content-type", b"application/json"), *headers],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80), "root_path": "",
        "state": {},
    }  # fmt: skip
    await asyncio.wait_for(app(scope, receive, send), 10)
    start = next(m for m in sent if m["type"] == "http.response.start")
    hdrs = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    return start["status"], read, hdrs


async def test_key_and_size_are_checked_before_the_body_is_read(app_client: Any) -> None:
    chunk = b" " * 100_000
    async with app_client(modes=["linear"], api_keys=["k1"], max_body_bytes=250_000) as client:
        app = client.app  # type: ignore[attr-defined]
        status, read, _ = await raw_post(app, "/v1/documents", [chunk] * 10, [])
        assert (status, read) == (401, 0)
        auth = (b"authorization", b"Bearer k1")
        declared = (b"content-length", b"1000000")
        status, read, _ = await raw_post(app, "/v1/documents", [chunk] * 10, [auth, declared])
        assert (status, read) == (413, 0)
        # Chunked (no Content-Length): stopped once the count passes the limit.
        status, read, _ = await raw_post(app, "/v1/documents", [chunk] * 10, [auth])
        assert status == 413 and read <= 3


# --- 4. cumulative cap on appends -------------------------------------------------------


async def test_append_past_max_document_tokens_is_413(app_client: Any) -> None:
    async with app_client(modes=["linear"], max_document_tokens=200) as client:
        await post(client, "t", HARBOUR)
        before = await wait_status(client, "t", "indexed")
        assert before["tokens"] < 200
        grow = {"text": " ".join(["Marigold waved from the pier."] * 12)}
        response = await client.post("/v1/documents/t/text", json=grow)
        assert response.status_code == 413, response.text
        assert (await client.get("/v1/documents/t")).json()["tokens"] == before["tokens"]


# --- 5. backpressure, lean dead letters, token-less text at the API ---------------------


async def test_full_ingest_queue_answers_429_with_retry_after(app_client: Any) -> None:
    async with app_client(modes=["linear"], serve_worker=False, ingest_max_queue_depth=3) as c:
        for i in range(3):
            assert (await post(c, f"q{i}", f"{HARBOUR} {i}")).status_code == 202
        full = await post(c, "q3", f"{HARBOUR} 3")
        assert full.status_code == 429, full.text
        assert int(full.headers["retry-after"]) >= 1
        assert (await c.get("/v1/documents/q3")).status_code == 404


async def test_ingest_queue_past_its_bytes_answers_429(app_client: Any) -> None:
    async with app_client(modes=["linear"], serve_worker=False, ingest_max_queue_bytes=100) as c:
        assert (await post(c, "b0", HARBOUR)).status_code == 202  # the queue was empty
        full = await post(c, "b1", ORCHARD)
        assert full.status_code == 429 and full.json()["error"]["code"] == "ingest_queue_full"


async def test_tokenless_document_is_refused_at_the_api(app_client: Any) -> None:
    async with app_client(modes=["linear"]) as client:
        response = await post(client, "nothing", "___ __ _")
        assert response.status_code == 422, response.text
        assert (await client.get("/v1/documents/nothing")).status_code == 404


def test_overloaded_answers_carry_retry_after() -> None:
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    app = FastAPI()
    install_error_handlers(app)

    @app.get("/busy")
    async def busy() -> None:
        raise Overloaded("the query queue is full")

    response = TestClient(app).get("/busy")
    assert response.status_code == 429 and int(response.headers["retry-after"]) >= 1


@pytest.fixture(params=["embedded", "redis"])
async def rig(request: pytest.FixtureRequest, make_settings: SettingsFactory) -> AsyncIterator[Any]:
    store_url = "" if request.param == "embedded" else request.getfixturevalue("redis_url")
    settings = make_settings(
        modes=["linear"], ingest_max_deliveries=1, store_url=store_url,
        key_prefix=f"a-{uuid.uuid4().hex[:8]}",
    )  # fmt: skip
    store = open_store(
        settings.store_url, data_dir=settings.data_dir, key_prefix=settings.key_prefix,
        dtype="float32", timeout_s=2.0,
    )  # fmt: skip
    queue = open_queue(settings)
    worker = IngestWorker(settings, store, queue, load_models(settings), consumer="w1")
    yield settings, store, queue, worker
    await queue.close()
    await store.close()


async def enqueue_document(store: Any, queue: Any, doc_id: str, text: str) -> None:
    h = text_hash(text)
    await store.put(DocumentRecord(id=doc_id, text_hash=h, status=Status.QUEUED))
    await queue.enqueue(IngestJob(doc_id, text, h))


async def drain(queue: Any, worker: IngestWorker, rounds: int = 2) -> None:
    for _ in range(rounds):
        deliveries = await queue.read(worker.consumer, 16, 50)
        if deliveries:
            await worker.process(deliveries)


def raw_dead_letters(settings: Any, queue: Any) -> list[bytes]:
    """Every stored dead letter as raw bytes, whatever its format."""
    if settings.store_url:
        client = redis.Redis.from_url(settings.store_url)
        try:
            entries = client.xrange(f"{settings.key_prefix}:ingest:dead")
        finally:
            client.close()
        return [b"".join(k + v for k, v in fields.items()) for _eid, fields in entries]
    db = sqlite3.connect(queue.path)
    try:
        rows = db.execute("SELECT * FROM dead_letters").fetchall()
    finally:
        db.close()
    return [repr(row).encode() for row in rows]


async def test_dead_letters_keep_no_text(rig: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings, store, queue, worker = rig

    def explode(models: Any, token_lists: Any) -> Any:
        raise RuntimeError("simulated encoder failure")

    monkeypatch.setattr(worker_module, "encode_group", explode)
    await enqueue_document(store, queue, "dl", ORCHARD)
    await drain(queue, worker)
    [letter] = await queue.dead_letters()
    assert letter["doc_id"] == "dl" and letter["text_hash"] == text_hash(ORCHARD)
    assert "simulated encoder failure" in letter["error"]
    raw = raw_dead_letters(settings, queue)
    assert len(raw) == 1 and b"honey" not in raw[0]


# --- 6. one malformed entry does not block its batch-mates ------------------------------


async def test_malformed_entry_is_dead_lettered_alone(rig: Any) -> None:
    settings, store, queue, worker = rig
    if settings.store_url:
        client = redis.Redis.from_url(settings.store_url)
        client.xadd(f"{settings.key_prefix}:ingest", {b"job": b"not json"})
        client.close()
    else:
        db = sqlite3.connect(queue.path)
        db.execute("INSERT INTO entries (job) VALUES (?)", (b"not json",))
        db.commit()
        db.close()
    docs = {"m1": HARBOUR, "m2": ORCHARD, "m3": HARBOUR + " Tobias waved."}
    for doc_id, text in docs.items():
        await enqueue_document(store, queue, doc_id, text)
    await drain(queue, worker)
    for doc_id in docs:
        record = await store.get(doc_id, modes=())
        assert record is not None and record.status == Status.INDEXED, doc_id
    [letter] = await queue.dead_letters()
    assert "malformed" in letter["error"]
    assert await queue.depth() == 0


# --- 7. a long batch keeps its lease ----------------------------------------------------


async def test_a_slow_batch_is_not_redelivered_while_it_runs(
    rig: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, store, queue, worker = rig
    real = worker_module.encode_group

    def slow(models: Any, token_lists: Any) -> Any:
        time.sleep(4 * settings.ingest_claim_idle_ms / 1000)  # far past the claim-idle time
        return real(models, token_lists)

    monkeypatch.setattr(worker_module, "encode_group", slow)
    await enqueue_document(store, queue, "slow", HARBOUR)
    other = open_queue(settings)  # another worker's queue, reading meanwhile
    try:
        [delivery] = await queue.read(worker.consumer, 16, 50)
        task = asyncio.create_task(worker.process([delivery]))
        stolen = []
        while not task.done():
            stolen += await other.read("thief", 16, 50)
            await asyncio.sleep(0.05)
        await task
        assert stolen == []
        record = await store.get("slow", modes=())
        assert record is not None and record.status == Status.INDEXED
    finally:
        await other.close()


# --- 8. dead consumers leave the group --------------------------------------------------


async def test_idle_consumers_without_pending_entries_are_removed(redis_url: str) -> None:
    from store.queue.redis_stream import GROUP, RedisStreamQueue

    prefix = f"g-{uuid.uuid4().hex[:8]}"

    def make() -> RedisStreamQueue:
        return RedisStreamQueue(
            redis_url, key_prefix=prefix, timeout_s=1.0, claim_idle_ms=60_000,
            consumer_idle_ms=200,
        )  # fmt: skip

    gone, holder, survivor = make(), make(), make()
    try:
        for i in range(2):
            await gone.enqueue(IngestJob(f"d{i}", "Text.", f"h{i}"))
        [first] = await gone.read("gone", 1, 50)
        await gone.ack([first.entry_id])  # a consumer that finished its work, then died
        [held] = await holder.read("holder", 1, 50)  # one that died holding an entry
        await asyncio.sleep(0.4)
        await survivor.read("survivor", 1, 50)
        client = redis.Redis.from_url(redis_url)
        try:
            names = {c["name"] for c in client.xinfo_consumers(f"{prefix}:ingest", GROUP)}
        finally:
            client.close()
        assert b"gone" not in names and "gone" not in names
        assert b"holder" in names or "holder" in names  # never one with pending entries
        assert await survivor.is_pending(held.entry_id)
    finally:
        for q in (gone, holder, survivor):
            await q.close()


# --- 9. exposure ------------------------------------------------------------------------


def test_open_bind_without_keys_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    from service.app import serve
    from service.settings import Settings

    started: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: started.append(kw))
    with pytest.raises(ValueError, match="allow_open_bind"):
        serve(Settings(host="0.0.0.0"))
    assert started == []
    serve(Settings(host="0.0.0.0", api_keys=["k"]))
    serve(Settings(host="0.0.0.0", allow_open_bind=True))
    serve(Settings(host="127.0.0.1"))
    assert len(started) == 3
    # The head deadline's protocol, no connection-counting limit (the guard counts requests).
    assert all(kw["http"].endswith("HeadDeadline") and "limit_concurrency" not in kw
               for kw in started)  # fmt: skip


async def test_ops_routes_behind_the_key_and_no_host_header_in_urls(app_client: Any) -> None:
    async with app_client(
        ready=False, modes=["linear"], api_keys=["k1"], protect_ops_routes=True,
        public_base_url="https://qa.example.com",
    ) as client:  # fmt: skip
        auth = {"authorization": "Bearer k1"}
        for path in ("/metrics", "/readyz", "/openapi.json", "/docs"):
            assert (await client.get(path)).status_code == 401, path
        assert (await client.get("/healthz")).status_code == 200
        deadline = time.monotonic() + 20
        while (await client.get("/readyz", headers=auth)).status_code != 200:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        response = await client.post(
            "/v1/documents", json={"id": "u", "text": HARBOUR},
            headers={**auth, "host": "evil.example"},
        )  # fmt: skip
        assert response.status_code == 202
        url = response.json()["documents"][0]["status_url"]
        assert url == "https://qa.example.com/v1/documents/u"


async def test_unavailable_answers_name_no_address_or_path(app_client: Any) -> None:
    port = free_port()  # nothing listens there
    async with app_client(
        ready=False, modes=["linear"], store_url=f"redis://127.0.0.1:{port}/0"
    ) as c:
        for response in (await c.get("/v1/documents/x"), await c.get("/readyz"),
                         await post(c, "x", HARBOUR)):  # fmt: skip
            assert response.status_code == 503, response.text
            assert str(port) not in response.text and "127.0.0.1" not in response.text


def test_config_prints_keys_masked(capsys: pytest.CaptureFixture[str]) -> None:
    from cli.config import _run
    from service.settings import Settings

    _run(None, Settings(api_keys=["very-secret-key"]))  # type: ignore[arg-type]
    printed = capsys.readouterr().out
    assert "very-secret-key" not in printed and json.loads(printed)["api_keys"]


async def test_a_trickled_body_times_out_with_408(app_client: Any) -> None:
    async with app_client(modes=["linear"], body_timeout_s=0.3) as client:
        app = client.app  # type: ignore[attr-defined]
        # raw_post's receive hangs after the chunks: the rest of the body never comes.
        status, read, _ = await raw_post(
            app, "/v1/documents", [b'{"text": "Ha'], [], complete=False
        )
        assert status == 408 and read == 1


# --- 10. corrupt metadata, failed model loading, model ids ------------------------------


async def test_corrupt_metadata_is_a_clean_error_and_a_post_heals_it(
    app_client: Any, redis_url: str
) -> None:
    prefix = f"c-{uuid.uuid4().hex[:8]}"
    client_r = redis.Redis.from_url(redis_url)
    async with app_client(
        modes=["linear"], store_url=redis_url, serve_worker=True, key_prefix=prefix
    ) as client:
        for doc_id, value in (("bad-json", b"{not json"), ("old-schema", b'{"id": "x"}')):
            client_r.set(f"{prefix}:doc:{{{doc_id}}}:meta", value)
            got = await client.get(f"/v1/documents/{doc_id}")
            assert got.status_code == 500 and got.json()["error"]["code"] == "corrupt_record"
            assert (await post(client, doc_id, HARBOUR)).status_code == 202
            await wait_status(client, doc_id, "indexed")
    client_r.close()


async def test_failed_model_loading_fails_post_and_health(app_client: Any, tmp_path: Path) -> None:
    empty = tmp_path / "no-checkpoints"
    empty.mkdir()
    async with app_client(ready=False, modes=["linear"], checkpoint_dir=empty) as client:
        runtime = client.app.state.runtime  # type: ignore[attr-defined]
        deadline = time.monotonic() + 10
        while runtime.models.error is None and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert runtime.models.error is not None
        response = await post(client, "x", HARBOUR)
        assert response.status_code == 503, response.text
        assert (await client.get("/healthz")).status_code == 503


def test_model_id_covers_vocabulary_and_config(checkpoint_dir: Path, tmp_path: Path) -> None:
    ckpt = load_checkpoint(checkpoint_dir / "linear.pt")
    tokens = list(ckpt.vocab.tokens)
    i, j = len(tokens) - 1, len(tokens) - 2
    tokens[i], tokens[j] = tokens[j], tokens[i]  # same size, same weights, other words
    save_checkpoint(tmp_path / "swapped.pt", ckpt.model, Vocabulary(tokens), ckpt.meta)
    assert load_checkpoint(tmp_path / "swapped.pt").model_id != ckpt.model_id
    ckpt.model.config.__dict__["dropout"] = 0.5  # same weights, another config
    save_checkpoint(tmp_path / "config.pt", ckpt.model, ckpt.vocab, ckpt.meta)
    assert load_checkpoint(tmp_path / "config.pt").model_id != ckpt.model_id
