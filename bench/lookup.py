"""In-process lookup benchmark: time per question for each mode against document length n,
and document encoding throughput against batch size. No HTTP, one torch thread.

States come from real text: one token stream of the largest n is read once per mode, in
pieces, with `Reader.encode_documents` for the first n and `Reader.extend` up to each next
n; `extend` equals reading the whole text at once (the model tests hold it to that), so every
n gets the state of its own prefix without re-reading 50,000 tokens per point.

Two figures per point: the model's `lookup` (what the service calls: `ServingReader.lookup`,
the lean path, inside one inference-mode context) and the bare tensor arithmetic
(linear and gated: C q, a k×k matrix-vector product; softmax: Hᵀ softmax(H q)). The paper's
n/k prediction for softmax/linear is about the arithmetic.
"""

from __future__ import annotations

import itertools
import platform
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import torch

from bench.common import Goal, write_json
from bench.corpus import Corpus
from bench.random_readers import corpus_vocabulary, random_reader
from encoder.model.checkpoint import load_checkpoint
from encoder.model.modes import Mode
from encoder.model.reader import Reader
from encoder.model.serving import ServingReader
from encoder.model.state import DocumentState
from encoder.model.vocab import Vocabulary
from encoder.text.anonymise import anonymise_document
from encoder.text.tokens import tokenize
from service.readers import checkpoint_path
from service.settings import Settings

DEFAULT_NS = (100, 250, 750, 2000, 5000, 10_000, 20_000, 50_000)
ENCODE_BATCHES = (1, 4, 16, 64)


@dataclass
class LookupRow:
    mode: str
    n: int
    model_us: float  # Reader.lookup, one question
    bare_us: float | None  # the arithmetic alone, one question (None for mode none)
    batch_model_us: float  # Reader.lookup of m questions at once, per question
    batch_bare_us: float | None


@dataclass
class EncodeRow:
    mode: str
    batch: int
    tokens_per_document: int
    seconds: float  # median time of one encode_documents call
    documents_per_s: float
    tokens_per_s: float


@dataclass
class QueryEncodeRow:
    mode: str
    batch: int  # questions per encode_queries call
    mean_tokens: float  # question length in tokens
    us_per_query: float


@dataclass
class LookupBench:
    rows: list[LookupRow]
    encode: list[EncodeRow]
    goals: list[Goal] = field(default_factory=list)
    query_encode: list[QueryEncodeRow] = field(default_factory=list)
    lookup_parts: dict[str, float] = field(default_factory=dict)  # linear, µs per step
    setup: dict[str, Any] = field(default_factory=dict)

    def row(self, mode: str, n: int) -> LookupRow | None:
        return next((r for r in self.rows if r.mode == mode and r.n == n), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "setup": self.setup,
            "lookup": [asdict(r) for r in self.rows],
            "encode": [asdict(r) for r in self.encode],
            "query_encode": [asdict(r) for r in self.query_encode],
            "lookup_parts_us": self.lookup_parts,
            "goals": [asdict(g) for g in self.goals],
        }


