"""A question asked in words is ranked by the weights fitted for its reader
(encoder.text.ranking); a cloze sentence, or a reader without its own weights, keeps the
hand-set ranking; the fitter finds weights that rank the right answers first."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from bench.realistic.fit import Candidates, collect, fit, hand_set, held_out, score, write
from bench.realistic.stories import Asked, Story
from encoder.model.checkpoint import load_checkpoint
from encoder.text.questions import AGENT, PLACE
from encoder.text.ranking import FILE, Fitted, Weights, features, probabilities, read
from encoder.text.support import Evidence, kind_logs, kind_weighted, support_order
from service.readers import load_models
from service.settings import Settings
from tests.service.conftest import AppClient, SettingsFactory, wait_status


def _order(values: list[float]) -> list[int]:
    return sorted(range(len(values)), key=lambda i: -values[i])


@pytest.mark.parametrize("kind", [None, AGENT, PLACE])
def test_the_hand_set_weights_rank_as_the_hand_set_ranking(kind: str | None) -> None:
    rng = random.Random(7)
    for _ in range(50):
        n = rng.randint(2, 12)
        raw = [rng.random() for _ in range(n)]
        probs = [p / sum(raw) for p in raw]
        supports = [rng.choice([0.0, 0.25, 0.5, 1.0, rng.random()]) for _ in range(n)]
        evidence = [
            Evidence((), place=rng.random(), person=rng.random(), organisation=rng.random())
            for _ in range(n)
        ]
        weighed = kind_weighted(probs, evidence, kind)
        expected, _ = support_order(weighed, supports, 12.0)
        logs = kind_logs(evidence, kind) or [0.0] * n
        rows = [
            features(p, s, x, False, 3, s, 0.0)
            for p, s, x in zip(probs, supports, logs, strict=True)
        ]
        assert _order(probabilities(rows, hand_set(12.0))) == expected


def _candidates(group: str, rng: random.Random) -> Candidates:
    """Five candidates; the right one is the best supported, the reader prefers another."""
    rows = [
        features(rng.random(), rng.random() * 0.5, 0.0, False, rng.randint(1, 9), 0.0, 0.0)
        for _ in range(5)
    ]
    right = rng.randrange(5)
    rows[right] = features(0.01, 0.9, 0.0, False, 1, 0.0, 0.0)
    return Candidates(group, rows, [i == right for i in range(5)], True)


def test_the_fitted_weights_rank_the_right_answers_first() -> None:
    rng = random.Random(3)
    questions = [_candidates(f"set{i % 3}", rng) for i in range(60)]
    start = Weights(1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)  # the reader alone: mostly wrong here
    assert score([(q, start) for q in questions]).accuracy < 0.5
    weights = fit(questions, start)
    assert weights.support > 1.0
    assert score([(q, weights) for q in questions]).accuracy == 1.0
    # Scored on each set by weights fitted on the others.
    held = held_out(questions, start)
    assert len({w for _, w in held}) == 3 and score(held).accuracy > 0.9


MOST_NAMED = Weights(0.0, 0.0, 0.0, 0.0, 5.0)  # the most named first
NEAREST = Weights(0.0, 0.0, 0.0, 0.0, 0.0, meaning=20.0)  # the nearest in meaning first


def _checkpoints_with_ranking(
    source: Path, target: Path, mode: str, model_id: str, weights: Weights = MOST_NAMED
) -> Path:
    shutil.copytree(source, target)
    fitted = {mode: Fitted(model_id, weights, MOST_NAMED)}
    write(target / FILE, fitted, {"fitted_on": ["test"]})
    return target


def test_a_reader_takes_only_the_weights_fitted_for_it(
    checkpoint_dir: Path, tmp_path: Path
) -> None:
    linear_id = load_checkpoint(checkpoint_dir / "linear.pt").model_id
    folder = _checkpoints_with_ranking(checkpoint_dir, tmp_path / "c", "linear", linear_id)
    assert read(folder)["linear"] == Fitted(linear_id, MOST_NAMED, MOST_NAMED)
    models = load_models(Settings(checkpoint_dir=folder, modes=["linear", "softmax"]))
    assert models["linear"].ranking == models["linear"].plain_ranking == MOST_NAMED
    assert models["softmax"].ranking is None  # none fitted for it
    # Weights fitted for another model (a retrained reader) are not used.
    table = json.loads((folder / FILE).read_text())
    table["modes"]["linear"]["model_id"] = "another"
    (folder / FILE).write_text(json.dumps(table))
    assert load_models(Settings(checkpoint_dir=folder, modes=["linear"]))["linear"].ranking is None


TEXT = (
    "Halden Group agreed to buy Nordvik Shipping on Monday. Halden Group said Halden Group "
    "would keep the Nordvik name, and Halden Group thanked its bankers. On Tuesday, Kari "
    "Lund signed the deal for Nordvik Shipping."
)


async def test_a_question_in_words_is_ranked_by_its_readers_weights(
    app_client: AppClient, checkpoint_dir: Path, tmp_path: Path
) -> None:
    linear_id = load_checkpoint(checkpoint_dir / "linear.pt").model_id
    folder = _checkpoints_with_ranking(checkpoint_dir, tmp_path / "c", "linear", linear_id)
    async with app_client(modes=["linear"], checkpoint_dir=folder) as client:
        await client.post("/v1/documents", json={"id": "deal", "text": TEXT})
        await wait_status(client, "deal", "indexed")
        queries = [
            "Who signed the deal for Nordvik Shipping?",
            "@placeholder signed the deal for Nordvik Shipping",
        ]
        body = {"queries": queries, "top_k": 5}
        response = await client.post("/v1/documents/deal/answers", json=body)
        assert response.status_code == 200, response.text
        in_words, cloze = response.json()["results"]
        # Weights that count only how often a name is named: Halden Group (four times) first,
        # though Kari Lund is the one beside the question's words.
        assert in_words["answers"][0]["entity"] == "Halden Group"
        scores = [a["score"] for a in in_words["answers"]]
        assert scores == sorted(scores, reverse=True) and 0 < sum(scores) <= 1 + 1e-9
        # The cloze sentence keeps the hand-set ranking: the best supported first.
        assert cloze["answers"][0]["entity"] == "Kari Lund"
        # support_weight 0 is still the reader alone, for a question in words too.
        body = {"queries": queries[:1], "top_k": 5, "support_weight": 0}
        alone = (await client.post("/v1/documents/deal/answers", json=body)).json()["results"]
        assert [a["score"] for a in alone[0]["answers"]] == [
            a["reader_score"] for a in alone[0]["answers"]
        ]


def test_the_fitter_reads_every_question_through_the_service(
    make_settings: SettingsFactory,
) -> None:
    story = Story(
        "deal",
        TEXT,
        {},
        [
            Asked("q1", "Who signed the deal for Nordvik Shipping?", "Kari Lund"),
            Asked("q2", "Who agreed to buy Nordvik Shipping?", "Halden Group"),
            Asked("q3", "Who is Barack Obama?", None),
        ],
    )
    found, model_ids = collect({"one": [story]}, make_settings(), ["linear", "softmax"])
    assert set(found) == set(model_ids) == {"linear", "softmax"}
    for questions in found.values():
        assert [q.answerable for q in questions] == [True, True, False]
        # The question's own names are no candidates; every other name is.
        assert [sum(q.right) for q in questions] == [1, 1, 0]
        assert all(len(row) == len(Weights._fields) for q in questions for row in q.rows)
        assert len(questions[0].rows) == 2  # Halden Group, Kari Lund (not Nordvik Shipping)


def test_the_fitter_refuses_a_set_kept_unscored() -> None:
    import argparse

    from bench.realistic.fit import add_arguments, fit_ranking
    from bench.realistic.stories import FROZEN

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert FROZEN[0] not in parser.parse_args([]).sets  # not fitted on by default
    args = parser.parse_args(["--sets", f"dev,{FROZEN[0]}", "--dry-run"])
    assert fit_ranking(args, Settings()) == 2


@pytest.mark.parametrize("mode", ["none", "linear", "gated", "softmax", "mentions"])
def test_the_shipped_weights_are_for_the_shipped_readers(mode: str) -> None:
    # A retrained reader without refitted weights would quietly fall back to the hand-set
    # ranking: `cheapqa bench fit-ranking` must run after it.
    from encoder.model.checkpoint import CHECKPOINT_DIR

    fitted = read(CHECKPOINT_DIR)[mode]
    assert fitted.model_id == load_checkpoint(CHECKPOINT_DIR / f"{mode}.pt").model_id
    # Fitted with meaning(e) and without it; the sentences' meaning counts for the answer.
    assert fitted.plain.meaning == 0.0 and fitted.weights.meaning > 1.0
