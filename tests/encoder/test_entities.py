"""The entity finder: whole names, acronyms, titles kept out, sentence starts, aliases."""

from __future__ import annotations

from encoder.text.entities import entity_aliases, find_entities, short_names


def names(text: str) -> list[str]:
    return [e.name for e in find_entities(text)]


def test_multi_word_names_are_one_entity() -> None:
    found = names(
        "Pervez Musharraf flew to New South Wales. The Bank of England and the United "
        "Nations met Ludwig van Beethoven's heirs with George W. Bush and John O'Brien."
    )
    for name in ("Pervez Musharraf", "New South Wales", "Bank of England", "United Nations"):
        assert name in found
    for name in ("Ludwig van Beethoven", "George W. Bush", "John O'Brien"):
        assert name in found
    assert "Pervez" not in found and "Musharraf" not in found


def test_acronyms_are_names_unless_shouted() -> None:
    assert names("Officials of the UN, NATO and NASA met in the US.") == [
        "UN",
        "NATO",
        "NASA",
        "US",
    ]
    assert names("THE WAR IS OVER SAYS THE UN. Peace came.") == []
    assert "MPs" not in names("Scottish MPs voted with the SNP.")


def test_titles_and_nationalities_stay_out_of_names() -> None:
    found = names(
        "Indian Prime Minister Atal Behari Vajpayee met US President George Bush. "
        "Secretary of State Colin Powell and Dr. Jane Smith were there, as was Mr Blair."
    )
    assert found == [
        "Atal Behari Vajpayee",
        "US",
        "George Bush",
        "Colin Powell",
        "Jane Smith",
        "Blair",
    ]
    assert names("The President spoke. The Prime Minister listened.") == []
    # the office's "of X" stays with the office, "Affairs" too
    found = names(
        "Poland's Minister of Finance Jan Nowak met Minister of Foreign Affairs Anna Berg."
    )
    assert found == ["Poland", "Jan Nowak", "Anna Berg"]
    # and "for X" after a title, where the run of capitals starts after "for"
    found = names("Secretary of State for Culture Marta Lobo met Minister for Health Ana Ruiz.")
    assert found == ["Marta Lobo", "Ana Ruiz"]
    assert names("She voted for Health Matters Trust.") == ["Health Matters Trust"]
    # "of X and Y": both the office's
    found = names("Deputy Minister of Energy and Mines Bounthavy Sisouphanh said so.")
    assert found == ["Bounthavy Sisouphanh"]
    found = names("Opposition TD Ciarán Moloney met Comptroller General Arturo Mendizabal.")
    assert found == ["Ciarán Moloney", "Arturo Mendizabal"]
    found = names(
        "Talks were led by Prefect Daniela Marchetti. Former Tajo Salt chief Ana Ruiz left."
    )
    assert found == ["Daniela Marchetti", "Tajo Salt", "Ana Ruiz"]
    # A nationality before a person's full name is not the name's; a company's stays.
    found = names(
        "Ana Costa finished ahead of Ecuadorian Luis Quishpe. Indian Oil Corporation paid."
    )
    assert found == ["Ana Costa", "Luis Quishpe", "Indian Oil Corporation"]
    # Nationalities joined by a hyphen are one adjective of place too.
    assert names("Along the Spanish-Portuguese border, Ana Costa farms.") == ["Ana Costa"]


def test_an_adjective_of_a_place_the_name_table_knows_stays_out() -> None:
    # Not in the hand list: the name table knows Transylvania and Taiwan as places.
    found = names("The theatre in the Transylvanian town of Medias opened. A Taiwanese firm paid.")
    assert found == ["Medias"]
    # The same word as a company's name, the subject of its verb, or a sea, is a name.
    assert names("On Monday, Meridian said it would appeal. Its rival Aegean cancelled.") == [
        "Meridian",
        "Aegean",
    ]
    assert names("Ferries cross the Mediterranean, Anna Costa said.") == [
        "Mediterranean",
        "Anna Costa",
    ]
    # A person's given name in the same form stays one ("Lucian"; Lucia is a place too).
    assert names("Lucian Pintilie directed the play.") == ["Lucian Pintilie"]


