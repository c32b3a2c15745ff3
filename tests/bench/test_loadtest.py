"""The load generator against the real app: in process (ASGI) and through `cheapqa loadtest
--spawn` (a `cheapqa serve` subprocess on loopback); a few seconds each."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from bench.corpus import LoadDocument, load_text_corpus
from bench.load_generator import LoadError, LoadPlan, run_load
from cli.main import main
from service.app import create_app
from service.settings import Settings


async def test_closed_loop_two_modes_and_the_trivial_endpoint(
    settings: Settings, story_file: Path
) -> None:
    docs = load_text_corpus(story_file).documents(2, 50, prefix="closed")
    plan = LoadPlan(duration_s=0.5, concurrency=3, warmup_s=0.1)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        report = await run_load(
            "http://test",
            docs,
            ["linear", "softmax"],
            3,
            plan,
            trivial_path="/healthz",
            index_timeout_s=30,
            progress=None,
            transport=httpx.ASGITransport(app=app),
        )
    assert [d["id"] for d in report.documents] == ["closed-0", "closed-1"]
    assert all(48 <= d["tokens"] <= 52 and d["entities"] > 0 for d in report.documents)
    assert [p.label for p in report.phases] == [
        "answers linear",
        "answers softmax",
        "GET /healthz",
    ]
    for p in report.phases:
        assert p.ok > 0 and p.requests == p.ok, p.to_json()
        assert p.statuses == {"200": p.ok}
        assert 0.5 <= p.elapsed_s < 5
    assert report.phases[0].queries_per_s == 3 * report.phases[0].requests_per_s
    body = json.loads(json.dumps(report.to_json()))
    assert set(body["ratios"]) == {
        "answers linear / answers softmax queries/s",
        "answers linear / GET /healthz requests/s",
        "answers softmax / GET /healthz requests/s",
    }


async def test_open_loop_sends_on_schedule_and_stops_at_the_request_cap(
    settings: Settings, story_file: Path
) -> None:
    docs = load_text_corpus(story_file).documents(1, 40, prefix="open")
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        timed = LoadPlan(duration_s=1.0, rate=40, concurrency=8, warmup_s=0)
        report = await run_load(
            "http://test", docs, ["linear"], 1, timed, progress=None, transport=transport
        )
        capped = LoadPlan(duration_s=30.0, rate=200, max_requests=25, warmup_s=0)
        capped_report = await run_load(
            "http://test", docs, ["linear"], 1, capped, progress=None, transport=transport
        )
    phase = report.phases[0]
    assert phase.loop == "open (40 req/s)"
    assert phase.requests == 40  # due times 0, 1/40, ... up to the 1 s duration
    assert phase.ok == 40
    # The last one is due at 39/40 s; the bound only says the loop ends (a loaded machine
    # answers late, it does not send late).
    assert 39 / 40 <= phase.elapsed_s < 10.0
    assert capped_report.phases[0].requests == 25
    assert capped_report.phases[0].elapsed_s < 5.0


async def test_a_mode_the_server_has_not_loaded_fails_before_timing(
    settings: Settings, story_file: Path
) -> None:
    docs = load_text_corpus(story_file).documents(1, 40, prefix="refused")
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        with pytest.raises(LoadError, match="is not loaded"):
            await run_load(
                "http://test",
                docs,
                ["gated"],
                1,
                LoadPlan(duration_s=0.2, warmup_s=0),
                progress=None,
                transport=httpx.ASGITransport(app=app),
            )


async def test_documents_without_entities_are_refused(settings: Settings) -> None:
    text = "the wheel turned and the grain came in. nobody said a word about it."
    docs = [LoadDocument("plain", text, 16, None, ["@placeholder turned the wheel."])]
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        with pytest.raises(LoadError, match="no entities"):
            await run_load(
                "http://test",
                docs,
                ["linear"],
                1,
                LoadPlan(duration_s=0.2, warmup_s=0),
                progress=None,
                transport=httpx.ASGITransport(app=app),
            )


@pytest.mark.slow
def test_cli_spawns_a_server_loads_it_and_writes_json(
    tiny_checkpoints: Path, story_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "load.json"
    code = main(
        [
            "loadtest",
            "--spawn",
            "--checkpoint-dir", str(tiny_checkpoints),
            "--text-file", str(story_file),
            "--documents", "2",
            "--tokens", "60",
            "--modes", "linear,softmax",
            "--queries", "2",
            "--concurrency", "2",
            "--duration", "1",
            "--warmup", "0.2",
            "--trivial",
            "--json", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "answers linear / answers softmax queries/s" in printed
    body = json.loads(out.read_text())
    assert body["setup"]["server"].startswith("spawned `cheapqa serve` on loopback")
    assert body["url"].startswith("http://127.0.0.1:")
    assert [p["label"] for p in body["phases"]] == [
        "answers linear",
        "answers softmax",
        "GET /healthz",
    ]
    for p in body["phases"]:
        assert p["ok"] > 0 and p["statuses"] == {"200": p["ok"]}
        assert p["latency_ms"]["p50"] <= p["latency_ms"]["p99"] <= p["latency_ms"]["max"]
        assert p["client_cpu_s"] > 0 and p["server_cpu_s"] > 0
    # The server is gone afterwards.
    with pytest.raises(httpx.ConnectError):
        httpx.get(body["url"] + "/healthz", timeout=1.0)


def test_cli_needs_one_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["loadtest"]) == 2
    assert main(["loadtest", "--url", "http://127.0.0.1:9", "--spawn"]) == 2
    assert "exactly one of --url URL and --spawn" in capsys.readouterr().err
