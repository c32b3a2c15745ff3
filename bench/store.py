"""Measuring the store: bytes per document state, and get/put latency on both backends.

States are synthetic but shaped like the reader's: hidden states in (-1, 1) from tanh,
C = Σ h hᵀ, gated f = sigmoid(·) ⊙ h. Sizes depend only on shapes; latencies on sizes.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from bench.common import Goal, percentile
from encoder.model.modes import MODES, Mode, memory_shape
from encoder.model.state import DocumentState
from store.base import DocumentStore
from store.codec import DTYPES, HEADER_BYTES, encode_state
from store.errors import StoreError
from store.factory import is_embedded, open_store
from store.record import DocumentRecord, Status, meta_to_json

SIZE_TOKENS = (100, 750, 5000)
BATCH = 32
LATENCY_TOKENS = 750


DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def redis_url_and_source(given: str | None, store_url: str) -> tuple[str, str]:
    """The Redis to measure and why: --redis-url, else the settings' store when it is Redis."""
    if given:
        return given, "from --redis-url"
    if not is_embedded(store_url):
        return store_url, "from settings.store_url"
    return DEFAULT_REDIS_URL, "default: no --redis-url and settings.store_url is not Redis"


# The mentions mode keeps a key per entity mention: about one token in 12 in news (3% in the
# novels of the data set); the store bench assumes the denser.
MENTION_EVERY = 12


def synthetic_state(mode: Mode, k: int, n: int, seed: int = 0) -> DocumentState:
    gen = torch.Generator().manual_seed(seed)
    hidden = torch.tanh(torch.randn(n, k, generator=gen))  # (n, k)
    if mode == "gated":
        hidden = torch.sigmoid(torch.randn(n, k, generator=gen)) * hidden  # f_t, (n, k)
    if mode == "mentions":  # one mention in MENTION_EVERY tokens, one of the entities in turn
        positions = torch.arange(0, n, MENTION_EVERY)
        mentions = torch.stack([positions % 40, positions], dim=1).to(torch.int32)
        return DocumentState(mode, n, hidden[-1], hidden[positions], mentions)
    shape = memory_shape(mode, k, n)
    memory: torch.Tensor | None = None
    if shape == (k, k):
        memory = hidden.T @ hidden  # C, (k, k)
    elif shape == (n, k):
        memory = hidden  # H, (n, k)
    return DocumentState(mode, n, hidden[-1], memory)


def model_id_for(mode: str) -> str:
    # Shaped like encoder/model/checkpoint.py's ids: the mode and 12 hex digits of the
    # weights' digest.
    return f"{mode}-3f2a9c1b4d5e"


@dataclass
class SizeRow:
    mode: str
    dtype: str
    n: int
    bytes: int


def measure_sizes(k: int, tokens: Sequence[int] = SIZE_TOKENS) -> list[SizeRow]:
    rows = []
    for mode in MODES:
        for dtype in DTYPES:
            for n in tokens:
                data = encode_state(
                    synthetic_state(mode, k, n), model_id=model_id_for(mode), dtype=dtype
                )
                rows.append(SizeRow(mode, dtype, n, len(data)))
    return rows


def size_goals(rows: Sequence[SizeRow], k: int) -> list[Goal]:
    def size(mode: str, dtype: str, n: int) -> int:
        return next(r.bytes for r in rows if (r.mode, r.dtype, r.n) == (mode, dtype, n))

    linear16 = max(r.bytes for r in rows if (r.mode, r.dtype) == ("linear", "float16"))
    softmax32 = size("softmax", "float32", 750)
    limit = k * (k + 1) + 256
    return [
        Goal(f"linear float16 ≤ k(k+1) + 256 = {limit} B", limit, linear16, linear16 <= limit),
        Goal(
            "softmax float32 at n = 750 ≥ 25 × linear float16",
            25 * linear16,
            softmax32,
            softmax32 >= 25 * linear16,
        ),
    ]


@dataclass
class LatencyRow:
    backend: str
    document: str
    operation: str  # "put 1", "get 1", "put 32", "get 32"
    p50_ms: float
    p95_ms: float
    samples: int


@dataclass
class BackendReport:
    backend: str
    where: str
    available: bool
    error: str | None = None
    rows: list[LatencyRow] = field(default_factory=list)


def _record(doc_id: str, modes: Sequence[Mode], k: int, n: int) -> DocumentRecord:
    return DocumentRecord(
        id=doc_id,
        text_hash=uuid.uuid4().hex,
        status=Status.INDEXED,
        tokens=n,
        entities=[f"Entity Name {i}" for i in range(10)],
        model_ids={mode: model_id_for(mode) for mode in modes},
        states={mode: synthetic_state(mode, k, n) for mode in modes},
    )


async def _timed(repeats: int, call: Callable[[int], Awaitable[Any]]) -> tuple[float, float]:
    """p50 and p95 in milliseconds over `repeats` calls, after one unmeasured call."""
    await call(0)
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        await call(i)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), percentile(times, 95)


@dataclass(frozen=True)
class LatencyPlan:
    k: int = 100
    tokens: int = LATENCY_TOKENS
    repeats: int = 200  # timed single-document calls per operation
    batch: int = BATCH
    batch_repeats: int = 20  # timed batches per operation

    def operations(self) -> tuple[str, ...]:
        return ("put 1", "get 1", f"put {self.batch}", f"get {self.batch}")

    def documents(self) -> tuple[tuple[str, tuple[Mode, ...]], ...]:
        """(label, modes stored and read): the serving path reads one linear state; the
        second document stores every mode, which the softmax H dominates."""
        return (("linear only", ("linear",)), (f"all modes, n={self.tokens}", MODES))