def test_a_title_after_a_hyphen_is_part_of_the_name() -> None:
    # "Sen" (Senator) ends a union's name here; a title joined to its modifier stays out.
    assert names("The textile workers' union Örme-Sen called a strike.") == ["Örme-Sen"]
    assert names("UN Secretary-General Kofi Annan spoke.") == ["UN", "Kofi Annan"]


def test_a_place_names_lower_case_middle_and_an_apostrophe_inside_a_name() -> None:
    found = names("They drove from Boulogne-sur-Mer to Chassagne-le-Haut, not Stratford-upon-Avon.")
    assert found == ["Boulogne-sur-Mer", "Chassagne-le-Haut", "Stratford-upon-Avon"]
    assert names("Pierre-Yves Kerloc'h said so. Later Kerloc'h left.") == ["Pierre-Yves Kerloc'h"]
    # A possessive or a contraction is no part of the name; nor is a hyphenated verb.
    assert names("Anna's dog barked at Tom's cat. Tom'll go to the Sinn Fein-run hall.") == [
        "Anna",
        "Tom",
        "Sinn Fein",
    ]


def test_a_surname_alone_is_the_whole_name() -> None:
    (musharraf,) = find_entities("Pervez Musharraf spoke. Later Musharraf left. Musharraf won.")
    assert musharraf.name == "Pervez Musharraf" and musharraf.mentions == 3
    assert musharraf.aliases == ("Musharraf",)
    # Two names share the surname: "Blair" alone is neither.
    found = names("Tony Blair and Cherie Blair arrived. Later Blair spoke.")
    assert found == ["Tony Blair", "Cherie Blair", "Blair"]
    (un,) = find_entities("The United Nations met. The UN agreed.")
    assert un.aliases == ("UN",) and un.mentions == 2


def test_a_title_owning_an_office_is_part_of_its_name() -> None:
    text = "The Pernambuco Public Defender's Office took the case. The Mayor's Office said no."
    assert names(text) == ["Pernambuco Public Defender's Office", "Mayor's Office"]
    # An office named by its title: no person's name follows
    text = "The Office of the Prosecutor General and the Office of the President agreed."
    assert names(text) == ["Office of the Prosecutor General", "Office of the President"]
    # A possessive before a title still ends the name before it.
    assert names("Spain's Supreme Court ruled.") == ["Spain", "Supreme Court"]


def test_a_spanish_name_goes_by_its_first_family_name() -> None:
    text = (
        "Cyclist Juan Sebastián Ortega Ruiz tested positive. Ortega denies it. "
        "Minera Cotacachi Andina drills near Cotacachi. Green Riga Alliance marched in Riga."
    )
    found = {e.name: e for e in find_entities(text)}
    assert found["Juan Sebastián Ortega Ruiz"].aliases == ("Ortega",)
    # An organisation's middle word is no family name: the place stays a name of its own.
    assert "Cotacachi" in found and "Riga" in found
    # Two names claim "Ortega": it is neither's.
    both = names("Ana Ortega Ruiz and Luis Ortega Vidal spoke. Then Ortega left.")
    assert both == ["Ana Ortega Ruiz", "Luis Ortega Vidal", "Ortega"]


def test_sentence_initial_names_and_common_words() -> None:
    # A name seen only at sentence starts counts when it recurs; a one-off opener does not.
    assert names("Theresa went home. Theresa was tired. Yesterday it rained.") == ["Theresa"]
    # Months and weekdays are no names, but "May" inside a name is.
    found = names("On Monday Theresa May spoke. In March, May said the bank would act.")
    assert found == ["Theresa May"]
    assert names("The post office opens on Saturdays, Ana Costa said.") == ["Ana Costa"]
    (may,) = find_entities("Theresa May spoke. May said no.")
    assert may.mentions == 2


def test_given_candidates_take_their_surnames_where_the_text_uses_them() -> None:
    given = entity_aliases(["Pervez Musharraf", "Bank of England"], "Musharraf met England.")
    assert given[0].aliases == ("Musharraf",)
    assert given[1].aliases == ()  # "England" is not the Bank of England


