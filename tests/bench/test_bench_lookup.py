"""`bench lookup` and `bench stages` with tiny sizes: the figures, table, plot and goals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from bench.corpus import load_text_corpus
from bench.lookup import (
    Goal,
    LookupBench,
    LookupRow,
    bare_lookup,
    evaluate_goals,
    markdown,
    run_lookup_bench,
    states_at,
    write_outputs,
)
from bench.stages import format_stages, profile_answers
from cli.main import main
from encoder.model.checkpoint import Checkpoint, load_checkpoint
from encoder.model.modes import MODES
from encoder.model.serving import ServingReader
from service.settings import Settings


@pytest.fixture(autouse=True)
def _keep_torch_threads() -> object:
    threads = torch.get_num_threads()
    yield None
    torch.set_num_threads(threads)


def test_states_at_each_n_equal_reading_the_prefix(tiny_checkpoints: Path) -> None:
    reader = load_checkpoint(tiny_checkpoints / "linear.pt").model
    ids = torch.randint(3, reader.config.vocab_size, (90,))
    states = states_at(ServingReader(reader), ids, [60, 20, 90])
    assert sorted(states) == [20, 60, 90]
    for n, state in states.items():
        whole = reader.encode_documents([ids[:n]])[0]
        assert state.n == n
        assert state.memory is not None and whole.memory is not None
        torch.testing.assert_close(state.memory, whole.memory, rtol=1e-4, atol=1e-4)


def test_bare_lookup_computes_what_the_model_does(tiny_checkpoints: Path) -> None:
    for mode in ("linear", "softmax"):
        reader = load_checkpoint(tiny_checkpoints / f"{mode}.pt").model
        ids = torch.randint(3, reader.config.vocab_size, (40,))
        state = reader.encode_documents([ids])[0]
        Q = torch.tanh(torch.randn(4, reader.config.hidden_size))
        bare = bare_lookup(state, Q)
        assert bare is not None
        scale = 1.0 / state.n if mode == "linear" else 1.0  # the model divides C q by n
        expected = reader.lookup(state, Q)
        torch.testing.assert_close(bare() * scale, expected, rtol=1e-4, atol=1e-5)  # type: ignore[operator]


def test_run_writes_table_plot_and_json(
    tiny_checkpoints: Path, story_file: Path, tmp_path: Path
) -> None:
    ckpts: dict[str, Checkpoint] = {m: load_checkpoint(tiny_checkpoints / f"{m}.pt") for m in MODES}
    bench = run_lookup_bench(
        {m: c.model for m, c in ckpts.items()},
        lambda m: ckpts[m].vocab,
        load_text_corpus(story_file),
        ns=(20, 100),
        batch_queries=4,
        encode_batches=(1, 2),
        encode_tokens=30,
        rounds=3,
    )
    assert {(r.mode, r.n) for r in bench.rows} == {(m, n) for m in MODES for n in (20, 100)}
    for r in bench.rows:
        assert r.model_us > 0 and r.batch_model_us > 0
        assert (r.bare_us is None) == (r.mode == "none")
    assert {(e.mode, e.batch) for e in bench.encode} == {(m, b) for m in MODES for b in (1, 2)}
    assert all(e.tokens_per_s == pytest.approx(30 * e.documents_per_s) for e in bench.encode)
    assert {(q.mode, q.batch) for q in bench.query_encode} == {
        (m, b) for m in MODES for b in (1, 4)
    }
    assert all(q.us_per_query > 0 and q.mean_tokens > 3 for q in bench.query_encode)
    assert bench.setup["lookup_parts_n"] == 100  # the measured n nearest 750
    assert "Reader.lookup, whole call" in bench.lookup_parts
    assert all(us > 0 for name, us in bench.lookup_parts.items() if not name.startswith("rest"))
    assert bench.setup["threads"] == 1
    assert bench.goals == []  # none of the goals' n were measured
    table, png, data = write_outputs(bench, tmp_path / "out")
    text = table.read_text()
    assert "| 100 |" in text and "softmax/linear bare" in text and "documents/s" in text
    assert "µs per question" in text
    assert "Where one linear Reader.lookup goes (n = 100" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(data.read_text())["setup"]["batch_queries"] == 4


def _row(mode: str, n: int, us: float) -> LookupRow:
    return LookupRow(mode, n, us, us, us, us)


def test_goals_are_judged_on_the_figures() -> None:
    rows = [
        _row("linear", 100, 2.0),
        _row("linear", 750, 2.0),
        _row("linear", 5000, 2.0),
        _row("linear", 50_000, 2.6),
        _row("softmax", 750, 14.0),
        _row("softmax", 5000, 60.0),
    ]
    goals = {g.text: g for g in evaluate_goals(LookupBench(rows, []))}
    assert goals["softmax/linear at n=750, one query, bare op"] == Goal(
        "softmax/linear at n=750, one query, bare op", ">= 6x", 7.0, True
    )
    assert not goals["softmax/linear at n=5000, one query, Reader.lookup"].met  # 30 < 40
    far = goals["linear n=50000 / n=100, one query, Reader.lookup"]
    assert far.measured == pytest.approx(1.3) and not far.met
    assert "| softmax/linear at n=750, one query, bare op | >= 6x | 7.00 | yes |" in markdown(
        LookupBench(rows, [], list(goals.values()))
    )


def test_cli_bench_lookup_random_init(
    story_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench"
    argv = ["bench", "lookup", "--random-init", "--text-file", str(story_file), "--out", str(out)]
    argv += ["--modes", "linear,softmax", "--ns", "30,90", "--batch-queries", "3"]
    argv += ["--encode-batches", "1", "--encode-tokens", "20", "--rounds", "3", "--json"]
    assert main(argv) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["setup"]["k"] == 100  # the default size
    assert body["setup"]["checkpoints"].startswith("random-init")
    assert [(r["mode"], r["n"]) for r in body["lookup"]] == [
        ("linear", 30),
        ("linear", 90),
        ("softmax", 30),
        ("softmax", 90),
    ]
    assert sorted(p.name for p in out.iterdir()) == ["lookup.json", "lookup.md", "lookup.png"]


async def test_stages_of_one_answers_request(settings: Settings, story_file: Path) -> None:
    doc = load_text_corpus(story_file).documents(1, 80, prefix="stages")[0]
    report = await profile_answers(settings, doc, "linear", queries_per_request=2, repeats=5)
    assert set(report.stages_us) == {
        "parse",
        "fetch state",
        "tokenise",
        "encode query",
        "encode query (bare)",
        "lookup",
        "score + top-k",
        "respond",
    }
    assert all(us > 0 for us in report.stages_us.values())
    assert report.total_us > report.stages_us["lookup"]
    assert 78 <= report.tokens <= 82
    text = format_stages(report)
    assert "whole request (ASGI)" in text and "framework (rest)" in text
