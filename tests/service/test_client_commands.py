"""`cheapqa index`, `ask`, `status`, `list`, `entities`, `delete` (the light client's commands,
client/cheapqa_client/cli), `--version` and bare `cheapqa`, against a real server
(CHEAPQA_URL), in process."""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import pytest

from cli.main import main
from tests.service.texts import DOCUMENTS, QUESTIONS

pytestmark = pytest.mark.slow


@pytest.fixture
def cheapqa_env(live_server_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CHEAPQA_URL", live_server_url)
    monkeypatch.delenv("CHEAPQA_API_KEY", raising=False)
    return live_server_url


def test_index_files_then_ask_in_two_modes(
    cheapqa_env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = []
    for name in ("harbour", "observatory"):
        files.append(tmp_path / f"{name}.txt")
        files[-1].write_text(DOCUMENTS[name])
    assert main(["index", *map(str, files), "--wait", "--json"]) == 0
    out, err = capsys.readouterr()
    indexed = json.loads(out)
    assert [d["status"] for d in indexed] == ["indexed", "indexed"]
    assert err == ""  # --json and no terminal: no progress bar
    doc_id = indexed[0]["id"]  # derived from the text

    question = QUESTIONS["harbour"][0]
    assert main(["ask", doc_id, question, "--mode", "linear", "--mode", "softmax"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("linear (") and "\nsoftmax (" in out
    assert question in out and "ms on the server" in out
    scores = [float(line.split()[0]) for line in out.splitlines() if line.startswith("    ")]
    assert len(scores) == 2 * 5 and all(0.0 <= s <= 1.0 for s in scores)

    assert main(["ask", doc_id, question, "--top-k", "2", "--json"]) == 0
    [body] = json.loads(capsys.readouterr().out)
    assert len(body["results"][0]["answers"]) == 2


def test_index_with_an_id_and_without_waiting(
    cheapqa_env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "orchard.txt"
    path.write_text(DOCUMENTS["orchard"])
    assert main(["index", str(path), "--id", "cli-orchard"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.split("\t")[:2] == [str(path), "cli-orchard"]


def test_status_list_entities_and_delete(
    cheapqa_env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "observatory.txt"
    path.write_text(DOCUMENTS["observatory"])
    assert main(["index", str(path), "--id", "cli-observatory", "--wait"]) == 0
    capsys.readouterr()
    assert main(["status", "cli-observatory"]) == 0
    doc_id, status, size = capsys.readouterr().out.rstrip("\n").split("\t")
    assert (doc_id, status) == ("cli-observatory", "indexed") and "entities" in size
    assert main(["list"]) == 0
    assert "cli-observatory\tindexed" in capsys.readouterr().out.splitlines()
    assert main(["entities", "cli-observatory", "--json"]) == 0
    entities = json.loads(capsys.readouterr().out)
    names = [e["entity"] for e in entities["entities"]]
    assert names and all(name in DOCUMENTS["observatory"] for name in names)
    assert main(["delete", "cli-observatory"]) == 0
    assert main(["status", "cli-observatory"]) == 1
    assert "document_not_found" in capsys.readouterr().err


def test_errors_are_one_readable_line_and_exit_1(
    cheapqa_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ask", "no-such-document", "@placeholder came."]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "document_not_found" in err and "404" in err


def test_version_and_bare_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"cheapqa {version('cheapqa')}"
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: cheapqa")
    assert all(c in out for c in ("serve", "index", "ask", "status", "list", "entities"))
