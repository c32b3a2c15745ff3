"""The load test's orchestration (`cheapqa loadtest --spawn`): a server started for it
(bench/spawn.py), loaded (bench/load_generator.py), stopped.

`load_spawned` starts `cheapqa serve` on loopback (embedded store, or a Redis under a key
prefix of its own that is removed afterwards), runs the load against it, and stops it.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.corpus import LoadDocument
from bench.load_generator import LoadReport
from bench.random_readers import corpus_vocabulary, write_random_checkpoints
from bench.spawn import serve
from encoder.model.modes import Mode

# Runs the load against a base URL (and the server's pid, when this process started it).
Load = Callable[[str, int | None], LoadReport]


def spawn_env(
    workdir: Path,
    run_id: str,
    modes: Sequence[str],
    queries: int,
    store_url: str,
    checkpoint_dir: Path | None,
    workers: int = 1,
) -> dict[str, str]:
    env = {
        "CHEAPQA_DATA_DIR": str(workdir / "data"),
        "CHEAPQA_STORE_URL": store_url,
        "CHEAPQA_MODES": json.dumps(list(modes)),
        "CHEAPQA_DEFAULT_MODE": modes[0],
        "CHEAPQA_MAX_QUERIES": str(max(64, queries)),
        "CHEAPQA_WORKERS": str(workers),
    }
    if store_url:
        # A key prefix of its own, and the worker in the same process (no `cheapqa worker`).
        env["CHEAPQA_KEY_PREFIX"] = f"cheapqa-loadtest-{run_id}"
        env["CHEAPQA_SERVE_WORKER"] = "true"
    if checkpoint_dir is not None:
        env["CHEAPQA_CHECKPOINT_DIR"] = str(checkpoint_dir)
    return env


def forget_redis_keys(url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def load_spawned(
    load: Load,
    docs: Sequence[LoadDocument],
    modes: Sequence[Mode],
    queries: int,
    run_id: str,
    *,
    store_url: str,
    checkpoint_dir: Path | None,
    random_init: bool,
    workers: int = 1,
) -> LoadReport:
    """`load` against a `cheapqa serve` started for it; raises LoadError, ServerError."""
    with tempfile.TemporaryDirectory(prefix="cheapqa-loadtest-") as tmp:
        workdir = Path(tmp)
        if random_init:
            vocab = corpus_vocabulary(d.text for d in docs)
            checkpoint_dir = write_random_checkpoints(workdir / "checkpoints", modes, vocab)
        env = spawn_env(workdir, run_id, modes, queries, store_url, checkpoint_dir, workers)
        try:
            with serve(env, workdir / "server.log") as server:
                report = load(server.url, server.pid)
        finally:
            if store_url:
                forget_redis_keys(store_url, env["CHEAPQA_KEY_PREFIX"])
    report.setup["server"] = (
        "spawned `cheapqa serve` on loopback"
        + (f", store {store_url}" if store_url else ", embedded store")
        + (f", {workers} processes" if workers > 1 else "")
    )
    report.setup["checkpoints"] = (
        "random-init, default size"
        if random_init
        else str(checkpoint_dir or "shipped (encoder/checkpoints)")
    )
    return report