def test_a_company_goes_by_its_name_without_its_head_noun() -> None:
    text = (
        "Halden Group agreed to buy Nordvik Shipping on Tuesday. Halden will pay cash, and "
        "Nordvik said its board backed the deal. Carrow Rail won the train order; Carrow will "
        "build the trains in Derby. Energy Minister Astrid Vold welcomed it."
    )
    found = {e.name: e for e in find_entities(text)}
    assert found["Halden Group"].aliases == ("Halden",) and found["Halden Group"].mentions == 2
    assert found["Nordvik Shipping"].aliases == ("Nordvik",)
    assert found["Carrow Rail"].mentions == 2
    assert "Halden" not in found and "Carrow" not in found
    # "Energy" is a ministry here, and never Brekke Energy's surname.
    assert "Astrid Vold" in found and "Energy" not in found
    # Places stay places: a university or an airline named after one is another entity.
    found = {e.name for e in find_entities("Oxford University said so. Rain fell on Oxford.")}
    assert found == {"Oxford University", "Oxford"}


def test_short_names_in_questions() -> None:
    names = ["Pervez Musharraf", "Halden Group", "Van Rijn Capital", "Bank of England", "Anna"]
    assert short_names(names) == {0: "Musharraf", 1: "Halden", 2: "Van Rijn"}
    # Two names with one short form: neither goes by it.
    assert short_names(["Halden Group", "Halden Energy"]) == {}


def test_a_headline_and_its_dateline_are_two_names() -> None:
    text = (
        "Halden Group buys Nordvik Shipping\n\nOSLO, March 14 - Halden Group agreed to buy "
        "Nordvik Shipping, its chairman Jan Haugen said on Friday in Oslo."
    )
    found = names(text)
    assert "Halden Group OSLO" not in found and "Nordvik Shipping OSLO" not in found
    assert found == ["Halden Group", "Nordvik Shipping", "Oslo", "Jan Haugen"]
    # Without a blank line, too; the dateline's city in capitals is written as a name.
    assert names("Halden Group buys Nordvik\nOSLO, March 14 - Halden Group agreed.")[:2] == [
        "Halden Group",
        "Nordvik",
    ]
    assert names("Talks in Oslo\n\nNEW YORK, May 2 - Anna Berg met Tom Lie.")[1] == "New York"


def test_place_names_that_start_with_a_common_word() -> None:
    found = names("New Zealand's coalition was agreed. The new government met in Wellington.")
    assert found == ["New Zealand", "Wellington"]


def test_hyphenated_east_asian_given_names_stay_whole() -> None:
    (park, seoul) = find_entities("Park Ji-hoon said talks would resume. Park later left Seoul.")
    assert park.name == "Park Ji-hoon" and park.aliases == ("Park",) and park.mentions == 2
    assert seoul.name == "Seoul"
    found = names("Moon Jae-in met Tsai Ing-wen and Kim Jong-un.")
    assert found == ["Moon Jae-in", "Tsai Ing-wen", "Kim Jong-un"]
    # a lower-case word after a hyphen is not a given name in English compounds
    assert names("Sinn Fein-run councils and New York-based Pfizer agreed.") == [
        "Sinn Fein",
        "New York",
        "Pfizer",
    ]


def test_a_role_or_nationality_noun_before_a_name_stays_out() -> None:
    assert names("Frenchman Hugo Vasseur won. Critic Maria Kowalczyk wrote.") == [
        "Hugo Vasseur",
        "Maria Kowalczyk",
    ]
    assert names("The Frenchman said no.") == []
    assert names("Swede Erik Lindqvist won. Rector Ewa Kaminska resigned.") == [
        "Erik Lindqvist",
        "Ewa Kaminska",
    ]


def test_a_datelines_dash_starts_a_sentence() -> None:
    # "The" after the dash opens the sentence, as after a full stop: no part of the name.
    text = "Rates held\n\nNAIROBI, May 6 - The Central Bank of Kenya held rates on Monday."
    assert "Central Bank of Kenya" in names(text)
    assert names("Rates held\n\nNAIROBI, May 6 - Halden Group agreed.")[-1] == "Halden Group"


def test_a_plural_possessive_inside_an_institution_name() -> None:
    assert names("The Irish Airline Pilots' Association called a strike.") == [
        "Irish Airline Pilots' Association"
    ]
    assert "Pilots" in names("The Pilots' union struck.")  # not an institution's head noun


def test_a_possessive_before_a_title_names_the_country_alone() -> None:
    # At a sentence start as in the middle, "Poland's Minister ..." is Poland, one entity.
    text = "Poland's Minister of Finance, Anna Nowak, agreed. Later Poland's output rose."
    found = names(text)
    assert "Poland" in found and "Poland's" not in found
    assert found.count("Poland") == 1 and "Anna Nowak" in found


