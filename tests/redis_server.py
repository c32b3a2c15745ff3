"""Finding or starting a Redis server for the tests.

CHEAPQA_TEST_REDIS_URL names one (its database is flushed by the tests); else the tests start
a `redis-server` of their own on a free loopback port in a temporary directory, so they never
flush a database of whatever Redis answers on 6379. Under CI=true a Redis that cannot be had
is an error, never a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import redis

from bench.spawn import free_port


def answers(url: str) -> bool:
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except redis.RedisError:
        return False


class RedisProcess:
    """A redis-server child process on its own port and directory; stop() ends it."""

    def __init__(
        self,
        port: int | None = None,
        appendonly: bool = False,
        directory: Path | None = None,
        extra_args: list[str] | None = None,
    ):
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed")
        self.port = port or free_port()
        self._tmp = None if directory else tempfile.TemporaryDirectory(prefix="cheapqa-redis-")
        self.directory = directory or Path(self._tmp.name)  # type: ignore[union-attr]
        self.appendonly = appendonly
        self.extra_args = list(extra_args or [])
        self._binary = binary
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 10.0) -> RedisProcess:
        args = [
            self._binary, "--port", str(self.port), "--bind", "127.0.0.1",
            "--dir", str(self.directory), "--save", "",
            "--appendonly", "yes" if self.appendonly else "no",
            *self.extra_args,
        ]  # fmt: skip
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if answers(self.url):
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}")
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not answer on port {self.port}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def cleanup(self) -> None:
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()


def find_or_start() -> tuple[str | None, RedisProcess | None, str]:
    """Returns (url, process we started or None, reason when url is None)."""
    url = os.environ.get("CHEAPQA_TEST_REDIS_URL")
    if url:
        return (url, None, "") if answers(url) else (None, None, f"nothing answers at {url}")
    try:
        proc = RedisProcess().start()
    except RuntimeError as exc:
        return None, None, str(exc)
    return proc.url, proc, ""
