"""The Docker files and the install path: checked without a Docker engine."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _compose_command() -> list[str] | None:
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def test_compose_file_is_valid() -> None:
    command = _compose_command()
    if command is None:
        pytest.skip("no docker compose client on this machine")
    result = subprocess.run(
        [*command, "-f", str(ROOT / "docker-compose.yml"), "config", "-q"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr


def test_torch_is_pinned_to_the_cpu_release() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "torch==2.13.0" in project["dependencies"]
    assert 'torch==2.13.0"' in (ROOT / "scripts" / "install.sh").read_text()
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "whl/cpu torch==2.13.0" in dockerfile


def test_dockerfile_copies_every_package_it_installs() -> None:
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    dockerfile = (ROOT / "Dockerfile").read_text()
    packages = [p.rstrip("*") for p in find["find"]["include"]]
    where = {p: next(w for w in find["find"]["where"] if (ROOT / w / p).is_dir()) for p in packages}
    missing = [p for p in packages if f"COPY {Path(where[p], p)} " not in dockerfile]
    assert missing == []


def test_dockerfile_runs_as_non_root_with_a_health_check() -> None:
    runtime = (ROOT / "Dockerfile").read_text().split("AS runtime", 1)[1]
    assert "\nUSER cheapqa" in runtime
    assert "HEALTHCHECK" in runtime
