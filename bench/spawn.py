"""Spawning `cheapqa` subprocesses: `cheapqa serve` on a free loopback port, ready once its
/readyz answers 200, or any other verb (a worker). The load test, the soak, the end-to-end
tests and the demo screenshot all start their servers here.

Bounded both ways: a server must answer /readyz within `ready_timeout_s`, and stopping a
process sends SIGTERM, waits, then kills. Output goes to a log file whose tail is shown on
failure.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A loopback port nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        port: int = s.getsockname()[1]
        return port


class ServerError(RuntimeError):
    """The server did not start, or did not become ready in time."""


class CheapqaProcess:
    """`cheapqa ARGS` (as `python -m cli.main`) with CHEAPQA_* overrides `env`, its output in
    `log`. `inherit_settings=False` drops the caller's own CHEAPQA_* variables, so that only
    `env` sets anything (the tests); True lets them through (a load test the user tunes)."""

    def __init__(
        self,
        args: Sequence[str],
        env: Mapping[str, str],
        log: Path,
        *,
        inherit_settings: bool = True,
    ) -> None:
        inherited = {
            k: v for k, v in os.environ.items() if inherit_settings or not k.startswith("CHEAPQA_")
        }
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "cli.main", *args],
                env={**inherited, **env},
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def output(self, chars: int = 4000) -> str:
        """The end of what the process wrote."""
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, grace_s: float = 15.0) -> int:
        """SIGTERM, then SIGKILL after `grace_s`; the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5.0)
        return self.proc.returncode


def start_serve(
    env: Mapping[str, str],
    log: Path,
    *,
    ready_timeout_s: float = 120.0,
    inherit_settings: bool = True,
) -> tuple[str, CheapqaProcess]:
    """`cheapqa serve` on a free loopback port, ready; its URL and process, which the caller
    stops. Access logs are off (log level warning): they would cost the server CPU per
    request. Raises ServerError (the process stopped) when it exits or is not ready in time."""
    port = free_port()
    args = ["serve", "--host", LOOPBACK, "--port", str(port), "--log-level", "warning"]
    server = CheapqaProcess(args, env, log, inherit_settings=inherit_settings)
    url = f"http://{LOOPBACK}:{port}"
    deadline = time.monotonic() + ready_timeout_s
    last = "no answer yet"
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise ServerError(
                f"the server exited with {server.proc.returncode}:\n{server.output()}"
            )
        try:
            r = httpx.get(f"{url}/readyz", timeout=2.0, trust_env=False)
            if r.status_code == 200:
                return url, server
            last = f"{r.status_code} {r.text[:300]}"
        except httpx.HTTPError as exc:
            last = type(exc).__name__
        time.sleep(0.1)
    server.stop()
    raise ServerError(
        f"the server was not ready after {ready_timeout_s}s ({last}):\n{server.output()}"
    )


@dataclass(frozen=True)
class SpawnedServer:
    url: str
    pid: int


@contextlib.contextmanager
def serve(
    env: Mapping[str, str], log: Path, ready_timeout_s: float = 120.0
) -> Iterator[SpawnedServer]:
    """`start_serve` (the caller's CHEAPQA_* settings let through), stopped on exit."""
    url, server = start_serve(env, log, ready_timeout_s=ready_timeout_s)
    try:
        yield SpawnedServer(url, server.proc.pid)
    finally:
        server.stop()


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
