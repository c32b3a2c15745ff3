"""Plain Who-questions against their cloze form, through the service's own conversion.

    python -m bench.who_questions --checkpoint runs/linear.pt --data data/para-200/test.jsonl

From a built test set, the questions whose blank is the sentence's subject
("@placeholder said that ...") become "Who said that ...?", and those whose blank is the
object of a regular past-tense verb right after a one-marker subject ("@entity1 thanked
@placeholder ...") become "Whom did @entity1 thank ...?". Each is turned back into a cloze
sentence by `encoder.text.questions.to_cloze` (what the answers route does) and scored beside the
original cloze sentence, by `encoder.training.evaluate` (the route's own preparation).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from encoder.text.questions import UnsupportedQuestion, past_tense, to_cloze
from encoder.text.tokens import PLACEHOLDER, entity_index
from encoder.training.data.questions import Question, read_questions, write_questions
from encoder.training.evaluate import evaluate


def _base_of(past: str) -> str | None:
    """The base verb whose regular past is `past` ("thanked" -> "thank"), None if none is."""
    if not past.endswith("ed"):
        return None
    for base in (past[:-2], past[:-1], past[:-3], past[:-3] + "y"):
        if base and past_tense(base) == past:
            return base
    return None


def who_question(query: str) -> str | None:
    """The plain question asking what the cloze `query` asks, for the two forms above."""
    words = query.split()
    if words and words[-1] in {".", "!", "?"}:
        words = words[:-1]
    if not words:
        return None
    if words[0] == PLACEHOLDER and len(words) > 1:
        return "Who " + " ".join(words[1:]) + "?"
    if len(words) >= 3 and entity_index(words[0]) is not None and words[2] == PLACEHOLDER:
        base = _base_of(words[1])
        if base is not None:
            return f"Whom did {words[0]} {base} " + " ".join(words[3:]) + "?"
    return None


def _as_names(text: str) -> str:
    """Markers as capitalised names ("@entity12" -> "Entbc"): the converter reads names the
    way a user writes them, not markers."""
    return re.sub(r"@entity(\d+)", lambda m: "Ent" + "".join(chr(97 + int(c)) for c in m[1]), text)


def _as_markers(text: str) -> str:
    return re.sub(
        r"\bEnt([a-j]+)\b", lambda m: "@entity" + "".join(str(ord(c) - 97) for c in m[1]), text
    )


def compare(checkpoint: Path, data: Path) -> dict[str, object]:
    cloze, plain, refused = [], [], 0
    for q in read_questions(data):
        who = who_question(q.query)
        if who is None:
            continue
        try:
            converted = _as_markers(to_cloze(_as_names(who)))
        except UnsupportedQuestion:
            refused += 1
            continue
        cloze.append(q)
        plain.append(Question(**{**asdict(q), "query": converted}))
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp) / "cloze.jsonl", Path(tmp) / "plain.jsonl"]
        write_questions(paths[0], cloze)
        write_questions(paths[1], plain)
        as_cloze, as_plain = (evaluate(checkpoint, p) for p in paths)
    return {
        "checkpoint": str(checkpoint),
        "data": str(data),
        "questions": len(cloze),
        "refused_by_converter": refused,
        "cloze_accuracy": as_cloze.accuracy,
        "plain_accuracy": as_plain.accuracy,
        "example": {"cloze": cloze[0].query, "asked": who_question(cloze[0].query)}
        if cloze
        else None,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True, help="a built set's test.jsonl")
    args = parser.parse_args(argv)
    print(json.dumps(compare(args.checkpoint, args.data), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
