"""Training on a tiny synthetic set: a loadable checkpoint, resuming, entity renumbering."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from encoder.model.checkpoint import Checkpoint, load_checkpoint
from encoder.model.modes import Mode
from encoder.model.vocab import Vocabulary
from encoder.text.entities import entity_aliases
from encoder.training.batches import (
    Encoded,
    encode_questions,
    make_batch,
    permute_entities,
    spread_entities,
)
from encoder.training.data.choices import TASKS
from encoder.training.data.cloze import ClozeOptions, build_questions
from encoder.training.data.questions import write_questions
from encoder.training.evaluate import evaluate
from encoder.training.recipe import ModelShape, Recipe, RecipeError, Stage, check_data, load_recipe
from encoder.training.train import TrainOptions, train, train_recipe
from tests.encoder.test_data import STORY

CLOZE = ClozeOptions(window_tokens=60, min_query_tokens=4, max_entities=8)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    names = entity_aliases(["Anna", "Bristol", "Tom", "Clara"], " ".join(STORY.paragraphs))
    questions = build_questions(STORY, names, CLOZE, seed=3)
    write_questions(tmp_path / "train.jsonl", questions)
    write_questions(tmp_path / "validation.jsonl", questions[:8])
    return tmp_path


def _options(data_dir: Path, epochs: int) -> TrainOptions:
    return TrainOptions(
        mode="linear",
        data_dir=data_dir,
        out=data_dir / "ckpt" / "linear.pt",
        epochs=epochs,
        batch_size=4,
        embed_dim=8,
        hidden_size=6,
        max_entities=8,
        min_count=1,
        glove=False,
    )


def test_two_epochs_write_a_loadable_checkpoint_and_resume(data_dir: Path) -> None:
    lines: list[str] = []
    history = train(_options(data_dir, 2), log=lines.append, progress=False)
    assert [e["epoch"] for e in history.epochs] == [1, 2]
    assert all(e["train_loss"] > 0 for e in history.epochs)
    ckpt = load_checkpoint(data_dir / "ckpt" / "linear.pt")
    assert ckpt.model.config.mode == "linear" and ckpt.model.config.hidden_size == 6
    assert ckpt.meta["epoch"] == history.best_epoch
    assert ckpt.meta["validation_accuracy"] == history.best_accuracy
    result = evaluate(data_dir / "ckpt" / "linear.pt", data_dir / "validation.jsonl")
    assert result.count == 8 and 0.0 <= result.accuracy <= 1.0
    assert result.accuracy == pytest.approx(history.best_accuracy)

    # Asking for 3 epochs continues after epoch 2 instead of starting again.
    resumed = train(_options(data_dir, 3), log=lines.append, progress=False)
    assert any(line.startswith("resuming linear after epoch 2") for line in lines)
    assert [e["epoch"] for e in resumed.epochs] == [1, 2, 3]
    assert resumed.epochs[:2] == history.epochs


def test_resume_continues_exactly(data_dir: Path, tmp_path: Path) -> None:
    """Two epochs then one more equal three epochs in one go (seeded, state restored)."""
    straight = train(_options(data_dir, 3), log=lambda _: None, progress=False)
    other = tmp_path / "other"
    other.mkdir()
    for name in ("train.jsonl", "validation.jsonl"):
        (other / name).write_bytes((data_dir / name).read_bytes())
    train(_options(other, 2), log=lambda _: None, progress=False)
    resumed = train(_options(other, 3), log=lambda _: None, progress=False)
    assert resumed.epochs[2]["train_loss"] == pytest.approx(straight.epochs[2]["train_loss"])


def _story_questions(max_entities: int) -> tuple[Encoded, Vocabulary]:
    """The story's cloze questions (four names) encoded with a vocabulary of their own."""
    names = entity_aliases(["Anna", "Bristol", "Tom", "Clara"], " ".join(STORY.paragraphs))
    questions = build_questions(STORY, names, CLOZE, seed=3)
    vocab = Vocabulary.build(
        [q.document.split() + q.query.split() for q in questions],
        max_entities=max_entities,
        min_count=1,
    )
    return encode_questions(questions, vocab), vocab


