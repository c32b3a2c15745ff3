"""The SQLite write transaction the embedded store and the embedded queue share."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE … COMMIT, or ROLLBACK on any exception. IMMEDIATE takes the write lock
    at once, across processes too, so two writers never deadlock upgrading a read. The
    connection must be opened with isolation_level=None (no implicit transactions)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
