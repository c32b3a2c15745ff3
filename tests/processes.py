"""`cheapqa` subprocesses for the end-to-end tests: started with the test's settings only,
always stopped (SIGTERM, then kill)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.redis_server import free_port

ROOT = Path(__file__).resolve().parents[1]


class Process:
    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self._log_file = log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cli.main", *args],
            cwd=ROOT,
            # The test's settings only: no CHEAPQA_* variable of the caller leaks in.
            env={**{k: v for k, v in os.environ.items() if not k.startswith("CHEAPQA_")}, **env},
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def stop(self, timeout_s: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log_file.close()
        return self.proc.returncode


def base_env(checkpoint_dir: Path, data_dir: Path) -> dict[str, str]:
    return {
        "CHEAPQA_CHECKPOINT_DIR": str(checkpoint_dir),
        "CHEAPQA_DATA_DIR": str(data_dir),
        "CHEAPQA_STATE_DTYPE": "float32",
        "CHEAPQA_INGEST_BLOCK_MS": "100",
    }


def start_serve(env: dict[str, str], log: Path, timeout_s: float = 60.0) -> tuple[str, Process]:
    """`cheapqa serve` on a free loopback port, ready (/readyz 200); its URL and process.
    The caller stops it (or appends it to the `processes` fixture's list)."""
    port = free_port()
    server = Process(
        ["serve", "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"], env, log
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while True:
        if server.proc.poll() is not None:
            raise AssertionError(f"serve exited:\n{server.output()}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2, trust_env=False).status_code == 200:
                return url, server
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise AssertionError(f"serve never ready:\n{server.output()}")
        time.sleep(0.1)
