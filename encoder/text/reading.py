"""Reading a question beside a sentence: the sentence model, with a small fitted adapter, reads
the question and a sentence naming a candidate together, and a head scores each mention of the
candidate in it.

meaning(e) and role(e) compare vectors the model made of the question and of the sentence
apart: they cannot see that "The cooperative's lawyer, Farrukh Ismoilov" answers "Who is the
cooperative's legal adviser?", or that in '"Low Tide", directed by Carla Santos' the director
is not the actor named before. Read as one pair, the question's words and the sentence's
attend to each other:

    reading(e) = max over e's mentions m in its SENTENCES sentences nearest the question of
                 SCALE · wᵀ[a; m; a ⊙ m]

a: the asking word's unit vector and m the mention's, both from the adapted model's last
layer over "[CLS] question [SEP] sentence [SEP]". The adapter is low-rank (LoRA: W + (α/r)·BA
on every linear layer of the six, A and B of rank RANK), fitted with w and the ranking's
weights on the hand-written story sets (`cheapqa bench fit-reading`); the base model stays
the package's, so the file kept is the adapter, the head and the weights (`FILE`, about 0.7
MB). Only a question's TOP likeliest candidates are read: each costs a run of the model over
its sentences.
"""

from __future__ import annotations

import copy
import math
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import nn

from encoder.text.meaning import asking_span

FILE = "reading.pt"
FORMAT = 1
RANK = 8  # the adapter's
ALPHA = 16.0  # its scale: α / RANK
TOP = 8  # the candidates read, the likeliest under the ranking without reading(e)
SENTENCES = 2  # per candidate, its sentences nearest the question (by meaning(e)'s cosine)
MAX_TOKENS = 256  # the model's; a longer pair loses the sentence's end
SCALE = 10.0  # the head's output, so that its first steps move the ranking
# The linear layers of each of the model's layers that the adapter changes: all of them.
ADAPTED = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)
# The ranking's weights (encoder.text.ranking.Weights) and reading(e)'s: fitted together.
N_WEIGHTS = 10


class Adapted(nn.Module):
    """A frozen linear layer plus a low-rank update, (α/r) · B A x; B starts at 0, so the
    adapted model starts as the base."""

    def __init__(self, base: nn.Linear, rank: int, generator: torch.Generator | None = None):
        super().__init__()
        self.base = base
        self.A = nn.Parameter(
            torch.randn(rank, base.in_features, generator=generator) / base.in_features**0.5
        )
        self.B = nn.Parameter(torch.zeros(base.out_features, rank))
        self.scale = ALPHA / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.A.t() @ self.B.t()) * self.scale


def _parent(root: nn.Module, dotted: str) -> tuple[nn.Module, str]:
    *path, name = dotted.split(".")
    for part in path:
        root = getattr(root, part)
    return root, name


class Pair(NamedTuple):
    """A question read beside one sentence: token ids, and which tokens are the asking word
    and which the mention (1.0) or not (0.0)."""

    ids: list[int]
    asking: list[float]
    mention: list[float]


