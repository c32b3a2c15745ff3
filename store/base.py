"""What every document store offers, and the record <-> stored-bytes steps both backends share."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from encoder.model.modes import MODES
from encoder.model.state import DocumentState
from store.codec import Dtype, decode_state, encode_state
from store.errors import CorruptRecord, StateCodecError
from store.record import DocumentRecord, Status, check_doc_id, meta_from_json

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DocumentPage:
    """One page of the store's documents, in id order; `next_cursor` is None on the last."""

    documents: list[tuple[str, Status]]  # (id, status)
    next_cursor: str | None


class DocumentStore(Protocol):
    async def get(self, doc_id: str, modes: Collection[str] | None = None) -> DocumentRecord | None:
        """The record with the states of `modes` (None: every stored state; (): none)."""
        ...

    async def get_many(
        self, doc_ids: Sequence[str], modes: Collection[str] | None = None
    ) -> list[DocumentRecord | None]:
        """One entry per id, in order, None where unknown; one round trip on Redis."""
        ...

    async def put(
        self,
        record: DocumentRecord,
        *,
        expect_version: int | None = None,
        expect_status: Status | None = None,
    ) -> bool:
        """Atomically replaces the document: its metadata and exactly `record.states`.

        With `expect_version`, writes only if a stored record has that version (checked and
        written in one step), so a late job, or a writer that read an older record, never
        overwrites a newer one; with `expect_status` too, only if it also has that status.
        Returns whether it wrote.
        """
        ...

    async def new_versions(self, count: int) -> range:
        """`count` version numbers never handed out before (by any process on this store),
        each greater than the last."""
        ...

    async def delete(self, doc_id: str) -> bool:
        """Removes the document and its states; whether there was one."""
        ...

    async def list_documents(self, limit: int, cursor: str | None = None) -> DocumentPage:
        """Up to `limit` documents with ids after `cursor` (the last id of the page before),
        in id order: pages stay stable while documents come and go."""

    async def queued(self, before: float, limit: int) -> list[DocumentRecord]:
        """Up to `limit` records (metadata) `queued` and last written before `before` (unix
        seconds); unreadable ones are left out. Reads every record's metadata: for a sweep."""
        ...

    async def ping(self) -> None:
        """Raises StoreUnavailable unless the backend answers."""
        ...

    async def check_setup(self) -> None:
        """Raises StoreMisconfigured when the backend may drop acknowledged writes by itself
        (checked at start-up); a backend that cannot be asked now is logged, not refused."""
        ...

    async def close(self) -> None: ...


def check_expectation(expect_version: int | None, expect_status: Status | None) -> None:
    if expect_status is not None and expect_version is None:
        raise ValueError("expect_status needs expect_version")


def stored_version(meta: bytes | str) -> tuple[int, str] | None:
    """(version, status) of stored metadata; None when unreadable (a conditional write over
    a corrupt record never matches)."""
    try:
        record = meta_from_json(meta)
    except CorruptRecord:
        return None
    return record.version, str(record.status)


def wanted_modes(modes: Collection[str] | None) -> tuple[str, ...]:
    """The modes to read, in MODES order; unknown modes are a caller's mistake."""
    if modes is None:
        return MODES
    unknown = set(modes) - set(MODES)
    if unknown:
        raise ValueError(f"unknown modes {sorted(unknown)}; known: {list(MODES)}")
    return tuple(mode for mode in MODES if mode in modes)


def encode_states(record: DocumentRecord, dtype: Dtype) -> dict[str, bytes]:
    """mode -> stored bytes of each state of the record, each tagged with its model id."""
    check_doc_id(record.id)
    blobs: dict[str, bytes] = {}
    for mode, state in record.states.items():
        if mode != state.mode:
            raise ValueError(f"states[{mode!r}] holds a {state.mode!r} state")
        if mode not in record.model_ids:
            raise ValueError(f"record.model_ids has no model id for mode {mode!r}")
        blobs[mode] = encode_state(state, model_id=record.model_ids[mode], dtype=dtype)
    return blobs


def with_states(record: DocumentRecord, blobs: Mapping[str, bytes]) -> DocumentRecord:
    """The record from metadata plus the decoded states; a state whose header names another
    model than the metadata is as wrong as a corrupted one."""
    states: dict[str, DocumentState] = {}
    for mode, blob in blobs.items():
        decoded = decode_state(blob)
        expected = record.model_ids.get(mode)
        if decoded.state.mode != mode or decoded.model_id != expected:
            raise StateCodecError(
                f"document {record.id!r}: stored {mode} state is a {decoded.state.mode} state "
                f"of model {decoded.model_id!r}, metadata says {expected!r}"
            )
        states[mode] = decoded.state
    return dataclasses.replace(record, states=states)


async def readable_records(
    store: DocumentStore, doc_ids: Sequence[str]
) -> list[DocumentRecord | None]:
    """The metadata of each document, None where unknown or unreadable (corrupt, or of an old
    schema): a writer treats such a record as absent and replaces it."""
    try:
        return await store.get_many(doc_ids, modes=())
    except CorruptRecord:
        out: list[DocumentRecord | None] = []
        for doc_id in doc_ids:
            try:
                out.append(await store.get(doc_id, modes=()))
            except CorruptRecord:
                out.append(None)
        return out


def readable_metas(metas: Mapping[str, bytes | str]) -> dict[str, DocumentRecord]:
    """name (a document id, or its key) -> the record of its stored metadata, leaving out the
    unreadable ones (`report_corrupt`)."""
    out = {}
    for name, meta in metas.items():
        try:
            out[name] = meta_from_json(meta)
        except CorruptRecord as exc:
            report_corrupt(name, exc)
    return out


def report_corrupt(name: str, exc: CorruptRecord) -> None:
    """A record nobody can read is skipped where many are read (listing, sweeping), never
    allowed to fail the others; the log names it (a GET of it answers 500 corrupt_record,
    and a POST of the document writes it anew)."""
    log.warning("document %r: corrupt record skipped: %s", name, exc)


def queued_before(records: Collection[DocumentRecord], before: float) -> list[DocumentRecord]:
    return [r for r in records if r.status == Status.QUEUED and r.updated_at < before]
