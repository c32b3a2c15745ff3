"""A worker killed with SIGKILL in the middle of a batch loses nothing and corrupts nothing.

500 documents are posted through the API onto the Redis Stream. One `cheapqa worker` process
(the victim) starts indexing them; once it has acked some and holds un-acked entries (seen in
XPENDING), it is killed with SIGKILL. A second worker takes over the dead consumer's entries
(XAUTOCLAIM after `ingest_claim_idle_ms`) and the rest of the stream. At the end every
document is `indexed`, every stored state equals encoding that document alone, nothing is
pending or dead-lettered, and documents the victim had written before dying were not
written again.
"""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from bench.spawn import CheapqaProcess
from service.readers import load_models
from store.base import DocumentStore
from store.factory import open_store
from store.queue.base import IngestJob
from store.queue.redis_stream import GROUP, RedisStreamQueue
from store.record import Status
from tests.redis_server import RedisProcess
from tests.reliability.corpus import encode_alone, make_documents, state_difference
from tests.service.helpers import base_env

pytestmark = pytest.mark.slow

DOCUMENTS = 500
BATCH = 32  # worker batch: big enough that a kill lands inside one
POST_BATCH = 50


def pending_of(client: redis.Redis, stream: str, consumer: str) -> list[dict[str, Any]]:
    try:
        return list(
            client.xpending_range(
                stream, GROUP, min="-", max="+", count=10_000, consumername=consumer
            )
        )
    except redis.ResponseError as exc:
        if "NOGROUP" in str(exc):  # no worker has read yet
            return []
        raise


def doc_of_entry(client: redis.Redis, stream: str, entry_id: bytes | str) -> str | None:
    """The document a stream entry carries; None once it is acked (ack deletes it)."""
    entries: Any = client.xrange(stream, min=entry_id, max=entry_id, count=1)
    return IngestJob.from_json(entries[0][1][b"job"]).doc_id if entries else None


async def stop_with_entries_in_hand(
    raw: redis.Redis, store: DocumentStore, stream: str, victim: CheapqaProcess
) -> bool:
    """Freezes the victim (SIGSTOP) at a moment it holds un-acked entries, best when it has
    already written some of them (a redelivery must then not write them again); returns
    whether it was caught so. Frozen, it cannot ack between the look and the kill."""
    deadline = time.monotonic() + 60
    while True:
        assert victim.proc.poll() is None, victim.output()
        assert time.monotonic() < deadline, f"the victim never held entries\n{victim.output()}"
        # Mid-stream: after the victim has acked a couple of batches.
        acked = DOCUMENTS - raw.xlen(stream)
        if acked >= 2 * BATCH and pending_of(raw, stream, "victim"):
            victim.proc.send_signal(signal.SIGSTOP)
            await asyncio.sleep(0.02)  # commands already sent land before the look
            held = pending_of(raw, stream, "victim")
            found = [doc_of_entry(raw, stream, e["message_id"]) for e in held]
            metas = await store.get_many([d for d in found if d is not None], modes=())
            if any(m is not None and m.status == Status.INDEXED for m in metas):
                return True
            # Past half the documents, any batch in hand will do.
            if held and raw.xlen(stream) < DOCUMENTS // 2:
                return False
            victim.proc.send_signal(signal.SIGCONT)
        await asyncio.sleep(0.001)


async def post_all(client: httpx.AsyncClient, texts: dict[str, str]) -> None:
    items = list(texts.items())
    for start in range(0, len(items), POST_BATCH):
        batch = [{"id": i, "text": t} for i, t in items[start : start + POST_BATCH]]
        response = await client.post("/v1/documents", json={"documents": batch})
        assert response.status_code == 202, response.text


