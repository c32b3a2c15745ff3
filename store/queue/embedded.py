"""The ingestion queue in a local SQLite file: the same semantics as the Redis Stream.

An entry read is leased to its consumer for `claim_idle_ms`; if it is not acked by then
(the process died, or the batch failed), the next read hands it out again with its delivery
count raised, unless its consumer extends the lease. The file survives restarts and commits
with `synchronous=FULL`, as the store does, so nothing accepted is lost, power loss included.
An entry that is not a job is dead-lettered when it is read, alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from connections.sqlite import write_transaction
from store.queue.base import (
    MALFORMED_DOC_ID,
    Delivery,
    IngestJob,
    MalformedEntry,
    QueueUnavailable,
)

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job BLOB NOT NULL,
    deliveries INTEGER NOT NULL DEFAULT 0,
    lease_until REAL NOT NULL DEFAULT 0,
    consumer TEXT
);
CREATE INDEX IF NOT EXISTS entries_lease ON entries (lease_until, id);
CREATE TABLE IF NOT EXISTS dead_letters (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entry_id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    deliveries INTEGER NOT NULL,
    error TEXT NOT NULL,
    job BLOB NOT NULL, -- {"doc_id", "text_hash"} as JSON: never the text
    at REAL NOT NULL
);
"""

POLL_S = 0.1  # how often a blocked read looks for entries other processes added


class EmbeddedQueue:
    def __init__(self, path: Path, *, claim_idle_ms: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.claim_idle_s = claim_idle_ms / 1000.0
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=10)
        self._db.execute("PRAGMA journal_mode=WAL")
        # FULL, as the store: an acknowledged enqueue survives power loss, like its record.
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        self._wakeup = asyncio.Event()  # set by enqueue in this process

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def locked() -> T:
            with self._lock:
                return fn(self._db)

        try:
            return await asyncio.to_thread(locked)
        except sqlite3.Error as exc:
            raise QueueUnavailable(f"ingestion queue unavailable: {exc}") from exc

    async def enqueue(self, job: IngestJob) -> str:
        def insert(db: sqlite3.Connection) -> int:
            cur = db.execute("INSERT INTO entries (job) VALUES (?)", (job.to_json(),))
            return int(cur.lastrowid or 0)

        entry_id = await self._run(insert)
        self._wakeup.set()
        return str(entry_id)

    async def is_pending(self, entry_id: str) -> bool:
        if not entry_id.isdigit():
            return False
        row = await self._run(
            lambda db: db.execute("SELECT 1 FROM entries WHERE id = ?", (int(entry_id),)).fetchone()
        )
        return row is not None

    async def extend(self, consumer: str, entry_ids: Sequence[str]) -> None:
        until = time.time() + self.claim_idle_s
        rows = [(until, int(e), consumer) for e in entry_ids]
        await self._run(
            lambda db: db.executemany(
                "UPDATE entries SET lease_until = ? WHERE id = ? AND consumer = ?", rows
            )
        )

    async def backlog(self) -> tuple[int, int]:
        row = await self._run(
            lambda db: db.execute(
                "SELECT COUNT(*), COALESCE(SUM(length(job)), 0) FROM entries"
            ).fetchone()
        )
        return int(row[0]), int(row[1])

    def _lease(self, db: sqlite3.Connection, consumer: str, count: int) -> list[Delivery]:
        now = time.time()
        with write_transaction(db):  # one reader at a time, across processes too
            rows = db.execute(
                "SELECT id, job, deliveries FROM entries WHERE lease_until <= ? "
                "ORDER BY id LIMIT ?",
                (now, count),
            ).fetchall()
            db.executemany(
                "UPDATE entries SET deliveries = deliveries + 1, lease_until = ?, consumer = ? "
                "WHERE id = ?",
                [(now + self.claim_idle_s, consumer, row[0]) for row in rows],
            )
            deliveries = []
            for rid, job, n in rows:
                try:
                    deliveries.append(Delivery(str(rid), IngestJob.from_json(job), int(n) + 1))
                except MalformedEntry as exc:  # dead-lettered alone; the others go on
                    self._bury(db, str(rid), MALFORMED_DOC_ID, "", int(n) + 1, str(exc))
        return deliveries

    @staticmethod
    def _bury(
        db: sqlite3.Connection, entry_id: str, doc_id: str, text_hash: str, deliveries: int,
        error: str,
    ) -> None:  # fmt: skip
        """Moves an entry to the dead letters (inside the caller's transaction)."""
        letter = json.dumps({"doc_id": doc_id, "text_hash": text_hash}).encode()
        db.execute(
            "INSERT INTO dead_letters (entry_id, doc_id, deliveries, error, job, at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (entry_id, doc_id, deliveries, error, letter, time.time()),
        )
        db.execute("DELETE FROM entries WHERE id = ?", (int(entry_id),))

    async def read(self, consumer: str, count: int, block_ms: int) -> list[Delivery]:
        deadline = time.monotonic() + block_ms / 1000.0
        while True:
            self._wakeup.clear()
            deliveries = await self._run(lambda db: self._lease(db, consumer, count))
            remaining = deadline - time.monotonic()
            if deliveries or remaining <= 0:
                return deliveries
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), min(POLL_S, remaining))

    async def ack(self, entry_ids: Sequence[str]) -> None:
        ids = [(int(e),) for e in entry_ids]
        await self._run(lambda db: db.executemany("DELETE FROM entries WHERE id = ?", ids))

    async def dead_letter(self, delivery: Delivery, error: str) -> None:
        job = delivery.job

        def move(db: sqlite3.Connection) -> None:
            with write_transaction(db):
                self._bury(
                    db, delivery.entry_id, job.doc_id, job.text_hash, delivery.deliveries, error
                )

        await self._run(move)

    async def dead_letters(self, count: int = 100) -> list[dict[str, Any]]:
        rows = await self._run(
            lambda db: db.execute(
                "SELECT entry_id, doc_id, deliveries, error, job FROM dead_letters "
                "ORDER BY id LIMIT ?",
                (count,),
            ).fetchall()
        )
        return [
            {"entry_id": entry_id, "doc_id": doc_id, "text_hash": _letter_hash(job),
             "deliveries": deliveries, "error": error}
            for entry_id, doc_id, deliveries, error, job in rows
        ]  # fmt: skip

    async def depth(self) -> int:
        row = await self._run(lambda db: db.execute("SELECT COUNT(*) FROM entries").fetchone())
        return int(row[0])

    async def readers(self, within_ms: int) -> int | None:
        return None  # leases name no reader that has found the queue empty

    async def close(self) -> None:
        with self._lock:
            self._db.close()


def _letter_hash(job: bytes) -> str:
    # Letters written before they stopped keeping the text held the whole job; both have it.
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        return str(json.loads(job).get("text_hash", ""))
    return ""