def median_seconds(
    fn: Callable[[], object],
    rounds: int = 21,
    min_round_s: float = 2e-3,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Median over `rounds` of the mean time of one call, each round long enough
    (`min_round_s`) for the clock; after a warm-up call. `time.process_time` counts only
    this process's CPU time: on a shared, loaded machine the wall clock also counts the time
    other processes held the cores."""
    fn()
    inner = 1
    while True:
        start = clock()
        for _ in range(inner):
            fn()
        elapsed = clock() - start
        if elapsed >= min_round_s or inner >= 1 << 16:
            break
        inner = max(inner * 2, int(inner * min_round_s / max(elapsed, 1e-9)))
    times = []
    for _ in range(rounds):
        start = clock()
        for _ in range(inner):
            fn()
        times.append((clock() - start) / inner)
    return statistics.median(times)


def token_ids(corpus: Corpus, n: int, vocab: Vocabulary, max_entities: int) -> torch.Tensor:
    """The first n tokens of the corpus, anonymised as the service would, as vocabulary ids."""
    doc = corpus.documents(1, n + 64, prefix="bench")[0]  # a little over: names merge tokens
    tokens = anonymise_document(doc.text, doc.candidates, max_entities=max_entities).tokens
    if len(tokens) < n:
        raise ValueError(f"{corpus.source} gave {len(tokens)} tokens, fewer than {n}")
    return torch.tensor(vocab.encode(tokens[:n]), dtype=torch.long)


def states_at(
    reader: ServingReader, ids: torch.Tensor, ns: Sequence[int]
) -> dict[int, DocumentState]:
    """The state of each prefix ids[:n]: encode the first, extend to each next."""
    ns = sorted(set(ns))
    states: dict[int, DocumentState] = {}
    state = reader.encode_documents([ids[: ns[0]]])[0]
    states[ns[0]] = state
    for prev, n in itertools.pairwise(ns):
        state = reader.extend(state, ids[prev:n])
        states[n] = state
    return states


def bare_lookup(state: DocumentState, Q: torch.Tensor) -> Callable[[], object] | None:
    """The arithmetic of a lookup on tensors already in place, for one or many questions."""
    memory = state.memory
    if memory is None:
        return None
    if state.mode == "softmax":
        H = memory  # (n, k)
        if Q.shape[0] == 1:
            q = Q[0]
            return lambda: H.mT @ torch.softmax(H @ q, dim=0)  # (k,)
        return lambda: torch.softmax(Q @ H.mT, dim=-1) @ H  # (m, k)
    C = memory  # (k, k)
    if Q.shape[0] == 1:
        q = Q[0]
        return lambda: torch.mv(C, q)  # (k,)
    return lambda: Q @ C.mT  # (m, k)


def time_lookup_parts(reader: ServingReader, state: DocumentState, rounds: int) -> dict[str, float]:
    """µs of each step ServingReader.lookup takes for one question (called in inference mode,
    as the service calls it), timed one by one, beside the whole call and the bare product."""
    k = reader.config.hidden_size
    q1 = torch.tanh(torch.randn(1, k, generator=torch.Generator().manual_seed(1)))
    memory, h_last = state.memory, state.last_hidden

    def checks() -> None:
        # What the lean path asks before the arithmetic: inference mode? the state's mode, and
        # whether each tensor already is CPU float32.
        _ = torch.is_inference_mode_enabled(), state.mode == reader.config.mode
        for t in (memory, h_last, q1):
            if t is not None:
                _ = t.dtype is torch.float32 and t.is_cpu

    with torch.inference_mode():
        arithmetic = partial(reader.reader.attention.lookup, memory, state.n, h_last, q1)
        parts = {
            "checks (mode, inference mode, 3 × dtype and device)": median_seconds(checks, rounds),
            "attention.lookup (one addmm, 1/n folded in)": median_seconds(arithmetic, rounds),
        }
        whole = median_seconds(partial(reader.lookup, state, q1), rounds)
        parts["rest: Python glue (calls)"] = whole - sum(parts.values())
        parts["Reader.lookup, whole call"] = whole
        if memory is not None:
            parts["for scale: bare C q (torch.mv)"] = median_seconds(
                partial(torch.mv, memory, q1[0]), rounds
            )
    return {name: 1e6 * s for name, s in parts.items()}


def time_lookups(
    reader: ServingReader,
    states: dict[int, DocumentState],
    batch_queries: int,
    rounds: int,
    seed: int = 0,
    passes: int = 3,
) -> list[LookupRow]:
    k = reader.config.hidden_size
    gen = torch.Generator().manual_seed(seed)
    # Query vectors are final GRU states: in (-1, 1) like tanh outputs.
    Q = torch.tanh(torch.randn(batch_queries, k, generator=gen))  # (m, k)
    q1 = Q[:1]  # (1, k)
    # Several passes over all n, the median of each point's pass medians: a disturbance of the
    # shared machine lasting a few rounds then shifts one pass, not a whole point.
    measured: dict[tuple[int, str], list[float]] = {}
    for _ in range(passes):
        for n, state in sorted(states.items()):
            with torch.inference_mode():
                calls = {
                    "model": partial(reader.lookup, state, q1),
                    "batch": partial(reader.lookup, state, Q),
                    "bare": bare_lookup(state, q1),
                    "batch_bare": bare_lookup(state, Q),
                }
                for kind, fn in calls.items():
                    if fn is not None:
                        measured.setdefault((n, kind), []).append(median_seconds(fn, rounds))

    def us_of(n: int, kind: str, per: int = 1) -> float | None:
        values = measured.get((n, kind))
        return None if values is None else 1e6 * statistics.median(values) / per

    rows = []
    for n, state in sorted(states.items()):
        model_us, batch_us = us_of(n, "model"), us_of(n, "batch", batch_queries)
        assert model_us is not None and batch_us is not None
        rows.append(
            LookupRow(
                mode=state.mode,
                n=n,
                model_us=model_us,
                bare_us=us_of(n, "bare"),
                batch_model_us=batch_us,
                batch_bare_us=us_of(n, "batch_bare", batch_queries),
            )
        )
    return rows


def time_encoding(
    reader: ServingReader, ids: torch.Tensor, batches: Sequence[int], tokens: int, rounds: int
) -> list[EncodeRow]:
    """encode_documents on batches of equal-length slices of the real token stream."""
    rows = []
    for b in batches:
        docs = [ids[(i * tokens) % max(1, len(ids) - tokens) :][:tokens] for i in range(b)]
        seconds = median_seconds(partial(reader.encode_documents, docs), rounds, 0.0)
        rows.append(
            EncodeRow(reader.config.mode, b, tokens, seconds, b / seconds, b * tokens / seconds)
        )
    return rows


def time_query_encoding(
    reader: ServingReader,
    vocab: Vocabulary,
    questions: Sequence[str],
    batches: Sequence[int],
    rounds: int,
) -> list[QueryEncodeRow]:
    """Reader.encode_queries on real questions: every answer pays this before its lookup."""
    ids = [torch.tensor(vocab.encode(tokenize(q)), dtype=torch.long) for q in questions]
    rows = []
    for b in batches:
        batch = [ids[i % len(ids)] for i in range(b)]
        mean_tokens = sum(len(t) for t in batch) / b
        with torch.inference_mode():  # as the service's batcher calls it
            seconds = median_seconds(partial(reader.encode_queries, batch), rounds)
        rows.append(QueryEncodeRow(reader.config.mode, b, mean_tokens, 1e6 * seconds / b))
    return rows


def _ratio(bench: LookupBench, n: int, field_name: str) -> float | None:
    soft, lin = bench.row("softmax", n), bench.row("linear", n)
    if soft is None or lin is None:
        return None
    a, b = getattr(soft, field_name), getattr(lin, field_name)
    return None if a is None or b is None else a / b


def evaluate_goals(bench: LookupBench) -> list[Goal]:
    goals = []
    for n, want in ((750, 6.0), (5000, 40.0)):
        for field_name, what in (("bare_us", "bare op"), ("model_us", "Reader.lookup")):
            r = _ratio(bench, n, field_name)
            if r is not None:
                goals.append(
                    Goal(
                        f"softmax/linear at n={n}, one query, {what}", f">= {want:g}x", r, r >= want
                    )
                )
    ns = sorted({r.n for r in bench.rows if r.mode == "linear"})
    if len(ns) >= 2 and ns[0] == 100 and ns[-1] == 50_000:
        for field_name, what in (("model_us", "Reader.lookup"), ("bare_us", "bare op")):
            lo, hi = bench.row("linear", ns[0]), bench.row("linear", ns[-1])
            assert lo is not None and hi is not None
            a, b = getattr(hi, field_name), getattr(lo, field_name)
            if a is not None and b is not None:
                goals.append(
                    Goal(
                        f"linear n=50000 / n=100, one query, {what}", "<= 1.2x", a / b, a / b <= 1.2
                    )
                )
    return goals


def load_readers(
    modes: Sequence[Mode],
    corpus: Corpus,
    settings: Settings,
    *,
    random_init: bool,
    largest_n: int,
) -> tuple[dict[str, Reader], dict[str, Vocabulary], str]:
    """The readers to time, their vocabularies and where they came from. Random-init readers
    of the default size (timing does not need trained weights) or the checkpoints the settings
    name; raises CheckpointError when one cannot be read."""
    readers: dict[str, Reader] = {}
    vocabs: dict[str, Vocabulary] = {}
    if random_init:
        # A vocabulary of a few thousand real words, as a trained reader's would be.
        sample = corpus.documents(1, max(largest_n, 100_000), prefix="vocab")[0].text
        vocab = corpus_vocabulary([sample])
        for i, mode in enumerate(modes):
            readers[mode], vocabs[mode] = random_reader(mode, vocab, seed=i), vocab
        return readers, vocabs, f"random-init, default size (k=100, E=50, vocabulary {len(vocab)})"
    paths = {mode: checkpoint_path(settings, mode) for mode in modes}
    for mode, path in paths.items():
        ckpt = load_checkpoint(path)
        readers[mode], vocabs[mode] = ckpt.model, ckpt.vocab
    return readers, vocabs, ", ".join(f"{m}: {p}" for m, p in paths.items())


def run_lookup_bench(
    readers: dict[str, Reader],
    vocab_of: Callable[[str], Vocabulary],
    corpus: Corpus,
    *,
    ns: Sequence[int] = DEFAULT_NS,
    batch_queries: int = 32,
    encode_batches: Sequence[int] = ENCODE_BATCHES,
    encode_tokens: int = 250,
    rounds: int = 21,
    threads: int = 1,
    progress: Callable[[list[str]], Iterable[str]] = lambda modes: modes,
) -> LookupBench:
    torch.set_num_threads(threads)
    rows: list[LookupRow] = []
    encode: list[EncodeRow] = []
    query_encode: list[QueryEncodeRow] = []
    read_s: dict[str, float] = {}
    questions = corpus.documents(1, 5000, prefix="questions")[0].questions
    lookup_parts: dict[str, float] = {}
    lookup_parts_n = 0
    for mode in progress(list(readers)):
        reader = ServingReader(readers[mode])  # as the service serves it: eval(), tables built
        length = max(*ns, encode_tokens)
        ids = token_ids(corpus, length, vocab_of(mode), reader.config.max_entities)
        start = time.perf_counter()
        states = states_at(reader, ids, ns)
        read_s[mode] = time.perf_counter() - start
        rows += time_lookups(reader, states, batch_queries, rounds)
        if mode == "linear":
            n_parts = min(states, key=lambda n: abs(n - 750))
            # Three passes, the median of each step: as for the lookup times.
            passes = [time_lookup_parts(reader, states[n_parts], rounds) for _ in range(3)]
            lookup_parts = {k: statistics.median(p[k] for p in passes) for k in passes[0]}
            lookup_parts_n = n_parts
        del states
        encode += time_encoding(reader, ids, encode_batches, encode_tokens, max(3, rounds // 4))
        query_encode += time_query_encoding(
            reader, vocab_of(mode), questions, sorted({1, batch_queries}), rounds
        )
    some = next(iter(readers.values())).config
    bench = LookupBench(rows, encode, query_encode=query_encode, lookup_parts=lookup_parts)
    bench.setup = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "k": some.hidden_size,
        "E": some.max_entities,
        "vocab_size": some.vocab_size,
        "batch_queries": batch_queries,
        "rounds": rounds,
        "corpus": corpus.source,
        "states": "real token stream, encode_documents at the smallest n, extend to each next n",
        "read_seconds": {m: round(s, 2) for m, s in read_s.items()},
        "lookup_parts_n": lookup_parts_n,
    }
    bench.goals = evaluate_goals(bench)
    return bench


def _us(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.2f}" if v < 100 else f"{v:.0f}"


def _lookup_table(bench: LookupBench, modes: list[str], model: str, bare: str) -> list[str]:
    """One row per n: each mode's Reader.lookup and bare time, then softmax/linear ratios."""
    head = ["n"]
    for mode in modes:
        head += [f"{mode} lookup"] + ([] if mode == "none" else [f"{mode} bare"])
    has_ratio = "softmax" in modes and "linear" in modes
    if has_ratio:
        head += ["softmax/linear lookup", "softmax/linear bare"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for n in sorted({r.n for r in bench.rows}):
        cells = [f"{n:,}"]
        for mode in modes:
            r = bench.row(mode, n)
            cells.append("-" if r is None else _us(getattr(r, model)))
            if mode != "none":
                cells.append("-" if r is None else _us(getattr(r, bare)))
        if has_ratio:
            for f in (model, bare):
                ratio = _ratio(bench, n, f)
                cells.append("-" if ratio is None else f"{ratio:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def markdown(bench: LookupBench) -> str:
    modes = list(dict.fromkeys(r.mode for r in bench.rows))
    m = bench.setup.get("batch_queries", "m")
    lines = [
        "Lookup time per question (µs), one torch thread. `lookup` = Reader.lookup (what the "
        "service calls), `bare` = the tensor arithmetic alone (linear, gated: C q; softmax: "
        "Hᵀ softmax(H q)).",
        "",
        "One question at a time:",
        "",
        *_lookup_table(bench, modes, "model_us", "bare_us"),
        "",
        f"A batch of {m} questions on one document, time per question:",
        "",
        *_lookup_table(bench, modes, "batch_model_us", "batch_bare_us"),
    ]
    lines += [
        "",
        "Encoding throughput (Reader.encode_documents, equal-length documents):",
        "",
        "| mode | batch | tokens/doc | ms/call | documents/s | tokens/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for e in bench.encode:
        lines.append(
            f"| {e.mode} | {e.batch} | {e.tokens_per_document} | {e.seconds * 1e3:.1f} | "
            f"{e.documents_per_s:.1f} | {e.tokens_per_s:,.0f} |"
        )
    if bench.query_encode:
        lines += [
            "",
            "Question encoding (Reader.encode_queries, real questions), paid before every lookup:",
            "",
            "| mode | questions per call | mean tokens | µs per question |",
            "|---|---:|---:|---:|",
        ]
        for qe in bench.query_encode:
            lines.append(
                f"| {qe.mode} | {qe.batch} | {qe.mean_tokens:.1f} | {qe.us_per_query:.1f} |"
            )
    if bench.lookup_parts:
        lines += [
            "",
            f"Where one linear Reader.lookup goes (n = {bench.setup.get('lookup_parts_n')}, "
            "one question; each step timed alone):",
            "",
            "| step | µs |",
            "|---|---:|",
        ]
        lines += [f"| {name} | {us:.2f} |" for name, us in bench.lookup_parts.items()]
        lines += ["", "(medians of separately timed steps, so the rest can come out negative)"]
    if bench.goals:
        lines += ["", "| goal | target | measured | met |", "|---|---|---:|---|"]
        for g in bench.goals:
            lines.append(
                f"| {g.text} | {g.target} | {g.measured:.2f} | {'yes' if g.met else 'no'} |"
            )
    return "\n".join(lines) + "\n"


def plot(bench: LookupBench, path: Path) -> None:
    """Lookup time per question against n, log axes (matplotlib imported only here)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5))
    m = bench.setup.get("batch_queries", "m")
    styles = (
        ("model_us", "-", "lookup"),
        ("bare_us", "--", "bare"),
        ("batch_model_us", ":", f"lookup, ×{m} batch"),
    )
    for i, mode in enumerate(dict.fromkeys(r.mode for r in bench.rows)):
        rows = sorted((r for r in bench.rows if r.mode == mode), key=lambda r: r.n)
        for field_name, style, what in styles:
            pts = [
                (r.n, getattr(r, field_name)) for r in rows if getattr(r, field_name) is not None
            ]
            if pts:
                xs, ys = zip(*pts, strict=True)
                ax.plot(xs, ys, style, marker="o", ms=3, color=f"C{i}", label=f"{mode} {what}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("document length n (tokens)")
    ax.set_ylabel("time per question (µs)")
    ax.set_title(f"Lookup time against n (k={bench.setup.get('k')}, 1 torch thread)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(bench: LookupBench, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    table, png, data = out_dir / "lookup.md", out_dir / "lookup.png", out_dir / "lookup.json"
    table.write_text(markdown(bench))
    plot(bench, png)
    write_json(data, bench.to_json())
    return [table, png, data]


def format_goals(goals: Sequence[Goal]) -> str:
    return "\n".join(
        f"{'met' if g.met else 'MISSED'}: {g.text}: {g.measured:.2f} (goal {g.target})"
        for g in goals
    )
