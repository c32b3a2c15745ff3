"""API keys and secrets (issue 26, MEDIUM 5 and two LOW findings): an empty key is refused at
start-up, `cheapqa config` prints no password of a store URL, and a malformed key list is
reported without the keys."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from service.settings import InvalidSetting, Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]


def cheapqa(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CHEAPQA_")}
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize("keys", [["good-key", ""], ["good-key", "   "]])
def test_an_empty_api_key_is_refused_at_startup(
    keys: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match="empty"):
        Settings(api_keys=keys)
    # A template with an unset variable, as the environment gives it.
    monkeypatch.setenv("CHEAPQA_API_KEYS", '["good-key", ""]')
    with pytest.raises(InvalidSetting) as err:
        load_settings()
    assert "good-key" not in str(err.value)


async def test_a_bare_bearer_header_reads_nothing(app_client: Any) -> None:
    async with app_client(modes=["linear"], api_keys=["good-key"]) as client:
        for headers in ({"Authorization": "Bearer"}, {"Authorization": "Bearer "}):
            answers = await client.post(
                "/v1/documents/x/answers", json={"queries": ["@placeholder ran."]},
                headers=headers,
            )  # fmt: skip
            assert answers.status_code == 401, answers.text
            assert (await client.get("/v1/documents", headers=headers)).status_code == 401


def test_config_masks_the_password_of_the_store_url() -> None:
    url = "redis://cheapqa:hunter2-secret@redis.internal:6379/0"
    out = cheapqa("config", env={"CHEAPQA_STORE_URL": url})
    assert out.returncode == 0, out.stderr
    assert "hunter2-secret" not in out.stdout
    assert "redis://cheapqa:**********@redis.internal:6379/0" in out.stdout


@pytest.mark.parametrize("value", ['["key-one-secret", "key-two-secret"', '["key-one-secret", 5]'])
def test_malformed_api_keys_are_reported_without_the_keys(value: str, tmp_path: Path) -> None:
    out = cheapqa("config", env={"CHEAPQA_API_KEYS": value})
    assert out.returncode != 0
    assert "CHEAPQA_API_KEYS" in out.stderr + out.stdout
    assert "secret" not in out.stderr + out.stdout