class PairReader(nn.Module):
    """The adapted sentence model and the head (and the ranking's weights, fitted with it)."""

    bert: Any  # a transformers BertModel

    def __init__(self, bert: Any, tokenizer: Any, rank: int = RANK, seed: int = 0):
        super().__init__()
        self.bert = bert
        self.tokenizer = tokenizer
        self.rank = rank
        for p in self.bert.parameters():
            p.requires_grad = False
        generator = torch.Generator().manual_seed(seed)
        for layer in self.bert.encoder.layer:
            for dotted in ADAPTED:
                parent, name = _parent(layer, dotted)
                setattr(parent, name, Adapted(getattr(parent, name), rank, generator))
        dim = self.bert.config.hidden_size
        self.head = nn.Linear(3 * dim, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)
        self.weights = nn.Parameter(torch.zeros(N_WEIGHTS))
        # The logit of "none of these" beside the candidates' scores: -inf (never) unless
        # fitted (encoder.training.reading.Settings.abstain); a file without it keeps -inf.
        self.abstain = nn.Parameter(torch.tensor(float("-inf")), requires_grad=False)

    def pair(self, question: str, sentence: str, spans: Sequence[Sequence[int]]) -> Pair | None:
        """The question read beside a sentence, the mention being `spans` ([start, end) in
        the sentence); None when the pair's tokens hold none of it (cut off at MAX_TOKENS)."""
        encoded = self.tokenizer(
            question,
            sentence,
            truncation="longest_first",  # a long question is cut too, never an error
            max_length=MAX_TOKENS,
            return_offsets_mapping=True,
        )
        segments = encoded.sequence_ids()
        offsets = encoded["offset_mapping"]
        qa, qb = asking_span(question)
        asking = [
            float(s == 0 and b > a and a < qb and b > qa)
            for s, (a, b) in zip(segments, offsets, strict=True)
        ]
        if not any(asking):
            asking = [float(s == 0) for s in segments]
        mention = [
            float(s == 1 and b > a and any(a < end and b > start for start, end in spans))
            for s, (a, b) in zip(segments, offsets, strict=True)
        ]
        if not any(mention):
            return None
        return Pair(list(encoded["input_ids"]), asking, mention)

    def scores(self, pairs: Sequence[Pair]) -> torch.Tensor:
        """(len(pairs),) each pair's mention score, SCALE · wᵀ[a; m; a ⊙ m]. Pairs of the same
        tokens (a sentence naming several candidates, read for one question) are run once."""
        device = self.head.weight.device
        if not pairs:
            return torch.zeros(0, device=device)
        runs: dict[tuple[int, ...], int] = {}
        row = [runs.setdefault(tuple(p.ids), len(runs)) for p in pairs]
        width = max(len(p.ids) for p in pairs)
        ids = torch.zeros(len(runs), width, dtype=torch.long)
        att = torch.zeros(len(runs), width)
        for i, tokens in enumerate(runs):
            ids[i, : len(tokens)] = torch.tensor(tokens)
            att[i, : len(tokens)] = 1.0
        asking = torch.zeros(len(pairs), width)
        mention = torch.zeros(len(pairs), width)
        for i, p in enumerate(pairs):
            asking[i, : len(p.ids)] = torch.tensor(p.asking)
            mention[i, : len(p.ids)] = torch.tensor(p.mention)
        ids, att, asking, mention = (t.to(device) for t in (ids, att, asking, mention))
        hidden = self.bert(input_ids=ids, attention_mask=att).last_hidden_state
        hidden = hidden[torch.tensor(row, device=device)]  # (len(pairs), width, dim)
        a = nn.functional.normalize((hidden * asking[..., None]).sum(1), dim=-1)
        m = nn.functional.normalize((hidden * mention[..., None]).sum(1), dim=-1)
        return self.head(torch.cat([a, m, a * m], dim=-1)).squeeze(-1) * SCALE

    def fitted(self) -> dict[str, torch.Tensor]:
        """What is fitted (the adapter, the head, the weights): what the file keeps."""
        return {k: v for k, v in self.state_dict().items() if _is_fitted(k)}


def _is_fitted(name: str) -> bool:
    """Whether a state-dict entry is fitted: the adapter's, the head's or the weights, not
    the sentence model's own."""
    return not name.startswith("bert.") or name.endswith((".A", ".B"))


def base_model(share_embeddings: bool = False) -> tuple[Any, Any]:
    """Copies of the sentence model's transformer (adapting it must not change the sentence
    vectors of meaning(e)) and of its tokenizer (meaning(e)'s is used under its own lock).
    share_embeddings: the copy keeps the sentence model's own token embeddings, half its
    weights, which the adapter leaves alone (about 90 MB less a process); for serving only,
    since fitting may move the model to another device."""
    from encoder.text.meaning import _model

    model = _model()
    transformer = model[0].auto_model
    embeddings = transformer.embeddings
    float32 = all(p.dtype == torch.float32 for p in embeddings.parameters())
    memo = {id(embeddings): embeddings} if share_embeddings and float32 else {}
    return copy.deepcopy(transformer, memo).float(), copy.deepcopy(model.tokenizer)


def save(reader: PairReader, path: Path, about: dict[str, object]) -> None:
    """The fitted tensors (half precision: the adapter and head are 0.7 MB so) and how."""
    tensors = {k: v.detach().cpu().half() for k, v in reader.fitted().items()}
    torch.save({"format": FORMAT, "rank": reader.rank, "tensors": tensors, **about}, path)


def read_fitted(path: Path) -> tuple[dict[str, torch.Tensor], int]:
    """What a reader's file keeps (`save`): its fitted tensors, in single precision, and its
    adapter's rank."""
    kept = torch.load(path, map_location="cpu", weights_only=True)
    if kept.get("format") != FORMAT:
        raise ValueError(f"{path}: pair reader format {kept.get('format')}, not {FORMAT}")
    return {k: v.float() for k, v in kept["tensors"].items()}, int(kept["rank"])