async def test_sigkill_mid_batch_loses_and_corrupts_nothing(
    app_client: Any,
    make_settings: Any,
    checkpoint_dir: Path,
    processes: list[CheapqaProcess],
    private_redis: RedisProcess,
    tmp_path: Path,
) -> None:
    redis_url = private_redis.url
    prefix = f"crash-{uuid.uuid4().hex[:8]}"
    settings = make_settings(store_url=redis_url, key_prefix=prefix, serve_worker=False)
    # The queue's own key names (not spelled out here); only its names are used.
    names = RedisStreamQueue(redis_url, key_prefix=prefix, timeout_s=1.0, claim_idle_ms=500)
    stream, dead_stream = names.stream, names.dead_stream
    raw = redis.Redis.from_url(redis_url)
    store = open_store(redis_url, data_dir=tmp_path, key_prefix=prefix, timeout_s=2.0)
    env = base_env(checkpoint_dir, tmp_path / "data")
    env.update(
        CHEAPQA_STORE_URL=redis_url,
        CHEAPQA_KEY_PREFIX=prefix,
        CHEAPQA_INGEST_MAX_BATCH=str(BATCH),
        CHEAPQA_INGEST_CLAIM_IDLE_MS="500",
        CHEAPQA_INGEST_BLOCK_MS="100",
        # Tiny models on a shared 2-core machine: one torch thread each, not a thread fight.
        OMP_NUM_THREADS="1",
    )
    texts = make_documents(DOCUMENTS, seed=7)
    started = time.monotonic()
    try:
        async with app_client(store_url=redis_url, key_prefix=prefix, serve_worker=False) as client:
            victim = CheapqaProcess(
                ["worker", "--log-level", "warning"],
                {**env, "CHEAPQA_CONSUMER_NAME": "victim"},
                tmp_path / "victim.log",
                inherit_settings=False,
            )
            processes.append(victim)
            await post_all(client, texts)
            caught_writing = await stop_with_entries_in_hand(raw, store, stream, victim)
            victim.proc.send_signal(signal.SIGKILL)
            victim.proc.wait(10)
            # The dead process held exactly what XPENDING now lists under its name.
            held = pending_of(raw, stream, "victim")
            assert held, "the victim died holding no entries"
            held_docs = [doc_of_entry(raw, stream, e["message_id"]) for e in held]
            metas = await store.get_many(list(texts), modes=())
            written_before_kill = {
                r.id: r.updated_at for r in metas if r is not None and r.status == Status.INDEXED
            }
            assert None not in held_docs  # pending entries of a dead consumer stay
            written_not_acked = [d for d in held_docs if d in written_before_kill]
            assert written_not_acked or not caught_writing

            killed_at = time.monotonic()
            survivor = CheapqaProcess(
                ["worker", "--log-level", "warning"],
                {**env, "CHEAPQA_CONSUMER_NAME": "survivor"},
                tmp_path / "survivor.log",
                inherit_settings=False,
            )
            processes.append(survivor)
            deadline = time.monotonic() + 120
            while True:
                metas = await store.get_many(list(texts), modes=())
                statuses = [r.status if r else None for r in metas]
                if all(s == Status.INDEXED for s in statuses) and raw.xlen(stream) == 0:
                    break
                assert survivor.proc.poll() is None, survivor.output()
                assert time.monotonic() < deadline, (
                    f"{statuses.count(Status.INDEXED)} of {DOCUMENTS} indexed; "
                    f"{raw.xlen(stream)} entries left\n{survivor.output()}"
                )
                await asyncio.sleep(0.1)
            recovered_at = time.monotonic()
            assert survivor.stop() == 0, survivor.output()
            assert "Traceback" not in survivor.output(), survivor.output()

            # Nothing pending, nothing dead-lettered, the stream empty.
            assert raw.xpending(stream, GROUP)["pending"] == 0
            assert raw.xlen(dead_stream) == 0
            # Documents already written by the victim were not written again.
            after = {r.id: r.updated_at for r in metas if r is not None}
            rewritten = [d for d, t in written_before_kill.items() if after[d] != t]
            assert rewritten == []
            # Every state equals that document encoded alone, in every mode.
            models = load_models(settings)
            worst = 0.0
            for start in range(0, DOCUMENTS, 100):
                ids = list(texts)[start : start + 100]
                for record in await store.get_many(ids):
                    assert record is not None and set(record.states) == set(models)
                    want = encode_alone(models, texts[record.id])
                    assert record.tokens == want["none"].n
                    for mode, state in record.states.items():
                        worst = max(worst, state_difference(state, want[mode]))
            assert worst < 1e-5, worst
            print(
                f"\ncrash: {DOCUMENTS} documents, victim killed holding {len(held)} entries "
                f"({len(written_not_acked)} written but not acked), "
                f"{len(written_before_kill)} indexed before the kill, none rewritten; "
                f"max state difference {worst:.2e}; killed after {killed_at - started:.1f} s, all "
                f"indexed {recovered_at - killed_at:.1f} s later (worker start included), "
                f"{time.monotonic() - started:.1f} s in all"
            )
    finally:
        await names.close()
        await store.close()
        raw.close()