def test_of_joins_after_the_and_one_word_at_a_sentence_start() -> None:
    text = "The Brotherhood of Northern Rail Workers said its members would stay out."
    assert names(text) == ["Brotherhood of Northern Rail Workers"]


def test_a_noun_for_a_person_opening_a_sentence_stays_out_of_the_name() -> None:
    # WordNet's nouns for a person (encoder.text.name_kinds.person_nouns), not a hand list.
    assert names("Forecaster Elena Vlad said rain would come. Vlad works in Iasi.") == [
        "Elena Vlad",
        "Iasi",
    ]
    assert names("Epidemiologist Rafael Quispe warned of measles.") == ["Rafael Quispe"]
    assert names("Postmaster General Joseph Mutua apologised.") == ["Joseph Mutua"]
    text = "Members of the Transit Workers Union of Victoria voted to strike."
    assert names(text) == ["Transit Workers Union of Victoria"]
    # One name word left is too often a given name and a surname: the run stays whole.
    assert names("Dean Martin sang. Martin left.") == ["Dean Martin"]
    # A noun that is a name's word too, or a saint: part of the name. One most often an
    # adjective is a role before a person's name, part of an organisation's.
    assert names("Baker Hughes Inc said it would cut jobs.") == ["Baker Hughes Inc"]
    assert names("Saint Thomas Christians gathered.") == ["Saint Thomas Christians"]
    assert names("General Abdourahamane Tiani took power.") == ["Abdourahamane Tiani"]
    assert names("National Australia Bank raised rates.") == ["National Australia Bank"]
    assert names("Senior Engineering Group Plc agreed.") == ["Senior Engineering Group Plc"]
    # Only at a sentence's start: in the middle a capital says it is part of the name.
    assert names("The band hired Dean Maarten Oosterhuis.") == ["Dean Maarten Oosterhuis"]


def test_a_places_possessive_before_an_institution_is_two_names() -> None:
    assert names("Spain's Supreme Court ruled. Spain appealed.") == ["Spain", "Supreme Court"]
    assert names("South Korea's Hanbit Space Agency lost it.") == [
        "South Korea",
        "Hanbit Space Agency",
    ]
    # A person's or a saint's possessive names the institution, and so does one whose words
    # read only a little more as a place's.
    assert names("St Mary's Hospital said so.") == ["St Mary's Hospital"]
    assert names("Hudson's Bay Company sold stores.") == ["Hudson's Bay Company"]


def test_a_group_of_a_place_is_two_names() -> None:
    # "Group" takes "of" after one word ("Group of Seven"), not after a company's name.
    text = "The franchise went to Al Noor Hospitality Group of Dubai and the Group of Seven."
    assert names(text) == ["Al Noor Hospitality Group", "Dubai", "Group of Seven"]
    text = "It was staged with Hangang Repertory Company of Seoul."
    assert names(text) == ["Hangang Repertory Company", "Seoul"]


def test_an_institutions_head_word_opening_a_sentence_is_part_of_its_name() -> None:
    text = (
        "The hospital is full. Hospital Universitario La Marina said so. "
        "Police Chief Ana Ruiz agreed."
    )
    assert names(text) == ["Hospital Universitario La Marina", "Ana Ruiz"]


def test_a_word_before_an_institutions_head_opening_a_sentence_is_part_of_its_name() -> None:
    text = "The marine park is closed. Marine Department Sabah director Norhayati Osman said so."
    assert names(text) == ["Marine Department Sabah", "Norhayati Osman"]


def test_a_count_opening_a_sentence_is_no_name() -> None:
    text = (
        "Shares of Berbice Agro rose. Thousands of Fluvial fans sang. Friends of Marlow agreed. "
        "Six passengers swam."
    )
    assert names(text) == ["Berbice Agro", "Fluvial", "Friends of Marlow"]


def test_an_office_before_a_name_is_its_title_and_alone_the_office() -> None:
    text = "She asked Auditor-General Julie Hannaford to act. The Auditor-General said no."
    assert names(text) == ["Julie Hannaford", "Auditor-General"]
    assert names("The Office of the Public Auditor said so.") == ["Office of the Public Auditor"]
