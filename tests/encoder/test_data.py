"""Cloze building on a small synthetic text, the JSONL format, baselines, and the real build."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from encoder.text.entities import entity_aliases, find_entities
from encoder.text.tokens import PLACEHOLDER, tokenize
from encoder.training.data.build import SPLITS, Sources
from encoder.training.data.cloze import ClozeOptions, build_questions, clause_question
from encoder.training.data.questions import (
    DataError,
    Question,
    baselines,
    read_questions,
    write_questions,
)
from encoder.training.data.sources import Text, _chapters

STORY = Text(
    name="story",
    paragraphs=[
        "Anna lived in Bristol with her brother Tom. Anna loved the sea, and Tom loved the hills.",
        "One day Tom went to Bristol to see Clara. Clara gave Tom a letter for Anna.",
        "Anna read the letter from Clara twice. Then Anna wrote to Clara about Tom.",
        "The letter said that Clara would come to Bristol soon. Tom was glad, and so was Anna.",
        "Once a year the two of them went by coach to see the white cliffs at Dover.",
    ]
    * 3,
)
NAMES = ["Anna", "Bristol", "Tom", "Clara", "Dover"]
SPLIT_NOVELS = {name for names in SPLITS.values() for name in names}


def _build(**kw: Any) -> list[Question]:
    options = ClozeOptions(
        window_tokens=60, min_query_tokens=4, max_entities=10, max_questions_per_window=50, **kw
    )
    return build_questions(STORY, find_entities(" ".join(STORY.paragraphs)), options, seed=1)


def test_heuristic_finds_the_names() -> None:
    found = find_entities(" ".join(STORY.paragraphs))
    assert sorted(e.name for e in found) == sorted(NAMES)


@pytest.mark.parametrize("keep", [False, True])
def test_every_answer_is_a_candidate_in_the_document(keep: bool) -> None:
    questions = _build(keep_query_sentence=keep)
    assert len(questions) > 10
    for q in questions:
        q.check()  # answer in candidates, candidates in document, one placeholder
        doc = tokenize(q.document)
        assert q.answer in doc
        assert set(q.candidates) == {t for t in doc if t.startswith("@entity")}
        query = tokenize(q.query)
        assert query.count(PLACEHOLDER) == 1 and q.answer not in query
        # No names leak through as words.
        assert not {n.lower() for n in NAMES} & set(doc + query)


def test_clause_question_is_the_blanks_clause_as_a_person_asks_it() -> None:
    tokens = [
        "@entity3",
        ",",
        "who",
        "owns",
        "34",
        "percent",
        ",",
        "had",
        "rejected",
        "two",
        "offers",
        "from",
        "@entity2",
        ".",
    ]
    # A relative clause about the name asks about the name: "Who owns 34 percent?"
    assert clause_question(tokens, 0) == [PLACEHOLDER, "owns", "34", "percent"]
    assert clause_question(tokens, 12) == [
        "had", "rejected", "two", "offers", "from", PLACEHOLDER
    ]  # fmt: skip
    # A leading conjunction goes; a clause of too few words is no question.
    tokens = [
        "the",
        "talks",
        "failed",
        ",",
        "and",
        "@entity1",
        "left",
        "the",
        "room",
        ",",
        "said",
        "@entity4",
        ".",
    ]
    assert clause_question(tokens, 5) == [PLACEHOLDER, "left", "the", "room"]
    assert clause_question(tokens, 11) is None


def test_clause_questions_are_short_and_keep_the_words_after_the_blank() -> None:
    sentence_form = _build(query_tokens_after=16)
    clause_form = _build(question="clause", query_tokens_after=16)
    assert clause_form and sentence_form
    mean = lambda qs: sum(len(tokenize(q.query)) for q in qs) / len(qs)  # noqa: E731
    assert mean(clause_form) < mean(sentence_form)
    for q in clause_form:
        q.check()
        query = tokenize(q.query)
        assert not {",", ";", "."} & set(query)  # one clause, no more
        assert len(query) >= 4
    # Subject blanks keep what follows them (a sentence question keeps 3 words at most).
    assert any(
        tokenize(q.query)[0] == PLACEHOLDER and len(tokenize(q.query)) >= 5 for q in clause_form
    )
    with pytest.raises(ValueError, match="question must be one of"):
        ClozeOptions(question="paragraph")


def test_removed_sentence_is_not_in_the_document() -> None:
    for q in _build(keep_query_sentence=False):
        query = tokenize(q.query.replace(PLACEHOLDER, q.answer))
        doc = " ".join(tokenize(q.document))
        assert " ".join(query) not in doc
    kept = _build(keep_query_sentence=True)
    assert all(
        " ".join(tokenize(q.query.replace(PLACEHOLDER, q.answer))) in q.document for q in kept
    )


def test_find_task_blanks_one_off_mentions_too() -> None:
    infer = _build(keep_query_sentence=True, answer_elsewhere=True)
    find = _build(keep_query_sentence=True, answer_elsewhere=False)
    assert len(find) > len(infer)
    assert all(tokenize(q.document).count(q.answer) >= 2 for q in infer)
    assert any(tokenize(q.document).count(q.answer) == 1 for q in find)
    for q in find:
        q.check()


def test_build_is_deterministic_and_seeded() -> None:
    assert _build() == _build()
    options = ClozeOptions(window_tokens=60, min_query_tokens=4, max_entities=10)
    other = build_questions(STORY, entity_aliases(NAMES, ""), options, seed=2)
    assert [q.answer for q in other] != [q.answer for q in _build()]


def test_jsonl_round_trip_and_errors(tmp_path: Path) -> None:
    questions = _build()
    path = tmp_path / "q.jsonl"
    assert write_questions(path, questions) == len(questions)
    assert list(read_questions(path)) == questions
    bad = json.loads(path.read_text().splitlines()[0])
    bad["answer"] = "@entity49"
    path.write_text(json.dumps(bad) + "\n")
    with pytest.raises(DataError, match=":1:"):
        list(read_questions(path))
    with pytest.raises(DataError):
        list(read_questions(tmp_path / "absent.jsonl"))


def test_baselines_on_hand_made_questions() -> None:
    qs = [
        Question(
            "a",
            "x @entity1 @entity2 @entity2",
            "x @placeholder",
            "@entity1",
            ["@entity1", "@entity2"],
        ),
        Question(
            "b",
            "@entity3 y @entity3 @entity4",
            "@placeholder y",
            "@entity3",
            ["@entity3", "@entity4"],
        ),
    ]
    b = baselines(qs)
    assert b.count == 2 and b.random == pytest.approx(0.5)
    assert b.most_frequent == pytest.approx(0.5)  # wrong on a, right on b
    assert b.most_recent == 0.0  # the last mention is @entity2 in a, @entity4 in b
    assert b.context_match == pytest.approx(1.0)  # "x" before the blank in a, "y" after it in b


def test_chapters_drop_headings_and_split_at_each_chapter() -> None:
    lines = [
        "EMMA",
        "",
        "By Jane Austen",
        "",
        "VOLUME I",
        "",
        "CHAPTER I",
        "",
        "One line",
        "and more.",
        "",
        "Two.",
        "",
        "CHAPTER II",
        "",
        "Three.",
    ]
    assert _chapters(lines) == [["One line and more.", "Two."], ["Three."]]


def _built(split: str) -> Path:
    path = Path("data/para-200") / f"{split}.jsonl"
    if not path.is_file():
        pytest.skip("run `cheapqa data build` first (data/para-200)")
    return path


def test_built_data_set_is_valid_and_big_enough() -> None:
    train = list(read_questions(_built("train")))
    test = list(read_questions(_built("test")))
    assert len(train) >= 8000
    assert {q.id.split("-")[0] for q in train}.isdisjoint({q.id.split("-")[0] for q in test})


def test_wiki_articles_from_a_small_dump(tmp_path: Path) -> None:
    pytest.importorskip("gensim")
    import bz2

    from encoder.training.data.sources import wiki_articles

    body = " ".join(
        f"'''Ada''' met [[Charles Babbage|Babbage]] in London in year {i} and wrote notes."
        for i in range(12)
    )
    xml = (
        '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/"><page>'
        "<title>Ada</title><revision><text>"
        + "\n\n".join([body] * 6)
        + "</text></revision></page><page><title>Gone</title><revision>"
        "<text>#REDIRECT [[Ada]]</text></revision></page></mediawiki>"
    )
    path = tmp_path / "dump.xml.bz2"
    path.write_bytes(bz2.compress(xml.encode()))
    articles = list(wiki_articles(path))
    assert [a.name for a in articles] == ["wiki:Ada"]
    assert len(articles[0].paragraphs) == 6
    assert articles[0].paragraphs[0].startswith("Ada met Babbage in London")


@pytest.mark.slow
def test_data_build_command_on_the_unpacked_package(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real command on the real novels (about 20 s), when the package was fetched before."""
    from cli.main import main

    source = Path("data/cache/r-cran-janeaustenr")
    if not source.is_dir():
        pytest.skip("run `cheapqa data build` first (it unpacks the package into data/cache)")
    out = tmp_path / "cloze"
    args = ["data", "build", "--source-dir", str(source), "--out", str(out), "--no-wiki"]
    args += ["--task", "find"]  # para also fetches WordNet: tests/encoder/test_paraphrase.py
    assert main([*args, "--max-questions-per-window", "2"]) == 0
    printed = capsys.readouterr().out
    assert "random" in printed and "frequent" in printed
    assert all(line.split()[0] in printed for line in ("train", "validation", "test"))
    meta = json.loads((out / "meta.json").read_text())
    # The Reuters stories of r-cran-tm: a real-news test set beside every books build.
    assert set(meta["splits"]) == {"train", "validation", "test", "news_test"}
    assert meta["splits"]["news_test"]["questions"] > 100
    assert meta["splits"]["train"]["questions"] > 4000
    first = (out / "test.jsonl").read_text()
    assert main([*args, "--max-questions-per-window", "2"]) == 0  # deterministic
    assert (out / "test.jsonl").read_text() == first
    assert main(["data", "build", "--source-dir", str(tmp_path), "--out", str(out)]) == 1


