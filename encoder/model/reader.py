"""The reader: a document GRU, a query GRU (shared embeddings), one attention mode, an output layer.

Training calls `forward` on padded batches. Serving splits the same computation in two:
`encode_documents` / `extend` read each document once into a DocumentState, and
`encode_queries` + `lookup` + `score` answer questions from those states. Both paths give the
same scores (tests/encoder/test_model.py). The service runs the second through
`encoder.model.serving.ServingReader`, the same computation in fewer ops, held equal to this.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import Tensor, nn

from encoder.model.attention import Attention, build_attention
from encoder.model.config import ReaderConfig
from encoder.model.pointer import (
    append_mentions,
    entity_scores,
    key_positions,
    lookup_document,
    masked_entity_scores,
    read_mentions,
)
from encoder.model.shared_slots import entity_counts, spread_over_entities
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


def marker_entities(ids: Tensor, config: ReaderConfig) -> Tensor:
    """Each token's entity read off its marker (-1 for other words): right for a document of
    at most E entities; beyond, a marker's id is its entity modulo E and the caller says."""
    slots = ids.long() - config.entity_offset
    return torch.where((slots >= 0) & (slots < config.max_entities), slots, -1)


def _length_mask(lengths: Tensor, n: int) -> Tensor:
    return torch.arange(n, device=lengths.device) < lengths.unsqueeze(1)  # (B, n) True on tokens


MENTION_PRIOR_WEIGHTS = ("mention_weight", "mention_gate")  # what config.mention_prior adds


