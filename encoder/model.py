"""The reader: a document GRU, a query GRU (shared embeddings), one attention mode, an output layer.

Training calls `forward` on padded batches. Serving splits the same computation in two:
`encode_documents` / `extend` read each document once into a DocumentState, and
`encode_queries` + `lookup` + `score` (or `answer`) answer questions from those states.
Both paths give the same scores.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import Tensor, nn

from encoder.attention import Attention, build_attention
from encoder.config import ReaderConfig
from encoder.state import DocumentState


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


def _to_cpu_float32(t: Tensor) -> Tensor:
    # A fresh copy made outside inference mode is an ordinary tensor, so callers may modify it.
    return t.detach().to(device="cpu", dtype=torch.float32, copy=True)


class Reader(nn.Module):
    """Reads a document and a cloze question; scores the E entity slots.

        H = GRU_d(embed(document))         (n, k)
        q = last state of GRU_q(embed(question))   (k,)
        R = attention(H, q)                (k,)   one of the four modes, see encoder.attention
        scores = W_o tanh(W_r R + W_q q)   (E,)   non-candidates masked out

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

    def _scores(self, R: Tensor, q: Tensor, candidate_mask: Tensor) -> Tensor:
        """scores = W_o tanh(W_r R + W_q q), non-candidates set very negative (but finite)."""
        hidden = self.dropout(torch.tanh(self.W_r(R) + self.W_q(q)))  # (B, k)
        logits = self._logits(hidden)  # (B, E)
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
        return self._scores(R, q, candidate_mask)  # (B, E)

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

    def encode_queries(self, queries: Sequence[Tensor]) -> Tensor:
        """Questions (1-D long tensors) -> their final query-GRU states q, (B, k) on the CPU."""
        if len(queries) == 0:
            return torch.empty(0, self.config.hidden_size)
        ids, lengths = pad_sequences(queries, self.config.pad_id)  # (B, m), (B,)
        with self._serving():
            _, _, q = self._run_gru(
                self.query_gru, ids.to(self.device), lengths.to(self.device)
            )  # (B, k)
        return _to_cpu_float32(q)

    def _lookup(self, state: DocumentState, Q: Tensor) -> Tensor:
        self._check_mode(state)
        memory = None if state.memory is None else self._state_tensor(state.memory)
        h_last = self._state_tensor(state.last_hidden)  # (k,)
        return self.attention.lookup(memory, state.n, h_last, self._state_tensor(Q))  # (m, k)

    def _score(self, R: Tensor, Q: Tensor, candidate_mask: Tensor) -> Tensor:
        return self._scores(
            self._state_tensor(R), self._state_tensor(Q), candidate_mask.to(self.device)
        )  # (m, E)

    def lookup(self, state: DocumentState, query_vectors: Tensor) -> Tensor:
        """Many questions against one document: Q (m, k) -> R (m, k), the state used once."""
        with self._serving():
            R = self._lookup(state, query_vectors)  # (m, k)
        return _to_cpu_float32(R)

    def score(self, R: Tensor, query_vectors: Tensor, candidate_mask: Tensor) -> Tensor:
        """R (m, k), Q (m, k), candidate_mask (m, E) -> scores (m, E) = W_o tanh(W_r R + W_q q)."""
        with self._serving():
            scores = self._score(R, query_vectors, candidate_mask)  # (m, E)
        return _to_cpu_float32(scores)