def _article(title: str, subject: str, other: str, extra: str) -> Text:
    lead = f"{subject} is a harbour town near {other}. {subject} trades with {other} by sea."
    body = [
        f"In the year {i}, {subject} built a new quay and {other} sent ships to {subject}. "
        f"The merchants of {subject} sold wool to {other}." + (f" {extra}" if i == 1 else "")
        for i in range(1, 9)
    ]
    return Text(f"wiki:{title}", [lead, *body])


def _sources_with_wiki() -> Sources:
    chapter = Text("x", STORY.paragraphs[:5])
    novels = {name: Text(name, STORY.paragraphs) for names in SPLITS.values() for name in names}
    chapters = {
        name: [Text(f"{name}:{i:03d}", chapter.paragraphs) for i in (1, 2)] for name in novels
    }
    # "Marigold" is a ship's name in Cray's article; in Alport's only a sentence's first
    # word, once: no name there.
    places = ["Alport", "Cray", "Dunmere", "Esker", "Fenwick", "Garth", "Holm", "Ivel"]
    wiki = [
        _article(p, p, "Brandholm", "Marigold grew on its hills." if p == "Alport" else "")
        for p in places[:2]
    ] + [_article(p, p, "Dunmere", "Then the ship Marigold came in.") for p in places[2:]]
    return Sources(novels=novels, moby_dick=[], wiki=wiki, novel_chapters=chapters)


