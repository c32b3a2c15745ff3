"""The plain-question converter: Who/Whom/Whose/Which questions as cloze sentences."""

from __future__ import annotations

import contextlib
import random

import pytest

from encoder.text.questions import (
    AGENT,
    ORGANISATION,
    PERSON,
    PLACE,
    TOWN,
    UnsupportedQuestion,
    asks_for,
    past_tense,
    third_person,
    to_cloze,
)


@pytest.mark.parametrize(
    ("question", "cloze"),
    [
        # subject questions: the wh-phrase becomes the placeholder
        ("Who drove Anna home?", "@placeholder drove Anna home"),
        ("who kept the lighthouse on Gull Rock?", "@placeholder kept the lighthouse on Gull Rock"),
        ("Whose dog barked?", "@placeholder 's dog barked"),
        ("Which person drove Anna home?", "@placeholder drove Anna home"),
        ("Which company bought the mill?", "the company @placeholder bought the mill"),
        # Which/What keep their noun phrase, as news writes a name after its description
        ("Which bank arranged the new debt?", "the bank @placeholder arranged the new debt"),
        (
            "Which state miner put its talks on hold?",
            "the state miner @placeholder put its talks on hold",
        ),
        ("Which pension fund owns Carrow?", "the pension fund @placeholder owns Carrow"),
        # "<noun> of <plural>": the plural is the noun's, not the verb
        (
            "Which group of dairies applied for protection?",
            "the group of dairies @placeholder applied for protection",
        ),
        # a determiner is the verb's object's: the word before it is the verb
        (
            "Which polling firm forecast the result?",
            "the polling firm @placeholder forecast the result",
        ),
        (
            "Which foreign firm co-owns the plant?",
            "the foreign firm @placeholder co-owns the plant",
        ),
        # a do-question's subject without a determiner: up to a plural noun, else one word
        ("Whom did police arrest?", "police arrested @placeholder"),
        ("Who did investors blame for the loss?", "investors blamed @placeholder for the loss"),
        (
            "Where did plastic pellets wash up on the beaches?",
            "plastic pellets washed up on the beaches in @placeholder",
        ),
        # numbers keep their commas
        ("Who said 3,000 people left?", "@placeholder said 3,000 people left"),
        # an appositive after the noun stays where news puts it
        (
            "Which investor, the biggest in the brewer, supported the deal?",
            "the investor @placeholder, the biggest in the brewer, supported the deal",
        ),
        (
            "Which rival bidder twice raised its offer?",
            "the rival bidder @placeholder twice raised its offer",
        ),
        (
            "Which Dutch group had planned to buy it?",
            "the Dutch group @placeholder had planned to buy it",
        ),
        ("What company bought the mill?", "the company @placeholder bought the mill"),
        ("Which companies bought the mill?", "the companies @placeholder bought the mill"),
        (
            "Which family does the portrait's sitter belong to?",
            "the portrait's sitter belongs to the family @placeholder",
        ),
        ("Who is Chile's mining minister?", "@placeholder is Chile's mining minister"),
        ("Who was arrested?", "@placeholder was arrested"),
        ("Who is talking to Anna?", "@placeholder is talking to Anna"),
        ("Who was the captain?", "@placeholder was the captain"),
        ("Who did the dishes?", "@placeholder did the dishes"),
        # object questions: did + verb -> past tense (irregular and regular)
        ("Whom did Marcus drive home?", "Marcus drove @placeholder home"),
        ("Who did Marcus drive home?", "Marcus drove @placeholder home"),
        ("Who did Marigold Ashby visit?", "Marigold Ashby visited @placeholder"),
        ("Who did she write to?", "she wrote to @placeholder"),
        ("Who did the captain stop?", "the captain stopped @placeholder"),
        ("Who did Agnes marry?", "Agnes married @placeholder"),
        ("Which country did Marcus leave?", "Marcus left the country @placeholder"),
        ("Whose dog did Anna walk?", "Anna walked @placeholder 's dog"),
        # hyphenated words are the noun's, not its verb
        ("Which start-up built the app?", "the start-up @placeholder built the app"),
        (
            "Which Dutch state-owned group bought Halden?",
            "the Dutch state-owned group @placeholder bought Halden",
        ),
        # a Which-phrase that owns the next word: the owner is the answer
        (
            "Which union's protesters blocked the road?",
            "the union @placeholder 's protesters blocked the road",
        ),
        (
            "Which pension fund's chairman resigned?",
            "the pension fund @placeholder 's chairman resigned",
        ),
        # ... but a plural possessive is part of the noun: the union is the answer
        (
            "Which players' union called a strike?",
            "the players' union @placeholder called a strike",
        ),
        # does -> third person; do -> the verb itself
        ("Who does Anna visit every Sunday?", "Anna visits @placeholder every Sunday"),
        ("Who does Tobias watch?", "Tobias watches @placeholder"),
        ("Who do they trust?", "they trust @placeholder"),
        # be / have / modal auxiliaries stay
        ("Who was Anna talking to?", "Anna was talking to @placeholder"),
        ("Who were they waiting for?", "they were waiting for @placeholder"),
        ("Who has Ingram met?", "Ingram has met @placeholder"),
        ("Who was the old man talking to?", "the old man was talking to @placeholder"),
        ("Who has the company hired?", "the company has hired @placeholder"),
        # ... and are the verb itself when no participle follows their subject
        (
            "Who is a retired university professor?",
            "@placeholder is a retired university professor",
        ),
        ("Who was the captain of the Pequod?", "@placeholder was the captain of the Pequod"),
        ("Who is Anna's brother?", "@placeholder is Anna's brother"),
        ("Who is the one who signed?", "@placeholder is the one who signed"),
        ("Who has the ball?", "@placeholder has the ball"),
        (
            "Who will the captain meet at the harbour?",
            "the captain will meet @placeholder at the harbour",
        ),
        ("Who did Marcus give the book to ?", "Marcus gave the book to @placeholder"),
        # The preposition before the wh-word, as people ask: the answer goes after it.
        ("In which city was the plant built?", "the plant was built in the city @placeholder"),
        ("From which port did the ferry sail?", "the ferry sailed from the port @placeholder"),
        ("At which bank does Anna work?", "Anna works at the bank @placeholder"),
        ("With whom did Anna travel?", "Anna traveled with @placeholder"),
        (
            "In which city would the new filling line be built?",
            "the new filling line would be built in the city @placeholder",
        ),
        # Where: the answer is the place the statement puts its subject in.
        ("Where did the rector study?", "the rector studied in @placeholder"),
        ("Where is the firm based?", "the firm is based in @placeholder"),
        ("Where is the clinic that Anna runs?", "the clinic that Anna runs is in @placeholder"),
        # A bare plural subject after have/be, as after do
        (
            "Where have farmers been protesting over compensation?",
            "farmers have been protesting over compensation in @placeholder",
        ),
        ("Who have investors backed?", "investors have backed @placeholder"),
        ("Who has been appointed?", "@placeholder has been appointed"),
        ("Who has shares in Halden?", "@placeholder has shares in Halden"),
        # After is/was, a determiner's noun and a participle with its object (or a passive one)
        # describe the answer, unless a preposition at the end takes it.
        (
            "Who is the police officer leading the inquiry?",
            "@placeholder is the police officer leading the inquiry",
        ),
        (
            "Who is the analyst quoted about the revenue?",
            "@placeholder is the analyst quoted about the revenue",
        ),
        (
            "Who is the company paying the fine for?",
            "the company is paying the fine for @placeholder",
        ),
        ("Who is the union meeting today?", "the union is meeting @placeholder today"),
        ("Who is the union urging to strike?", "the union is urging @placeholder to strike"),
        # ... and so does one with any object ("facing removal"), the noun's own -ing word
        # ("housing minister") and one after a word only ever before a noun ("former").
        ("Who is the mayor facing removal?", "@placeholder is the mayor facing removal"),
        ("Who is the regional housing minister?", "@placeholder is the regional housing minister"),
        (
            "Who is the former paving company owner standing trial?",
            "@placeholder is the former paving company owner standing trial",
        ),
        (
            "Who was the former chief executive talking to?",
            "the former chief executive was talking to @placeholder",
        ),
        # A name after a determiner is the subject whole, "of" and all.
        (
            "Where does the Highland Institute have a campus?",
            "the Highland Institute has a campus in @placeholder",
        ),
        ("Who did the Bank of England hire?", "the Bank of England hired @placeholder"),
        # One of several, by their noun: asked as "Which <noun>", made singular.
        (
            "Which of the two institutions ran a deficit last year?",
            "the institution @placeholder ran a deficit last year",
        ),
        ("Which of the companies won the contract?", "the company @placeholder won the contract"),
        # "Which is the ...?": the answer is the determiner's noun; a clause after the noun.
        (
            "Which is the larger of the two unions that called the march?",
            "@placeholder is the larger of the two unions that called the march",
        ),
        (
            "Which body that advises UNESCO will send a team?",
            "the body @placeholder that advises UNESCO will send a team",
        ),
        # A noun's capitalised words and initials
        (
            "Which First Nation complained that it had not been consulted?",
            "the First Nation @placeholder complained that it had not been consulted",
        ),
        ("Which U.S. retailer sells the most?", "the U.S. retailer @placeholder sells the most"),
        ("Which of them won?", "@placeholder won"),
        # A phrase before the wh-word follows the statement, its names kept in the question.
        (
            "Apart from Fort William, where does the Highland Institute have a campus?",
            "the Highland Institute has a campus in @placeholder, apart from Fort William",
        ),
        # ... and a phrase between commas after Where ("Where, besides Dubai, ...") is read so.
        (
            "Where, besides Dubai, does the airline fly?",
            "the airline flies in @placeholder, besides Dubai",
        ),
        (
            "Who, an outside researcher, said the test works?",
            "@placeholder, an outside researcher, said the test works",
        ),
        (
            "After the vote, in which city did the party meet?",
            "the party met in the city @placeholder, after the vote",
        ),
        # A phrase that ends in a preposition before Which, and more prepositions.
        (
            "On the slopes of which mountain is the drilling taking place?",
            "the drilling is taking place on the slopes of the mountain @placeholder",
        ),
        (
            "Off which city did the ship roll in the storm?",
            "the ship rolled in the storm off the city @placeholder",
        ),
        # "whose" after its preposition, and a preposition of two words
        (
            "In whose home did the painting hang for decades?",
            "the painting hung for decades in @placeholder 's home",
        ),
        ("Ahead of whom did Mosquera finish?", "Mosquera finished ahead of @placeholder"),
        # A bare subject after a modal.
        (
            "Where will fans get their first look at the new signing?",
            "fans will get their first look at the new signing in @placeholder",
        ),
        (
            "In which city will fund members be briefed?",
            "fund members will be briefed in the city @placeholder",
        ),
        (
            "Where will young char be raised before release?",
            "young char will be raised before release in @placeholder",
        ),
        ("Who will the report be sent to?", "the report will be sent to @placeholder"),
        # A modal's be/have keeps its participle before the answer.
        ("Who would the board have chosen?", "the board would have chosen @placeholder"),
        (
            "Whom will the minister be meeting on Friday?",
            "the minister will be meeting @placeholder on Friday",
        ),
        # A modal's own verb: the answer is its subject.
        ("Who will soon be named chief?", "@placeholder will soon be named chief"),
        ("Who will become prime minister?", "@placeholder will become prime minister"),
        ("Who will lead the team?", "@placeholder will lead the team"),
        ("Who should pay for the repairs?", "@placeholder should pay for the repairs"),
        (
            "Which regulator must approve the deal?",
            "the regulator @placeholder must approve the deal",
        ),
        (
            "Which Dutch group might make a rival offer?",
            "the Dutch group @placeholder might make a rival offer",
        ),
        (
            "Which club will Sporting meet in the final?",
            "Sporting will meet the club @placeholder in the final",
        ),
        # A did/does subject runs on to its verb, not its second word.
        (
            "Which firm did the perfume house hire to explore other options?",
            "the perfume house hired the firm @placeholder to explore other options",
        ),
        ("Where did the lock gate give way?", "the lock gate gave way in @placeholder"),
        # A place asked within first stays in the question, after the answer's.
        (
            "Where in China is the conservation centre located?",
            "the conservation centre is located in @placeholder in China",
        ),
        (
            "Where at Dougga is the theatre being restored?",
            "the theatre is being restored in @placeholder at Dougga",
        ),
        (
            "Where on the island will the port be built?",
            "the port will be built in @placeholder on the island",
        ),
        (
            "Where in the city does the rider work?",
            "the rider works in @placeholder in the city",
        ),
        (
            "Where does the dairy group plan to appeal the ruling?",
            "the dairy group plans to appeal the ruling in @placeholder",
        ),
        (
            "What company did the Dutch bank buy last year?",
            "the Dutch bank bought the company @placeholder last year",
        ),
        (
            "Whom did the union members elect as leader?",
            "the union members elected @placeholder as leader",
        ),
        (
            "Where did the injured teenager live and train?",
            "the injured teenager lived and trained in @placeholder",
        ),
        # An adverb before the verb stays before it.
        (
            "Which professional ensemble did the four singers also perform with?",
            "the four singers also performed with the professional ensemble @placeholder",
        ),
        ("Who was also arrested?", "@placeholder was also arrested"),
        (
            "Who is financially backing the satellite provider?",
            "@placeholder is financially backing the satellite provider",
        ),
        # An adverb in -ly, of any word; a noun before it is the subject's, not its verb.
        (
            "Which firm does the future chief executive currently run?",
            "the future chief executive currently runs the firm @placeholder",
        ),
        ("Who did the family hire?", "the family hired @placeholder"),
        # After a modal, a determiner's words run on to the verb too, and "no longer" is
        # one adverb.
        (
            "Which hillside district will the new line serve?",
            "the new line will serve the hillside district @placeholder",
        ),
        (
            "Where will the cargo carrier shift most of its night flights?",
            "the cargo carrier will shift most of its night flights in @placeholder",
        ),
        (
            "Which river could the herders no longer reach in the dry season?",
            "the herders could no longer reach the river @placeholder in the dry season",
        ),
        (
            "Which publisher will the libraries stop buying from?",
            "the libraries will stop buying from the publisher @placeholder",
        ),
        # What the answer owns may be a phrase, up to the auxiliary of its own clause.
        (
            "Whose security camera footage did investigators examine?",
            "investigators examined @placeholder 's security camera footage",
        ),
        (
            "Whose place in the team will the new signing take?",
            "the new signing will take @placeholder 's place in the team",
        ),
        ("Whose pilots will strike on Friday?", "@placeholder 's pilots will strike on Friday"),
        (
            "Whose lawyer says he has never arranged a bet?",
            "@placeholder 's lawyer says he has never arranged a bet",
        ),
        ("Whom will the board also appoint?", "the board will also appoint @placeholder"),
        # The participle that is the verb, not the one that describes a noun.
        (
            "Where is the Spanish fishing company based?",
            "the Spanish fishing company is based in @placeholder",
        ),
        ("Where was the new filling line built?", "the new filling line was built in @placeholder"),
        ("Whom is Anna visiting tomorrow?", "Anna is visiting @placeholder tomorrow"),
        # What a thing is called, in the question's tense.
        (
            "What will the merged company be called?",
            "the merged company will be called @placeholder",
        ),
        ("What is the new firm called?", "the new firm is called @placeholder"),
        ("What has the studio been named?", "the studio has been named @placeholder"),
        (
            "What was the name of the convicted man's business?",
            "the convicted man's business was called @placeholder",
        ),
        # A do-question's subject runs on over a possessive's noun and an "of" phrase; a
        # plural ending it (or before a leading phrase's preposition) is the verb's object.
        (
            "Which hotel does the employers' group chairman own?",
            "the employers' group chairman owns the hotel @placeholder",
        ),
        (
            "What hotel does the president of the owners' council own?",
            "the president of the owners' council owns the hotel @placeholder",
        ),
        (
            "Which trade body does the critic of the deal chair?",
            "the critic of the deal chairs the trade body @placeholder",
        ),
        (
            "Outside which hotel did the strike leader address workers?",
            "the strike leader addressed workers outside the hotel @placeholder",
        ),
        (
            "Near which port does the buyer plan two new warehouses?",
            "the buyer plans two new warehouses near the port @placeholder",
        ),
        (
            "Which organisation did the chairman of the seed company quit?",
            "the chairman of the seed company quit the organisation @placeholder",
        ),
        # be/have's participle after an "of" phrase; an -ing there is a noun's modifier
        (
            "Where is the buyer of Kovinar headquartered?",
            "the buyer of Kovinar is headquartered in @placeholder",
        ),
        (
            "By whom was the head of the inquiry appointed?",
            "the head of the inquiry was appointed by @placeholder",
        ),
        (
            "Whom has the mayor of Lousã met twice this year?",
            "the mayor of Lousã has met @placeholder twice this year",
        ),
        (
            "Who is the director of the arts funding body?",
            "@placeholder is the director of the arts funding body",
        ),
        (
            "Who is the chief executive of the Slovenian company being sold?",
            "@placeholder is the chief executive of the Slovenian company being sold",
        ),
        # a participle that takes no object describes the one asked for
        (
            "Who is the lawyer acting for the apartment owners?",
            "@placeholder is the lawyer acting for the apartment owners",
        ),
        (
            "Who is the company paying for the work?",
            "the company is paying @placeholder for the work",
        ),
    ],
)
def test_plain_questions_become_cloze_sentences(question: str, cloze: str) -> None:
    assert to_cloze(question) == cloze


