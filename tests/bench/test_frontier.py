"""bench frontier: accuracy, lookup cost and state bytes for every mode, per length."""

from __future__ import annotations

from pathlib import Path

from bench.frontier import markdown, run_frontier
from encoder.model.modes import MODES


def test_frontier_measures_every_mode_and_skips_what_is_not_built(
    tiny_checkpoints: Path, questions_file: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    (data / "para-200").mkdir(parents=True)
    (data / "para-200" / "test.jsonl").write_text(questions_file.read_text())
    logged: list[str] = []
    rows = run_frontier(
        tiny_checkpoints,
        data,
        tmp_path,
        lengths=(200, 5000),
        max_questions=None,
        cost_documents=1,
        rounds=1,
        log=logged.append,
    )
    assert [r.tokens for r in rows] == [200]  # para-5000 is not built: skipped, and said so
    assert any("para-5000" in line and "not built" in line for line in logged)
    (row,) = rows
    points = {p.mode: p for p in row.points}
    assert set(points) == set(MODES)
    for p in points.values():
        assert 0.0 <= p.accuracy <= 1.0 and p.lookup_us > 0 and p.state_bytes > 0
    # A mentions state keeps a key per mention, softmax's a row per token; none only h_n.
    assert points["none"].state_bytes < points["mentions"].state_bytes
    assert points["mentions"].state_bytes < points["softmax"].state_bytes
    assert set(row.baselines) == {"most_frequent", "bag_of_words"}
    table = markdown(rows)
    assert all(mode in table for mode in MODES) and "| 200 |" in table


def test_frontier_puts_each_mode_as_served_beside_the_reader_alone(
    tiny_checkpoints: Path, questions_file: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    (data / "para-200").mkdir(parents=True)
    (data / "para-200" / "test.jsonl").write_text(questions_file.read_text())
    (row,) = run_frontier(
        tiny_checkpoints,
        data,
        tmp_path,
        lengths=(200,),
        modes=("linear", "mentions"),
        max_questions=None,
        cost_documents=1,
        rounds=1,
        support_weight=8.0,
    )
    points = {p.mode: p for p in row.points}
    assert set(points) == {"linear", "linear+support", "mentions", "mentions+support"}
    for mode in ("linear", "mentions"):
        alone, served = points[mode], points[f"{mode}+support"]
        # The support step and the kept windows cost on top of the reader's lookup and state.
        assert served.lookup_us > alone.lookup_us and served.state_bytes > alone.state_bytes
        assert 0.0 <= served.accuracy <= 1.0
