"""What one load phase measured, and how it is printed."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.common import percentile

PERCENTILES = (50, 90, 99)


@dataclass
class PhaseResult:
    """One phase: a target (an `answers` mode, or the trivial endpoint) driven for a while."""

    label: str  # e.g. "answers linear" or "healthz"
    loop: str  # "closed (concurrency 8)" or "open (200 req/s)"
    queries_per_request: int  # 0 for the trivial endpoint
    elapsed_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)  # successful requests only
    statuses: Counter[str] = field(default_factory=Counter)  # HTTP status -> count
    errors: Counter[str] = field(default_factory=Counter)  # exception type -> count
    # CPU seconds spent during the phase: the load generator's own, and the server's when it
    # is a local process (both share the machine's cores).
    client_cpu_s: float | None = None
    server_cpu_s: float | None = None

    @property
    def requests(self) -> int:
        """Requests that ended, with any status or an error."""
        return sum(self.statuses.values()) + sum(self.errors.values())

    @property
    def ok(self) -> int:
        return len(self.latencies_ms)

    @property
    def requests_per_s(self) -> float:
        return self.ok / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def queries_per_s(self) -> float:
        return self.requests_per_s * self.queries_per_request

    @property
    def server_cpu_ms_per_request(self) -> float | None:
        """Server CPU per successful request: the server's cost, whoever limits the rate."""
        if self.server_cpu_s is None or self.ok == 0:
            return None
        return 1000.0 * self.server_cpu_s / self.ok

    def latency_ms(self) -> dict[str, float]:
        values = sorted(self.latencies_ms)
        out = {f"p{p}": percentile(values, p) for p in PERCENTILES}
        out["max"] = values[-1] if values else math.nan
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "loop": self.loop,
            "queries_per_request": self.queries_per_request,
            "elapsed_s": round(self.elapsed_s, 3),
            "requests": self.requests,
            "ok": self.ok,
            "requests_per_s": round(self.requests_per_s, 2),
            "queries_per_s": round(self.queries_per_s, 2),
            "latency_ms": {k: _round(v) for k, v in self.latency_ms().items()},
            "statuses": dict(sorted(self.statuses.items())),
            "errors": dict(sorted(self.errors.items())),
            "client_cpu_s": _round(self.client_cpu_s),
            "server_cpu_s": _round(self.server_cpu_s),
            "server_cpu_ms_per_request": _round(self.server_cpu_ms_per_request),
        }


def _round(v: float | None) -> float | None:
    return None if v is None or math.isnan(v) else round(v, 3)


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _cpu(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


@dataclass(frozen=True)
class Ratio:
    text: str  # e.g. "answers linear / answers softmax queries/s"
    value: float


def ratios(phases: Sequence[PhaseResult]) -> list[Ratio]:
    """The first `answers` phase's queries/s against each other `answers` phase, and the
    `answers` phases' requests/s against the trivial endpoint's (the framework's ceiling).

    With the load generator on the same cores, the trivial endpoint's rate can be bounded by
    the client rather than the server; the ratio of server CPU per request (trivial over
    answers) is the same comparison from the server's side alone.
    """
    answers = [p for p in phases if p.queries_per_request > 0]
    trivial = [p for p in phases if p.queries_per_request == 0]
    out = []
    if answers:
        first = answers[0]
        for other in answers[1:]:
            value = first.queries_per_s / other.queries_per_s if other.queries_per_s else math.inf
            out.append(Ratio(f"{first.label} / {other.label} queries/s", value))
    for t in trivial:
        for a in answers:
            value = a.requests_per_s / t.requests_per_s if t.requests_per_s else math.nan
            out.append(Ratio(f"{a.label} / {t.label} requests/s", value))
            a_cpu, t_cpu = a.server_cpu_ms_per_request, t.server_cpu_ms_per_request
            if a_cpu and t_cpu:
                text = f"{t.label} / {a.label} server CPU per request"
                out.append(Ratio(text, t_cpu / a_cpu))
    return out


def format_phases(phases: Sequence[PhaseResult]) -> str:
    head = (
        f"{'target':<20}{'loop':<24}{'q/req':>6}{'req/s':>9}{'queries/s':>11}"
        f"{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'max ms':>9}{'cpu s client/server':>21}"
        f"{'server cpu ms/req':>19}  statuses / errors"
    )
    lines = [head]
    for p in phases:
        lat = p.latency_ms()
        outcome = ", ".join(f"{k}: {v}" for k, v in sorted({**p.statuses, **p.errors}.items()))
        lines.append(
            f"{p.label:<20}{p.loop:<24}{p.queries_per_request:>6}{p.requests_per_s:>9.1f}"
            f"{p.queries_per_s:>11.1f}{lat['p50']:>9.2f}{lat['p90']:>9.2f}{lat['p99']:>9.2f}"
            f"{lat['max']:>9.2f}{_cpu(p.client_cpu_s) + ' / ' + _cpu(p.server_cpu_s):>21}"
            f"{_ms(p.server_cpu_ms_per_request):>19}  {outcome or '-'}"
        )
    for r in ratios(phases):
        lines.append(f"ratio {r.text}: {r.value:.2f}")
    return "\n".join(lines)
