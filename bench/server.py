"""A `cheapqa serve` subprocess on a free loopback port, for end-to-end runs.

Bounded both ways: it must answer /readyz within `ready_timeout_s`, and stopping it sends
SIGTERM, waits, then kills. Its output goes to a log file whose tail is shown on failure.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class SpawnedServer:
    url: str
    pid: int


def _stat_fields(pid: int) -> list[str]:
    # The fields after the command name, which may itself hold spaces and parentheses.
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def child_processes(pid: int) -> list[int]:
    """The processes whose parent is `pid` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int(_stat_fields(int(entry.name))[1]) == pid:
                    found.append(int(entry.name))
    return found


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU time so far (Linux /proc) of a process and every process under it
    (uvicorn's worker processes), None where the process is unreadable."""
    try:
        fields = _stat_fields(pid)
        own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None
    return own + sum(process_cpu_seconds(c) or 0.0 for c in child_processes(pid))


class ServerError(RuntimeError):
    """The server did not start, or did not become ready in time."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        port: int = s.getsockname()[1]
        return port


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    last = "no answer yet"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerError(f"the server exited with {proc.returncode}:\n{_tail(log)}")
        try:
            r = httpx.get(f"{url}/readyz", timeout=2.0, trust_env=False)
            if r.status_code == 200:
                return
            last = f"{r.status_code} {r.text[:300]}"
        except httpx.HTTPError as exc:
            last = type(exc).__name__
        time.sleep(0.2)
    raise ServerError(f"the server was not ready after {timeout_s}s ({last}):\n{_tail(log)}")


def stop(proc: subprocess.Popen[bytes], grace_s: float = 15.0) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5.0)


@contextlib.contextmanager
def serve(
    env: Mapping[str, str], log_path: Path, ready_timeout_s: float = 120.0
) -> Iterator[SpawnedServer]:
    """Runs `cheapqa serve` with CHEAPQA_* overrides `env` on a free loopback port; yields its
    URL and process id and stops it on exit. Access logs are off (log level warning): they
    would cost the server CPU per request."""
    port = free_port()
    full_env = {**os.environ, **env, "CHEAPQA_HOST": LOOPBACK, "CHEAPQA_PORT": str(port)}
    cmd = [sys.executable, "-m", "cli.main", "serve", "--log-level", "warning"]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, env=full_env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://{LOOPBACK}:{port}"
    try:
        _wait_ready(url, proc, log_path, ready_timeout_s)
        yield SpawnedServer(url, proc.pid)
    finally:
        stop(proc)
