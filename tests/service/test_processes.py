"""End to end with real processes: `cheapqa serve` alone (embedded store, in-process worker),
and `cheapqa serve` + `cheapqa worker` over Redis. Answers must equal the model's own forward
pass over the same text, in every mode."""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.spawn import CheapqaProcess, child_processes, free_port, start_serve
from encoder.model.modes import MODES
from tests.service.helpers import assert_matches_forward, base_env, forward_probabilities, load
from tests.service.texts import DOCUMENTS, QUESTIONS

pytestmark = pytest.mark.slow


def assert_clean_exit(server: CheapqaProcess) -> None:
    # uvicorn shuts down gracefully on SIGTERM, then re-raises the signal to exit with it.
    assert server.stop() in (0, -signal.SIGTERM), server.output()
    assert "Traceback" not in server.output(), server.output()


def start_server(
    processes: list[CheapqaProcess], env: dict[str, str], tmp_path: Path
) -> tuple[httpx.Client, CheapqaProcess]:
    url, server = start_serve(env, tmp_path / "serve.log", inherit_settings=False)
    processes.append(server)
    return httpx.Client(base_url=url, timeout=10), server


def index_and_check_answers(client: httpx.Client, checkpoint_dir: Path) -> None:
    batch = [{"id": doc_id, "text": text} for doc_id, text in DOCUMENTS.items()]
    response = client.post("/v1/documents", json={"documents": batch})
    assert response.status_code == 202, response.text
    for doc_id in DOCUMENTS:
        deadline = time.monotonic() + 60
        while (info := client.get(f"/v1/documents/{doc_id}").json()).get("status") != "indexed":
            assert info.get("status") == "queued", info
            assert time.monotonic() < deadline, info
            time.sleep(0.05)
        assert info["modes"] == sorted(MODES)
    for mode in MODES:
        ckpt = load(checkpoint_dir, mode)
        for doc_id, questions in QUESTIONS.items():
            response = client.post(
                f"/v1/documents/{doc_id}/answers",
                json={"queries": questions, "mode": mode, "top_k": 3},
            )
            assert response.status_code == 200, response.text
            body: dict[str, Any] = response.json()
            assert body["model_id"] == ckpt.model_id
            expected = [forward_probabilities(ckpt, DOCUMENTS[doc_id], q) for q in questions]
            assert_matches_forward(body, expected, top_k=3)


def test_serve_alone_with_the_embedded_store(
    processes: list[CheapqaProcess], checkpoint_dir: Path, tmp_path: Path
) -> None:
    client, server = start_server(processes, base_env(checkpoint_dir, tmp_path / "d"), tmp_path)
    try:
        assert client.get("/readyz").json()["worker"] is True
        index_and_check_answers(client, checkpoint_dir)
        assert "cheapqa_documents_indexed_total 3.0" in client.get("/metrics").text
    finally:
        client.close()
    assert_clean_exit(server)


def test_serve_and_a_separate_worker_over_redis(
    processes: list[CheapqaProcess], checkpoint_dir: Path, tmp_path: Path, redis_url: str
) -> None:
    env = base_env(checkpoint_dir, tmp_path / "d")
    env.update(CHEAPQA_STORE_URL=redis_url, CHEAPQA_KEY_PREFIX=f"e2e-{uuid.uuid4().hex[:8]}")
    client, server = start_server(processes, env, tmp_path)
    try:
        assert client.get("/readyz").json()["worker"] is False  # serve only serves
        metrics_port = free_port()
        worker = CheapqaProcess(
            ["worker", "--log-level", "warning", "--metrics-port", str(metrics_port)],
            env,
            tmp_path / "worker.log",
            inherit_settings=False,
        )
        processes.append(worker)
        index_and_check_answers(client, checkpoint_dir)
        worker_metrics = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics").text
        assert "cheapqa_documents_indexed_total 3.0" in worker_metrics
        assert worker.proc.poll() is None, worker.output()
        start = time.monotonic()
        assert worker.stop() == 0, worker.output()  # SIGTERM: finishes, exits cleanly
        assert time.monotonic() - start < 5
    finally:
        client.close()
    assert_clean_exit(server)


def test_embedded_store_shared_with_a_separate_worker_process(
    processes: list[CheapqaProcess], checkpoint_dir: Path, tmp_path: Path
) -> None:
    # Both processes open the same SQLite files: the queue's leases work across processes.
    env = base_env(checkpoint_dir, tmp_path / "d")
    env.update(CHEAPQA_SERVE_WORKER="false", CHEAPQA_MODES='["linear"]')
    client, server = start_server(processes, env, tmp_path)
    try:
        assert client.get("/readyz").json()["worker"] is False
        response = client.post("/v1/documents", json={"id": "h", "text": DOCUMENTS["harbour"]})
        assert response.status_code == 202
        time.sleep(0.3)
        assert client.get("/v1/documents/h").json()["status"] == "queued"  # nobody indexes
        worker = CheapqaProcess(
            ["worker", "--log-level", "warning"],
            env,
            tmp_path / "worker.log",
            inherit_settings=False,
        )
        processes.append(worker)
        deadline = time.monotonic() + 60
        while client.get("/v1/documents/h").json()["status"] != "indexed":
            assert time.monotonic() < deadline, worker.output()
            time.sleep(0.05)
        answers = client.post(
            "/v1/documents/h/answers", json={"queries": QUESTIONS["harbour"][:1]}
        ).json()
        expected = forward_probabilities(
            load(checkpoint_dir, "linear"), DOCUMENTS["harbour"], QUESTIONS["harbour"][0]
        )
        best = max(answers["results"][0]["answers"], key=lambda a: a["reader_score"])
        assert best["reader_score"] == pytest.approx(max(expected.values()), abs=1e-4)
        assert worker.stop() == 0, worker.output()
    finally:
        client.close()
    assert_clean_exit(server)


@pytest.mark.parametrize("store", ["embedded", "redis"])
def test_two_server_processes_on_one_port(
    processes: list[CheapqaProcess],
    checkpoint_dir: Path,
    tmp_path: Path,
    redis_url: str,
    store: str,
) -> None:
    # CHEAPQA_WORKERS=2: uvicorn's processes share the port; each loads the models and (here)
    # runs an ingestion worker, and either may answer any request.
    env = base_env(checkpoint_dir, tmp_path / "d")
    env.update(CHEAPQA_WORKERS="2", CHEAPQA_SERVE_WORKER="true")
    if store == "redis":
        env.update(CHEAPQA_STORE_URL=redis_url, CHEAPQA_KEY_PREFIX=f"w2-{uuid.uuid4().hex[:8]}")
    client, server = start_server(processes, env, tmp_path)
    try:
        assert len(serving_processes(server.proc.pid)) == 2, server.output()
        index_and_check_answers(client, checkpoint_dir)
    finally:
        client.close()
    assert_clean_exit(server)
    assert not serving_processes(server.proc.pid)


def serving_processes(pid: int) -> list[int]:
    """The processes under `pid` that run the app (uvicorn's workers, not its helpers)."""
    children = child_processes(pid)
    return [c for c in children if "spawn_main" in Path(f"/proc/{c}/cmdline").read_text()]
