"""`cheapqa` subprocesses for the end-to-end tests: started with the test's settings only,
always stopped (SIGTERM, then kill)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

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
