"""The query batcher: one model run for many requests, bounded queue, errors to the callers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from service.batcher import QueryBatcher
from service.errors import Overloaded, Unavailable
from service.metrics import Metrics
from service.readers import LoadedModel
from tests.service.helpers import load


def loaded(checkpoint_dir: Path, mode: str = "linear") -> LoadedModel:
    ckpt = load(checkpoint_dir, mode)
    return LoadedModel(mode, ckpt.model, ckpt.vocab, ckpt.model_id)


def count_runs(
    model: LoadedModel, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[int], Callable[[Any], torch.Tensor]]:
    """Records the batch size of every encode_queries run; returns (sizes, the original)."""
    calls: list[int] = []
    original = model.reader.encode_queries

    def counting(qs: Any) -> Any:
        calls.append(len(qs))
        return original(qs)

    monkeypatch.setattr(model.reader, "encode_queries", counting)
    return calls, original


def queries(n: int, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, 40, (int(torch.randint(2, 12, (1,), generator=g)),), generator=g)
            for _ in range(n)]  # fmt: skip


@pytest.mark.parametrize("in_thread", [False, True])
async def test_concurrent_requests_share_one_run_and_get_their_own_rows(
    checkpoint_dir: Path, monkeypatch: pytest.MonkeyPatch, in_thread: bool
) -> None:
    model = loaded(checkpoint_dir)
    calls, original = count_runs(model, monkeypatch)
    metrics = Metrics()
    batcher = QueryBatcher(
        max_batch=64, max_wait_ms=50, queue_size=100, metrics=metrics, in_thread=in_thread
    )
    batcher.start()
    try:
        requests = [queries(n, seed) for seed, n in enumerate([1, 3, 2, 5])]
        results = await asyncio.gather(*(batcher.encode(model, r) for r in requests))
    finally:
        await batcher.stop()
    assert calls == [11]  # one run for all four requests
    for request, Q in zip(requests, results, strict=True):
        expected = original(request)  # the same questions encoded alone
        assert Q.shape == (len(request), model.reader.config.hidden_size)
        torch.testing.assert_close(Q, expected, atol=1e-5, rtol=1e-5)
    assert metrics.query_batch_size._sum.get() == 11


async def test_max_batch_bounds_a_run(
    checkpoint_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = loaded(checkpoint_dir)
    calls, _ = count_runs(model, monkeypatch)
    batcher = QueryBatcher(max_batch=4, max_wait_ms=20, queue_size=100)
    batcher.start()
    try:
        await asyncio.gather(*(batcher.encode(model, queries(2, i)) for i in range(6)))
    finally:
        await batcher.stop()
    assert sum(calls) == 12 and max(calls) <= 4 and len(calls) == 3


async def test_modes_are_encoded_by_their_own_model(checkpoint_dir: Path) -> None:
    linear, gated = loaded(checkpoint_dir, "linear"), loaded(checkpoint_dir, "gated")
    batcher = QueryBatcher(max_batch=64, max_wait_ms=20, queue_size=100)
    batcher.start()
    try:
        qs = queries(2, 0)
        a, b = await asyncio.gather(batcher.encode(linear, qs), batcher.encode(gated, qs))
    finally:
        await batcher.stop()
    torch.testing.assert_close(a, linear.reader.encode_queries(qs))
    torch.testing.assert_close(b, gated.reader.encode_queries(qs))


async def test_full_queue_is_overloaded_and_errors_reach_the_callers(
    checkpoint_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = loaded(checkpoint_dir)
    release = threading.Event()

    def stuck(qs: Any) -> Any:
        release.wait(10)
        raise RuntimeError("model failed")

    monkeypatch.setattr(model.reader, "encode_queries", stuck)
    # In a thread: the run in hand blocks there while the queue fills on the loop.
    batcher = QueryBatcher(max_batch=1, max_wait_ms=0, queue_size=2, in_thread=True)
    with pytest.raises(Unavailable):
        await batcher.encode(model, queries(1, 0))  # not started
    batcher.start()
    try:
        in_hand = asyncio.create_task(batcher.encode(model, queries(1, 0)))
        await asyncio.sleep(0.05)  # the loop takes it and blocks in the model
        waiting = [asyncio.create_task(batcher.encode(model, queries(1, i))) for i in range(2)]
        await asyncio.sleep(0.05)
        with pytest.raises(Overloaded):
            await batcher.encode(model, queries(1, 9))
        release.set()
        with pytest.raises(RuntimeError, match="model failed"):
            await in_hand
        for task in waiting:
            with pytest.raises(RuntimeError, match="model failed"):
                await task
    finally:
        release.set()
        await batcher.stop()


async def test_a_batch_waits_only_for_requests_on_their_way(
    checkpoint_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = loaded(checkpoint_dir)
    calls, _ = count_runs(model, monkeypatch)
    batcher = QueryBatcher(max_batch=64, max_wait_ms=60_000, queue_size=100)
    batcher.start()
    try:
        # Nobody on the way: the lone job runs at once, not after the minute-long wait.
        await asyncio.wait_for(batcher.encode(model, queries(3, 0)), timeout=30)
        assert calls == [3]
        # A request on its way (fetching, tokenising): the batch in hand waits for it.
        with batcher.coming():
            first = asyncio.create_task(batcher.encode(model, queries(2, 1)))
            await asyncio.sleep(0.05)  # the loop holds the first job and waits
            assert not first.done()
        second = asyncio.create_task(batcher.encode(model, queries(4, 2)))
        await asyncio.wait_for(asyncio.gather(first, second), timeout=30)
        assert calls == [3, 6]  # one run for both
    finally:
        await batcher.stop()
