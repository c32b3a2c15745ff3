"""Accuracy per mode and per kind of question, a markdown table, and the questions as a
`cheapqa evaluate` file."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.realistic.score import Answered
from bench.realistic.stories import Story

KINDS = ("who", "which", "whose", "where")


# The top answer's signals of being right whose AUROC is reported.
SIGNALS: dict[str, Callable[[Answered], float | None]] = {
    "support": lambda a: a.support,
    "share": lambda a: a.support_share,
    "score": lambda a: a.score,
}


def summary(answered: Sequence[Answered]) -> dict[str, dict[str, Any]]:
    """Per answerer (mode or baseline): accuracy of the top answer on the answerable
    questions, all and per kind, with their counts, and how many the service refused."""
    out: dict[str, dict[str, Any]] = {}
    for by in dict.fromkeys(a.by for a in answered):
        mine = [a for a in answered if a.by == by and a.asked.answer is not None]
        row: dict[str, Any] = {"questions": len(mine), "accuracy": _mean([a.right for a in mine])}
        for kind in KINDS:
            of_kind = [a.right for a in mine if a.asked.kind == kind]
            row[kind] = _mean(of_kind)
            row[f"{kind}_questions"] = len(of_kind)
        row["refused"] = sum(a.refused is not None for a in answered if a.by == by)
        # How well the top answer's support, its share of the support and its score (the
        # reader's probability weighted by support) tell right top answers from wrong ones,
        # and from any answer to a question the story does not answer.
        scored = [a for a in answered if a.by == by and a.support is not None]
        for name, value in SIGNALS.items():
            right = [value(a) for a in scored if a.right == 1.0]
            wrong = [value(a) for a in scored if a.asked.answer is not None and a.right < 1.0]
            unanswerable = [value(a) for a in scored if a.asked.answer is None]
            row[f"{name}_auroc"] = auroc(right, wrong)
            row[f"{name}_auroc_with_unanswerable"] = auroc(right, wrong + unanswerable)
        # What a client that keeps only confident answers gets: of every question asked, the
        # share answered right by the answers whose signal passes one threshold.
        # (A baseline's score is its own accuracy: no signal.)
        asked = [a for a in answered if a.by == by]
        for name in KEPT_BY if any(a.result for a in asked) else ():
            pairs = [(v, a.right == 1.0) for a in asked if (v := SIGNALS[name](a)) is not None]
            pairs += [(-math.inf, False)] * (len(asked) - len(pairs))  # refused: never kept
            for precision in PRECISIONS:
                row[f"{name}_right_at_{precision}"] = right_kept(pairs, precision)
        out[by] = row
    return out


# The precision a client asks of the answers it keeps (`right_kept`), and the signals it keeps
# them by.
PRECISIONS = (0.8, 0.9)
KEPT_BY = ("score", "share")


def right_kept(scored: Sequence[tuple[float, bool]], precision: float) -> float:
    """(score, right) of each question's top answer -> the largest share of the questions
    answered right by keeping only the answers at or above one threshold on the score, such
    that at least `precision` of those kept are right (0 when no threshold gives it)."""
    ranked = sorted(scored, key=lambda pair: -pair[0])
    best, right = 0, 0
    for kept, (score, is_right) in enumerate(ranked, 1):
        right += is_right
        ties_end = kept == len(ranked) or ranked[kept][0] < score  # a threshold keeps ties
        if ties_end and right >= precision * kept:
            best = max(best, right)
    return best / len(ranked) if ranked else float("nan")


def auroc(positives: Sequence[float | None], negatives: Sequence[float | None]) -> float:
    """The chance that a positive scores above a negative (ties count half); NaN without
    both."""
    pos = [p for p in positives if p is not None]
    neg = [n for n in negatives if n is not None]
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def markdown(rows: dict[str, dict[str, Any]]) -> str:
    any_row = next(iter(rows.values()))
    kinds = [k for k in KINDS if any_row[f"{k}_questions"]]  # the kinds the set asks
    head = ["answerer", f"all ({any_row['questions']})"]
    head += [f"{k} ({any_row[f'{k}_questions']})" for k in kinds]
    head += ["refused", "support AUROC", "... with unanswerable", "share AUROC", "..."]
    head += ["score AUROC", "..."]
    head += [f"right by {n}, {p:.0%} kept right" for n in KEPT_BY for p in PRECISIONS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for by, row in rows.items():
        cells = [by, f"{row['accuracy']:.3f}", *(f"{row[k]:.3f}" for k in kinds)]
        cells.append(str(row["refused"]))
        for name in SIGNALS:
            cells += [
                _figure(row[f"{name}_auroc"]),
                _figure(row[f"{name}_auroc_with_unanswerable"]),
            ]
        cells += [
            _figure(row.get(f"{n}_right_at_{p}", math.nan)) for n in KEPT_BY for p in PRECISIONS
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _figure(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.3f}"


def misses(answered: Sequence[Answered], by: str) -> list[str]:
    """One line per answerable question `by` got wrong: question, cloze, answer (its score
    and support), gold."""
    return [
        f"{a.asked.id}: {a.asked.question} -> {a.result.get('cloze', '?')!r}: "
        f"{a.refused or a.answer} ({a.score:.2f}, support {a.support}), gold {a.asked.answer}"
        for a in answered
        if a.by == by and a.asked.answer is not None and a.right < 1.0
    ]


def evaluate_lines(stories: Sequence[Story], answered: Sequence[Answered]) -> list[dict[str, Any]]:
    """The answerable questions as `cheapqa evaluate` reads them: the story, the cloze
    sentence the service asked (its `cloze`), the gold name. A refused question has none."""
    clozes = {a.asked.id: a.result["cloze"] for a in answered if a.result.get("cloze")}
    return [
        {"id": q.id, "document": s.text, "query": clozes[q.id], "answer": q.answer}
        for s in stories
        for q in s.questions
        if q.answer is not None and q.id in clozes
    ]


def write_evaluate_file(path: Path, lines: Sequence[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
