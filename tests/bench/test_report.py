from __future__ import annotations

import math
from collections import Counter

import pytest

from bench.common import percentile
from bench.report import PhaseResult, format_phases, ratios


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile([7.0], 90) == 7.0
    assert math.isnan(percentile([], 50))


def phase(label: str, q: int, ok: int, elapsed: float, latency: float = 2.0) -> PhaseResult:
    result = PhaseResult(label, "closed (concurrency 2)", q, elapsed_s=elapsed)
    result.latencies_ms = [latency] * ok
    result.statuses = Counter({"200": ok})
    return result


def test_rates_count_successes_only() -> None:
    p = phase("answers linear", 32, ok=100, elapsed=2.0)
    p.statuses["429"] += 10
    p.errors["ReadTimeout"] += 2
    assert p.requests == 112
    assert p.requests_per_s == 50.0
    assert p.queries_per_s == 1600.0
    body = p.to_json()
    assert body["statuses"] == {"200": 100, "429": 10}
    assert body["errors"] == {"ReadTimeout": 2}
    assert body["latency_ms"]["p99"] == 2.0


def test_ratios_between_modes_and_against_the_trivial_endpoint() -> None:
    phases = [
        phase("answers linear", 32, ok=300, elapsed=1.0),
        phase("answers softmax", 32, ok=50, elapsed=1.0),
        phase("GET /healthz", 0, ok=1000, elapsed=1.0),
    ]
    phases[0].server_cpu_s, phases[2].server_cpu_s = 0.9, 0.25  # 3 ms and 0.25 ms per request
    found = {r.text: r.value for r in ratios(phases)}
    assert found["GET /healthz / answers linear server CPU per request"] == pytest.approx(0.25 / 3)
    assert "answers softmax server CPU" not in " ".join(found)  # its CPU was not measured
    assert found["answers linear / answers softmax queries/s"] == 6.0
    assert found["answers linear / GET /healthz requests/s"] == 0.3
    assert found["answers softmax / GET /healthz requests/s"] == 0.05
    text = format_phases(phases)
    assert "answers linear / answers softmax queries/s: 6.00" in text
