"""The answers' support (the question's words near the answer) and where the text names them."""

from __future__ import annotations

import pytest

from encoder.text.anonymise import AnonymisedText, anonymise_document, anonymise_query
from encoder.text.questions import AGENT, ORGANISATION, PLACE
from encoder.text.support import (
    FAR_MARK,
    FAR_WEIGHT,
    MAX_WINDOWS,
    PERSON_MARK,
    PLACE_MARK,
    Evidence,
    Terms,
    entity_evidence,
    evidence_support,
    kind_weighted,
    mention_windows,
    question_terms,
    rare_support,
    stem,
    support,
    support_ranked,
    support_shares,
    with_roles,
    word_weights,
)
from store.record import DocumentRecord, Status, meta_from_json, meta_to_json
from tests.service.conftest import AppClient, wait_status

STORY = (
    "Halden Group buys Nordvik Shipping\n\n"
    "OSLO, March 14 - Halden Group agreed to buy Nordvik Shipping for 4 billion crowns. "
    "Nordvik's founder, Jan Haugen, rejected two earlier offers from Halden. "
    "The new debt was arranged by Fjord Bank, chief executive Kari Lund said in Oslo."
)


def _windows_of(text: str) -> tuple[AnonymisedText, list[list[str]], dict[str, int]]:
    """The text anonymised, its entities' kept windows, and each name's slot."""
    anon = anonymise_document(text, max_entities=20)
    windows = mention_windows(anon.tokens, len(anon.entities))
    return anon, windows, {name: i for i, name in enumerate(anon.entities)}


def test_support_is_the_share_of_the_question_near_the_answer() -> None:
    anon, windows, slot = _windows_of(STORY)
    terms = question_terms(anonymise_query("@placeholder arranged the new debt", anon.entities))
    assert terms.words == {stem("arranged"), "new", "debt"}  # "arranges" meets "arranged"
    assert terms.noun is None
    assert support(terms, windows[slot["Fjord Bank"]]) == 1.0
    # "... arranged by Fjord Bank, chief executive Kari Lund said": "arranged" is among the
    # NEAR words beside Kari Lund, "new debt" further: each counts FAR_WEIGHT.
    assert support(terms, windows[slot["Kari Lund"]]) == pytest.approx((1 + 2 * FAR_WEIGHT) / 3)
    # A window is its mention's sentence: the next sentence's "new debt" is not Jan Haugen's.
    assert support(terms, windows[slot["Jan Haugen"]]) == 0.0
    # The noun of a Which-question counts where the answer's name holds it.
    terms = question_terms(anonymise_query("the bank @placeholder arranged", anon.entities))
    assert terms.noun == "bank"
    assert support(terms, windows[slot["Fjord Bank"]], "Fjord Bank") == 1.0
    assert support(terms, windows[slot["Kari Lund"]], "Kari Lund") == 0.5
    # No other word of the question does: a name that holds the question's words is the
    # thing the question names, not its answer ("Who chairs Fjord Bank?").
    terms = question_terms(anonymise_query("@placeholder chairs the bank", anon.entities))
    assert terms.noun is None
    assert support(terms, windows[slot["Fjord Bank"]], "Fjord Bank") == support(
        terms, windows[slot["Fjord Bank"]]
    )
    # The other names a question mentions count as its words: Halden is near Jan Haugen.
    terms = question_terms(
        anonymise_query("@placeholder rejected two offers from Halden", anon.entities)
    )
    marker = f"@entity{slot['Halden Group']}"
    assert terms.words == {stem("rejected"), "two", stem("offers"), marker}
    # "rejected two earlier offers" beside Jan Haugen, "from Halden" one word beyond them.
    assert support(terms, windows[slot["Jan Haugen"]]) == pytest.approx((3 + FAR_WEIGHT) / 4)
    assert support(terms, windows[slot["Kari Lund"]]) < 0.5
    assert support(Terms(frozenset()), windows[0]) == 0.0 and support(terms, []) is None
    # The word sets a record keeps give the same figure.
    for name, i in slot.items():
        assert evidence_support(terms, entity_evidence(windows[i], name)) == support(
            terms, windows[i], name
        )