def cpu_float32_copy(t: Tensor) -> Tensor:
    """A fresh CPU float32 copy: made outside inference mode, it is an ordinary tensor that
    callers may modify."""
    return t.detach().to(device="cpu", dtype=torch.float32, copy=True)


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
        if config.mode == "mentions":
            # The question's side of the mention keys' bilinear score (encoder.pointer); the
            # identity at first, so a reader started from softmax's GRUs scores as H q does.
            self.pointer = nn.Linear(k, k)
            with torch.no_grad():
                self.pointer.weight.copy_(torch.eye(k))
                self.pointer.bias.zero_()
        else:
            self._init_output_layer(config)

    def _init_output_layer(self, config: ReaderConfig) -> None:
        """scores = W_o tanh(W_r R + W_q q) over the E slots (+ the mention prior)."""
        k = config.hidden_size
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

    @property
    def device(self) -> torch.device:
        return self.embedding.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.embedding.weight.dtype

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

    def mention_prior(
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
        if candidate_mask.shape[1] > logits.shape[1]:  # more entities than slots: shared
            logits = spread_over_entities(logits, candidate_mask)  # (B, S)
        prior = self.mention_prior(mentions, hidden)
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
        candidate_mask: Tensor,  # (B, E) True = candidate; mentions: (B, S) over entities
        doc_entities: Tensor | None = None,  # (B, n) mentions: entity of each token, -1 none
    ) -> Tensor:
        # Questions about one document share its pass: each distinct document is read once.
        unique, rows = torch.unique(doc_ids, dim=0, return_inverse=True)  # (U, n), (B,)
        if len(unique) < len(doc_ids):
            lengths = doc_lengths.new_zeros(len(unique)).scatter_(0, rows, doc_lengths)
            H, mask, h_last = self._run_gru(self.doc_gru, unique, lengths)  # (U, n, k)
            H, mask, h_last = H[rows], mask[rows], h_last[rows]  # (B, n, k)
        else:
            H, mask, h_last = self._run_gru(self.doc_gru, doc_ids, doc_lengths)  # (B, n, k)
        _, _, q = self._run_gru(self.query_gru, query_ids, query_lengths)  # (B, k)
        if self.config.mode == "mentions":
            return self._mention_forward(H, doc_ids, doc_lengths, q, candidate_mask, doc_entities)
        R = self.attention(H, mask, h_last, q)  # (B, k)
        mentions = None
        if self.config.mention_prior:  # counted by entity where the tokens' entities are given
            mentions = (
                self.mentions(doc_ids)
                if doc_entities is None
                else entity_counts(doc_entities, candidate_mask.shape[1], self.dtype)
            )
        return self._scores(R, q, candidate_mask, mentions)  # (B, E) or (B, S)

    def _mention_forward(
        self,
        H: Tensor,
        doc_ids: Tensor,
        lengths: Tensor,
        q: Tensor,
        candidate_mask: Tensor,
        doc_entities: Tensor | None,
    ) -> Tensor:
        """The mentions mode's scores (B, S) over entity indices (encoder.pointer)."""
        if doc_entities is None:
            doc_entities = marker_entities(doc_ids, self.config).masked_fill(
                ~_length_mask(lengths, doc_ids.shape[1]), -1
            )
        n = H.shape[1]
        logits = torch.einsum("bnk,bk->bn", H, self.pointer(q))  # (B, n) every token's key
        keyed = logits.gather(1, key_positions(lengths, n, self.config.mention_offset))
        very_negative = max(torch.finfo(keyed.dtype).min, torch.finfo(torch.float32).min) / 2
        scores = entity_scores(keyed, doc_entities, candidate_mask.shape[1])
        return scores.masked_fill(~candidate_mask.bool(), very_negative)  # (B, S)

    # ---- reading and answering: the general path (any device, any dtype) ------------------

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

    def encode_documents(
        self, docs: Sequence[Tensor], entities: Sequence[Tensor] | None = None
    ) -> list[DocumentState]:
        """Read each document once: one DocumentState per document, in this model's mode.
        The mentions mode needs each token's entity index (-1 for other words) in `entities`."""
        if len(docs) == 0:
            return []
        ids, lengths = pad_sequences(docs, self.config.pad_id)  # (B, n), (B,)
        if self.config.mode == "mentions":
            if entities is None:
                entities = [marker_entities(d.reshape(-1), self.config) for d in docs]
            if [len(e) for e in entities] != [len(d) for d in docs]:
                raise ValueError("entities must give one entity index (or -1) per token")
            return self._encode_mentions(ids, lengths, [e.reshape(-1) for e in entities])
        with self._serving():
            ids, lengths = ids.to(self.device), lengths.to(self.device)
            H, mask, h_last = self._run_gru(self.doc_gru, ids, lengths)  # (B, n, k)
            memories = self.attention.read(H, mask)
        return [
            DocumentState(
                mode=self.config.mode,
                n=int(n),
                last_hidden=cpu_float32_copy(h),
                memory=None if memory is None else cpu_float32_copy(memory),
            )
            for n, h, memory in zip(lengths.tolist(), h_last, memories, strict=True)
        ]

    def _encode_mentions(
        self, ids: Tensor, lengths: Tensor, entities: list[Tensor]
    ) -> list[DocumentState]:
        with self._serving():
            H, _, h_last = self._run_gru(
                self.doc_gru, ids.to(self.device), lengths.to(self.device)
            )  # (B, n, k)
            states = []
            for b, n in enumerate(lengths.tolist()):
                keys, mentions = read_mentions(
                    H[b], n, entities[b].to(self.device), self.config.mention_offset
                )
                states.append(
                    DocumentState(
                        mode="mentions",
                        n=int(n),
                        last_hidden=cpu_float32_copy(h_last[b]),
                        memory=cpu_float32_copy(keys),
                        mentions=mentions.cpu(),
                    )
                )
        return states

    def extend(
        self, state: DocumentState, new_ids: Tensor, new_entities: Tensor | None = None
    ) -> DocumentState:
        """Append tokens without re-reading: continue GRU_d from h_n and grow the memory.

        Equals encoding the whole text at once (C + Σ_new f_t f_tᵀ; H with new rows; the
        mentions mode: new keys, and keys for the mentions that waited for these tokens).
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
            if self.config.mode == "mentions":
                assert memory is not None and state.mentions is not None
                keys, mentions = append_mentions(
                    memory,
                    state.mentions,
                    state.n,
                    H[0],
                    marker_entities(new_ids, self.config)
                    if new_entities is None
                    else new_entities.reshape(-1).long(),
                    self.config.mention_offset,
                )
                return DocumentState(
                    mode=state.mode,
                    n=state.n + int(new_ids.numel()),
                    last_hidden=cpu_float32_copy(h_last[0]),
                    memory=cpu_float32_copy(keys),
                    mentions=mentions.cpu(),
                )
            memory = self.attention.append(memory, H[0])
        return DocumentState(
            mode=state.mode,
            n=state.n + int(new_ids.numel()),
            last_hidden=cpu_float32_copy(h_last[0]),
            memory=None if memory is None else cpu_float32_copy(memory),
        )

    def encode_queries(self, queries: Sequence[Tensor | Sequence[int]]) -> Tensor:
        """Questions (1-D long tensors, or lists of token ids as the service hands them over)
        -> their final query-GRU states q, (B, k) on the CPU."""
        if len(queries) == 0:
            return torch.empty(0, self.config.hidden_size)
        ids, lengths = pad_sequences(
            [torch.as_tensor(q, dtype=torch.long) for q in queries], self.config.pad_id
        )  # (B, m), (B,)
        with self._serving():
            _, _, q = self._run_gru(
                self.query_gru, ids.to(self.device), lengths.to(self.device)
            )  # (B, k)
        return cpu_float32_copy(q)

    def lookup(self, state: DocumentState, query_vectors: Tensor) -> Tensor:
        """Many questions against one document: Q (m, k) -> R (m, k), the state used once.
        The mentions mode scores the entities here already: (m, max(E, entities named))."""
        self._check_mode(state)
        with self._serving():
            memory = None if state.memory is None else self._state_tensor(state.memory)
            Q = self._state_tensor(query_vectors)  # (m, k)
            if self.config.mode == "mentions":
                assert memory is not None
                scores = lookup_document(memory, state, Q, self.pointer, self.config.max_entities)
                return cpu_float32_copy(scores)
            h_last = self._state_tensor(state.last_hidden)  # (k,)
            R = self.attention.lookup(memory, state.n, h_last, Q)  # (m, k)
        return cpu_float32_copy(R)

    def score(
        self,
        R: Tensor,
        query_vectors: Tensor,
        candidate_mask: Tensor,
        mentions: Tensor | None = None,
    ) -> Tensor:
        """R (m, k), Q (m, k), candidate_mask (m, E), mentions (E,) or (m, E): the document's
        count of each entity (see `mentions`; None when unknown: no prior) -> scores (m, E) =
        W_o tanh(W_r R + W_q q) (+ the mention prior, see `Reader`). The mentions mode's
        lookup gave the scores already: they are masked to the candidates (m, E) here."""
        if self.config.mode == "mentions":
            return masked_entity_scores(R, candidate_mask)
        with self._serving():
            scores = self._scores(
                self._state_tensor(R),
                self._state_tensor(query_vectors),
                candidate_mask.to(self.device),
                None if mentions is None else self._state_tensor(mentions),
            )  # (m, E)
        return cpu_float32_copy(scores)