def test_wiki_articles_are_split_by_article_and_books_test_only_the_test_ones(
    tmp_path: Path,
) -> None:
    from encoder.training.data.build import build_dataset, cloze_options, wiki_splits

    sources = _sources_with_wiki()
    of = wiki_splits(sources.wiki)
    assert set(of) == {a.name for a in sources.wiki}
    assert {"train", "test"} <= set(of.values())
    assert of == wiki_splits(reversed(sources.wiki))  # by name, not by order

    def articles(path: Path) -> set[str]:
        return {q.id.split("-")[0] for q in read_questions(path)}

    options = cloze_options("find", window_tokens=60, min_query_tokens=4)
    wiki = build_dataset(tmp_path / "w", sources, "find", options, seed=3, domain="wiki")
    assert set(wiki["splits"]) == {"train", "validation", "test"}
    for split in ("train", "test"):
        expected = {name for name, s in of.items() if s == split}
        assert articles(tmp_path / "w" / f"{split}.jsonl") <= expected
    assert articles(tmp_path / "w" / "train.jsonl")
    books = build_dataset(tmp_path / "b", sources, "find", options, seed=3)
    assert {"wiki_test", "lead_test"} <= set(books["splits"])
    tested = {name for name, s in of.items() if s == "test"}
    assert articles(tmp_path / "b" / "wiki_test.jsonl") <= tested
    assert articles(tmp_path / "b" / "lead_test.jsonl") <= tested
    with pytest.raises(ValueError, match="gensim"):
        build_dataset(
            tmp_path / "n", Sources(sources.novels, [], []), "find", options, 3, domain="wiki"
        )


