"""The data builder and the service find entities with the same finder: a reader is never
served entities of a kind it was not trained on."""

from __future__ import annotations

import pytest

from encoder.text import entities
from encoder.text.anonymise import anonymise_document
from encoder.training.data.build import _entities_of
from encoder.training.data.choices import MIN_NAME_COUNT
from encoder.training.data.sources import Text

NEWS = Text(
    name="story:1",  # a book's chapter: names count from MIN_NAME_COUNT mentions
    paragraphs=[
        "Prime Minister Theresa May met Pervez Musharraf at the United Nations. "
        "Musharraf said the UN would help. May agreed with Musharraf.",
        "The Bank of England kept rates. Later the Bank of England said May was right.",
    ],
)


def test_builder_and_service_take_the_same_names() -> None:
    text = " ".join(NEWS.paragraphs)
    built = [e.name for e in _entities_of([NEWS])(NEWS)]
    served = anonymise_document(text, max_entities=64)
    assert served.entities == [
        "Theresa May",
        "Pervez Musharraf",
        "United Nations",
        "Bank of England",
    ]
    # The builder keeps the names a book mentions at least MIN_NAME_COUNT times.
    frequent = [
        n for n, m in zip(served.entities, served.mentions, strict=True) if m >= MIN_NAME_COUNT
    ]
    assert built == frequent == ["Theresa May", "Pervez Musharraf"]


def test_both_call_the_one_finder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The finder's pass over a text (`encoder.text.entities._mentions`) is what both run, once."""
    calls: list[str] = []
    real = entities._mentions

    def spy(text: str) -> list[tuple[int, str, bool]]:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(entities, "_mentions", spy)
    _entities_of([NEWS])(NEWS)
    anonymise_document(NEWS.paragraphs[0], max_entities=8)
    assert calls == [" ".join(NEWS.paragraphs), NEWS.paragraphs[0]]


def test_an_article_counts_every_name_a_book_only_recurring_ones() -> None:
    """A Wikipedia article or a Reuters story is a text of its own, and every name counts, as
    in a posted document; a book's chapters share their book's names, MIN_NAME_COUNT up."""
    paragraph = "Daniel Yergin met Paul Mlotok in Houston. Yergin said prices would rise."
    for name in ("wiki:Oil", "news:crude-reut-00002"):
        article = Text(name, [paragraph])
        assert [e.name for e in _entities_of([article])(article)] == [
            "Daniel Yergin",
            "Paul Mlotok",
            "Houston",
        ]
    chapter = Text("novel:001", [paragraph])
    assert _entities_of([chapter])(chapter) == []