def test_permute_entities_keeps_questions_consistent(data_dir: Path) -> None:
    data, vocab = _story_questions(max_entities=8)
    batch = make_batch(data, list(range(6)), vocab.pad_id)
    g = torch.Generator().manual_seed(0)
    shuffled = permute_entities(batch, vocab.entity_offset, g)
    assert not torch.equal(shuffled.doc_ids, batch.doc_ids)
    for b in range(6):
        # Same token positions are entities; non-entity tokens are untouched.
        slot = batch.doc_ids[b] - vocab.entity_offset
        is_entity = (slot >= 0) & (slot < 8)
        assert torch.equal(shuffled.doc_ids[b][~is_entity], batch.doc_ids[b][~is_entity])
        new_slots = shuffled.doc_ids[b][is_entity] - vocab.entity_offset
        # A consistent renaming: equal old slots map to equal new slots and vice versa.
        pairs = set(zip(slot[is_entity].tolist(), new_slots.tolist(), strict=True))
        assert len({p[0] for p in pairs}) == len(pairs) == len({p[1] for p in pairs})
        assert bool(shuffled.candidate_mask[b, shuffled.answers[b]])
        assert int(shuffled.candidate_mask[b].sum()) == int(batch.candidate_mask[b].sum())
        assert set(new_slots.tolist()) == set(
            shuffled.candidate_mask[b].nonzero().flatten().tolist()
        )


def test_a_batch_moves_whole_to_another_device() -> None:
    data, vocab = _story_questions(max_entities=8)
    batch = make_batch(data, list(range(3)), vocab.pad_id)
    assert batch.doc_entities is None  # a field left empty stays empty
    moved = batch.to("meta")  # a device without data: every tensor goes, none is left behind
    for name in ("doc_ids", "doc_lengths", "query_ids", "query_lengths", "candidate_mask"):
        assert getattr(moved, name).device.type == "meta"
        assert getattr(moved, name).shape == getattr(batch, name).shape
    assert moved.answers.device.type == "meta" and moved.doc_entities is None
    assert batch.to("cpu").doc_ids is batch.doc_ids  # on the CPU, nothing is copied


def test_spread_entities_moves_names_into_all_slots(data_dir: Path) -> None:
    data, vocab = _story_questions(max_entities=32)
    spread = spread_entities(data, vocab.entity_offset, vocab.pad_id, torch.Generator())
    used = 1 + int(data.candidates.nonzero()[:, 1].max())  # the data's slots: 0..used-1
    assert used <= 4 and int(spread.candidates.nonzero()[:, 1].max()) >= used
    for i in range(len(data)):
        assert len(spread.docs[i]) == len(data.docs[i])  # no padding kept
        assert len(spread.queries[i]) == len(data.queries[i])
        assert int(spread.candidates[i].sum()) == int(data.candidates[i].sum())
        assert bool(spread.candidates[i, spread.answers[i]])
        # the answer's marker moved with it, in the document
        old = int(data.answers[i]) + vocab.entity_offset
        new = int(spread.answers[i]) + vocab.entity_offset
        assert torch.equal(data.docs[i] == old, spread.docs[i] == new)