def test_a_role_and_its_verb_and_a_verbs_tenses_meet_at_their_stem() -> None:
    assert {stem(w) for w in ("founder", "founded", "founding", "founders")} == {"found"}
    assert stem("adviser") == stem("advised") == stem("advises") == stem("advisor")
    assert stem("owner") == stem("owns") == stem("owned") == "own"
    assert stem("winner") == stem("wins") == "win" and stem("called") == "call"
    assert stem("studies") == stem("studied") == "study"
    # An inflected agent noun loses both suffixes, as its plural does.
    assert {stem(w) for w in ("engineer", "engineers", "engineering", "engineered")} == {"engin"}
    assert stem("@entity12") == "@entity12" and stem("2028") == "2028" and stem("led") == "led"
    anon, windows, slot = _windows_of(STORY)
    # "Nordvik's founder, Jan Haugen": who founded Nordvik?
    terms = question_terms(anonymise_query("@placeholder founded Nordvik", anon.entities))
    assert support(terms, windows[slot["Jan Haugen"]]) == 1.0
    assert support(terms, windows[slot["Kari Lund"]]) == 0.0
    terms = question_terms(anonymise_query("@placeholder arranges new debts", anon.entities))
    assert support(terms, windows[slot["Fjord Bank"]]) == 1.0


def test_a_window_is_its_mentions_sentence() -> None:
    """A long quote and who said it stand together; the next sentence is another's."""
    text = (
        '"Our members are selling their tea at a loss week after week while the brokers in the '
        'port keep their whole commission," Grace Chepkoech said. Ana Ruiz did not reply.'
    )
    anon, windows, slot = _windows_of(text)
    terms = question_terms(
        anonymise_query("@placeholder said the brokers keep their commission", anon.entities)
    )
    # "keep their whole commission" among her NEAR words, "brokers" further: 17 tokens away.
    grace = support(terms, windows[slot["Grace Chepkoech"]])
    assert grace == pytest.approx((2 + FAR_WEIGHT) / 3)
    assert support(terms, windows[slot["Ana Ruiz"]]) == 0.0


def test_a_role_meets_its_class_at_half_the_weight_of_the_same_word() -> None:
    assert with_roles(["lead"]) == {"lead", "^lead"} and with_roles(["found"]) == {"found"}
    assert stem("chairwoman") != stem("leads") and "^lead" in with_roles([stem("chairwoman")])
    filler = " The talks went on through the night and into the next morning without end."
    text = (
        "Union chairwoman Grace Chepkoech spoke first." + filler + " The union's director, "
        "Ana Ruiz, said little." + filler + " Diego Paz, spokesman for the board, declined."
    )
    anon, windows, slot = _windows_of(text)
    # "lead", its class and "union": the class and "union" stand beside Grace Chepkoech.
    terms = question_terms(anonymise_query("@placeholder leads the union", anon.entities))
    assert support(terms, windows[slot["Grace Chepkoech"]]) == pytest.approx(2 / 3)
    # The same word counts twice what its class does.
    terms = question_terms(anonymise_query("@placeholder is the union's director", anon.entities))
    assert support(terms, windows[slot["Ana Ruiz"]]) == 1.0
    assert support(terms, windows[slot["Grace Chepkoech"]]) == pytest.approx(2 / 3)
    terms = question_terms(anonymise_query("@placeholder speaks for the board", anon.entities))
    assert support(terms, windows[slot["Diego Paz"]]) == pytest.approx(2 / 3)


def test_a_place_is_marked_where_the_text_puts_things_in_it() -> None:
    text = STORY + " Haugen lives in Bergen. Lund wrote to Bergen from Oslo."
    anon, windows, slot = _windows_of(text)
    share = {n: entity_evidence(windows[i], n).place for n, i in slot.items()}
    assert share["Bergen"] == 0.5  # "in Bergen"; "wrote to Bergen" says nothing
    assert share["Oslo"] == pytest.approx(2 / 3)  # "OSLO, March 14 -", "in Oslo"; "from Oslo"
    assert share["Jan Haugen"] == share["Fjord Bank"] == share["Halden Group"] == 0.0
    # The mark is no word of a question: support is unchanged by it.
    terms = question_terms(anonymise_query("@placeholder lives in Bergen", anon.entities))
    assert PLACE_MARK not in terms.words and "^" not in "".join(terms.words)
    assert Evidence(()).place == 0.0 and entity_evidence([]).place == 0.0


def _evidence(*marks: str) -> Evidence:
    """An entity's evidence whose windows carry these marks ("" for none)."""
    return entity_evidence([f"{m} word {FAR_MARK}".strip() for m in marks])


