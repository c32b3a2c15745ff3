"""Test accuracy of every reader on every built set, beside the baselines: RESULTS.md's table.

    cheapqa bench readers --checkpoint-dir encoder/checkpoints --data data

A set is `<data>/<name>/<split>.jsonl`; the defaults are the recipe's tasks and lengths plus
the other-domain sets (Wikipedia's test articles at 200 and 800 tokens, infer at 400, and
lead -> body), lead -> body on the books' test chapters, and Reuters news stories. Sets that are not
built are skipped and said so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import first_questions
from encoder.model.modes import MODES
from encoder.training.evaluate import Evaluation, evaluate

DEFAULT_SETS = (
    ("find-200", "test"),
    ("para-200", "test"),
    ("para-400", "test"),
    ("para-800", "test"),
    ("infer-200", "test"),
    ("para-200", "wiki_test"),
    ("para-800", "wiki_test"),  # ~35 names a document: slots far beyond a training window's
    ("para-800", "lead_test"),  # Wikipedia's test articles (`wiki_splits`)
    ("wiki-infer-400", "test"),  # the wiki domain's test split: the same articles
    ("lead-800", "test"),  # lead -> body on the books' test chapters
    ("para-200", "news_test"),  # Reuters stories (r-cran-tm): real news, never trained on
    ("infer-200", "news_test"),
    ("lead-800", "news_test"),
)
BASELINES = ("random", "most_frequent", "context_match", "bag_of_words")


@dataclass(frozen=True)
class Row:
    data: str  # "para-800/test"
    count: int
    accuracy: dict[str, float]  # mode -> accuracy
    baselines: dict[str, float]


def evaluate_readers(
    checkpoint_dir: Path,
    data_dir: Path,
    modes: Sequence[str] = MODES,
    sets: Sequence[tuple[str, str]] = DEFAULT_SETS,
    log: Callable[[str], None] = lambda _: None,
    max_questions: int | None = None,
) -> list[Row]:
    rows = []
    for name, split in sets:
        path = data_dir / name / f"{split}.jsonl"
        if not path.is_file():
            log(f"skipped {path}: not built")
            continue
        if max_questions is not None:
            path = first_questions(path, max_questions)
        results: dict[str, Evaluation] = {}
        for mode in modes:
            ckpt = checkpoint_dir / f"{mode}.pt"
            if ckpt.is_file():
                results[mode] = evaluate(ckpt, path)
                log(f"{name}/{split} {mode}: {results[mode].accuracy:.4f}")
        if not results:
            continue
        any_result = next(iter(results.values()))
        rows.append(
            Row(
                data=f"{name}/{split}",
                count=any_result.count,
                accuracy={m: r.accuracy for m, r in results.items()},
                baselines={b: getattr(any_result, b) for b in BASELINES},
            )
        )
    return rows


def markdown(rows: Sequence[Row], modes: Sequence[str] = MODES) -> str:
    shown = [m for m in modes if any(m in r.accuracy for r in rows)]
    head = ["set", "questions", *shown, *(b.replace("_", " ") for b in BASELINES)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
    for r in rows:
        cells = [r.data, str(r.count)]
        cells += [f"{r.accuracy[m]:.3f}" if m in r.accuracy else "-" for m in shown]
        cells += [f"{r.baselines[b]:.3f}" for b in BASELINES]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def as_json(rows: Sequence[Row]) -> list[dict[str, Any]]:
    return [r.__dict__ for r in rows]


def write_index(checkpoint_dir: Path, rows: Sequence[Row], main_set: str = "para-200/test") -> Path:
    """`<checkpoint_dir>/index.json`: per mode its file, model id, size, best epoch,
    validation accuracy, and the test accuracies of `rows` (`test_accuracy`: on main_set).
    A mode `rows` did not measure keeps its entry when the index already describes the same
    model id (`bench readers --modes linear --write-index` updates linear's alone)."""
    from encoder.model.checkpoint import load_checkpoint
    from service.readers import trained_on

    out = checkpoint_dir / "index.json"
    before = json.loads(out.read_text()).get("modes", {}) if out.is_file() else {}
    modes = {}
    for path in sorted(checkpoint_dir.glob("*.pt")):
        ckpt = load_checkpoint(path)
        mode = ckpt.model.config.mode
        tests = {r.data: round(r.accuracy[mode], 4) for r in rows if mode in r.accuracy}
        kept = before.get(mode)
        if not tests and kept is not None and kept.get("model_id") == ckpt.model_id:
            modes[mode] = kept
            continue
        modes[mode] = {
            "file": path.name,
            "model_id": ckpt.model_id,
            "bytes": path.stat().st_size,
            "epoch": ckpt.meta.get("epoch"),
            "stage": ckpt.meta.get("stage"),
            "validation_accuracy": round(float(ckpt.meta.get("validation_accuracy", 0.0)), 4),
            "trained_on": trained_on(ckpt.meta).model_dump(),
            "test_accuracy": tests.get(main_set),
            "test": tests,
        }
    index = {
        "task": f"entity cloze; test_accuracy is {main_set}; see RESULTS.md",
        "modes": modes,
    }
    out.write_text(json.dumps(index, indent=2) + "\n")
    return out