def lineage(init: Path) -> dict[str, object]:
    """What a reader fitted on from `init` keeps of where it started: the file and the sets
    that reader was fitted on."""
    kept = torch.load(init, map_location="cpu", weights_only=True)
    return {"init": str(init), "init_fitted_on": list(kept.get("fitted_on", []))}


def load(path: Path) -> PairReader:
    """A reader from its file, on the sentence model's base (CPU, eval mode), its token
    embeddings the sentence model's own (`base_model`): for serving, not for fitting."""
    tensors, rank = read_fitted(path)
    bert, tokenizer = base_model(share_embeddings=True)
    reader = PairReader(bert, tokenizer, rank=rank)
    missing = reader.load_state_dict(tensors, strict=False).missing_keys
    unfitted = [k for k in missing if _is_fitted(k) and k != "abstain"]
    if unfitted:
        raise ValueError(f"{path}: missing {unfitted[:3]}")
    return reader.eval()


def candidate_sentences(
    held: Sequence[int],
    cosines: Sequence[float],
    texts: Sequence[str],
    starts: Sequence[int],
    spans: Sequence[int],
) -> list[tuple[str, list[list[int]]]]:
    """A candidate's SENTENCES sentences nearest the question, each with the candidate's
    mentions in it as the sentence's own [start, end). held: the indices of the sentences
    naming it (into texts, starts and cosines: the question's cosine with each); spans: its
    mentions' [start, end, start, end, ...] in the text."""
    out = []
    for j in sorted(held, key=lambda j: -cosines[j])[:SENTENCES]:
        a, b = starts[j], starts[j] + len(texts[j])
        inside = [
            [spans[i] - a, spans[i + 1] - a]
            for i in range(0, len(spans) - 1, 2)
            if a <= spans[i] and spans[i + 1] <= b
        ]
        if inside:
            out.append((texts[j], inside))
    return out


def reranked(
    rows: Sequence[Sequence[float]],
    probabilities: Sequence[float],
    top: Sequence[int],
    values: Sequence[float],
    weights: Sequence[float],
    abstain: float = float("-inf"),
) -> list[float]:
    """The candidates' probabilities with the `top` ones' share given out again by softmax of
    w · features + w_reading · reading(e) (values: their reading(e)) and the abstain logit
    ("none of these": its part of the share is given to no candidate, so a question none of
    whose candidates reads as its answer keeps low scores); the others' unchanged."""
    if not top:  # no candidate left (the question names every entity): nothing to give out
        return list(probabilities)
    scores = [
        sum(w * x for w, x in zip(weights[:-1], rows[i], strict=True)) + weights[-1] * v
        for i, v in zip(top, values, strict=True)
    ]
    high = max([*scores, abstain])
    raised = [math.exp(x - high) for x in scores]
    mass = sum(probabilities[i] for i in top) / (sum(raised) + math.exp(abstain - high))
    out = list(probabilities)
    for i, r in zip(top, raised, strict=True):
        out[i] = mass * r
    return out


# One reader per process; its tokenizer (the sentence model's) is not safe across threads.
_LOCK = threading.Lock()


def reading_values(
    reader: PairReader, question: str, candidates: Sequence[Sequence[tuple[str, list[list[int]]]]]
) -> list[float]:
    """Per candidate (its `candidate_sentences`), reading(e): its mentions' best score, 0
    where none is read (blocking: the model runs here)."""
    pairs: list[Pair] = []
    owner: list[int] = []
    with _LOCK:
        for k, per in enumerate(candidates):
            for text, spans in per:
                found = reader.pair(question, text, spans)
                if found is not None:
                    pairs.append(found)
                    owner.append(k)
        with torch.inference_mode():
            scores = reader.scores(pairs).tolist()
    best = [float("-inf")] * len(candidates)
    for k, value in zip(owner, scores, strict=True):
        best[k] = max(best[k], value)
    return [0.0 if math.isinf(b) else b for b in best]


def folded(reader: PairReader) -> PairReader:
    """The reader with its adapter folded into the layers it adapts (W + (α/r)·BA, in
    place): the same scores in about a fifth less time, for serving only (the adapter is
    no longer apart, so not for fitting or saving)."""
    with torch.no_grad():
        for layer in reader.bert.encoder.layer:
            for dotted in ADAPTED:
                parent, name = _parent(layer, dotted)
                adapted = getattr(parent, name)
                adapted.base.weight += (adapted.B @ adapted.A) * adapted.scale
                setattr(parent, name, adapted.base)
    return reader


@lru_cache(maxsize=2)
def loaded(path: Path) -> PairReader:
    """The reader kept at `path`, loaded once per process and folded for serving."""
    return folded(load(path))
