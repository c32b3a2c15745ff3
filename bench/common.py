"""What every bench shares: the default data set, the Goal record, a set's first questions, JSON
reports, the modes-list parser and percentiles."""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from encoder.model.modes import MODES, Mode

# Real text for the benches: the training split `cheapqa data build` writes.
DEFAULT_DATA = Path("data/para-200/train.jsonl")  # what `cheapqa data build` makes by default

# The lookup bench's default: the attention modes first, the baseline last.
DEFAULT_LOOKUP_MODES: tuple[Mode, ...] = (*(m for m in MODES if m != "none"), "none")


@dataclass
class Goal:
    """One target a bench checks: what it says, the threshold, the figure, whether it is met."""

    text: str
    target: Any  # the threshold: a number, or a phrase such as "< 2x"
    measured: float
    met: bool


def first_questions(path: Path, n: int, folder: Path | None = None) -> Path:
    """The first n questions of a set, in a file in `folder` (beside the set by default): large
    sets, quick looks. Written to a temporary file and renamed, so two runs reading the same
    set at once never see each other's half-written file."""
    out = (folder or path.parent) / f"{path.parent.name}-{path.stem}.first{n}.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)[:n]
    fd, tmp = tempfile.mkstemp(prefix=out.name, suffix=".tmp", dir=out.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("".join(lines))
    os.replace(tmp, out)
    return out


def write_json(path: Path, data: Any) -> Path:
    """Writes a report as indented JSON (the folder is made if needed); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def parse_modes(text: str) -> list[str]:
    """A comma-separated list of modes (an argparse `type=`)."""
    modes = [m.strip() for m in text.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        raise argparse.ArgumentTypeError(f"modes must be among {','.join(MODES)}: {text!r}")
    return modes


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile of values already sorted; NaN when there are none."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]
