"""What the API and the worker need of an ingestion queue; Redis Streams or local SQLite.

Delivery is at least once: an entry read but not acked is delivered again after
`claim_idle_ms` (a consumer that died, or a batch that failed). The worker decides, from
`Delivery.deliveries`, when an entry has failed often enough to go to the dead letters.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Protocol


class QueueUnavailable(Exception):
    """The queue's backend cannot be reached or failed the call (the API answers 503)."""


@dataclass(frozen=True)
class IngestJob:
    doc_id: str
    text: str
    text_hash: str
    candidates: list[str] | None = None

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes | str) -> IngestJob:
        raw = json.loads(data)
        return cls(
            doc_id=str(raw["doc_id"]),
            text=str(raw["text"]),
            text_hash=str(raw["text_hash"]),
            candidates=None if raw.get("candidates") is None else list(raw["candidates"]),
        )


@dataclass(frozen=True)
class Delivery:
    entry_id: str
    job: IngestJob
    deliveries: int  # times this entry has been handed out, this one included


class IngestQueue(Protocol):
    async def enqueue(self, job: IngestJob) -> str:
        """Adds a job; returns its entry id. Raises QueueUnavailable when the backend is down."""
        ...

    async def read(self, consumer: str, count: int, block_ms: int) -> list[Delivery]:
        """Up to `count` entries: first those reclaimed from idle consumers, then new ones."""
        ...

    async def ack(self, entry_ids: Sequence[str]) -> None:
        """The entries are done (their states are written, or they were stale)."""
        ...

    async def dead_letter(self, delivery: Delivery, error: str) -> None:
        """Moves an entry to the dead letters with its error, and acks it."""
        ...

    async def depth(self) -> int:
        """Entries not yet acked (waiting or in hand)."""
        ...

    async def close(self) -> None: ...