def test_cloze_sentences_pass_through_unchanged() -> None:
    for query in [
        "@placeholder kept the lighthouse.",
        "Who is @placeholder?",
        "@placeholder @placeholder",
    ]:
        assert to_cloze(query) == query  # counting placeholders is the tokenizer's job


@pytest.mark.parametrize(
    "question",
    [
        "What did Anna eat?",
        "What is called?",
        "What is the name?",
        "What was the ship named after?",
        "Where?",
        "Where Anna?",
        "In which?",
        "Why did Anna leave?",
        "Who?",
        "Whose?",
        "Which?",
        "Anna drove home.",
        "",
        "   ?",
    ],
)
def test_other_questions_say_which_forms_work(question: str) -> None:
    with pytest.raises(UnsupportedQuestion) as err:
        to_cloze(question)
    message = str(err.value)
    assert (
        "@placeholder" in message
        and "Who, Whom, Whose" in message
        and "Which/What <noun>" in message
    )


@pytest.mark.parametrize(
    ("verb", "past", "third"),
    [
        ("drive", "drove", "drives"),
        ("visit", "visited", "visits"),
        ("stop", "stopped", "stops"),
        ("carry", "carried", "carries"),
        ("play", "played", "plays"),
        ("love", "loved", "loves"),
        ("watch", "watched", "watches"),
        ("go", "went", "goes"),
        ("have", "had", "has"),
        ("quit", "quit", "quits"),
    ],
)
def test_verb_forms(verb: str, past: str, third: str) -> None:
    assert (past_tense(verb), third_person(verb)) == (past, third)


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Who founded Solvind?", PERSON),  # what people do, not companies
        ("Whom did Marcus drive home?", AGENT),
        ("With whom did Anna travel?", AGENT),
        ("Whose dog barked?", AGENT),
        ("Where did Anna study?", PLACE),
        ("In which city was the plant built?", TOWN),  # a place within a country
        ("Which town did Peeters buy the painting in?", TOWN),
        ("What country hosts the talks?", PLACE),
        ("Which bank arranged the debt?", ORGANISATION),
        ("Which law firm acted for Solvind?", ORGANISATION),
        ("Which goalkeeper saved the header?", PERSON),  # a role
        ("Which Brazilian sat on the jury?", PERSON),  # a nationality: a person
        ("Which Namibian sat on the jury?", PERSON),  # one the name table knows
        ("At which airport does the airline hold slots?", PLACE),
        ("Which police force is investigating?", ORGANISATION),
        ("Which municipal unit has been inspecting homes?", ORGANISATION),
        ("Which Taiwanese firm paid?", ORGANISATION),
        ("Which cloud did Anna see?", None),  # its noun stays in the cloze
        ("Which state miner put its talks on hold?", ORGANISATION),  # the head noun: "miner"
        ("Which is the bank that arranged the loan?", ORGANISATION),  # its noun after "is the"
        ("Which body that advises UNESCO will send a team?", ORGANISATION),
        ("Marcus drove @placeholder home", None),
    ],
)
def test_what_a_question_asks_for(question: str, kind: str | None) -> None:
    assert asks_for(question) == kind


