"""The reader: a document GRU, a query GRU (shared embeddings), one attention mode, an output layer.

Training calls `forward` on padded batches. Serving splits the same computation in two:
`encode_documents` / `extend` read each document once into a DocumentState, and
`encode_queries` + `lookup` + `score` (or `answer`) answer questions from those states.
Both paths give the same scores.

A reader in eval() on the CPU in float32 (how the service holds it) answers through a lean
serving path: no train/eval toggling, no no-op `.to` moves, the query GRU's input projection
read from a precomputed vocabulary table, the lookup one `addmm` with 1/n folded in, and no
copy of a result for a caller already in `torch.inference_mode()` (enter it once, around the
whole request). Any other reader (training, float64, another device) takes the general path.
The tests hold both to the training forward pass.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from itertools import chain

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from encoder.model.attention import Attention, build_attention
from encoder.model.config import ReaderConfig
from encoder.model.state import DocumentState


def pad_sequences(seqs: Sequence[Tensor], pad_id: int) -> tuple[Tensor, Tensor]:
    """1-D long tensors of unequal lengths -> ids (B, n) right-padded with pad_id, lengths (B,)."""
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)  # (B,)
    if len(seqs) == 0:
        return torch.empty(0, 0, dtype=torch.long), lengths
    if int(lengths.min()) < 1:
        raise ValueError("every sequence needs at least one token")
    ids = nn.utils.rnn.pad_sequence(
        [s.reshape(-1).long().cpu() for s in seqs], batch_first=True, padding_value=pad_id
    )  # (B, n)
    return ids, lengths


def _length_mask(lengths: Tensor, n: int) -> Tensor:
    return torch.arange(n, device=lengths.device) < lengths.unsqueeze(1)  # (B, n) True on tokens


_F32 = torch.float32  # one global read where a lookup checks dtypes
MENTION_PRIOR_WEIGHTS = ("mention_weight", "mention_gate")  # what config.mention_prior adds


def _cpu_float32(t: Tensor) -> Tensor:
    """t itself when it already is a CPU float32 tensor (the common case: no dispatch)."""
    return t if t.dtype is _F32 and t.is_cpu else t.to("cpu", _F32)


def _to_cpu_float32(t: Tensor) -> Tensor:
    # A fresh copy made outside inference mode is an ordinary tensor, so callers may modify it.
    return t.detach().to(device="cpu", dtype=torch.float32, copy=True)


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


class Reader(nn.Module):
    """Reads a document and a cloze question; scores the E entity slots.

        H = GRU_d(embed(document))         (n, k)
        q = last state of GRU_q(embed(question))   (k,)
        R = attention(H, q)                (k,)   one of the four modes, see encoder.model.attention
        scores = W_o tanh(W_r R + W_q q)   (E,)   non-candidates masked out
               (+ (w + uᵀ hidden) · log(1 + mentions)  with config.mention_prior: how often
                the document names each candidate, counted from its markers, weighed by how
                much the question and what was read leave it to the counts)

    Both GRUs are unidirectional so that a document can be extended: appending tokens only
    continues GRU_d from its last state.
    """

    def __init__(self, config: ReaderConfig) -> None:
        super().__init__()
        self.config = config
        k = config.hidden_size
        self.embedding = nn.Embedding(
            config.vocab_size, config.embed_dim, padding_idx=config.pad_id
        )
        self.dropout = nn.Dropout(config.dropout)
        self.doc_gru = nn.GRU(config.embed_dim, k, batch_first=True)
        self.query_gru = nn.GRU(config.embed_dim, k, batch_first=True)
        self.attention: Attention = build_attention(config.mode, k, config.length_norm)
        self.W_r = nn.Linear(k, k)
        self.W_q = nn.Linear(k, k, bias=False)  # W_r already carries the bias
        if config.output == "markers":
            self.W_p = nn.Linear(k, config.embed_dim, bias=False)
            self.b_o = nn.Parameter(torch.zeros(config.max_entities))
        else:
            self.W_o = nn.Linear(k, config.max_entities)
        if config.mention_prior:
            # Zero at first: a reader that goes on from one without the prior starts unchanged.
            self.mention_weight = nn.Parameter(torch.zeros(1))  # w
            self.mention_gate = nn.Parameter(torch.zeros(k))  # u
        self._refresh_serving()

    # ---- what the lean serving path reads once, not per call ---------------------------------

    def _refresh_serving(self) -> None:
        """Device/dtype facts and derived tables; redone whenever the weights move (`_apply`:
        .to(), .double(), .cuda() ...). The query tables are rebuilt lazily, see _query_tables."""
        weight = self.W_r.weight
        self._lean = weight.device.type == "cpu" and weight.dtype is torch.float32
        self._query_cache: tuple[tuple[int, ...], tuple[Tensor, Tensor, list[Tensor]]] | None = None
        # Half float32's smallest number (see _scores); a float, read once.
        self._very_negative = torch.finfo(torch.float32).min / 2
        self._attention_lookup = self.attention.lookup
        self._mode = self.config.mode

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Reader:
        out = super()._apply(fn, recurse)
        self._refresh_serving()
        return out

    def _query_params(self) -> tuple[Tensor, ...]:
        W_ih, W_hh, b_ih, b_hh = self.query_gru.all_weights[0]  # layer 0 (the only one)
        return (self.embedding.weight, W_ih, b_ih, W_hh, b_hh)

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

    def prepare_serving(self) -> None:
        """eval() and build the serving tables now (serving calls this once at load), so the
        first request does not pay for them."""
        self.eval()
        if self._lean:
            with torch.inference_mode():  # builds the tables, compiles the steps, warms up
                self._encode_queries_lean([torch.tensor([self.config.pad_id])])

    @property
    def device(self) -> torch.device:
        return self.W_r.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.W_r.weight.dtype

    def _logits(self, hidden: Tensor) -> Tensor:
        """hidden (B, k) -> (B, E): by slot, or by the markers' own embeddings."""
        if self.config.output == "slots":
            return self.W_o(hidden)
        start = self.config.entity_offset
        markers = self.embedding.weight[start : start + self.config.max_entities]  # (E, d)
        return self.W_p(hidden) @ markers.T + self.b_o  # (B, E)

    # ---- shared pieces -------------------------------------------------------------------

    def _run_gru(
        self, gru: nn.GRU, ids: Tensor, lengths: Tensor, h0: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """ids (B, n), lengths (B,) -> H (B, n, k), mask (B, n), h_last (B, k).

        The GRU runs over the padding too, but it is unidirectional: state t depends only on
        tokens <= t, so the states of real tokens (and h_last, taken at length - 1) are exactly
        those of the unpadded sequence. Padded states are masked out downstream.
        """
        x = self.dropout(self.embedding(ids))  # (B, n, d)
        H, _ = gru(x, h0)  # (B, n, k)
        mask = _length_mask(lengths, ids.shape[1])  # (B, n)
        h_last = H[torch.arange(ids.shape[0], device=ids.device), lengths - 1]  # (B, k)
        return H, mask, h_last

    def mentions(self, doc_ids: Tensor) -> Tensor:
        """doc_ids (B, n) -> (B, E) how often each entity slot's marker occurs (padding is
        never a marker). The service keeps the same counts in its document records."""
        E, offset = self.config.max_entities, self.config.entity_offset
        slots = doc_ids - offset
        is_marker = (slots >= 0) & (slots < E)
        counts = torch.zeros(doc_ids.shape[0], E, dtype=self.dtype, device=doc_ids.device)
        return counts.scatter_add_(1, slots.clamp(0, E - 1), is_marker.to(self.dtype))

    def _mention_prior(
        self, mentions: Tensor | None, hidden: Tensor
    ) -> tuple[Tensor, Tensor] | None:
        """The prior's two factors, w + uᵀ hidden (B, 1) and log(1 + mentions) (B or 1, E),
        from mentions (B, E) or (E,) and the output layer's input hidden (B, k); None without
        the prior or without counts. Their product is added to the logits in one op."""
        if not self.config.mention_prior or mentions is None:
            return None
        weight = torch.addmv(self.mention_weight, hidden, self.mention_gate).unsqueeze(1)
        return weight, torch.log1p(mentions.to(hidden))

    def _scores(
        self, R: Tensor, q: Tensor, candidate_mask: Tensor, mentions: Tensor | None = None
    ) -> Tensor:
        """scores = W_o tanh(W_r R + W_q q) (+ the mention prior), non-candidates set very
        negative (but finite)."""
        hidden = self.dropout(torch.tanh(self.W_r(R) + self.W_q(q)))  # (B, k)
        logits = self._logits(hidden)  # (B, E)
        prior = self._mention_prior(mentions, hidden)
        if prior is not None:
            logits = torch.addcmul(logits, *prior)
        # Finite, so cross_entropy and argmax stay well defined: half the smallest number of
        # this dtype (float32's at most, so float64 scores survive the cast to float32) leaves
        # room for softmax to subtract the row maximum without overflowing.
        very_negative = max(torch.finfo(logits.dtype).min, torch.finfo(torch.float32).min) / 2
        return logits.masked_fill(~candidate_mask.bool(), very_negative)  # (B, E)

    # ---- training ------------------------------------------------------------------------

    def forward(
        self,
        doc_ids: Tensor,  # (B, n) right-padded with pad_id
        doc_lengths: Tensor,  # (B,) >= 1
        query_ids: Tensor,  # (B, m)
        query_lengths: Tensor,  # (B,)
        candidate_mask: Tensor,  # (B, E) True = candidate
    ) -> Tensor:
        H, mask, h_last = self._run_gru(self.doc_gru, doc_ids, doc_lengths)  # (B, n, k)
        _, _, q = self._run_gru(self.query_gru, query_ids, query_lengths)  # (B, k)
        R = self.attention(H, mask, h_last, q)  # (B, k)
        mentions = self.mentions(doc_ids) if self.config.mention_prior else None
        return self._scores(R, q, candidate_mask, mentions)  # (B, E)

    # ---- serving -------------------------------------------------------------------------

    @contextmanager
    def _serving(self) -> Iterator[None]:
        """Inference mode with dropout off.

        A model left in train() (evaluation during training) is switched to eval() and back.
        That toggle is not thread-safe, so a serving process calls eval() once at load time,
        after which nothing here writes to the module.
        """
        was_training = self.training
        if was_training:
            self.eval()
        try:
            with torch.inference_mode():
                yield
        finally:
            if was_training:
                self.train()

    def _state_tensor(self, t: Tensor) -> Tensor:
        # States may come back from the store in float16 or on the CPU.
        return t.to(device=self.device, dtype=self.dtype)

    def _check_mode(self, state: DocumentState) -> None:
        if state.mode != self.config.mode:
            raise ValueError(f"state is for mode {state.mode!r}, model is {self.config.mode!r}")

    def encode_documents(self, docs: Sequence[Tensor]) -> list[DocumentState]:
        """Read each document once: one DocumentState per document, in this model's mode."""
        if len(docs) == 0:
            return []
        ids, lengths = pad_sequences(docs, self.config.pad_id)  # (B, n), (B,)
        with self._serving():
            ids, lengths = ids.to(self.device), lengths.to(self.device)
            H, mask, h_last = self._run_gru(self.doc_gru, ids, lengths)  # (B, n, k)
            memories = self.attention.read(H, mask)
        return [
            DocumentState(
                mode=self.config.mode,
                n=int(n),
                last_hidden=_to_cpu_float32(h),
                memory=None if memory is None else _to_cpu_float32(memory),
            )
            for n, h, memory in zip(lengths.tolist(), h_last, memories, strict=True)
        ]

    def extend(self, state: DocumentState, new_ids: Tensor) -> DocumentState:
        """Append tokens without re-reading: continue GRU_d from h_n and grow the memory.

        Equals encoding the whole text at once (C + Σ_new f_t f_tᵀ; H with new rows).
        """
        self._check_mode(state)
        new_ids = new_ids.reshape(-1).long()
        if new_ids.numel() == 0:
            return state
        with self._serving():
            ids = new_ids.to(self.device).unsqueeze(0)  # (1, t)
            lengths = torch.tensor([ids.shape[1]], device=self.device)  # (1,)
            h0 = self._state_tensor(state.last_hidden).reshape(1, 1, -1)  # (layers, B, k)
            H, _, h_last = self._run_gru(self.doc_gru, ids, lengths, h0)  # (1, t, k)
            memory = None if state.memory is None else self._state_tensor(state.memory)
            memory = self.attention.append(memory, H[0])
        return DocumentState(
            mode=state.mode,
            n=state.n + int(new_ids.numel()),
            last_hidden=_to_cpu_float32(h_last[0]),
            memory=None if memory is None else _to_cpu_float32(memory),
        )

    def encode_queries(self, queries: Sequence[Tensor | Sequence[int]]) -> Tensor:
        """Questions (1-D long tensors, or lists of token ids as the service hands them over)
        -> their final query-GRU states q, (B, k) on the CPU."""
        if len(queries) == 0:
            return torch.empty(0, self.config.hidden_size)
        if self._lean and not self.training:
            if torch.is_inference_mode_enabled():
                return self._encode_queries_lean(queries)
            with torch.inference_mode():
                Q = self._encode_queries_lean(queries)
            return _to_cpu_float32(Q)  # an ordinary tensor for a caller outside inference mode
        ids, lengths = pad_sequences(
            [torch.as_tensor(q, dtype=torch.long) for q in queries], self.config.pad_id
        )  # (B, m), (B,)
        with self._serving():
            _, _, q = self._run_gru(
                self.query_gru, ids.to(self.device), lengths.to(self.device)
            )  # (B, k)
        return _to_cpu_float32(q)

    def _encode_queries_lean(self, queries: Sequence[Tensor | Sequence[int]]) -> Tensor:
        """encode_queries for an eval-mode CPU float32 reader, in inference mode.

        The same GRU as `query_gru`, written out: x_t · W_ihᵀ + b_ih is a row of the
        precomputed table, and the questions run packed (longest first, a question leaves the
        batch after its last token), so padding costs nothing and no H is kept.
        """
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

    def _lookup(self, state: DocumentState, Q: Tensor) -> Tensor:
        self._check_mode(state)
        memory = None if state.memory is None else self._state_tensor(state.memory)
        h_last = self._state_tensor(state.last_hidden)  # (k,)
        return self.attention.lookup(memory, state.n, h_last, self._state_tensor(Q))  # (m, k)

    def _score(
        self, R: Tensor, Q: Tensor, candidate_mask: Tensor, mentions: Tensor | None
    ) -> Tensor:
        return self._scores(
            self._state_tensor(R),
            self._state_tensor(Q),
            candidate_mask.to(self.device),
            None if mentions is None else self._state_tensor(mentions),
        )  # (m, E)

    def lookup(self, state: DocumentState, query_vectors: Tensor) -> Tensor:
        """Many questions against one document: Q (m, k) -> R (m, k), the state used once.

        In inference mode, on an eval-mode CPU float32 reader, R is computed in place of the
        caller's choosing: no mode switch, no move, no copy. That lean path is written out
        here, checks inline: each call or attribute hop is a measurable part of a linear
        lookup of ~3 us (BENCHMARKS.md)."""
        if not self._lean or self.training:
            with self._serving():
                R = self._lookup(state, query_vectors)  # (m, k)
            return _to_cpu_float32(R)
        if not torch.is_inference_mode_enabled():
            with torch.inference_mode():
                R = self.lookup(state, query_vectors)
            return _to_cpu_float32(R)  # an ordinary tensor for a caller outside inference mode
        if state.mode != self._mode:
            self._check_mode(state)
        memory, Q = state.memory, query_vectors
        if Q.dtype is not _F32 or not Q.is_cpu:
            Q = Q.to("cpu", _F32)
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
        """R (m, k), Q (m, k), candidate_mask (m, E), mentions (E,) or (m, E): the document's
        count of each entity (see `mentions`; None when unknown: no prior) -> scores (m, E) =
        W_o tanh(W_r R + W_q q) (+ the mention prior, see `Reader`)."""
        if self._lean and not self.training:
            if torch.is_inference_mode_enabled():
                return self._score_lean(R, query_vectors, candidate_mask, mentions)
            with torch.inference_mode():
                scores = self._score_lean(R, query_vectors, candidate_mask, mentions)
            return _to_cpu_float32(scores)
        with self._serving():
            scores = self._score(R, query_vectors, candidate_mask, mentions)  # (m, E)
        return _to_cpu_float32(scores)

    def _score_lean(
        self, R: Tensor, Q: Tensor, candidate_mask: Tensor, mentions: Tensor | None
    ) -> Tensor:
        """_scores for an eval-mode CPU float32 reader in inference mode: the same products,
        without module calls, dropout or moves."""
        W_r = self.W_r
        pre = torch.addmm(
            F.linear(_cpu_float32(R), W_r.weight, W_r.bias), _cpu_float32(Q), self.W_q.weight.T
        )
        hidden = torch.tanh_(pre)  # (m, k)
        if self.config.output == "slots":
            logits = F.linear(hidden, self.W_o.weight, self.W_o.bias)  # (m, E)
        else:
            start = self.config.entity_offset
            markers = self.embedding.weight[start : start + self.config.max_entities]  # (E, d)
            logits = torch.addmm(self.b_o, F.linear(hidden, self.W_p.weight), markers.T)
        prior = self._mention_prior(mentions, hidden)
        if prior is not None:
            logits.addcmul_(*prior)
        return logits.masked_fill_(~candidate_mask.bool(), self._very_negative)  # (m, E)
