"""A deadline on every store call the API makes: a Redis that hangs is a 503, not a hang
(applied by `store.factory.open_store` with `deadline_s`).

redis-py's socket timeout bounds each read, but a call may read more than once and retry,
so on its own it can take a few timeouts. The API promises an answer within
`redis_timeout_s`; this wrapper keeps that promise.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Collection, Sequence
from typing import TypeVar

from store.base import DocumentPage, DocumentStore
from store.errors import StoreUnavailable
from store.record import DocumentRecord, Status

T = TypeVar("T")


class BoundedStore:
    def __init__(self, inner: DocumentStore, timeout_s: float) -> None:
        self.inner = inner
        self.timeout_s = timeout_s

    async def _bounded(self, call: Awaitable[T]) -> T:
        try:
            async with asyncio.timeout(self.timeout_s):
                return await call
        except TimeoutError as exc:
            raise StoreUnavailable(f"the store did not answer within {self.timeout_s}s") from exc

    async def get(self, doc_id: str, modes: Collection[str] | None = None) -> DocumentRecord | None:
        return await self._bounded(self.inner.get(doc_id, modes))

    async def get_many(
        self, doc_ids: Sequence[str], modes: Collection[str] | None = None
    ) -> list[DocumentRecord | None]:
        return await self._bounded(self.inner.get_many(doc_ids, modes))

    async def put(
        self,
        record: DocumentRecord,
        *,
        expect_version: int | None = None,
        expect_status: Status | None = None,
    ) -> bool:
        return await self._bounded(
            self.inner.put(record, expect_version=expect_version, expect_status=expect_status)
        )

    async def new_versions(self, count: int) -> range:
        return await self._bounded(self.inner.new_versions(count))

    async def delete(self, doc_id: str) -> bool:
        return await self._bounded(self.inner.delete(doc_id))

    async def list_documents(self, limit: int, cursor: str | None = None) -> DocumentPage:
        return await self._bounded(self.inner.list_documents(limit, cursor))

    async def queued(self, before: float, limit: int) -> list[DocumentRecord]:
        return await self._bounded(self.inner.queued(before, limit))

    async def ping(self) -> None:
        await self._bounded(self.inner.ping())

    async def check_setup(self) -> None:
        await self._bounded(self.inner.check_setup())

    async def close(self) -> None:
        await self.inner.close()
