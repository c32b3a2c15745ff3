"""The reader as the service runs it: a lean path for a trained reader, built once at load.

`ServingReader(reader)` takes a trained Reader on the CPU in float32, puts it in eval() for
good and reads the same weights through fewer ops than the Reader's general path: no
train/eval toggling, no no-op `.to` moves, the query GRU's input projection read from a
precomputed vocabulary table (the questions run packed through a TorchScript recurrence),
the lookup one `addmm` with 1/n folded in, scoring without module calls or dropout, and no
copy of a result for a caller already in `torch.inference_mode()` (enter it once, around the
whole request). Each call or attribute hop is a measurable part of a linear lookup of ~3 us
(BENCHMARKS.md), so the checks are written out inline.

It gives the Reader's results: tests/encoder/test_serving_path.py holds every method to the
general path and to the training forward pass, for every mode and output layer. A reader on
another device or in another dtype is served by the Reader itself (`for_serving`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from functools import cache
from itertools import chain

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from encoder.model.lean_scores import (
    OutputLayer,
    as_numpy,
    masked_pointer_scores,
    pointer_scores,
)
from encoder.model.pointer import mention_space
from encoder.model.reader import Reader, cpu_float32_copy
from encoder.model.shared_slots import spread_over_entities
from encoder.model.state import DocumentState

_F32 = torch.float32  # one global read where a lookup checks dtypes


def runs_lean(reader: Reader) -> bool:
    """Whether the lean path applies: the reader's weights are CPU float32 tensors."""
    return reader.device.type == "cpu" and reader.dtype is _F32


def _cpu_float32(t: Tensor) -> Tensor:
    """t itself when it already is a CPU float32 tensor (the common case: no dispatch)."""
    return t if t.dtype is _F32 and t.is_cpu else t.to("cpu", _F32)


def _gru_steps(
    gi_rz: list[Tensor], gi_n: list[Tensor], batch_sizes: list[int], W: list[Tensor]
) -> Tensor:
    """The GRU recurrence over precomputed input gates, packed: at step t, gi_rz[t] (b_t, 2k)
    (both biases of r and z already in) and gi_n[t] (b_t, k) for the b_t = batch_sizes[t]
    sequences still running (sorted longest first) -> each sequence's last state (B, k), in
    that sorted order. W = [W_h{r,z}ᵀ (k, 2k), W_hnᵀ (k, k), b_hn (k,)], contiguous.

    As torch.nn.GRU: r, z = σ(gi_rz + W_h{r,z} h), n = tanh(gi_n + r (W_hn h + b_hn)),
    h' = (1 - z) n + z h. A sequence leaves the batch after its last token. Six ops a step on
    contiguous tensors (r and z's gates are added inside their matrix product).
    """
    W_rzT, W_nT, b_n = W[0], W[1], W[2]
    h = torch.zeros(batch_sizes[0], W_nT.shape[0], dtype=W_nT.dtype)  # (b, k)
    done: list[Tensor] = []  # last states of sequences that ended, shortest last
    for t in range(len(batch_sizes)):
        b = batch_sizes[t]
        if b < h.shape[0]:
            done.append(h[b:])
            h = h[:b]
        rz = torch.sigmoid_(torch.addmm(gi_rz[t], h, W_rzT)).chunk(2, 1)  # r, z: (b, k) each
        n = torch.tanh_(torch.addcmul(gi_n[t], rz[0], torch.addmm(b_n, h, W_nT)))  # (b, k)
        h = torch.lerp(n, h, rz[1])  # (1 - z) n + z h
    done.append(h)
    done.reverse()
    return torch.cat(done)  # (B, k)


def _packed_order(
    queries: Sequence[Tensor | Sequence[int]],
) -> tuple[Tensor, list[int], Tensor]:
    """What pack_padded_sequence gives, in numpy from plain id lists (a tensor per question,
    its padding and packing cost more than the question's tokenising; measured): the tokens
    time-major with the questions longest first, how many questions run at each step, and
    the index that puts the sorted questions back in their order."""
    rows = [q.tolist() if isinstance(q, Tensor) else q for q in queries]
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))  # (B,)
    if int(lengths.min()) < 1:
        raise ValueError("every sequence needs at least one token")
    flat = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=int(lengths.sum()))
    order = np.argsort(-lengths, kind="stable")  # longest first
    sorted_lengths = lengths[order]
    steps = np.arange(int(sorted_lengths[0]))
    running = steps[:, None] < sorted_lengths[None, :]  # (T, B): question b has a token t
    starts = (np.cumsum(lengths) - lengths)[order]  # where each sorted question's ids begin
    positions = (starts[None, :] + steps[:, None])[running]  # time-major, row by row
    batch_sizes = running.sum(axis=1).tolist()
    return (
        torch.from_numpy(flat[positions]),
        batch_sizes,
        torch.from_numpy(np.argsort(order)),
    )


