"""`cheapqa soak`, briefly: the command starts a server, runs its mixed load, and reports
errors and the server's memory. The 60-second run and its figures are in RELIABILITY.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from tests.service.texts import APPENDIX, DOCUMENTS

pytestmark = pytest.mark.slow


def test_a_short_soak_runs_without_errors(
    tmp_path: Path, checkpoint_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = tmp_path / "texts.txt"
    text.write_text("\n\n".join([*DOCUMENTS.values(), APPENDIX]))
    out = tmp_path / "soak.json"
    argv = ["soak", "--duration", "3", "--concurrency", "8", "--warmup", "1", "--sample-every",
            "1", "--documents", "3", "--tokens", "60", "--text-file", str(text),
            "--checkpoint-dir", str(checkpoint_dir), "--json", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "errors: 0 (goal 0)" in printed and "server RSS:" in printed, printed
    report = json.loads(out.read_text())
    assert report["errors"] == 0 and report["requests"] > 0
    assert set(report["statuses"]) <= {"200", "202"}
    assert report["rss_start_bytes"] > 10 * 1024 * 1024  # a Python process with torch
    assert len(report["rss_samples"]) >= 2
    assert report["documents_created"] == report["documents_deleted"] > 0
    # The appender's appends carry expected_text_hash: applied once, a retry refused (412).
    assert report["appends"]["applied"] > 0 and report["appends"]["other"] == 0
