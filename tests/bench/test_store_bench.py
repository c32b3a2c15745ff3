"""The store bench runs end to end and reports what it could not measure (no timings checked)."""

import json
from pathlib import Path

import pytest

from bench.spawn import free_port
from bench.store import (
    LatencyPlan,
    StoreBenchReport,
    bench_backend,
    format_report,
    measure_sizes,
    size_goals,
)
from cli.main import main
from store.codec import HEADER_BYTES


def test_bench_store_json_measures_both_backends(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "store", "--json", "--redis-url", redis_url, "--k", "8", "--batch-size", "4"]
    assert main([*argv, "--repeats", "2", "--batches", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["k"] == 8
    assert {(r["mode"], r["dtype"], r["n"]) for r in report["sizes"]} >= {
        ("linear", "float16", 750),
        ("softmax", "float32", 5000),
    }
    assert [g["met"] for g in report["goals"]] == [True, True]
    for backend in report["backends"]:
        assert backend["available"], backend["error"]
        assert len(backend["rows"]) == 8 and all(r["p50_ms"] > 0 for r in backend["rows"])


async def test_bench_store_says_when_redis_does_not_answer(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    plan = LatencyPlan(k=8, repeats=2, batch=4, batch_repeats=1)
    redis = await bench_backend("redis", url, url, tmp_path, plan)
    assert not redis.available and redis.rows == [] and redis.error
    sizes = measure_sizes(8, (750,))
    goals = size_goals(sizes, 8)
    report = StoreBenchReport(8, HEADER_BYTES, "m", 100, sizes, goals, plan, [redis])
    assert f"NOT MEASURED: did not answer ({redis.error})" in format_report(report)
