"""The soak (`cheapqa soak`): closed-loop mixed load on a `cheapqa serve` it starts, for a
fixed time; it reports the errors (goal 0) and the server's memory growth (goal under 10%).

The mix, per ten requests: seven `answers`, one status read, one re-post of a known document
(idempotent: nothing is enqueued) and one new short document (indexed by the server's
in-process worker while the load runs). Beside the mix, one client appends to a document of
its own, one append at a time, each with `expected_text_hash` from the previous answer, and
sends every fifth append twice (a retry after a lost answer): the retry must be 412, never
applied twice. Memory is the server process's resident set
(VmRSS in /proc/<pid>/status), taken after indexing and a warm-up, sampled during the run,
and taken again at the end. The documents the soak created are deleted afterwards.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.corpus import LoadDocument
from bench.load_generator import LoadPlan, answers_requests, client_for, index_documents, run_phase
from bench.random_readers import corpus_vocabulary, write_random_checkpoints
from bench.spawn import serve
from cheapqa_client.client import (
    ApiRequest,
    AsyncClient,
    NewDocument,
    delete_request,
    document_path,
    index_request,
    status_request,
)
from encoder.model.modes import Mode

NEW_DOCUMENT_WORDS = 60


def rss_bytes(pid: int) -> int:
    """Resident set size of a process (Linux), from /proc/<pid>/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


@dataclass
class SoakReport:
    duration_s: float
    concurrency: int
    requests: int
    ok: int
    statuses: dict[str, int]
    exceptions: dict[str, int]
    latency_ms: dict[str, float]
    rss_start: int
    rss_end: int
    rss_peak: int
    rss_samples: list[tuple[float, int]] = field(default_factory=list)  # (seconds, bytes)
    created: int = 0
    deleted: int = 0
    appends: dict[str, int] = field(default_factory=dict)  # applied, retries_refused, other

    @property
    def errors(self) -> int:
        return self.requests - self.ok + self.appends.get("other", 0)

    @property
    def growth(self) -> float:
        return (self.rss_end - self.rss_start) / self.rss_start

    def to_json(self) -> dict[str, Any]:
        return {
            "duration_s": round(self.duration_s, 2),
            "concurrency": self.concurrency,
            "requests": self.requests,
            "errors": self.errors,
            "statuses": self.statuses,
            "exceptions": self.exceptions,
            "latency_ms": {k: round(v, 2) for k, v in self.latency_ms.items()},
            "rss_start_bytes": self.rss_start,
            "rss_end_bytes": self.rss_end,
            "rss_peak_bytes": self.rss_peak,
            "rss_growth": round(self.growth, 4),
            "rss_samples": [[round(t, 1), b] for t, b in self.rss_samples],
            "documents_created": self.created,
            "documents_deleted": self.deleted,
            "appends": self.appends,
        }

    def format(self) -> str:
        mb = 1024 * 1024
        lat = self.latency_ms
        return "\n".join(
            [
                f"soak: {self.duration_s:.1f} s closed loop at concurrency {self.concurrency}: "
                f"{self.requests} requests ({self.ok / self.duration_s:.1f}/s ok), "
                f"p50 {lat['p50']:.1f} ms, p99 {lat['p99']:.1f} ms",
                f"errors: {self.errors} (goal 0); statuses {self.statuses}; "
                f"exceptions {self.exceptions or 'none'}; appends {self.appends}",
                f"server RSS: {self.rss_start / mb:.1f} MB after warm-up -> "
                f"{self.rss_end / mb:.1f} MB at the end ({100 * self.growth:+.1f}%, goal "
                f"under +10%); peak {self.rss_peak / mb:.1f} MB",
                "RSS samples (s: MB): "
                + ", ".join(f"{t:.0f}: {b / mb:.1f}" for t, b in self.rss_samples),
                f"documents created by the load: {self.created}, deleted after: {self.deleted}",
            ]
        )


def mixed_requests(
    docs: Sequence[LoadDocument], mode: str, run_id: str, top_k: int = 5
) -> Callable[[int], ApiRequest]:
    """Request i of the mix (see the module docstring)."""
    answers = answers_requests(docs, mode, 1, top_k)

    def make(i: int) -> ApiRequest:
        doc = docs[i % len(docs)]
        kind = i % 10
        if kind == 7:
            return status_request(doc.id)
        if kind == 8:
            return index_request([NewDocument(doc.text, doc.id)])
        if kind == 9:
            words = doc.text.split()[:NEW_DOCUMENT_WORDS]
            return index_request([NewDocument(" ".join(words), f"soak-{run_id}-{i}")])
        return answers(i)

    return make


APPEND_TEXT = "Marigold waved from the pier once more."
APPEND_PAUSE_S = 0.2


