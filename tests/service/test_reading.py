"""The pair reader (encoder.text.reading): the adapted sentence model reading a question beside
a candidate's sentence, its file, its fit (encoder.training.reading) and the questions the
fitter reads (bench.realistic.reading)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import encoder.training.reading as training
from bench.realistic.fit import Candidates
from bench.realistic.reading import questions_to_read
from bench.realistic.stories import Asked, Story
from encoder.text.reading import (
    MAX_TOKENS,
    N_WEIGHTS,
    SENTENCES,
    TOP,
    PairReader,
    base_model,
    load,
    save,
)
from encoder.training.reading import (
    Question,
    Settings,
    answer,
    fit,
    read_questions,
    write_questions,
)

QUESTION = "Who directed the film?"
SENTENCE = 'The actor Ramon Dizon starred in "Low Tide", directed by Carla Santos.'


def _reader() -> PairReader:
    bert, tokenizer = base_model()
    return PairReader(bert, tokenizer).eval()


def _span(text: str, name: str) -> list[int]:
    start = text.index(name)
    return [start, start + len(name)]


def test_the_adapter_starts_as_the_model_it_adapts() -> None:
    bert, tokenizer = base_model()
    reader = PairReader(bert, tokenizer).eval()
    base, _ = base_model()
    encoded = tokenizer(QUESTION, SENTENCE, return_tensors="pt")
    with torch.no_grad():
        adapted = reader.bert(**encoded).last_hidden_state
        plain = base.eval()(**encoded).last_hidden_state
    assert torch.allclose(adapted, plain, atol=1e-5)
    # Only the adapter, the head and the weights are fitted: the base stays frozen.
    trained = {n for n, p in reader.named_parameters() if p.requires_grad}
    assert trained and all(n.endswith((".A", ".B")) or not n.startswith("bert.") for n in trained)


def test_a_pair_marks_the_asking_word_and_the_mention() -> None:
    reader = _reader()
    pair = reader.pair(QUESTION, SENTENCE, [_span(SENTENCE, "Carla Santos")])
    assert pair is not None
    words = reader.tokenizer.convert_ids_to_tokens(pair.ids)
    assert [w for w, a in zip(words, pair.asking, strict=True) if a] == ["who"]
    assert [w for w, m in zip(words, pair.mention, strict=True) if m] == ["carla", "santos"]
    # A mention cut off with the pair's end is not read.
    long = "word " * MAX_TOKENS + "Carla Santos."
    assert reader.pair(QUESTION, long, [_span(long, "Carla Santos")]) is None


def test_the_file_keeps_what_was_fitted(tmp_path: Path) -> None:
    reader = _reader()
    with torch.no_grad():
        for p in reader.parameters():
            if p.requires_grad:
                p.copy_(torch.randn_like(p) * 0.01)
    path = tmp_path / "reading.pt"
    save(reader, path, {"fitted_on": ["dev"]})
    assert path.stat().st_size < 2_000_000  # the adapter, not the model
    again = load(path)
    names = ("Ramon Dizon", "Carla Santos")
    kept = [p for n in names if (p := reader.pair(QUESTION, SENTENCE, [_span(SENTENCE, n)]))]
    with torch.no_grad():
        assert torch.allclose(again.scores(kept), reader.scores(kept), atol=0.05)
    torch.save({"format": 0}, path)
    with pytest.raises(ValueError, match="format"):
        load(path)


def _toy() -> list[Question]:
    """Questions the ranking's features cannot answer (every candidate's are 0): only reading
    the pair tells the director from the actor."""
    out = []
    for actor, director in (("Ramon Dizon", "Carla Santos"), ("Ana Lima", "Jonas Berg")):
        for text in (
            f"The actor {actor} starred in the film, directed by {director}.",
            f"{director} directed the film, in which {actor} acted.",
        ):
            out.append(
                Question(
                    "toy",
                    QUESTION,
                    True,
                    [[0.0] * (N_WEIGHTS - 1)] * 2,
                    [False, True],
                    [[(text, [_span(text, actor)])], [(text, [_span(text, director)])]],
                )
            )
    return out


def test_the_fit_learns_what_only_the_pair_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(training, "WARMUP", 1)
    questions = _toy()
    start = [0.0] * (N_WEIGHTS - 1)
    untrained = answer(_reader(), questions)
    assert all(not a.right or a.probability == pytest.approx(0.5) for a in untrained)
    settings = Settings(epochs=40, learning_rate=5e-3)
    lines: list[str] = []
    state = tmp_path / "fit.pt"
    reader = fit(questions, start, settings, state=state, progress=lines.append)
    answered = answer(reader, questions)
    assert all(a.right for a in answered), answered
    assert min(a.probability for a in answered) > 0.5
    # Started again with its state, it goes on from where it was (here: done).
    again = fit(questions, start, settings, state=state, progress=lines.append)
    assert any(line.startswith("going on from step 40") for line in lines)
    for name, value in reader.fitted().items():
        assert torch.equal(value, again.fitted()[name]), name
    # Without reading(e) the same fit cannot tell them apart.
    alone = fit(questions, start, settings._replace(read=False))
    assert not all(a.right for a in answer(alone, questions, read=False))


def test_the_questions_file_round_trips(tmp_path: Path) -> None:
    questions = _toy()
    path = tmp_path / "questions.json"
    write_questions(path, questions)
    assert read_questions(path) == questions


def test_the_fitter_reads_each_question_s_likeliest_candidates_in_their_nearest_sentences() -> None:
    text = (
        "Carla Santos directed Low Tide. "
        "Ramon Dizon won the prize for best actor. "
        "Carla Santos thanked the jury. "
        "Ramon Dizon was born in Cebu."
    )
    names = ["Carla Santos", "Ramon Dizon", "Cebu"]
    spans = []
    for name in names:
        flat: list[int] = []
        at = text.find(name)
        while at >= 0:
            flat += [at, at + len(name)]
            at = text.find(name, at + 1)
        spans.append(flat)
    story = Story("s1", text, {}, [Asked("q1", "Who directed Low Tide?", "Carla Santos")])
    weights = [0.0] * (N_WEIGHTS - 1)
    weights[1] = 1.0  # support, the second feature, alone ranks them: Cebu, Carla, Ramon
    rows = [(0.0, support) + (0.0,) * (N_WEIGHTS - 3) for support in (2.0, 1.0, 3.0)]
    found = [
        Candidates(
            "g",
            rows,
            [True, False, False],
            True,
            story="s1",
            question="Who directed Low Tide?",
            slots=(0, 1, 2),
        )
    ]
    (q,) = questions_to_read(found, {"s1": story}, {"s1": spans}, weights)
    assert len(q.rows) == min(TOP, 3) and q.right == [False, True, False]
    # The likeliest first: Cebu (named in one sentence), Carla Santos, Ramon Dizon.
    assert q.sentences[0] == [("Ramon Dizon was born in Cebu.", [[24, 28]])]
    q.sentences.pop(0)
    # Each candidate's sentences nearest the question, at most SENTENCES, with its mentions
    # in each as the sentence's own offsets.
    assert all(len(per) <= SENTENCES for per in q.sentences)
    first, spans_in = q.sentences[0][0]
    assert first == "Carla Santos directed Low Tide."
    assert [first[a:b] for a, b in spans_in] == ["Carla Santos"]
    assert {s for s, _ in q.sentences[1]} == {
        "Ramon Dizon won the prize for best actor.",
        "Ramon Dizon was born in Cebu.",
    }