def test_train_and_evaluate_commands(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from cli.main import main

    out = data_dir / "cli" / "gated.pt"
    args = ["train", "--mode", "gated", "--data", str(data_dir), "--out", str(out)]
    args += ["--device", "cpu"]
    assert main([*args, "--epochs", "1", "--hidden-size", "8", "--no-glove"]) == 0
    assert "best validation accuracy" in capsys.readouterr().out
    assert (
        main(
            [
                "evaluate",
                "--checkpoint",
                str(out),
                "--data",
                str(data_dir / "validation.jsonl"),
                "--json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["count"] == 8 and result["mode"] == "gated"
    assert {"accuracy", "random", "most_frequent", "most_recent", "context_match"} <= set(result)
    assert main(["evaluate", "--checkpoint", str(data_dir / "absent.pt"), "--data", str(out)]) == 1
    capsys.readouterr()
    empty = data_dir / "cli" / "empty.jsonl"
    empty.write_text("\n")
    assert main(["evaluate", "--checkpoint", str(out), "--data", str(empty)]) == 1
    assert "holds no questions" in capsys.readouterr().err


def _recipe(data_dir: Path) -> Recipe:
    other = data_dir / "other"
    other.mkdir(exist_ok=True)
    for name in ("train.jsonl", "validation.jsonl"):
        (other / name).write_bytes((data_dir / name).read_bytes())
    return Recipe(
        stages=(
            Stage("first", ((data_dir, 1.0),), 1, 2e-3),
            Stage("mixed", ((data_dir, 0.5), (other, 1.0)), 2, 1e-3),
        ),
        validation=(data_dir, other),
        model=ModelShape(embed_dim=8, hidden_size=6, max_entities=8),
        min_count=1,
        batch_size=4,
        glove=False,
    )


def test_a_recipe_stopped_mid_epoch_resumes_at_the_batch(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped in the middle of stage 2's first epoch, the run continues at that batch and
    ends where an uninterrupted run ends (save_every_s=0: a resume point after every batch)."""
    recipe = _recipe(data_dir)
    straight = train_recipe(recipe, "linear", tmp_path / "a.pt", log=lambda _: None)
    assert [e["stage"] for e in straight.epochs] == ["first", "mixed", "mixed"]

    import encoder.training.train as train_module

    real_make_batch = train_module.make_batch
    calls = {"n": 0}

    def stopping_make_batch(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 20:  # first stage has 8 batches; this is inside stage 2
            raise KeyboardInterrupt
        return real_make_batch(*args, **kwargs)

    monkeypatch.setattr(train_module, "make_batch", stopping_make_batch)
    with pytest.raises(KeyboardInterrupt):
        train_recipe(recipe, "linear", tmp_path / "b.pt", log=lambda _: None, save_every_s=0)
    monkeypatch.setattr(train_module, "make_batch", real_make_batch)
    lines: list[str] = []
    resumed = train_recipe(recipe, "linear", tmp_path / "b.pt", log=lines.append, save_every_s=0)
    assert any("stage 2, epoch 1, batch" in line for line in lines)
    assert [e["stage"] for e in resumed.epochs] == ["first", "mixed", "mixed"]
    for a, b in zip(straight.epochs, resumed.epochs, strict=True):
        assert b["train_loss"] == pytest.approx(a["train_loss"], rel=1e-5)
        assert b["validation_accuracy"] == pytest.approx(a["validation_accuracy"])


def _going_on(
    data_dir: Path, tmp_path: Path, mode: Mode, stage: Stage, **model_changes: Any
) -> tuple[Checkpoint, Recipe]:
    """A first recipe's checkpoint for mode, and a one-stage recipe that goes on from it with
    the model's fields changed."""
    first = _recipe(data_dir)
    train_recipe(first, mode, tmp_path / "first" / f"{mode}.pt", log=lambda _: None)
    more = replace(
        first,
        init=str(tmp_path / "first" / "{mode}.pt"),
        model=replace(first.model, **model_changes),
        stages=(stage,),
    )
    return load_checkpoint(tmp_path / "first" / f"{mode}.pt"), more


def test_a_recipe_goes_on_from_an_earlier_checkpoint(data_dir: Path, tmp_path: Path) -> None:
    """`init`: the earlier run's vocabulary and weights are the start (epoch 0, kept unless
    an epoch beats it), a changed length_norm is allowed, a changed shape is refused."""
    stage = Stage("more", ((data_dir, 1.0),), 1, 0.0)  # lr 0: the weights stay
    start, more = _going_on(data_dir, tmp_path, "linear", stage, length_norm="sqrt")
    lines: list[str] = []
    history = train_recipe(more, "linear", tmp_path / "more.pt", log=lines.append)
    assert any(line.startswith("epoch 0 (") for line in lines)
    ckpt = load_checkpoint(tmp_path / "more.pt")
    assert ckpt.vocab == start.vocab
    assert ckpt.meta["init"]["model_id"] == start.model_id
    assert ckpt.meta["init"]["recipe"] == start.meta["recipe"]
    # The same data set is described once, by the later run (the chain stays small).
    assert str(data_dir) in start.meta["data"] and str(data_dir) in ckpt.meta["data"]
    assert ckpt.meta["init"]["data"] == {}
    assert ckpt.model.config.length_norm == "sqrt"
    assert len(history.epochs) == 1
    for name, tensor in start.model.state_dict().items():
        assert torch.equal(ckpt.model.state_dict()[name], tensor), name

    with pytest.raises(RecipeError, match="hidden_size"):
        wider = replace(more, model=replace(more.model, hidden_size=7))
        train_recipe(wider, "linear", tmp_path / "wider.pt", log=lambda _: None)
    with pytest.raises(RecipeError, match="not gated"):
        linear_only = replace(more, init=str(tmp_path / "first" / "linear.pt"))
        train_recipe(linear_only, "gated", tmp_path / "gated.pt", log=lambda _: None)
    with pytest.raises(RecipeError, match="does not exist"):
        train_recipe(more, "gated", tmp_path / "gated.pt", log=lambda _: None)


def test_a_gated_reader_starts_from_a_linear_one_with_its_gate_open(
    data_dir: Path, tmp_path: Path
) -> None:
    """init_from {"gated": "linear"}: epoch 0 is the linear reader's accuracy (the open gate
    and the rescaled W_r give its scores back), then the gate trains; no other pair may."""
    stage = Stage("gate", ((data_dir, 1.0),), 1, 1e-3)
    start, more = _going_on(data_dir, tmp_path, "linear", stage)
    opened = replace(more, init_from={"gated": "linear"})
    lines: list[str] = []
    train_recipe(opened, "gated", tmp_path / "gated.pt", log=lines.append)
    epoch0 = next(line for line in lines if line.startswith("epoch 0 ("))
    assert "linear.pt" in epoch0
    assert f"validation acc {start.meta['validation_accuracy']:.4f}" in epoch0
    resume = torch.load(tmp_path / "gated.pt.resume", weights_only=True)
    assert float(resume["model"]["attention.gate.weight"].abs().sum()) > 0  # the gate trained
    with pytest.raises(RecipeError, match="cannot start from"):
        softmax = replace(more, init_from={"softmax": "linear"})
        train_recipe(softmax, "softmax", tmp_path / "softmax.pt", log=lambda _: None)


def test_a_recipe_adds_the_mention_prior_to_an_earlier_reader(
    data_dir: Path, tmp_path: Path
) -> None:
    """The prior's weight starts at zero (the reader unchanged: epoch 0 scores as before) and
    is trained with the rest; a reader with the prior cannot go back to one without."""
    stage = Stage("prior", ((data_dir, 1.0),), 1, 1e-3)
    start, with_prior = _going_on(data_dir, tmp_path, "gated", stage, mention_prior=True)
    lines: list[str] = []
    train_recipe(with_prior, "gated", tmp_path / "prior.pt", log=lines.append)
    epoch0 = next(line for line in lines if line.startswith("epoch 0 ("))
    assert f"validation acc {start.meta['validation_accuracy']:.4f}" in epoch0
    resume = torch.load(tmp_path / "prior.pt.resume", weights_only=True)
    assert float(resume["model"]["mention_weight"]) != 0.0  # trained (checkpoint: best epoch)
    assert not torch.equal(resume["model"]["W_r.weight"], start.model.W_r.weight)

    back = replace(with_prior, init=str(tmp_path / "prior.pt"), model=_recipe(data_dir).model)
    (tmp_path / "back").mkdir()
    with pytest.raises(RecipeError, match="mention_prior"):
        train_recipe(back, "gated", tmp_path / "back" / "gated.pt", log=lambda _: None)


RECIPES = sorted(
    Path(__file__).resolve().parents[2].joinpath("encoder", "training", "recipes").glob("*.json")
)


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.name)
def test_every_shipped_recipe_loads_and_says_how_its_data_is_built(path: Path) -> None:
    recipe = load_recipe(path)
    assert recipe.stages and recipe.validation
    for folder in [*recipe.data_dirs(), *recipe.validation]:
        if str(folder) in recipe.builds:
            continue
        # A folder named <task>-<window> is what `cheapqa data build --task T --window-tokens
        # N` writes by default; any other needs its build arguments in the recipe.
        task, _, window = folder.name.partition("-")
        assert window.isdigit() and task in TASKS, folder


def test_missing_data_names_the_command_that_builds_it(tmp_path: Path) -> None:
    plain, resampled = tmp_path / "para-400", tmp_path / "infer-200-s23"
    recipe = Recipe(
        stages=(Stage("mix", ((plain, 1.0), (resampled, 1.0)), 1, 1e-3),),
        validation=(plain,),
        builds={str(resampled): "--task infer --window-tokens 200 --seed 23"},
    )
    with pytest.raises(RecipeError) as err:
        check_data(recipe)
    message = str(err.value)
    assert f"cheapqa data build --task para --window-tokens 400 --out {plain}" in message
    assert f"cheapqa data build --task infer --window-tokens 200 --seed 23 --out {resampled}" in (
        message
    )


def test_grow_vocabulary_adds_words_and_keeps_every_answer() -> None:
    from encoder.model.config import ReaderConfig
    from encoder.model.reader import Reader
    from encoder.training.warm_start import grow_vocabulary

    vocab = Vocabulary.build([["the", "cat", "sat", "the"]], max_entities=4, min_count=1)
    torch.manual_seed(0)
    config = ReaderConfig(mode="linear", vocab_size=len(vocab), embed_dim=8, hidden_size=6,
                          max_entities=4)  # fmt: skip
    start = Checkpoint(Reader(config).eval(), vocab, "linear-x", {})
    corpus = [["the", "goalkeeper", "saved", "it", "@entity1"], ["goalkeeper", "saved", "7"]]

    def vectors_of(words: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        found = torch.tensor([w == "regulator" for w in words])
        return torch.full((len(words), 8), 0.5), found

    grown = grow_vocabulary(
        start, corpus, len(vocab) + 3, 2, ["saved", "regulator", "x"], vectors_of
    )
    # The corpus's new words (twice at least, no markers or numbers), then GloVe's, to size.
    assert grown.vocab.tokens == [*vocab.tokens, "goalkeeper", "saved", "regulator"]
    assert grown.model.config.vocab_size == len(vocab) + 3
    weight = grown.model.embedding.weight
    assert torch.equal(weight[-1], torch.full((8,), 0.5))  # its GloVe row
    assert torch.equal(weight[: len(vocab)], start.model.embedding.weight)
    # Old questions are answered exactly as before.
    doc = [torch.tensor(vocab.encode(["the", "@entity1", "sat", "@entity2"]))]
    query = [torch.tensor(vocab.encode(["@placeholder", "sat"]))]
    with torch.no_grad():
        for model in (start.model, grown.model):
            state = model.encode_documents(doc)[0]
            Q = model.encode_queries(query)
            scores = model.score(model.lookup(state, Q), Q, torch.ones(1, 4, dtype=torch.bool))
            if model is start.model:
                before = scores
        assert torch.allclose(before, scores)
    # Nothing to add: the same checkpoint.
    assert grow_vocabulary(start, [], len(vocab), 2, [], None) is start


def test_training_leaves_out_a_questions_own_names_and_evaluate_may_keep_them(
    tmp_path: Path,
) -> None:
    from encoder.model.checkpoint import default_checkpoint_path
    from encoder.training.data.questions import Question, without_named
    from encoder.training.evaluate import read_any_questions

    q = Question(
        id="q",
        document="@entity0 met @entity1 at the @entity2 .",
        query="@entity1 met @placeholder at the @entity2",
        answer="@entity0",
        candidates=["@entity0", "@entity1", "@entity2"],
    )
    # Training scores the candidates the service answers from by default ...
    assert without_named(q).candidates == ["@entity0"]
    # ... while encoding keeps what it is given, so `cheapqa evaluate
    # --keep-question-entities` still scores every name.
    path = tmp_path / "q.jsonl"
    write_questions(path, [q])
    ckpt = load_checkpoint(default_checkpoint_path("linear"))
    for exclude, expected in ((True, 1), (False, 3)):
        questions, _ = read_any_questions(path, ckpt, exclude_named=exclude)
        data = encode_questions(questions, ckpt.vocab)
        assert int(data.candidates[0].sum()) == expected
