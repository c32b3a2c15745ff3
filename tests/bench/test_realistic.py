"""The hand-written news stories: well-formed files, the answer rule, and the bench run
through the service (tiny random readers: the baselines and the plumbing are checked, not
the readers' accuracy)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.realistic.report import evaluate_lines, summary, write_evaluate_file
from bench.realistic.score import run
from bench.realistic.stories import SETS, Asked, Story, load_stories, set_path
from service.settings import Settings
from tests.service.helpers import build_checkpoints


@pytest.mark.parametrize("name", SETS)
def test_the_sets_are_news_stories_with_answerable_questions(name: str) -> None:
    stories = load_stories(set_path(name))
    assert len(stories) >= 8
    ids = [q.id for s in stories for q in s.questions]
    assert len(ids) == len(set(ids)) and len({s.id for s in stories}) == len(stories)
    for story in stories:
        assert 250 <= len(story.text.split()) <= 500, story.id
        assert " - " in story.text.split("\n\n")[1][:40], f"{story.id}: no dateline"
        answered = [q for q in story.questions if q.answer is not None]
        assert len(answered) >= 10, story.id
        for q in story.questions:
            assert q.kind in ("who", "which", "whose", "where"), q.question
            assert q.answer is None or q.answer in story.text, q.id


def test_a_question_is_counted_by_its_wh_word() -> None:
    assert Asked("q", "In which city was the plant built?", "Pune").kind == "which"
    assert Asked("q", "From which port will the ferries sail?", "Split").kind == "which"
    assert Asked("q", "Whom did Anna call?", "Tom").kind == "who"
    assert Asked("q", "Where did the rector study?", "Leiden").kind == "where"
    assert Asked("q", "With whom did Anna travel?", "Tom").kind == "who"
    assert Asked("q", "What company bought the mill?", "Brekke").kind == "which"


def test_a_short_form_of_the_answer_is_the_answer() -> None:
    story = Story("s", "", {"Irish Airline Pilots' Association": ["IALPA"]}, [])
    assert story.is_right("Brekke", "Brekke Energy")
    assert story.is_right("solheim", "Ingrid Solheim")
    assert story.is_right("IALPA", "Irish Airline Pilots' Association")
    assert not story.is_right("Brekke Energy Bergen", "Brekke Energy")  # a fused name
    assert not story.is_right("Solvind", "Brekke Energy")
    assert not story.is_right("anything", None)  # a question the story does not answer
    # the finder cannot tell an abbreviation's full stop from a sentence's
    assert story.is_right("Kelet Média Zrt", "Kelet Média Zrt.")
    assert story.is_right("Kelet Média Zrt.", "Kelet Média Zrt.")


STORY = (
    "Fairfield market reopens\n\nFAIRFIELD, May 2 - Anna walked to the market with Tom. "
    "Later Marcus drove Anna home to Fairfield, and Tom stayed behind to help Clara."
)


def test_the_bench_asks_through_the_service(tmp_path: Path) -> None:
    questions = [
        Asked("q1", "Who drove Anna home to Fairfield?", "Marcus"),
        Asked("q2", "Who stayed behind to help Clara?", "Tom"),
        Asked("q3", "What did Marcus buy?", "Anna"),  # a form the service refuses
        Asked("q4", "Who is Barack Obama?", None),
    ]
    story = Story("fairfield", STORY, {}, questions)
    settings = Settings(checkpoint_dir=build_checkpoints(tmp_path / "ckpt"), ingest_block_ms=50)
    answered = run([story], settings, ["linear", "softmax"])
    rows = summary(answered)
    assert set(rows) == {"linear", "softmax", "word matching", "most frequent"}
    for row in rows.values():
        assert row["questions"] == 3 and row["refused"] == 1
    # The blank's neighbours ("drove Anna home", "stayed behind to") name Marcus and Tom.
    assert rows["word matching"]["accuracy"] == pytest.approx(2 / 3)
    linear = {a.asked.id: a for a in answered if a.by == "linear"}
    assert linear["q1"].result["cloze"] == "@placeholder drove Anna home to Fairfield"
    assert linear["q3"].right == 0.0 and "cannot read" in (linear["q3"].refused or "")

    lines = evaluate_lines([story], answered)
    assert [line["id"] for line in lines] == ["q1", "q2"]  # answerable and not refused
    path = tmp_path / "evaluate.jsonl"
    write_evaluate_file(path, lines)
    first = json.loads(path.read_text().splitlines()[0])
    assert first == {
        "id": "q1",
        "document": STORY,
        "query": "@placeholder drove Anna home to Fairfield",
        "answer": "Marcus",
    }


def test_right_kept_is_what_a_confidence_threshold_leaves_right() -> None:
    from bench.realistic.report import right_kept

    scored = [(0.9, True), (0.8, True), (0.7, False), (0.6, True), (0.5, False), (0.1, False)]
    # Keeping the top two: 2 of 2 right; the top four: 3 of 4 (75%).
    assert right_kept(scored, 0.9) == pytest.approx(2 / 6)
    assert right_kept(scored, 0.75) == pytest.approx(3 / 6)
    assert right_kept(scored, 0.5) == pytest.approx(3 / 6)
    # A threshold keeps every answer with the same score: the tie at 0.8 keeps a wrong one.
    assert right_kept([(0.9, True), (0.8, True), (0.8, False)], 0.9) == pytest.approx(1 / 3)
    assert right_kept([(0.5, False)], 0.8) == 0.0


def test_the_fitted_readers_figures_judge_the_score_as_served() -> None:
    from bench.realistic.reading import _figures
    from encoder.training.reading import Answered

    # The probability among the candidates read ranks the wrong answer first; the score (that
    # times the candidates' share before reading) ranks both right answers above it.
    answered = [
        Answered("a", True, True, 0.6, 0.5),
        Answered("a", True, True, 0.7, 0.4),
        Answered("a", True, False, 0.9, 0.3),
        Answered("a", False, False, 0.5, 0.1),  # unanswerable: wrong
    ]
    accuracy, score_auroc, probability_auroc, kept = _figures(answered)
    assert accuracy == pytest.approx(2 / 3)
    assert score_auroc == pytest.approx(1.0)
    assert probability_auroc == pytest.approx(0.5)  # above one wrong answer, below the other
    assert kept == pytest.approx(2 / 4)


def test_a_set_kept_unscored_is_scored_only_when_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from bench.realistic.__main__ import main
    from bench.realistic.stories import FROZEN

    assert main(["--set", FROZEN[0], "--modes", "linear"]) == 2
    assert "--score-frozen" in capsys.readouterr().err


def test_the_service_failing_stops_the_bench(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 5xx is the service broken, not a question refused: no accuracy is printed for it."""
    import service.answering

    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("broken")

    monkeypatch.setattr(service.answering, "rank_answers", broken)
    story = Story("fairfield", STORY, {}, [Asked("q1", "Who drove Anna home?", "Marcus")])
    settings = Settings(checkpoint_dir=build_checkpoints(tmp_path / "ckpt"), ingest_block_ms=50)
    with pytest.raises(RuntimeError, match="q1 \\(linear\\): HTTP 500"):
        run([story], settings, ["linear"])