def test_lead_task_asks_about_a_chapters_first_paragraph_from_its_body(tmp_path: Path) -> None:
    from encoder.training.data.build import build_dataset, cloze_options

    sources = _sources_with_wiki()
    options = cloze_options("lead", window_tokens=800, min_query_tokens=4)
    summary = build_dataset(tmp_path / "lead", sources, "lead", options, seed=3)
    assert set(summary["splits"]) == {"train", "validation", "test", "wiki_test"}
    first = set(tokenize(sources.novel_chapters["emma"][0].paragraphs[0].lower()))
    train = list(read_questions(tmp_path / "lead" / "train.jsonl"))
    assert train and all("-lead-" in q.id and q.id.split(":")[0] in SPLIT_NOVELS for q in train)
    for q in train:
        # The question comes from the first paragraph, which the document does not hold.
        assert (
            q.document.split()[:5] != tokenize(sources.novel_chapters["emma"][0].paragraphs[0])[:5]
        )
        assert {t for t in tokenize(q.query) if not t.startswith("@")} <= first | {PLACEHOLDER}
    wiki = list(read_questions(tmp_path / "lead" / "wiki_test.jsonl"))
    assert wiki and all(q.id.startswith("wiki:") for q in wiki)
    for q in wiki:
        if q.id.startswith("wiki:Alport"):
            # Alport's documents name only its two places: the finder ran on the article alone.
            assert len(q.candidates) == 2, (q.id, q.document)


def test_reuters_stories_from_the_unpacked_package(tmp_path: Path) -> None:
    from encoder.training.data.sources import TM_PACKAGE, reuters_articles

    texts = tmp_path / TM_PACKAGE / "usr" / "lib" / "R" / "site-library" / "tm" / "texts"
    (texts / "crude").mkdir(parents=True)
    (texts / "crude" / "reut-00002.xml").write_text(
        '<?xml version="1.0"?>\n<REUTERS><TEXT><TITLE>OIL</TITLE><BODY>OPEC may meet, '
        "said\nDaniel Yergin of &lt;Cambridge Energy&gt;.\n    He said &quot;soon&quot;.\n"
        " Reuter</BODY></TEXT></REUTERS>\n"
    )
    (story,) = reuters_articles(tmp_path)
    assert story.name == "news:crude-reut-00002"
    assert story.paragraphs == [
        "OPEC may meet, said Daniel Yergin of Cambridge Energy.",
        'He said "soon".',
    ]