async def appender(client: AsyncClient, doc_id: str, stop: asyncio.Event) -> dict[str, int]:
    """Appends to `doc_id` until `stop`, one at a time, each with the text hash the previous
    answer gave; every fifth is sent again (a client retrying after a lost answer), and that
    retry must answer 412. Counts: applied, retries_refused, other (anything else: an error)."""
    counts = {"applied": 0, "retries_refused": 0, "other": 0}
    info = await client.send(status_request(doc_id))
    text_hash = info.json()["text_hash"]
    n = 0
    while not stop.is_set():
        body = {"text": APPEND_TEXT, "expected_text_hash": text_hash}
        append = ApiRequest("POST", f"{document_path(doc_id)}/text", body)
        r = await client.send(append)
        if r.status_code != 200:
            counts["other"] += 1
            break
        counts["applied"] += 1
        text_hash = r.json()["text_hash"]
        n += 1
        if n % 5 == 0:
            again = await client.send(append)
            counts["retries_refused" if again.status_code == 412 else "other"] += 1
        await asyncio.sleep(APPEND_PAUSE_S)
    return counts


async def soak(
    url: str,
    pid: int,
    docs: Sequence[LoadDocument],
    mode: str,
    duration_s: float,
    concurrency: int,
    warmup_s: float,
    sample_every_s: float = 5.0,
    progress: Any = sys.stderr,
) -> SoakReport:
    run_id = f"{int(time.time())}"
    plan = LoadPlan(duration_s=duration_s, max_requests=10**9, concurrency=concurrency, warmup_s=0)
    append_doc = replace(docs[0], id=f"soak-{run_id}-append")
    async with client_for(url, plan, timeout_s=30.0, api_key=None) as client:
        await index_documents(client, [*docs, append_doc], timeout_s=300.0)
        warm_make = mixed_requests(docs, mode, f"{run_id}w")
        warm = await run_phase(
            client, "warm-up", 1, warm_make, replace(plan, duration_s=warmup_s), None
        )
        rss_start = rss_bytes(pid)
        samples: list[tuple[float, int]] = []
        started = time.monotonic()

        async def sample() -> None:
            while True:
                await asyncio.sleep(sample_every_s)
                samples.append((time.monotonic() - started, rss_bytes(pid)))

        sampler = asyncio.create_task(sample())
        stop_appending = asyncio.Event()
        appending = asyncio.create_task(appender(client, append_doc.id, stop_appending))
        try:
            make = mixed_requests(docs, mode, run_id)
            result = await run_phase(client, "soak", 1, make, plan, progress, pid)
        finally:
            sampler.cancel()
            stop_appending.set()
        appends = await appending
        rss_end = rss_bytes(pid)
        samples.append((time.monotonic() - started, rss_end))
        # Leave the server as it was: delete the documents the warm-up and the soak created.
        created = [f"soak-{run_id}-{i}" for i in range(9, result.requests, 10)]
        warm_created = [f"soak-{run_id}w-{i}" for i in range(9, warm.requests, 10)]
        deleted = 0
        for doc_id in [*created, *warm_created, append_doc.id]:
            response = await client.send(delete_request(doc_id))
            deleted += response.status_code == 204
    return SoakReport(
        duration_s=result.elapsed_s,
        concurrency=concurrency,
        requests=result.requests,
        ok=result.ok,
        statuses=dict(sorted(result.statuses.items())),
        exceptions=dict(result.errors),
        latency_ms=result.latency_ms(),
        rss_start=rss_start,
        rss_end=rss_end,
        rss_peak=max([rss_start, rss_end, *(b for _, b in samples)]),
        rss_samples=samples,
        created=len(created) + len(warm_created) + 1,
        deleted=deleted,
        appends=appends,
    )


def soak_spawned(
    docs: Sequence[LoadDocument],
    mode: Mode,
    *,
    duration_s: float,
    concurrency: int,
    warmup_s: float,
    sample_every_s: float,
    store_url: str,
    checkpoint_dir: Path | None,
    progress: Any = sys.stderr,
) -> SoakReport:
    """`soak` against a `cheapqa serve` it starts on loopback (with its worker in process,
    random-init readers unless `checkpoint_dir`), then stops. Raises LoadError, ServerError."""
    with tempfile.TemporaryDirectory(prefix="cheapqa-soak-") as tmp:
        workdir = Path(tmp)
        if checkpoint_dir is None:
            vocab = corpus_vocabulary(d.text for d in docs)
            checkpoint_dir = write_random_checkpoints(workdir / "checkpoints", [mode], vocab)
        env = {
            "CHEAPQA_DATA_DIR": str(workdir / "data"),
            "CHEAPQA_STORE_URL": store_url,
            "CHEAPQA_KEY_PREFIX": f"cheapqa-soak-{int(time.time())}",
            "CHEAPQA_SERVE_WORKER": "true",
            "CHEAPQA_MODES": json.dumps([mode]),
            "CHEAPQA_DEFAULT_MODE": mode,
            "CHEAPQA_CHECKPOINT_DIR": str(checkpoint_dir),
        }
        with serve(env, workdir / "server.log") as server:
            return asyncio.run(
                soak(
                    server.url,
                    server.pid,
                    docs,
                    mode,
                    duration_s,
                    concurrency,
                    warmup_s,
                    sample_every_s,
                    progress,
                )
            )
