"""Schemathesis against the app's own OpenAPI schema, in process, with the lifespan running.

Every operation gets generated requests, valid and invalid (schemathesis' positive and
negative modes); every response must be no 5xx, have a status the schema documents for the
operation, and a body that validates against the schema. Half the requests on a document
path go to documents the test indexed first, so answering and appending are reached, not
only the 404 of an unknown id.

`CHEAPQA_FUZZ_EXAMPLES` sets the examples per operation and mode (default 100, bounded for
CI); the figures in RELIABILITY.md come from `CHEAPQA_FUZZ_EXAMPLES=1000`.
`CHEAPQA_FUZZ_OPERATIONS=answer_queries,append_text` fuzzes only those operations, and
`CHEAPQA_FUZZ_STORE_URL=redis://…` runs it over Redis instead of the embedded store.
"""

from __future__ import annotations

import collections
import os
import time
from pathlib import Path
from typing import Any

import hypothesis
import schemathesis
from schemathesis import GenerationMode
from schemathesis.core.result import Ok
from schemathesis.python import asgi

from service.app import create_app
from service.settings import Settings
from tests.reliability.corpus import make_documents

EXAMPLES = int(os.environ.get("CHEAPQA_FUZZ_EXAMPLES", "100"))
# A Redis URL to fuzz the app over Redis (store and queue) instead of the embedded store.
STORE_URL = os.environ.get("CHEAPQA_FUZZ_STORE_URL", "")
# Comma-separated operation ids to fuzz (default: all), e.g. to replay one finding.
ONLY = {op for op in os.environ.get("CHEAPQA_FUZZ_OPERATIONS", "").split(",") if op}
KNOWN = make_documents(4, seed=11)
API_KEY = "fuzz-key"
CHECKS = [
    schemathesis.checks.not_a_server_error,
    schemathesis.checks.status_code_conformance,
    schemathesis.checks.content_type_conformance,
    schemathesis.checks.response_schema_conformance,
    schemathesis.checks.response_headers_conformance,
    schemathesis.checks.negative_data_rejection,  # invalid requests get a 4xx, not a 2xx
]
# Not deleted by the fuzzer, so the other operations keep finding them indexed.
NOT_DELETED = {"index_documents", "get_document", "append_text", "answer_queries"}

Counts = collections.Counter[tuple[str, int]]  # (operation, status) -> responses


def fuzz_operation(
    operation: Any, mode: GenerationMode, counts: Counts, first_failures: dict[str, str]
) -> None:
    """Runs EXAMPLES generated requests of one mode against one operation; raises on the first
    response that fails a check (after Hypothesis shrinks it)."""
    operation_id = operation.definition.raw.get("operationId")

    @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
    @hypothesis.settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,  # the same cases every run
        database=None,
        suppress_health_check=list(hypothesis.HealthCheck),
    )
    def run(case: Any) -> None:
        doc_id = (case.path_parameters or {}).get("doc_id")
        # Deterministic in the generated data, so Hypothesis can still shrink a failure.
        if (
            mode is GenerationMode.POSITIVE
            and isinstance(doc_id, str)
            and operation_id in NOT_DELETED
            and len(doc_id) % 2 == 0
        ):
            case.path_parameters["doc_id"] = sorted(KNOWN)[len(doc_id) % len(KNOWN)]
            queries = case.body.get("queries") if isinstance(case.body, dict) else None
            if operation_id == "answer_queries" and isinstance(queries, list):
                # Random text seldom holds exactly one @placeholder: give it one, so the
                # lookup and scoring run on generated questions too.
                case.body["queries"] = [
                    f"@placeholder {q.replace('@placeholder', '')}" for q in queries
                ]
        # The schema declares the bearer key required (keys are configured here): a request
        # that carries one carries the right one, so its other parts get validated; one the
        # negative mode sent without it must get the 401.
        if case.headers and "Authorization" in case.headers:
            case.headers["Authorization"] = f"Bearer {API_KEY}"
        try:
            response = case.call_and_validate(checks=CHECKS)
        except Exception as exc:
            # Hypothesis reports the shrunk case; keep the first one seen as well.
            first_failures.setdefault(f"{operation.label} ({mode.value})", str(exc))
            raise
        counts[(operation.label, response.status_code)] += 1

    run()


def test_api_answers_every_generated_request_within_its_schema(
    tmp_path: Path, checkpoint_dir: Path
) -> None:
    settings = Settings(
        store_url=STORE_URL,
        serve_worker=True,  # over Redis too: the app indexes what the fuzzer posts
        key_prefix=f"fuzz-{int(time.time())}",
        data_dir=tmp_path / "data",
        checkpoint_dir=checkpoint_dir,
        ingest_block_ms=50,
        redis_timeout_s=0.5,
        api_keys=[API_KEY],
    )
    app: Any = create_app(settings)
    started = time.monotonic()
    counts: Counts = collections.Counter()
    findings: list[str] = []
    first_failures: dict[str, str] = {}
    try:
        # Loading the schema starts the app's lifespan in schemathesis' event loop thread;
        # it runs until shutdown_lifespans().
        schema = schemathesis.openapi.from_asgi("/openapi.json", app)
        with asgi.get_client(app) as client:
            client.headers["Authorization"] = f"Bearer {API_KEY}"
            deadline = time.monotonic() + 60
            while client.get("/readyz").status_code != 200:
                assert time.monotonic() < deadline, client.get("/readyz").text
                time.sleep(0.02)
            batch = [{"id": doc_id, "text": text} for doc_id, text in KNOWN.items()]
            assert client.post("/v1/documents", json={"documents": batch}).status_code == 202
            while any(
                client.get(f"/v1/documents/{doc_id}").json()["status"] != "indexed"
                for doc_id in KNOWN
            ):
                assert time.monotonic() < deadline
                time.sleep(0.02)
        results = list(schema.get_all_operations())
        operations = [result.ok() for result in results if isinstance(result, Ok)]
        assert len(operations) == len(results), "the app's schema has invalid operations"
        if ONLY:
            operations = [op for op in operations if op.definition.raw.get("operationId") in ONLY]
        for operation in operations:
            for mode in GenerationMode:
                try:
                    fuzz_operation(operation, mode, counts, first_failures)
                except hypothesis.errors.Unsatisfiable:
                    pass  # no parameters and no body: nothing invalid to send
                except Exception as exc:  # one finding per operation and mode, all reported
                    findings.append(f"{operation.label} ({mode.value}): {exc}")
        # The in-process worker survived whatever the fuzzer posted.
        worker = app.state.runtime.worker_task
        assert worker is not None and not worker.done()
    finally:
        asgi.shutdown_lifespans()
    by_status = collections.Counter(status for _, status in counts.elements())
    for label in sorted({label for label, _ in counts}):
        per = {status: n for (lab, status), n in sorted(counts.items()) if lab == label}
        print(f"\n  {label}: {per}", end="")
    print(
        f"\nfuzz: {sum(counts.values())} requests over {len(operations)} operations "
        f"({EXAMPLES} examples per operation and mode) in {time.monotonic() - started:.1f} s; "
        f"statuses {dict(sorted(by_status.items()))}; {len(findings)} findings"
    )
    assert not findings, "\n".join(
        findings + [f"first failure: {f}" for f in first_failures.values()]
    )
