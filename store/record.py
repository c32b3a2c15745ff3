"""A document as the store keeps it: metadata plus one state per attention mode."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from encoder.state import DocumentState


class Status(StrEnum):
    QUEUED = "queued"
    INDEXED = "indexed"
    FAILED = "failed"


@dataclass
class DocumentRecord:
    id: str
    text_hash: str
    status: Status
    tokens: int = 0
    entities: list[str] = field(default_factory=list)  # entities[i] is the surface of @entity{i}
    model_ids: dict[str, str] = field(default_factory=dict)  # mode -> model id that built it
    error: str | None = None
    created_at: float = 0.0  # unix seconds
    updated_at: float = 0.0
    # mode -> state; on get, only the modes asked for
    states: dict[str, DocumentState] = field(default_factory=dict)
    # mode -> stored size in bytes; on get, every stored mode (whether its state was read or not)
    state_bytes: dict[str, int] = field(default_factory=dict)


def meta_to_json(record: DocumentRecord, state_bytes: dict[str, int], now: float) -> bytes:
    """Everything but the states, as UTF-8 JSON; times left at 0.0 become `now`."""
    meta = {
        "id": record.id,
        "text_hash": record.text_hash,
        "status": str(record.status),
        "tokens": record.tokens,
        "entities": record.entities,
        "model_ids": record.model_ids,
        "error": record.error,
        "created_at": record.created_at or now,
        "updated_at": record.updated_at or now,
        "state_bytes": state_bytes,
    }
    return json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode()


def meta_from_json(data: bytes | str) -> DocumentRecord:
    meta: dict[str, Any] = json.loads(data)
    return DocumentRecord(
        id=meta["id"],
        text_hash=meta["text_hash"],
        status=Status(meta["status"]),
        tokens=int(meta["tokens"]),
        entities=list(meta["entities"]),
        model_ids=dict(meta["model_ids"]),
        error=meta["error"],
        created_at=float(meta["created_at"]),
        updated_at=float(meta["updated_at"]),
        state_bytes={mode: int(size) for mode, size in meta["state_bytes"].items()},
    )


def now() -> float:
    return time.time()
