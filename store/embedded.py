"""The store with no server: one SQLite file (write-ahead log), durable across restarts.

Any number of readers run beside one writer, in this process and in others on the same file:
each read is one SQLite transaction, so it sees a document's metadata and states from the
same commit. Writes take a lock in this process and `BEGIN IMMEDIATE` across processes.
"""

from __future__ import annotations

import asyncio
import functools
import queue
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from connections.sqlite import write_transaction
from store.base import (
    DocumentPage,
    check_expectation,
    encode_states,
    readable_metas,
    report_corrupt,
    stored_version,
    wanted_modes,
    with_states,
)
from store.codec import Dtype
from store.errors import CorruptRecord, StoreError, StoreUnavailable
from store.record import (
    DocumentRecord,
    Status,
    check_doc_id,
    meta_from_json,
    meta_to_json,
    now,
)

T = TypeVar("T")

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY,
    text_hash TEXT NOT NULL,
    meta TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS states (
    doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    mode TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (doc_id, mode)
);
CREATE TABLE IF NOT EXISTS counters (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
"""
# SQLite allows 32766 bound parameters; a smaller chunk keeps each statement cheap.
_IDS_PER_QUERY = 500


class SqliteDocumentStore:
    def __init__(self, path: Path, *, dtype: Dtype = "float16", timeout_s: float = 2.0):
        self.path = path
        self.dtype: Dtype = dtype
        self._timeout_s = timeout_s
        self._closed = False
        self._write_lock = threading.Lock()
        self._idle_readers: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        with _sqlite_errors():
            path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = self._connect()
            version = self._writer.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):
                raise StoreError(f"{path}: store schema version {version}, this reads 1")
            self._writer.executescript(_SCHEMA)
            self._writer.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: transactions are opened explicitly below, never implicitly.
        conn = sqlite3.connect(
            self.path, timeout=self._timeout_s, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA journal_mode = WAL")
        # FULL: a commit survives power loss, not only a crash of this process.
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    @contextmanager
    def _reader(self) -> Iterator[sqlite3.Connection]:
        try:
            conn = self._idle_readers.get_nowait()
        except queue.Empty:
            conn = self._connect()
        try:
            yield conn
        finally:
            self._idle_readers.put(conn)

    async def _run(self, fn: Callable[[], T]) -> T:
        if self._closed:
            raise StoreUnavailable("the embedded store is closed")
        return await asyncio.to_thread(_with_sqlite_errors, fn)

    # --- reads ---

    async def get(self, doc_id: str, modes: Collection[str] | None = None) -> DocumentRecord | None:
        return (await self.get_many([doc_id], modes))[0]

    async def get_many(
        self, doc_ids: Sequence[str], modes: Collection[str] | None = None
    ) -> list[DocumentRecord | None]:
        for doc_id in doc_ids:
            check_doc_id(doc_id)
        wanted = wanted_modes(modes)
        if not doc_ids:
            return []
        metas, blobs = await self._run(lambda: self._read(list(dict.fromkeys(doc_ids)), wanted))
        found = {
            doc_id: with_states(meta_from_json(meta), blobs.get(doc_id, {}))
            for doc_id, meta in metas.items()
        }
        return [found.get(doc_id) for doc_id in doc_ids]

    def _read(
        self, doc_ids: list[str], modes: tuple[str, ...]
    ) -> tuple[dict[str, str], dict[str, dict[str, bytes]]]:
        metas: dict[str, str] = {}
        blobs: dict[str, dict[str, bytes]] = {}
        with self._reader() as conn:
            conn.execute("BEGIN")  # one snapshot for metadata and states
            try:
                for start in range(0, len(doc_ids), _IDS_PER_QUERY):
                    chunk = doc_ids[start : start + _IDS_PER_QUERY]
                    marks = ",".join("?" * len(chunk))
                    rows = conn.execute(
                        f"SELECT id, meta FROM documents WHERE id IN ({marks})", chunk
                    )
                    metas.update(rows)
                    if not modes:
                        continue
                    mode_marks = ",".join("?" * len(modes))
                    rows = conn.execute(
                        f"SELECT doc_id, mode, data FROM states "
                        f"WHERE doc_id IN ({marks}) AND mode IN ({mode_marks})",
                        (*chunk, *modes),
                    )
                    for doc_id, mode, data in rows:
                        blobs.setdefault(doc_id, {})[mode] = data
            finally:
                conn.execute("COMMIT")
        return metas, blobs

    async def list_documents(self, limit: int, cursor: str | None = None) -> DocumentPage:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")

        def read(after: str) -> list[tuple[str, str | None]]:
            with self._reader() as conn:
                # The primary key's order (binary, as Redis's ZRANGEBYLEX): one index scan.
                # Metadata that is not JSON gives a NULL status (json_extract would raise).
                rows = conn.execute(
                    "SELECT id, CASE WHEN json_valid(meta) THEN json_extract(meta, '$.status') "
                    "END FROM documents WHERE id > ? ORDER BY id LIMIT ?",
                    (after, limit + 1),
                )
                return list(rows)

        found: list[tuple[str, Status]] = []
        after = cursor or ""
        while len(found) <= limit:
            rows = await self._run(functools.partial(read, after))
            for doc_id, status in rows:
                try:
                    found.append((doc_id, Status(str(status))))
                except ValueError:  # a corrupt record: skipped, never the page's end
                    report_corrupt(doc_id, CorruptRecord(f"unreadable status {status!r}"))
            if len(rows) <= limit:
                break
            after = rows[-1][0]
        page = found[:limit]
        return DocumentPage(page, page[-1][0] if len(found) > limit else None)

    # --- writes ---

    async def put(
        self,
        record: DocumentRecord,
        *,
        expect_version: int | None = None,
        expect_status: Status | None = None,
    ) -> bool:
        check_expectation(expect_version, expect_status)
        blobs = encode_states(record, self.dtype)
        meta = meta_to_json(record, {mode: len(b) for mode, b in blobs.items()}, now()).decode()
        expect = (expect_version, expect_status)
        return await self._run(lambda: self._write(record, meta, blobs, expect))

    def _write(
        self,
        record: DocumentRecord,
        meta: str,
        blobs: dict[str, bytes],
        expect: tuple[int | None, Status | None],
    ) -> bool:
        expect_version, expect_status = expect
        with self._write_lock, write_transaction(self._writer) as conn:
            if expect_version is not None:
                # Read and written in one transaction: nothing can come between.
                row = conn.execute("SELECT meta FROM documents WHERE id = ?", (record.id,))
                found = row.fetchone()
                stored = None if found is None else stored_version(found[0])
                if stored is None or stored[0] != expect_version:
                    return False
                if expect_status is not None and stored[1] != str(expect_status):
                    return False
            conn.execute(
                "INSERT INTO documents (id, text_hash, meta) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET text_hash = excluded.text_hash, "
                "meta = excluded.meta",
                (record.id, record.text_hash, meta),
            )
            conn.execute("DELETE FROM states WHERE doc_id = ?", (record.id,))
            conn.executemany(
                "INSERT INTO states (doc_id, mode, data) VALUES (?, ?, ?)",
                [(record.id, mode, blob) for mode, blob in blobs.items()],
            )
            return True

    async def new_versions(self, count: int) -> range:
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")

        def take() -> int:
            with self._write_lock, write_transaction(self._writer) as conn:
                row = conn.execute(
                    "INSERT INTO counters (name, value) VALUES ('version', ?) "
                    "ON CONFLICT (name) DO UPDATE SET value = value + excluded.value "
                    "RETURNING value",
                    (count,),
                ).fetchone()
                return int(row[0])

        last = await self._run(take)
        return range(last - count + 1, last + 1)

    async def delete(self, doc_id: str) -> bool:
        check_doc_id(doc_id)

        def delete() -> bool:
            with self._write_lock, write_transaction(self._writer) as conn:
                conn.execute("DELETE FROM states WHERE doc_id = ?", (doc_id,))
                return conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,)).rowcount > 0

        return await self._run(delete)

    async def queued(self, before: float, limit: int) -> list[DocumentRecord]:
        def scan() -> list[tuple[str, str]]:
            with self._reader() as conn:
                # Valid JSON only: one corrupt record must not fail every sweep.
                rows = conn.execute(
                    "SELECT id, meta FROM documents WHERE CASE WHEN json_valid(meta) THEN "
                    "json_extract(meta, '$.status') = 'queued' "
                    "AND json_extract(meta, '$.updated_at') < ? END LIMIT ?",
                    (before, limit),
                ).fetchall()
            return [(row[0], row[1]) for row in rows]

        return list(readable_metas(dict(await self._run(scan))).values())

    # --- lifecycle ---

    async def ping(self) -> None:
        def ping() -> None:
            with self._reader() as conn:
                conn.execute("SELECT 1 FROM documents LIMIT 1").fetchall()

        await self._run(ping)

    async def check_setup(self) -> None:
        return  # a SQLite file never drops a committed row by itself

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._write_lock, self._connections_lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()


@contextmanager
def _sqlite_errors() -> Iterator[None]:
    try:
        yield
    except sqlite3.OperationalError as exc:  # locked past the timeout, unreadable file, full disk
        raise StoreUnavailable(f"embedded store: {exc}") from exc
    except sqlite3.Error as exc:
        raise StoreError(f"embedded store: {exc}") from exc


def _with_sqlite_errors(fn: Callable[[], T]) -> T:
    with _sqlite_errors():
        return fn()
