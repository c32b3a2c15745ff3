"""`cheapqa bench meaning` times both ways on a story set and prints every figure."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

from bench.meaning import main
from bench.realistic.stories import set_path


def test_the_meaning_bench_prints_each_figure_of_a_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = tmp_path / "one.jsonl"  # the first story of dev: a set is read whole
    one.write_text(set_path("dev").read_text(encoding="utf-8").splitlines()[0] + "\n")
    assert main(argparse.Namespace(set=str(one), rounds=1)) == 0
    table = capsys.readouterr().out
    for row in ("linear reader", "sentences embedded", "sentence vectors", "a request"):
        assert row in table
    assert "long document: µs a sentence embedded" in table
    assert "long document: sentences / reader" in table
    # A story of 300-450 words keeps its sentences that name someone: some, not hundreds.
    kept = next(line for line in table.splitlines() if "sentences kept" in line)
    assert 5 <= int(kept.split("|")[2].replace(",", "")) <= 40


def test_the_meaning_bench_times_the_pair_reader_where_one_is_fitted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from encoder.text.reading import FILE, PairReader, base_model, save
    from service.readers import checkpoint_dir
    from service.settings import Settings

    folder = tmp_path / "checkpoints"
    shutil.copytree(checkpoint_dir(Settings()), folder)
    save(PairReader(*base_model()), folder / FILE, {})
    monkeypatch.setenv("CHEAPQA_CHECKPOINT_DIR", str(folder))
    one = tmp_path / "one.jsonl"
    one.write_text(set_path("dev").read_text(encoding="utf-8").splitlines()[0] + "\n")
    assert main(argparse.Namespace(set=str(one), rounds=1)) == 0
    table = capsys.readouterr().out
    assert "| ask, 1 question: rank_answers with the pair reader, µs |" in table
    assert "with the pair reader / rank_answers" in table
    # It read something: each candidate a sentence or two that name it.
    read = next(line for line in table.splitlines() if "pair reader reads a candidate" in line)
    assert 0.5 <= float(read.split("|")[2]) <= 2