def test_a_who_question_demotes_places_and_a_where_question_promotes_them() -> None:
    town, person, half_town = (
        _evidence(PLACE_MARK),
        _evidence(PERSON_MARK),
        _evidence(PLACE_MARK, ""),
    )
    probs, evidence = [0.5, 0.3, 0.1], [town, person, half_town]
    assert kind_weighted(probs, evidence, None) == probs
    agent = kind_weighted(probs, evidence, AGENT)
    assert agent[1] > agent[2] > agent[0] and sum(agent) == pytest.approx(sum(probs))
    place = kind_weighted(probs, evidence, PLACE)
    assert place[0] > place[2] > place[1] and sum(place) == pytest.approx(sum(probs))
    # "Which bank ...?": neither the person nor the town; the unmarked name rises.
    company = _evidence("")
    organisation = kind_weighted([0.4, 0.4, 0.2], [town, person, company], ORGANISATION)
    assert organisation[2] > 0.9 * sum(organisation)
    assert kind_weighted(probs, [company] * 3, AGENT) == pytest.approx(probs)


def test_a_person_is_marked_by_a_title_or_a_pronoun() -> None:
    text = (
        "Chief executive Kari Lund met Halden Group in Oslo. Later, Jan Haugen said he would "
        "sell. Halden Group said it would not."
    )
    _, windows, slot = _windows_of(text)
    share = {n: entity_evidence(windows[i], n).person for n, i in slot.items()}
    assert share["Kari Lund"] == 1.0 and share["Jan Haugen"] == 1.0
    assert share["Halden Group"] == 0.0 and share["Oslo"] == 0.0


def test_words_near_the_mention_count_more_than_words_further_out() -> None:
    text = "Later Marcus drove Anna home to Fairfield in the old green van with Clara."
    anon, windows, slot = _windows_of(text)
    terms = question_terms(anonymise_query("Marcus drove @placeholder home", anon.entities))
    assert support(terms, windows[slot["Anna"]]) == 1.0
    # Clara's NEAR words are "van", "green", "old" and "Fairfield"; "home", "drove" and
    # Marcus are further out.
    assert support(terms, windows[slot["Clara"]]) == pytest.approx(FAR_WEIGHT)
    # A window kept before near and far were told apart counts every word in full.
    old = [" ".join(w.replace(FAR_MARK, "").split()) for w in windows[slot["Clara"]]]
    assert support(terms, old) == 1.0


def test_a_coordinate_clause_is_a_window_of_its_own() -> None:
    """What Marcus did is not Tom's, though one sentence tells both (the README's example)."""
    text = (
        "Anna walked to the market with Tom. Later Marcus drove Anna home to Fairfield, "
        "and Tom stayed behind to help Clara close the stall."
    )
    anon, windows, slot = _windows_of(text)
    terms = question_terms(anonymise_query("Marcus drove @placeholder home", anon.entities))
    assert support(terms, windows[slot["Anna"]]) == 1.0
    assert support(terms, windows[slot["Tom"]]) == 0.0
    terms = question_terms(anonymise_query("@placeholder stayed behind", anon.entities))
    assert support(terms, windows[slot["Tom"]]) == 1.0


def test_support_weighs_the_readers_probabilities() -> None:
    probs, supports = [0.5, 0.3, 0.1], [0.0, 1.0, None]
    assert support_ranked(probs, supports, 0.0) == pytest.approx(probs)
    ranked = support_ranked(probs, supports, 3.0)
    # p(e) ∝ p_reader(e) · exp(λ s(e)); the 0.1 left to candidates not given keeps support 0
    total = 0.5 + 0.3 * 2.718281828**3 + 0.1 + 0.1
    assert ranked == pytest.approx([0.5 / total, 0.3 * 2.718281828**3 / total, 0.1 / total])
    assert ranked[1] > ranked[0] and sum(ranked) < 1.0


def test_support_shares_single_out_the_best_supported() -> None:
    shares = support_shares([1.0, 0.5, 0.5, 0.0], weight=8.0)
    assert sum(shares) == pytest.approx(1.0)  # type: ignore[arg-type]
    e = 2.718281828
    total = 1 + 2 * e**-4 + e**-8
    assert shares == pytest.approx([1 / total, e**-4 / total, e**-4 / total, e**-8 / total])
    assert support_shares([0.6, 0.6, 0.6]) == pytest.approx([1 / 3] * 3)  # none stands out
    assert support_shares([1.0, None]) == [None, None]  # unknown: nothing to compare


def test_windows_are_bounded_per_entity() -> None:
    text = " ".join(f"Anna met friend number {i} today." for i in range(3 * MAX_WINDOWS))
    anon = anonymise_document(text, max_entities=4)
    [windows] = mention_windows(anon.tokens, len(anon.entities))
    assert len(windows) == MAX_WINDOWS
    assert "met" in windows[0].split() and "today" in windows[0].split()


