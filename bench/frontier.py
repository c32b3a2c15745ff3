"""Accuracy against cost, for every mode and document length, measured side by side in one run.

    cheapqa bench frontier --checkpoint-dir encoder/checkpoints --data data

For each length L whose set `<data>/para-L/test.jsonl` is built, and each mode with a
checkpoint: test accuracy (`cheapqa evaluate`'s path, on the first --max-questions questions),
the bytes one document's state takes in the store (float16, the service's default), and the
CPU µs one question's lookup and scoring take against it (the lean serving path, in inference
mode, median over rounds; the process's CPU time, which other processes on a shared machine do
not inflate as they do the wall clock), on the set's own documents. The baselines that do not
read (most frequent candidate, bag of words) stand beside them. A plot puts accuracy against
lookup µs.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from bench.common import first_questions
from bench.lookup import median_seconds
from encoder.model.checkpoint import load_checkpoint
from encoder.model.modes import MODES
from encoder.model.reader import Reader
from encoder.model.serving import Serving, for_serving
from encoder.text.support import (
    RERANK_POOL,
    entity_evidence,
    evidence_support,
    mention_windows,
    question_terms,
    support_order,
)
from encoder.text.tokens import tokenize
from encoder.training.batches import POINTER_ENTITIES, encode_questions
from encoder.training.data.questions import Question
from encoder.training.evaluate import evaluate, read_any_questions
from store.codec import encode_state

DEFAULT_LENGTHS = (200, 800, 1600, 5000, 20000)
BASELINES = ("most_frequent", "bag_of_words")


@dataclass(frozen=True)
class Point:
    mode: str
    accuracy: float
    lookup_us: float  # one question: lookup + scoring against one stored state, CPU µs
    state_bytes: float  # mean bytes of a document's state at rest (float16)


@dataclass
class LengthRow:
    tokens: int  # the set's target length (its documents' mean in `mean_tokens`)
    mean_tokens: float
    questions: int
    baselines: dict[str, float]
    points: list[Point] = field(default_factory=list)


def _distinct_documents(questions: Sequence[Question], docs: int) -> list[str]:
    """The first `docs` distinct documents of the questions."""
    seen: dict[str, None] = {}
    for q in questions:
        seen.setdefault(q.document, None)
        if len(seen) == docs:
            break
    return list(seen)


def _documents(
    questions: Sequence[Question], reader: Reader, vocab: Any, docs: int
) -> tuple[list[Any], list[int]]:
    """The states of the first `docs` distinct documents of the questions, as served, and how
    many entities each names."""
    seen = _distinct_documents(questions, docs)
    pointed = reader.config.mode == "mentions"
    fake = [
        Question(str(i), d, "@placeholder", "@entity0", ["@entity0"]) for i, d in enumerate(seen)
    ]
    data = encode_questions(fake, vocab, POINTER_ENTITIES)
    assert data.doc_entities is not None
    named = [int(e.max()) + 1 for e in data.doc_entities]
    entities = data.doc_entities if pointed else None
    return reader.encode_documents(data.docs, entities), named


def cost(
    reader: Serving, states: Sequence[Any], named: Sequence[int], query: list[int], rounds: int
) -> tuple[float, float]:
    """(median µs of one question's lookup + scoring among every entity its document names,
    mean stored bytes) over the states."""
    E = reader.config.max_entities
    times, sizes = [], []
    with torch.inference_mode():
        Q = reader.encode_queries([query])  # (1, k)
        for state, entities in zip(states, named, strict=True):
            width = max(E, entities)  # the slot modes share their slots beyond E
            mask = torch.ones(1, width, dtype=torch.bool)

            def answer(state: Any = state, mask: torch.Tensor = mask) -> object:
                return reader.score(reader.lookup(state, Q), Q, mask)

            times.append(median_seconds(answer, rounds, clock=time.process_time))
            sizes.append(len(encode_state(state, model_id="bench", dtype="float16")))
    return 1e6 * statistics.median(times), statistics.fmean(sizes)


def support_cost(
    reader: Serving,
    states: Sequence[Any],
    named: Sequence[int],
    documents: Sequence[str],
    question: str,
    query: list[int],
    weight: float,
    rounds: int,
) -> tuple[float, float]:
    """(median µs of weighing one question's likeliest answers by their support, as
    `service.answering.rank_answers` does after the lookup, mean bytes of the kept mention
    windows) over the documents; the words sets split once per document, as a record keeps
    them."""
    E = reader.config.max_entities
    terms = question_terms(tokenize(question))
    times, sizes = [], []
    with torch.inference_mode():
        Q = reader.encode_queries([query])  # (1, k)
        for state, entities, document in zip(states, named, documents, strict=True):
            width = max(E, entities)
            mask = torch.ones(1, width, dtype=torch.bool)
            probs = torch.softmax(reader.score(reader.lookup(state, Q), Q, mask), dim=-1)
            windows = mention_windows(tokenize(document), width)
            evidence = [entity_evidence(w) for w in windows]

            def weigh(probs: torch.Tensor = probs, evidence: list[Any] = evidence) -> object:
                top = torch.topk(probs, k=min(RERANK_POOL, probs.shape[1]), dim=-1)
                slots, values = top.indices[0].tolist(), top.values[0].tolist()
                found = [evidence_support(terms, evidence[s]) for s in slots]
                return support_order(values, found, weight)

            times.append(median_seconds(weigh, rounds, clock=time.process_time))
            sizes.append(len(json.dumps(windows).encode()))
    return 1e6 * statistics.median(times), statistics.fmean(sizes)


def run_frontier(
    checkpoint_dir: Path,
    data_dir: Path,
    tmp: Path,
    lengths: Sequence[int] = DEFAULT_LENGTHS,
    modes: Sequence[str] = MODES,
    max_questions: int | None = 400,
    cost_documents: int = 8,
    rounds: int = 15,
    threads: int = 1,
    support_weight: float = 0.0,
    log: Callable[[str], None] = lambda _: None,
) -> list[LengthRow]:
    """With a support_weight, each mode has a second point, `<mode>+support`: its answers
    ranked by the reader and their support as the service ranks them (same evaluation pass),
    its cost the lookup's and the support step's, its bytes the state's and the windows'."""
    # One torch thread, as the service answers (settings.torch_threads); more would also
    # spin idle threads whose CPU time the clock counts.
    torch.set_num_threads(threads)
    rows = []
    for tokens in lengths:
        path = data_dir / f"para-{tokens}" / "test.jsonl"
        if not path.is_file():
            build = f"cheapqa data build --task para --window-tokens {tokens}"
            log(f"skipped {path}: not built ({build})")
            continue
        head = path if max_questions is None else first_questions(path, max_questions, tmp)
        row: LengthRow | None = None
        for mode in modes:
            ckpt_path = checkpoint_dir / f"{mode}.pt"
            if not ckpt_path.is_file():
                continue
            result = evaluate(ckpt_path, head, support_weight=support_weight)
            ckpt = load_checkpoint(ckpt_path)
            serving = for_serving(ckpt.model)  # as the service answers: the lean path
            questions, _ = read_any_questions(head, ckpt)
            states, named = _documents(questions, ckpt.model, ckpt.vocab, cost_documents)
            query = ckpt.vocab.encode_marked(tokenize(questions[0].query))[0]
            lookup_us, state_bytes = cost(serving, states, named, query, rounds)
            reader_accuracy = result.accuracy
            if result.reader_accuracy is not None:
                reader_accuracy = result.reader_accuracy
                documents = _distinct_documents(questions, cost_documents)
                support_us, window_bytes = support_cost(
                    serving,
                    states,
                    named,
                    documents,
                    questions[0].query,
                    query,
                    support_weight,
                    rounds,
                )
            if row is None or result.count > row.questions:
                mean = statistics.fmean(len(s.split()) for s in (q.document for q in questions))
                baselines = {b: getattr(result, b) for b in BASELINES}
                points = [] if row is None else row.points
                row = LengthRow(tokens, mean, result.count, baselines, points)
            row.points.append(Point(mode, reader_accuracy, lookup_us, state_bytes))
            if result.reader_accuracy is not None:
                total_us, total_bytes = lookup_us + support_us, state_bytes + window_bytes
                row.points.append(Point(f"{mode}+support", result.accuracy, total_us, total_bytes))
            for point in row.points[-2:] if result.reader_accuracy is not None else row.points[-1:]:
                log(
                    f"{tokens:>6} {point.mode:<16} accuracy {point.accuracy:.3f}  lookup "
                    f"{point.lookup_us:8.1f} us  state {point.state_bytes / 1024:9.1f} KiB"
                )
        if row is not None:
            rows.append(row)
    return rows


def markdown(rows: Sequence[LengthRow]) -> str:
    modes = list(dict.fromkeys(p.mode for r in rows for p in r.points))
    out = [
        "| tokens | questions | most frequent | bag of words | "
        + " | ".join(f"{m} acc / µs / KiB" for m in modes)
        + " |",
        "|---:|---:|---:|---:|" + "---:|" * len(modes),
    ]
    for r in rows:
        by_mode = {p.mode: p for p in r.points}
        cells = [
            f"{by_mode[m].accuracy:.3f} / {by_mode[m].lookup_us:.0f} / "
            f"{by_mode[m].state_bytes / 1024:.1f}"
            if m in by_mode
            else "-"
            for m in modes
        ]
        out.append(
            f"| {r.tokens:,} | {r.questions} | {r.baselines['most_frequent']:.3f} | "
            f"{r.baselines['bag_of_words']:.3f} | " + " | ".join(cells) + " |"
        )
    return "\n".join(out)


def plot(rows: Sequence[LengthRow], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5))
    modes = list(dict.fromkeys(p.mode for r in rows for p in r.points))
    for mode in modes:
        pts = [(r.tokens, p) for r in rows for p in r.points if p.mode == mode]
        ax.plot([p.lookup_us for _, p in pts], [p.accuracy for _, p in pts], marker="o", label=mode)
        for tokens, p in pts:
            ax.annotate(f"{tokens:,}", (p.lookup_us, p.accuracy), fontsize=7, alpha=0.7)
    ax.set_xscale("log")
    ax.set_xlabel("lookup + scoring of one question, CPU µs (log scale)")
    ax.set_ylabel("test accuracy (para task)")
    ax.set_title("Accuracy against cost; labels: document tokens")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def as_json(rows: Sequence[LengthRow]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]
