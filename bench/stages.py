"""Where one `answers` request's time goes, measured in process on the handler's own code path.

The app is built with `create_app` and its lifespan runs (store, models, query batcher), one
document is indexed through the API, then each repetition times the stages one by one with
the same calls the handler makes, and the whole request through httpx's ASGI transport:

  parse      AnswersIn from the JSON body (pydantic)
  fetch      store.get(id, modes=(mode,)): read and decode the state
  tokenise   anonymise each question with the document's entity map, vocabulary ids
  encode     the query GRU through the shared batcher (its gathering wait and thread hop
             included); `encode (bare)` is the GRU call alone
  lookup     Reader.lookup(state, Q); `score + top-k` is the rest of rank_answers (the
             support of the reader's likeliest answers and the ranking by both included)
  respond    the response's JSON bytes, built as the handler builds them

`framework` is the whole request minus its stages (per repetition, then the median): routing,
validation, dependency injection, the latency middleware, thread hops, request and response
plumbing.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.corpus import LoadDocument
from bench.load_generator import index_documents
from bench.random_readers import corpus_vocabulary, write_random_checkpoints
from cheapqa_client.client import ApiRequest, AsyncClient, answers_request
from encoder.model.modes import Mode
from service.answering import answers_body, prepare_queries, rank_answers
from service.app import create_app
from service.deps import Runtime
from service.schemas import AnswersIn
from service.settings import Settings

# Wraps the timed requests to show progress (a tqdm bar, say).
Progress = Callable[[range], Iterable[int]]


@dataclass
class StageReport:
    mode: str
    queries_per_request: int
    tokens: int
    repeats: int
    stages_us: dict[str, float] = field(default_factory=dict)  # median µs per stage
    total_us: float = 0.0  # median of the whole in-process request
    notes: dict[str, Any] = field(default_factory=dict)

    framework_us: float = 0.0  # median over repetitions of (whole request - its stages)

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "queries_per_request": self.queries_per_request,
            "tokens": self.tokens,
            "repeats": self.repeats,
            "stages_us": {k: round(v, 1) for k, v in self.stages_us.items()},
            "framework_us": round(self.framework_us, 1),
            "total_us": round(self.total_us, 1),
            "notes": self.notes,
        }


def format_stages(report: StageReport) -> str:
    lines = [
        f"one `answers` request: mode {report.mode}, {report.queries_per_request} queries, "
        f"document of {report.tokens} tokens; medians of {report.repeats} repetitions",
        f"{'stage':<22}{'µs':>10}{'share':>8}",
    ]
    rows = [*report.stages_us.items(), ("framework (rest)", report.framework_us)]
    for name, us in rows:
        share = "" if name.endswith("(bare)") else f"{100 * us / report.total_us:7.1f}%"
        lines.append(f"{name:<22}{us:>10.1f}{share:>8}")
    lines.append(f"{'whole request (ASGI)':<22}{report.total_us:>10.1f}")
    return "\n".join(lines)


def profile_in_temp_dir(
    settings: Settings,
    doc: LoadDocument,
    mode: Mode,
    queries_per_request: int,
    repeats: int,
    *,
    store_url: str,
    random_init: bool,
    checkpoint_dir: Path | None,
    progress: Progress = lambda requests: requests,
) -> StageReport:
    """`profile_answers` on an app of its own: a temporary data folder and key prefix, only
    `mode` loaded, the worker in process; random-init checkpoints when asked."""
    with tempfile.TemporaryDirectory(prefix="cheapqa-stages-") as tmp:
        updates: dict[str, Any] = {
            "data_dir": Path(tmp) / "data",
            "store_url": store_url,
            "key_prefix": f"cheapqa-stages-{Path(tmp).name}",
            "serve_worker": True,
            "modes": [mode],
            "default_mode": mode,
        }
        if random_init:
            vocab = corpus_vocabulary([doc.text])
            updates["checkpoint_dir"] = write_random_checkpoints(
                Path(tmp) / "checkpoints", [mode], vocab
            )
        elif checkpoint_dir is not None:
            updates["checkpoint_dir"] = checkpoint_dir
        profile_settings = settings.model_copy(update=updates)
        report = asyncio.run(
            profile_answers(
                profile_settings, doc, mode, queries_per_request, repeats, progress=progress
            )
        )
    report.notes["checkpoints"] = (
        "random-init, default size" if random_init else str(checkpoint_dir or "shipped")
    )
    return report


async def profile_answers(
    settings: Settings,
    doc: LoadDocument,
    mode: str,
    queries_per_request: int = 1,
    repeats: int = 200,
    warmup: int = 20,
    top_k: int = 5,
    progress: Progress = lambda requests: requests,
) -> StageReport:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with AsyncClient("http://profile", transport=transport) as client:
            deadline = time.perf_counter() + 120
            while (await client.send(ApiRequest("GET", "/readyz"))).status_code != 200:
                if time.perf_counter() > deadline:
                    raise RuntimeError("the app was not ready after 120s")
                await asyncio.sleep(0.05)
            indexed = await index_documents(client, [doc], timeout_s=300)
            runtime: Runtime = app.state.runtime
            assert runtime.store is not None and runtime.batcher is not None
            model = runtime.models.by_mode[mode]
            queries = [doc.questions[j % len(doc.questions)] for j in range(queries_per_request)]
            request = answers_request(doc.id, queries, mode, top_k)
            samples: dict[str, list[float]] = {}
            totals: list[float] = []
            rests: list[float] = []
            for i in progress(range(warmup + repeats)):
                stages, total = await _one_request(client, request, runtime, doc.id, mode, top_k)
                if i >= warmup:
                    for name, us in stages.items():
                        samples.setdefault(name, []).append(us)
                    totals.append(total)
                    counted = sum(v for k, v in stages.items() if not k.endswith("(bare)"))
                    rests.append(total - counted)
    report = StageReport(mode, queries_per_request, indexed[0]["tokens"], repeats)
    report.stages_us = {k: statistics.median(v) for k, v in samples.items()}
    report.total_us = statistics.median(totals)
    # Per repetition, then the median: the sum of the stages' medians is not the median of
    # their sum when their times are skewed (a busy machine).
    report.framework_us = statistics.median(rests)
    report.notes = {
        "store": settings.store_url or "embedded (SQLite)",
        "state_dtype": settings.state_dtype,
        "query_max_wait_ms": settings.query_max_wait_ms,
        "model_id": model.model_id,
    }
    return report


async def _one_request(
    client: AsyncClient,
    request: ApiRequest,
    runtime: Runtime,
    doc_id: str,
    mode: str,
    top_k: int,
) -> tuple[dict[str, float], float]:
    """The handler's stages one by one (µs each), then the whole request through the app."""
    assert runtime.store is not None and runtime.batcher is not None
    model = runtime.models.by_mode[mode]
    clock = time.perf_counter
    us: dict[str, float] = {}

    body = json.dumps(request.json).encode()
    t = clock()
    parsed = AnswersIn.model_validate_json(body)
    us["parse"] = clock() - t

    t = clock()
    record = await runtime.store.get(doc_id, modes=(mode,))
    us["fetch state"] = clock() - t
    assert record is not None
    state = record.states[mode]

    t = clock()
    prepared = prepare_queries(model, parsed.queries, record.entities)
    ids = prepared.ids
    us["tokenise"] = clock() - t

    t = clock()
    Q = await runtime.batcher.encode(model, ids)
    us["encode query"] = clock() - t
    t = clock()
    model.reader.encode_queries(ids)
    us["encode query (bare)"] = clock() - t

    t = clock()
    model.reader.lookup(state, Q)
    us["lookup"] = clock() - t
    t = clock()
    n, weight = len(record.entities), runtime.settings.support_weight
    ranked = rank_answers(
        model, state, Q, n, top_k, record.mentions, prepared.named, record.evidence,
        prepared.terms, weight, prepared.kinds, prepared.in_words,
    )  # fmt: skip
    us["score + top-k"] = clock() - t - us["lookup"]

    t = clock()
    answers_body(doc_id, mode, model.model_id, parsed.queries, prepared, record, ranked)
    us["respond"] = clock() - t

    t = clock()
    response = await client.send(request)
    total = clock() - t
    if response.status_code != 200:
        raise RuntimeError(f"answers failed: {response.status_code} {response.text[:300]}")
    return {k: v * 1e6 for k, v in us.items()}, total * 1e6