def test_a_format_3_record_keeps_spans_and_contexts() -> None:
    record = DocumentRecord(
        "d", "h", Status.INDEXED, tokens=3, entities=["Anna"], chars=12, spans=[[0, 4]],
        contexts=[["met tom"]],
    )  # fmt: skip
    back = meta_from_json(meta_to_json(record, {}, 1.0))
    assert (back.chars, back.spans, back.contexts) == (12, [[0, 4]], [["met tom"]])
    older = meta_from_json(b'{"id": "d", "text_hash": "h", "status": "indexed", "tokens": 3,'
        b' "entities": ["Anna"], "model_ids": {}, "error": null, "created_at": 1,'
        b' "updated_at": 1, "state_bytes": {}}')  # fmt: skip
    assert (older.chars, older.spans, older.contexts) == (0, [], [])


async def test_answers_carry_support_and_where_the_text_names_them(
    app_client: AppClient,
) -> None:
    async with app_client(modes=["linear"]) as client:
        await client.post("/v1/documents", json={"id": "deal", "text": STORY})
        await wait_status(client, "deal", "indexed")
        questions = ["Which bank arranged the new debt?", "Who is Barack Obama?"]
        body = {"queries": questions, "top_k": 20}
        response = await client.post("/v1/documents/deal/answers", json=body)
        assert response.status_code == 200, response.text
        arranged, obama = response.json()["results"]
        by_name = {a["entity"]: a for a in arranged["answers"]}
        assert by_name["Fjord Bank"]["support"] == 1.0
        assert max(a["support"] for a in arranged["answers"]) == 1.0
        # A question about someone the story never mentions: no answer is supported, and the
        # ranking is the reader's, weighed only by what the question asks for.
        assert obama["answers"] and all(a["support"] == 0.0 for a in obama["answers"])
        # ... so none stands out: the shares are equal, one over the answers ranked.
        shares = [a["support_share"] for a in obama["answers"]]
        assert shares == pytest.approx([1 / len(shares)] * len(shares))
        # Each share is over the reader's likeliest answers, with or without top_k cutting.
        top = arranged["answers"][0]
        assert 0 < top["support_share"] <= 1 and top["support_share"] == max(
            a["support_share"] for a in arranged["answers"]
        )
        ranked = [a["score"] for a in obama["answers"]]
        assert ranked == sorted(ranked, reverse=True)
        # Ranked by p_reader · exp(λ · support): the best supported answer rises; with
        # support_weight 0 the order and the scores are the reader's.
        scores = [a["score"] for a in arranged["answers"]]
        assert scores == sorted(scores, reverse=True)
        assert arranged["answers"][0]["support"] == 1.0
        body = {"queries": questions[:1], "top_k": 20, "support_weight": 0}
        alone = (await client.post("/v1/documents/deal/answers", json=body)).json()["results"][0]
        assert [a["score"] for a in alone["answers"]] == [
            a["reader_score"] for a in alone["answers"]
        ]
        readers = [a["reader_score"] for a in alone["answers"]]
        assert readers == sorted(readers, reverse=True)
        body = {"queries": questions[:1], "support_weight": -1}
        assert (await client.post("/v1/documents/deal/answers", json=body)).status_code == 422
        # Spans are offsets into the text: each one is a mention of its entity.
        halden = by_name["Halden Group"]
        assert [STORY[s:e] for s, e in halden["spans"]] == ["Halden Group"] * 2 + ["Halden"]
        assert [STORY[s:e] for s, e in by_name["Oslo"]["spans"]] == ["OSLO", "Oslo"]

        # Appended text's mentions are counted after the text before it.
        more = " Kari Lund thanked Fjord Bank."
        response = await client.post("/v1/documents/deal/text", json={"text": more})
        assert response.status_code == 200, response.text
        body = {"queries": ["Who thanked Fjord Bank?"], "top_k": 20}
        answers = (await client.post("/v1/documents/deal/answers", json=body)).json()
        lund = next(a for a in answers["results"][0]["answers"] if a["entity"] == "Kari Lund")
        whole = STORY + more
        assert [whole[s:e] for s, e in lund["spans"]] == ["Kari Lund", "Kari Lund"]
        assert lund["support"] == pytest.approx(1.0)


