"""bench readers --write-index: index.json describes the checkpoints it measured, and keeps
what it already said of those it did not measure."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from bench.readers import Row, write_index


def test_the_index_updates_the_modes_measured_and_keeps_the_others(
    tiny_checkpoints: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "checkpoints"
    shutil.copytree(tiny_checkpoints, folder)
    both = Row("para-200/test", 10, {"linear": 0.5, "softmax": 0.75}, {})
    first = json.loads(write_index(folder, [both]).read_text())["modes"]
    assert (first["linear"]["test_accuracy"], first["softmax"]["test_accuracy"]) == (0.5, 0.75)

    # Measuring linear alone keeps softmax's entry: the same model id.
    again = Row("para-200/test", 10, {"linear": 0.625}, {})
    second = json.loads(write_index(folder, [again]).read_text())["modes"]
    assert second["linear"]["test_accuracy"] == 0.625
    assert second["softmax"] == first["softmax"]

    # An entry for another model id is not kept: it would describe another reader.
    index = folder / "index.json"
    stale = json.loads(index.read_text())
    stale["modes"]["softmax"]["model_id"] = "softmax-000000000000"
    index.write_text(json.dumps(stale))
    third = json.loads(write_index(folder, [again]).read_text())["modes"]
    assert third["softmax"]["test_accuracy"] is None
    assert third["softmax"]["model_id"] == first["softmax"]["model_id"]