def test_a_question_that_ends_at_its_auxiliary_is_no_crash() -> None:
    assert to_cloze("Who has?") == "@placeholder has"
    assert to_cloze("Who was ?") == "@placeholder was"
    with pytest.raises(UnsupportedQuestion):
        to_cloze(", what")  # a comma before the wh-word with nothing before it


def test_no_jumble_of_question_words_raises_anything_but_unsupported() -> None:
    # Bounded: a fixed seed and 20,000 jumbles of the forms' own words (a few seconds).
    rng = random.Random(5)
    heads = [
        "Who",
        "Whom",
        "Whose",
        "Which",
        "Where",
        "In which",
        "Who will",
        "Who has",
        "Which firm did",
        "Where did the",
        "Whom did the",
        "Where was",
        "Apart from Oslo, where",
    ]
    words = [
        "will",
        "did",
        "does",
        "the",
        "a",
        "and",
        "also",
        "now",
        "by",
        "'s",
        "was",
        "is",
        "has",
        "been",
        "Anna",
        "Tom",
        "drive",
        "drove",
        "driven",
        "home",
        "to",
        "firm",
        "bank",
        "fishing",
        "based",
        "in",
        "of",
        "which",
        ",",
        "-",
        "'",
        '"',
        "@entity1",
    ]
    anywhere = [*words, *heads, "what", "who", "whose", "which", "where", "In"]
    for i in range(20_000):
        tail = " ".join(rng.choice(words) for _ in range(rng.randint(0, 6)))
        head = rng.choice(heads) if i % 2 else rng.choice(anywhere)  # any word first, or a form
        question = f"{head} {tail}{rng.choice(['?', '', ' ?'])}"
        with contextlib.suppress(UnsupportedQuestion):
            to_cloze(question)
