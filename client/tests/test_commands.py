"""`cheapqa-client index|ask|status|list|entities|delete` against the stand-in service
(conftest.py), over a real socket. tests/service/test_client_commands.py runs the same
commands, as `cheapqa`, against the real service."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cheapqa_client import __version__
from cheapqa_client.cli.main import BROKEN_PIPE, main

STORY = "Anna walked to the market with Tom. Later Marcus drove Anna home to Fairfield."


def test_index_ask_status_list_entities_delete(
    service_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story = tmp_path / "story.txt"
    story.write_text(STORY)
    assert main(["index", str(story), "--id", "story", "--wait"]) == 0
    assert capsys.readouterr().out == f"{story}\tstory\tindexed\t14 tokens, 5 entities\n"

    assert main(["ask", "story", "Who drove Anna home?", "--top-k", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "linear (m-test, 1.2 ms on the server): score, support, share, answer"
    assert out[1] == "  Who drove Anna home?  (asked as: @placeholder drove Anna home)  read"
    assert out[2:] == ["     0.500     -     -  Anna", "     0.500     -     -  Fairfield"]
    assert main(["ask", "story", "Who drove Anna home?", "--no-reading"]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith("drove Anna home)")

    assert (
        main(["ask", "story", "@placeholder drove Anna home", "--mode", "softmax", "--json"]) == 0
    )
    [answers] = json.loads(capsys.readouterr().out)
    assert (answers["mode"], answers["server_ms"]) == ("softmax", 1.25)
    assert answers["results"][0]["answers"][0] == {
        "entity": "Anna",
        "score": 0.2,
        "reader_score": None,  # the stand-in service sends neither
        "support": None,
        "support_share": None,
        "spans": [],
    }

    assert main(["status", "story", "--json"]) == 0
    [status] = json.loads(capsys.readouterr().out)
    assert (status["status"], status["entities_unplaced"]) == ("indexed", 0)

    assert main(["list"]) == 0
    assert capsys.readouterr().out == "story\tindexed\n"

    assert main(["entities", "story"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["2", "Anna"] and len(lines) == 5

    assert main(["delete", "story"]) == 0
    assert capsys.readouterr().out == "deleted story\n"
    assert main(["status", "story"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "document_not_found" in err and "404" in err


def test_index_without_waiting_prints_what_was_accepted(
    service_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [tmp_path / "a.txt", tmp_path / "b.txt"]
    for path in files:
        path.write_text(STORY)
    assert main(["index", *map(str, files), "--json"]) == 0
    out, err = capsys.readouterr()
    assert [d["status"] for d in json.loads(out)] == ["queued", "queued"]
    assert err == ""  # --json and no terminal: no progress


def test_a_file_that_is_not_text_is_named(
    service_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "photo.jpg"
    binary.write_bytes(b"\xff\xd8\xff\xe0 not text")
    assert main(["index", str(binary)]) == 1
    assert capsys.readouterr().err == f"error: {binary} is not UTF-8 text\n"
    assert main(["index", str(tmp_path / "absent.txt")]) == 1
    assert "absent.txt: No such file or directory" in capsys.readouterr().err
    assert main(["index", str(binary), str(binary), "--id", "x"]) == 2


def test_an_unreachable_service_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CHEAPQA_URL", "http://127.0.0.1:9")
    assert main(["ask", "d1", "@placeholder came."]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "connection_error" in err and err.count("\n") == 1


def test_version_and_bare_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"cheapqa-client {__version__}"
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: cheapqa-client")
    assert all(c in out for c in ("index", "ask", "status", "list", "entities", "delete"))


def test_output_whose_reader_left_ends_quietly(service_url: str, tmp_path: Path) -> None:
    # `cheapqa-client list --json | head`: the reader leaves before the output is written.
    story = tmp_path / "story.txt"
    story.write_text(STORY)
    assert main(["index", str(story), "--id", "story"]) == 0
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "cheapqa_client", "list", "--json"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            env={**os.environ, "CHEAPQA_URL": service_url},
        )
    finally:
        os.close(write_end)
    assert done.returncode == BROKEN_PIPE
    assert done.stderr == ""  # no traceback