async def measure_latency(
    store: DocumentStore, backend: str, plan: LatencyPlan
) -> list[LatencyRow]:
    rows = []
    put_one_op, get_one_op, put_batch_op, get_batch_op = plan.operations()
    for label, modes in plan.documents():
        ids = [f"bench-{i}" for i in range(plan.batch)]
        records = [_record(doc_id, modes, plan.k, plan.tokens) for doc_id in ids]

        async def put_one(i: int, records: list[DocumentRecord] = records) -> None:
            await store.put(records[i % len(records)])

        async def get_one(i: int, modes: tuple[str, ...] = modes, ids: list[str] = ids) -> None:
            assert await store.get(ids[i % len(ids)], modes) is not None

        async def put_batch(_: int, records: list[DocumentRecord] = records) -> None:
            await asyncio.gather(*(store.put(r) for r in records))

        async def get_batch(_: int, modes: tuple[str, ...] = modes, ids: list[str] = ids) -> None:
            assert None not in await store.get_many(ids, modes)

        try:
            for operation, call, count in (
                (put_one_op, put_one, plan.repeats),
                (get_one_op, get_one, plan.repeats),
                (put_batch_op, put_batch, plan.batch_repeats),
                (get_batch_op, get_batch, plan.batch_repeats),
            ):
                p50, p95 = await _timed(count, call)
                rows.append(LatencyRow(backend, label, operation, p50, p95, count))
        finally:
            for doc_id in ids:
                await store.delete(doc_id)
    return rows


async def bench_backend(
    backend: str, url: str, where: str, data_dir: Path, plan: LatencyPlan
) -> BackendReport:
    report = BackendReport(backend, where, available=False)
    store: DocumentStore | None = None
    try:
        # A prefix of its own, so the bench never touches real documents.
        store = open_store(
            url, data_dir=data_dir, key_prefix=f"cheapqa-bench-{uuid.uuid4().hex[:8]}"
        )
        await store.ping()
        report.available = True
        report.rows = await measure_latency(store, backend, plan)
    except StoreError as exc:
        report.error = str(exc)
    finally:
        if store is not None:
            await store.close()
    return report


@dataclass
class StoreBenchReport:
    k: int
    header_bytes: int
    model_id_example: str
    meta_bytes: int
    sizes: list[SizeRow]
    goals: list[Goal]
    plan: LatencyPlan
    backends: list[BackendReport]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        # This report has always called a goal's threshold its "limit".
        data["goals"] = [
            {"text": g.text, "limit": g.target, "measured": g.measured, "met": g.met}
            for g in self.goals
        ]
        return data


async def run_store_bench(redis_url: str, redis_source: str, plan: LatencyPlan) -> StoreBenchReport:
    k = plan.k
    sizes = measure_sizes(k)
    meta = meta_to_json(_record("a-typical-document-id", (), k, 750), {m: 0 for m in MODES}, 0.0)
    with tempfile.TemporaryDirectory(prefix="cheapqa-bench-") as tmp:
        embedded = await bench_backend("embedded", "embedded", f"SQLite in {tmp}", Path(tmp), plan)
    where = f"{redis_url} ({redis_source})"
    redis = await bench_backend("redis", redis_url, where, Path("."), plan)
    return StoreBenchReport(
        k=k,
        header_bytes=HEADER_BYTES,
        model_id_example=model_id_for("linear"),
        meta_bytes=len(meta),
        sizes=sizes,
        goals=size_goals(sizes, k),
        plan=plan,
        backends=[embedded, redis],
    )


def format_report(report: StoreBenchReport) -> str:
    k, tokens = report.k, sorted({r.n for r in report.sizes})
    model_id = report.model_id_example
    lines = [
        f"cheapqa bench store   k = {k}; header {report.header_bytes} B + model id "
        f"(e.g. {model_id!r}, {len(model_id.encode())} B)",
        "",
        "State bytes per document (one mode):",
        f"  {'mode':<8} {'dtype':<8}" + "".join(f"{'n = ' + str(n):>12}" for n in tokens),
    ]
    for mode in MODES:
        for dtype in DTYPES:
            sizes = [
                next(r.bytes for r in report.sizes if (r.mode, r.dtype, r.n) == (mode, dtype, n))
                for n in tokens
            ]
            lines.append(f"  {mode:<8} {dtype:<8}" + "".join(f"{size:>12,}" for size in sizes))
    lines.append(f"  + metadata JSON per document (10 entities, 4 modes): {report.meta_bytes} B")
    lines += ["", "Goals:"]
    for goal in report.goals:
        verdict = "MET" if goal.met else "NOT MET"
        lines.append(
            f"  {goal.text}: limit {goal.target:,.0f} B, measured {goal.measured:,.0f} B  {verdict}"
        )
    plan = report.plan
    operations = plan.operations()
    lines += [
        "",
        f"Latency, ms, p50 / p95 ({plan.batch} = a batch: {plan.batch} concurrent puts, or one"
        f" get_many; get reads the modes stored; {plan.repeats} single calls, "
        f"{plan.batch_repeats} batches timed):",
        f"    {'document':<20}" + "".join(f"{op:>16}" for op in operations),
    ]
    for backend in report.backends:
        lines.append(f"  {backend.backend}: {backend.where}")
        if not backend.available:
            lines.append(f"    NOT MEASURED: did not answer ({backend.error})")
            continue
        for label, _ in plan.documents():
            timings = {row.operation: row for row in backend.rows if row.document == label}
            cells = [
                f"{timings[op].p50_ms:>8.2f} /{timings[op].p95_ms:>6.1f}"
                if op in timings
                else f"{'-':>16}"
                for op in operations
            ]
            lines.append(f"    {label:<20}" + "".join(cells))
        if backend.error:
            lines.append(f"    STOPPED: {backend.error}")
    return "\n".join(lines)
