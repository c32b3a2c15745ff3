"""A `store` fixture that runs each contract test on both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from store.base import DocumentStore
from store.factory import open_store


@pytest.fixture(params=["embedded", pytest.param("redis", marks=pytest.mark.redis)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[DocumentStore]:
    url = "embedded" if request.param == "embedded" else request.getfixturevalue("redis_url")
    opened = open_store(url, data_dir=tmp_path, key_prefix="cheapqa-test", timeout_s=2.0)
    try:
        yield opened
    finally:
        await opened.close()