async def test_a_who_question_is_answered_with_fewer_places_than_its_cloze(
    app_client: AppClient,
) -> None:
    text = (
        "Halden Group agreed to buy Nordvik Shipping in Bergen on Monday. On Tuesday, Jan "
        "Haugen signed the deal in Bergen. Fjord Bank arranged the new debt in Bergen."
    )
    async with app_client(modes=["linear"]) as client:
        await client.post("/v1/documents", json={"id": "bergen", "text": text})
        await wait_status(client, "bergen", "indexed")
        # The same cloze sentence, once asked as a Who-question: only the place's weight moves.
        queries = [
            "Who signed the deal?",
            "@placeholder signed the deal",
            "Where was the deal signed?",
        ]
        body = {"queries": queries, "top_k": 20}
        response = await client.post("/v1/documents/bergen/answers", json=body)
        assert response.status_code == 200, response.text
        who, cloze, where = response.json()["results"]
        assert who["cloze"] == cloze["cloze"]
        score = [{a["entity"]: a["score"] for a in r["answers"]} for r in (who, cloze)]
        assert score[0]["Bergen"] < score[1]["Bergen"] / 100  # exp(-8): Bergen is always "in"
        assert score[0]["Jan Haugen"] > score[1]["Jan Haugen"]
        assert where["answers"][0]["entity"] == "Bergen"


def _named_window_words(text: str) -> tuple[AnonymisedText, list[list[str]], dict[str, set[str]]]:
    """The text anonymised, its windows with the names given, and each name's window words."""
    anon = anonymise_document(text, max_entities=None)
    windows = mention_windows(anon.tokens, len(anon.entities), anon.entities)
    words = {
        name: set(" ".join(windows[i]).replace(FAR_MARK, " ").split())
        for i, name in enumerate(anon.entities)
    }
    return anon, windows, words


def test_a_window_spells_out_the_names_in_it_and_its_looks_back() -> None:
    text = (
        "The Polish Musicians' Union, led by Krzysztof Nowicki, backed the strike. "
        "Odra Chemicals reported a fire. Its director, Anna Zielinska, said nobody was hurt."
    )
    anon, _, words = _named_window_words(text)
    # Another entity's name brings its words: Nowicki stands beside a union.
    assert {"union", "musicians"} <= words["Krzysztof Nowicki"]
    # "Its director, ..." looks back to the sentence before: whose director she is.
    assert {"chemicals", "fire", "reported"} <= words["Anna Zielinska"]
    # Without the names, only the markers; no sentence is looked back to without "its".
    bare = mention_windows(anon.tokens, len(anon.entities))
    assert "union" not in " ".join(bare[anon.entities.index("Krzysztof Nowicki")])
    assert "fire" not in words["Krzysztof Nowicki"]


def test_a_quote_said_by_he_or_she_joins_the_window_of_who_the_sentence_before_named() -> None:
    text = (
        "Observatory director Sabine Lorenz said drilling would harm the site, and Andes Mining "
        'disagreed. "A single truck at night can ruin hours of observations," she added. '
        "Hugo Rojas of Andes Mining said the trucks would run by day."
    )
    anon, windows, words = _named_window_words(text)
    # The quote is the person's the sentence before named first: Lorenz, not Andes Mining.
    assert {"truck", "night", "observations"} <= words["Sabine Lorenz"]
    assert "observations" not in words["Andes Mining"]
    # A sentence that names someone keeps its words to itself.
    assert "trucks" not in words["Sabine Lorenz"]
    terms = question_terms(
        anonymise_query(
            "@placeholder warned that trucks at night could spoil observations", anon.entities
        )
    )
    found = {n: support(terms, windows[i]) for i, n in enumerate(anon.entities)}
    assert max(found, key=lambda n: found[n] or 0.0) == "Sabine Lorenz"


def test_rare_words_weigh_more_in_the_rare_support() -> None:
    near = frozenset({"company", "said", "cut", "jobs"})
    evidence = [
        Evidence(((near, frozenset()),), words=near),  # beside the question's rare words
        Evidence(
            ((frozenset({"company", "said"}), frozenset()),), words=frozenset({"company", "said"})
        ),
        Evidence(((frozenset({"company"}), frozenset()),), words=frozenset({"company"})),
    ]
    terms = Terms(frozenset({"company", "cut", "jobs"}))
    weights = word_weights(terms, evidence)
    # "company" stands beside all three candidates: it tells none of them apart.
    assert weights["company"] == 0.0 and weights["cut"] == weights["jobs"] > 0
    assert rare_support(terms, evidence[0], weights) == 1.0
    assert rare_support(terms, evidence[2], weights) == 0.0
    # The plain support still counts "company" for the third: a third of the question's words.
    assert evidence_support(terms, evidence[2]) == pytest.approx(1 / 3)
    assert rare_support(terms, Evidence(()), weights) == 0.0
