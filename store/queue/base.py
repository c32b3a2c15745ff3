"""What the API and the worker need of an ingestion queue; Redis Streams or local SQLite.

Delivery is at least once: an entry read but not acked is delivered again after
`claim_idle_ms` (a consumer that died, or a batch that failed), unless its consumer extends
the lease (`extend`, a heartbeat while a long batch encodes). The worker decides, from
`Delivery.deliveries`, when an entry has failed often enough to go to the dead letters. An
entry that cannot be parsed is dead-lettered by the queue itself, alone, when it is read.
Dead letters keep the document id, text hash and error, never the text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Protocol


class QueueUnavailable(Exception):
    """The queue's backend cannot be reached or failed the call (the API answers 503)."""


class MalformedEntry(ValueError):
    """A queue entry that is not a job (not JSON, or fields missing)."""


@dataclass(frozen=True)
class IngestJob:
    doc_id: str
    text: str
    text_hash: str
    candidates: list[str] | None = None
    # The record version this job writes: its state is written only over a record of this
    # version (or of `replaces`). 0: a job enqueued before versions existed.
    version: int = 0
    # The version of an indexed record this job replaces: the API enqueues such a job before
    # it marks the record queued, so a failed enqueue never drops a good state.
    replaces: int | None = None

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes | str) -> IngestJob:
        """The job; MalformedEntry when `data` is not one."""
        try:
            raw = json.loads(data)
            replaces = raw.get("replaces")
            return cls(
                doc_id=str(raw["doc_id"]),
                text=str(raw["text"]),
                text_hash=str(raw["text_hash"]),
                candidates=None if raw.get("candidates") is None else list(raw["candidates"]),
                version=int(raw.get("version", 0)),
                # A job of an older build named the replaced text hash (a str): no version.
                replaces=replaces if isinstance(replaces, int) else None,
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise MalformedEntry(f"malformed queue entry: {type(exc).__name__}: {exc}") from exc

    def letter_fields(self) -> dict[str, str]:
        """What a dead letter keeps of the job: never the text."""
        return {"doc_id": self.doc_id, "text_hash": self.text_hash}


MALFORMED_DOC_ID = "?"  # the doc_id of a dead letter whose entry could not be parsed


@dataclass(frozen=True)
class Delivery:
    entry_id: str
    job: IngestJob
    deliveries: int  # times this entry has been handed out, this one included


class IngestQueue(Protocol):
    async def enqueue(self, job: IngestJob) -> str:
        """Adds a job; returns its entry id. Raises QueueUnavailable when the backend is down."""
        ...

    async def is_pending(self, entry_id: str) -> bool:
        """Whether the entry is still in the queue (waiting or in hand, not acked)."""
        ...

    async def extend(self, consumer: str, entry_ids: Sequence[str]) -> None:
        """Renews the consumer's lease on entries in hand: not redelivered for claim_idle_ms."""
        ...

    async def backlog(self) -> tuple[int, int]:
        """(entries not yet acked, their bytes: an estimate on Redis), in one round trip."""
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

    async def readers(self, within_ms: int) -> int | None:
        """How many workers read the queue within the last `within_ms`; None when this queue
        cannot tell."""
        ...

    async def close(self) -> None: ...
