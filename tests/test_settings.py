import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from encoder.model.checkpoint import CHECKPOINT_DIR
from service.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


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


@pytest.mark.parametrize(
    ("typed", "modes"),
    [
        ("linear,gated", ["linear", "gated"]),
        (" linear , softmax ,", ["linear", "softmax"]),
        ('["none", "linear"]', ["none", "linear"]),
        ("gated", ["gated"]),
    ],
)
def test_list_settings_take_commas_or_json(
    monkeypatch: pytest.MonkeyPatch, typed: str, modes: list[str]
) -> None:
    monkeypatch.setenv("CHEAPQA_MODES", typed)
    monkeypatch.setenv("CHEAPQA_API_KEYS", "k1,k2")
    s = Settings()
    assert s.modes == modes
    assert [k.get_secret_value() for k in s.api_keys] == ["k1", "k2"]  # kept as secrets
    monkeypatch.setenv("CHEAPQA_API_KEYS", "")
    assert Settings().api_keys == []


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("CHEAPQA_MODES", "linear,cosine", "'none', 'linear', 'gated', 'softmax' or 'mentions'"),
        ("CHEAPQA_MODES", "[linear", "comma-separated"),
        ("CHEAPQA_STATE_DTYPE", "int8", "'float32' or 'float16'"),
        ("CHEAPQA_MAX_TOP_K", "0", "greater than 0"),
    ],
)
@pytest.mark.parametrize("command", ["serve", "worker", "config"])
def test_an_invalid_setting_is_one_line_and_exit_2(
    command: str, variable: str, value: str, says: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHEAPQA_")}
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", command],
        cwd=ROOT,
        env={**env, variable: value},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr  # no traceback
    assert lines[0].startswith(f"cheapqa: invalid setting {variable}=")
    assert says in lines[0]


def test_config_prints_the_checkpoint_folder_in_force(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Not `null` when none is set: the shipped readers' folder, which holds them."""
    from cli.main import main

    monkeypatch.delenv("CHEAPQA_CHECKPOINT_DIR", raising=False)
    assert main(["config"]) == 0
    shipped = Path(json.loads(capsys.readouterr().out)["checkpoint_dir"])
    assert shipped == CHECKPOINT_DIR and (shipped / "linear.pt").is_file()
    monkeypatch.setenv("CHEAPQA_CHECKPOINT_DIR", str(tmp_path))
    assert main(["config"]) == 0
    assert json.loads(capsys.readouterr().out)["checkpoint_dir"] == str(tmp_path)
