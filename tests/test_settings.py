from pathlib import Path

import pytest
from pydantic import ValidationError

from service.settings import Settings


def test_settings_read_prefixed_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHEAPQA_STORE_URL", "redis://example:6380/2")
    monkeypatch.setenv("CHEAPQA_MODES", '["linear", "softmax"]')
    monkeypatch.setenv("CHEAPQA_STATE_DTYPE", "float32")
    monkeypatch.setenv("CHEAPQA_DATA_DIR", "/tmp/cq")
    monkeypatch.setenv("CHEAPQA_API_KEYS", '["k1", "k2"]')
    s = Settings()
    assert s.store_url == "redis://example:6380/2"
    assert s.modes == ["linear", "softmax"]
    assert s.state_dtype == "float32"
    assert s.data_dir == Path("/tmp/cq")
    assert [key.get_secret_value() for key in s.api_keys] == ["k1", "k2"]


def test_settings_reject_bad_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHEAPQA_STATE_DTYPE", "int8")
    with pytest.raises(ValidationError):
        Settings()
    monkeypatch.delenv("CHEAPQA_STATE_DTYPE")
    monkeypatch.setenv("CHEAPQA_MODES", '["cosine"]')
    with pytest.raises(ValidationError):
        Settings()


def test_settings_ignore_unprefixed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORE_URL", "redis://nope")
    assert Settings().store_url == ""
