"""The decoded document states that answers in flight hold, within one memory budget.

Each answer decodes the state of its document: a softmax state holds every token's hidden
state (n x k floats: 36 MB for a 990 KB document), and ten answers at once held ten copies.
Here the states of answers in flight are counted against `answer_states_max_bytes`:

- a state whose size grows with the document (H of softmax, K of mentions) is shared: the
  record's metadata is read first (cheap), and answers for the same document version at the
  same time use one decoded copy, read once;
- a state of fixed size (C, or none) is read with its metadata in one round trip, as before,
  and counted at its fixed size;
- past the budget an answer is 429 `answer_states_full` with Retry-After (a state larger than
  the whole budget is still answered when nothing else is held).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from encoder.model.modes import MEMORY, Mode, memory_shape
from service.errors import Overloaded
from service.indexing import indexed_record
from store.base import DocumentStore
from store.record import DocumentRecord

FLOAT_BYTES = 4  # decoded states are float32


def decoded_bytes(mode: Mode, k: int, tokens: int, mentions: int) -> int:
    """What a decoded state of this mode takes in memory: last_hidden, its memory, and (the
    mentions mode) each mention's (entity, position) pair of int32 and, once looked up, its
    entity as int64 (DocumentState.mention_entities)."""
    shape = memory_shape(mode, k, tokens, mentions)
    numbers = k + (math.prod(shape) if shape is not None else 0)
    index_bytes = (4 * 2 + 8) * mentions if MEMORY[mode] == "K" else 0
    return FLOAT_BYTES * numbers + index_bytes


@dataclass
class _Held:
    size: int
    users: int = 0
    record: asyncio.Future[DocumentRecord] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class HeldStates:
    def __init__(self, store: DocumentStore, max_bytes: int) -> None:
        self.store = store
        self.max_bytes = max_bytes
        self.bytes = 0  # held now
        self._shared: dict[tuple[str, str, int], _Held] = {}

    def _reserve(self, size: int) -> None:
        if self.bytes and self.bytes + size > self.max_bytes:
            raise Overloaded(
                "answers in flight hold as many document states as memory allows; retry later",
                {"held_bytes": self.bytes, "needed_bytes": size,
                 "answer_states_max_bytes": self.max_bytes},
                code="answer_states_full",
            )  # fmt: skip
        self.bytes += size

    @contextlib.asynccontextmanager
    async def hold(self, doc_id: str, mode: Mode, k: int) -> AsyncIterator[DocumentRecord]:
        """The indexed record with its `mode` state, held (counted) until the block ends;
        404/409 as `indexed_record`, 429 past the budget."""
        if MEMORY[mode] in (None, "C"):
            size = decoded_bytes(mode, k, 0, 0)
            self._reserve(size)
            try:
                yield await indexed_record(self.store, doc_id, modes=(mode,))
            finally:
                self.bytes -= size
            return
        meta = await indexed_record(self.store, doc_id, modes=())
        key = (doc_id, mode, meta.version)
        held = self._shared.get(key)
        if held is None:
            size = decoded_bytes(mode, k, meta.tokens, sum(meta.mentions))
            self._reserve(size)
            held = self._shared[key] = _Held(size)
            reading = asyncio.ensure_future(indexed_record(self.store, doc_id, modes=(mode,)))
            reading.add_done_callback(lambda done: _settle(held.record, done))
        held.users += 1
        try:
            yield await asyncio.shield(held.record)
        finally:
            held.users -= 1
            if held.users == 0:
                del self._shared[key]
                self.bytes -= held.size


def _settle(future: asyncio.Future[DocumentRecord], done: asyncio.Future[DocumentRecord]) -> None:
    """Passes the shared read's outcome to everyone waiting for it."""
    if future.done():
        return
    if done.cancelled():
        future.cancel()
    elif (exc := done.exception()) is not None:
        future.set_exception(exc)
    else:
        future.set_result(done.result())