@cache
def _query_gru_steps() -> Callable[[list[Tensor], list[Tensor], list[int], list[Tensor]], Tensor]:
    """_gru_steps compiled with TorchScript once per process (its interpreter dispatches the
    ~10 small ops per token for less than Python does; measured in BENCHMARKS.md). torch 2.x
    marks torch.jit.script deprecated in favour of torch.compile, which needs a C compiler at
    run time; the warning is silenced here, where the choice is made."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*torch.jit.script", DeprecationWarning)
        scripted: Callable[[list[Tensor], list[Tensor], list[int], list[Tensor]], Tensor] = (
            torch.jit.script(_gru_steps)
        )
    return scripted


class ServingReader:
    """A trained CPU float32 Reader, served: the same results as its general path, faster.

    Building one puts the reader in eval() for good (nothing here writes to it after, so
    requests may share it across threads), builds the query tables and compiles the query
    recurrence, so the first request does not pay for them. It reads the reader's weights at
    each call; the query tables are rebuilt if those weights change in place (a load).
    """

    def __init__(self, reader: Reader) -> None:
        if not runs_lean(reader):
            raise ValueError(
                f"the lean path needs a CPU float32 reader, not {reader.device} {reader.dtype}"
            )
        reader.eval()
        self.reader = reader
        self.config = reader.config
        self._mode = reader.config.mode
        self._attention_lookup = reader.attention.lookup
        # Half float32's smallest number (as Reader._scores); a float, read once.
        self._very_negative = torch.finfo(torch.float32).min / 2
        self._query_cache: tuple[tuple[int, ...], tuple[Tensor, Tensor, list[Tensor]]] | None = None
        # Numpy views of the answer layer's weights (encoder.model.lean_scores).
        pointed = self._mode == "mentions"
        self._output = None if pointed else OutputLayer.of(reader)
        self._pointer = (
            (reader.pointer.weight.detach().numpy(), reader.pointer.bias.detach().numpy())
            if pointed
            else None
        )
        with torch.inference_mode():  # builds the tables, compiles the steps, warms up
            self._encode_queries([torch.tensor([reader.config.pad_id])])

    def encode_documents(
        self, docs: Sequence[Tensor], entities: Sequence[Tensor] | None = None
    ) -> list[DocumentState]:
        """The reader's own: a document is read once, the GRU module is the fast way."""
        return self.reader.encode_documents(docs, entities)

    def extend(
        self, state: DocumentState, new_ids: Tensor, new_entities: Tensor | None = None
    ) -> DocumentState:
        return self.reader.extend(state, new_ids, new_entities)

    # ---- questions -------------------------------------------------------------------------

    def _query_params(self) -> tuple[Tensor, ...]:
        reader = self.reader
        W_ih, W_hh, b_ih, b_hh = reader.query_gru.all_weights[0]  # layer 0 (the only one)
        return (reader.embedding.weight, W_ih, b_ih, W_hh, b_hh)

    def _query_tables(self) -> tuple[Tensor, Tensor, list[Tensor]]:
        """(T_rz (V, 2k), T_n (V, k), [W_h{r,z}ᵀ, W_hnᵀ, b_hn]): T[v] = embedding[v] · W_ihᵀ +
        b_ih (+ b_h{r,z} for r and z, which only ever add), the query GRU's input projection of
        every vocabulary word, computed once. Rebuilt when any of its weights changed in place
        (their version counters: an optimizer step, a load)."""
        params = self._query_params()
        key = tuple(p._version for p in params)
        cache = self._query_cache
        if cache is not None and cache[0] == key:
            return cache[1]
        embedding, W_ih, b_ih, W_hh, b_hh = params
        k = W_hh.shape[1]
        with torch.no_grad():
            table = torch.addmm(b_ih, embedding, W_ih.T)  # (V, 3k)
            table[:, : 2 * k] += b_hh[: 2 * k]
            recurrent = [
                W_hh[: 2 * k].T.contiguous(),  # (k, 2k)
                W_hh[2 * k :].T.contiguous(),  # (k, k)
                b_hh[2 * k :].detach().clone(),  # (k,)
            ]
            tables = (table[:, : 2 * k].contiguous(), table[:, 2 * k :].contiguous(), recurrent)
        self._query_cache = (key, tables)
        return tables

    def encode_queries(self, queries: Sequence[Tensor | Sequence[int]]) -> Tensor:
        """Questions (1-D long tensors, or lists of token ids as the service hands them over)
        -> their final query-GRU states q, (B, k)."""
        if len(queries) == 0:
            return torch.empty(0, self.config.hidden_size)
        if torch.is_inference_mode_enabled():
            return self._encode_queries(queries)
        with torch.inference_mode():
            Q = self._encode_queries(queries)
        return cpu_float32_copy(Q)  # an ordinary tensor for a caller outside inference mode

    def _encode_queries(self, queries: Sequence[Tensor | Sequence[int]]) -> Tensor:
        """The same GRU as `query_gru`, written out: x_t · W_ihᵀ + b_ih is a row of the
        precomputed table, and the questions run packed (longest first, a question leaves the
        batch after its last token), so padding costs nothing and no H is kept. In inference
        mode."""
        table_rz, table_n, recurrent = self._query_tables()  # (V, 2k), (V, k), weights
        tokens, batch_sizes, order = _packed_order(queries)
        # index_select, not table[...]: advanced indexing costs ~4x as much here (measured).
        # Time-major rows, split per step: each step's gates are one contiguous block.
        steps_rz = table_rz.index_select(0, tokens).split(batch_sizes)  # (b_t, 2k) each
        steps_n = table_n.index_select(0, tokens).split(batch_sizes)  # (b_t, k) each
        # The plain interpreter: the profiling executor's optimisations gain nothing on these
        # small ops, and it re-profiles (milliseconds) whenever the batch's shapes change.
        with torch.jit.optimized_execution(False):
            last = _query_gru_steps()(list(steps_rz), list(steps_n), batch_sizes, recurrent)
        return last.index_select(0, order)  # (B, k) in the questions' order

    # ---- lookup and scores -----------------------------------------------------------------

    def lookup(self, state: DocumentState, query_vectors: Tensor) -> Tensor:
        """Many questions against one document: Q (m, k) -> R (m, k), the state used once.

        In inference mode R is computed in place of the caller's choosing: no move, no copy."""
        if not torch.is_inference_mode_enabled():
            with torch.inference_mode():
                R = self.lookup(state, query_vectors)
            return cpu_float32_copy(R)  # an ordinary tensor for a caller outside inference mode
        if state.mode != self._mode:
            raise ValueError(f"state is for mode {state.mode!r}, model is {self._mode!r}")
        memory, Q = state.memory, query_vectors
        if Q.dtype is not _F32 or not Q.is_cpu:
            Q = Q.to("cpu", _F32)
        if state.mentions is not None:  # mentions: the entities' scores (m, S), in numpy
            assert memory is not None and self._pointer is not None
            space = mention_space(state, self.config.max_entities)
            entities = state.mention_entities.numpy()
            W, b = self._pointer
            scores = pointer_scores(as_numpy(memory), entities, as_numpy(Q), W, b, space)
            return torch.from_numpy(scores)
        if memory is None:  # none: R is the last state
            return self._attention_lookup(None, state.n, _cpu_float32(state.last_hidden), Q)
        if memory.dtype is not _F32 or not memory.is_cpu:
            memory = memory.to("cpu", _F32)
        # The other modes never read the last state: it is passed as it is, unchecked.
        return self._attention_lookup(memory, state.n, state.last_hidden, Q)  # (m, k)

    def score(
        self,
        R: Tensor,
        query_vectors: Tensor,
        candidate_mask: Tensor,
        mentions: Tensor | None = None,
    ) -> Tensor:
        """R (m, k), Q (m, k), candidate_mask (m, S), mentions (S,) or (m, S) or None -> scores
        (m, S), as `Reader.score`: the same products, without module calls, dropout or moves.
        S is E, or the document's entities when it names more (encoder.model.shared_slots)."""
        if not torch.is_inference_mode_enabled():
            with torch.inference_mode():
                scores = self.score(R, query_vectors, candidate_mask, mentions)
            return cpu_float32_copy(scores)
        mask = candidate_mask.numpy().astype(bool, copy=False)
        if self._mode == "mentions":  # the lookup scored the entities already
            return torch.from_numpy(masked_pointer_scores(as_numpy(R), mask))
        if self._output is not None and mask.shape[1] <= self.config.max_entities:
            counts = None if mentions is None else as_numpy(mentions)
            return torch.from_numpy(
                self._output.scores(as_numpy(R), as_numpy(query_vectors), mask, counts)
            )
        # More entities than slots: shared (encoder.model.shared_slots), in torch.
        reader = self.reader
        W_r = reader.W_r
        pre = torch.addmm(
            F.linear(_cpu_float32(R), W_r.weight, W_r.bias),
            _cpu_float32(query_vectors),
            reader.W_q.weight.T,
        )
        hidden = torch.tanh_(pre)  # (m, k)
        config = self.config
        if config.output == "slots":
            logits = F.linear(hidden, reader.W_o.weight, reader.W_o.bias)  # (m, E)
        else:
            start = config.entity_offset
            markers = reader.embedding.weight[start : start + config.max_entities]  # (E, d)
            logits = torch.addmm(reader.b_o, F.linear(hidden, reader.W_p.weight), markers.T)
        if candidate_mask.shape[1] > logits.shape[1]:  # more entities than slots: shared
            logits = spread_over_entities(logits, candidate_mask)  # (m, S)
        prior = reader.mention_prior(mentions, hidden)
        if prior is not None:
            logits.addcmul_(*prior)
        return logits.masked_fill_(candidate_mask.logical_not(), self._very_negative)  # (m, E)


# What the service calls on a reader: a ServingReader, or a Reader off the lean path.
Serving = ServingReader | Reader


def for_serving(reader: Reader) -> Serving:
    """A trained reader ready to serve (eval() for good): its ServingReader on the CPU in
    float32, else the Reader itself (its general path; another device, another dtype)."""
    if runs_lean(reader):
        return ServingReader(reader)
    reader.eval()
    return reader
