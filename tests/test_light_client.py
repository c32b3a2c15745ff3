"""The light client installs alone, as README says (`pip install ./client`), into a fresh venv
without torch or the server's packages, and passes its own tests there (client/tests)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / "client"

pytestmark = pytest.mark.slow

PROBE = """
import importlib.util, cheapqa_client
print(cheapqa_client.__file__)
print(",".join(m for m in ("torch", "numpy", "fastapi", "redis", "service", "encoder")
               if importlib.util.find_spec(m) is not None))
"""


def run(*args: str | Path, cwd: Path) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{args}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_the_client_installs_without_torch_and_passes_its_tests(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    # From a copy: pip builds in the source tree, and this checkout stays as it is.
    client = tmp_path / "client"
    shutil.copytree(
        CLIENT, client, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    run(python, "-m", "pip", "install", "--quiet", f"{client}[test]", cwd=tmp_path)

    # Run outside the source tree, so what is imported is what pip installed.
    where, present = run(python, "-c", PROBE, cwd=tmp_path).splitlines()
    assert Path(where).is_relative_to(venv)
    assert present == ""  # nothing of the server: no torch, numpy, fastapi, redis

    installed = run(python, "-m", "pip", "list", "--format=freeze", cwd=tmp_path)
    names = {line.split("==")[0].lower() for line in installed.splitlines()}
    assert {"cheapqa-client", "httpx", "pydantic"} <= names
    assert "cheapqa" not in names and "torch" not in names

    out = run(
        python, "-m", "pytest", "-q", "-p", "no:cacheprovider", client / "tests", cwd=tmp_path
    )
    assert " passed" in out and "failed" not in out
    assert run(venv / "bin" / "cheapqa-client", "--version", cwd=tmp_path).startswith(
        "cheapqa-client 0.1.0"
    )
