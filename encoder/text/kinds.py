"""What kind of thing a document's name is (a place, a person, an organisation), read from
how the text uses it, and what kind of answer a question asks for.

A reader trained on cloze sentences does not know that "Who runs the Czech engineering
firm?" wants a person and not the firm, nor that Greece cannot answer a Who-question; the
support of such a wrong answer is often high, since the question's words stand beside it.
News says what its names are in a few fixed ways, and each mention of a name is marked with
what its neighbours say (`mention_marks`), when the document is indexed:

    place          in/near/across Ghent; the port of Ulsan; "BERGEN, May 6 -" (a dateline);
                   a Luxembourg-based firm; Greece's government
    person         Chief Executive Ingrid Solheim; analyst Orla Keane; Nguyen Thi Lan, 17,;
                   Orla Keane, an analyst at ...; a he/she/his/her after the name
    organisation   rival bidder Vestlys; Halden's shares; an it/its after the name; and, from
                   the name itself, "Fjord Bank", "Baltic Election Watch" (`ORG_HEADS`)

An entity's share of marked mentions is what `encoder.text.support.kind_weighted` weighs
its probability by, against the kind the question asks for (`asks_for`).
"""

from __future__ import annotations

from collections.abc import Sequence

from encoder.text import entities
from encoder.text.entities import TITLES
from encoder.text.tokens import word_set as _words

PLACE_MARK = "^in"
PERSON_MARK = "^p"
ORG_MARK = "^o"
# A place that is a country: what a state has ("Greece's government", "Kenya's finance
# ministry"), beside PLACE_MARK. A "Which town ...?" question weighs such a place down.
COUNTRY_MARK = "^cy"
MARKS = (PLACE_MARK, PERSON_MARK, ORG_MARK, COUNTRY_MARK)


LOCATIVE = _words("in near across throughout outside inside around")
# "a stake in Halden", "shares in Vestlys": "in" before a company.
_OWNED_IN = _words("stake stakes share shares investment investments invested investors interest")
# "in western Kenya", "across northern Chile": a direction between the preposition and a place.
_DIRECTIONS = _words(
    """
    northern southern eastern western central north south east west northeast northwest
    southeast southwest north-east north-west south-east south-west rural coastal
    """
)
# Where things go and come from: "heading to Ulsan", "sent from Portugal", "flew to Oslo".
_MOTION = _words(
    """
    heading headed bound travelled traveled flew fly flown moved returned return sent shipped
    exported imported arrived arrive evacuated fled deployed
    """
)
# "<noun> of X" where X can only be a place: "the port of Ulsan", "the mayor of Marseille".
_PLACE_OF = _words(
    """
    port city town village province region state capital outskirts mayor governor residents
    citizens north south east west centre center island coast county district suburbs
    streets people
    """
)
# "X's <noun>" where X is a country or a town: "Greece's government", "Chile's economy".
_PLACE_OWNS = _words(
    """
    capital government parliament economy army military border borders coast coastline
    president prime premier ministry minister ministers navy police population central
    foreign interior finance health regulator regulators court courts highest supreme
    constitutional electoral watchdog
    """
)
# ... and its public bodies after one word that says which: "Indonesia's medicines
# regulator", "Kenya's finance ministry", "Peru's electoral court".
_PLACE_BODIES = _words("government parliament ministry regulator court police army navy watchdog")
# ... and of these, what only a state has: "Chile's economy", "Peru's electoral court" is a
# country's; "Nairobi's police" may be a city's.
_STATE_OWNS = _words(
    """
    government parliament economy army military president prime premier ministry minister
    ministers navy foreign interior regulator regulators supreme constitutional electoral
    watchdog
    """
)
_STATE_BODIES = (_PLACE_BODIES - _words("court police")) | _words("minister ministers")
# What news puts before a person's name: the titles and roles the entity finder keeps out of
# names ("analyst Orla Keane", "striker Rui Duarte"), and these.
ROLES = TITLES | _words(
    """
    analysts grandmaster player players seed champion rider driver cyclist runner swimmer
    teammate official farmer worker resident painter pilot boss investigator auditor
    accountant candidate dean student chairperson treasurer negotiator head
    """
)
# What news puts before an organisation's name ("rival bidder Vestlys", "wind developer
# Solvind", "satellite broadband provider Orbita Link"), and the nouns of a "Which <noun>"
# question that asks for an organisation ("Which bank ...?", "Which law firm ...?").
ORG_NOUNS = _words(
    """
    bank party firm company companies group hospital institute fund agency union club team
    council court ministry museum university maker operator airline insurer reinsurer lender
    bidder rival developer start-up startup network newspaper broadcaster authority regulator
    association federation carrier shipyard shipbuilder consortium brewery brewer committee
    commission board government department organisation organization charity foundation
    publisher exchange supplier manufacturer retailer miner producer exporter contractor
    brokerage consultancy provider utility watchdog body conglomerate drugmaker carmaker
    automaker chain subsidiary investor owner studio journal distributor squad police force
    magazine label orchestra laboratory funder unit office bureau directorate inspectorate
    secretariat tribunal
    """
)
# "Halden's shares", "Halden's board": what a company owns.
_ORG_OWNS = _words(
    """
    shares shareholders board stock profit profits revenue revenues subsidiary subsidiaries
    chief executive chairman directors plant plants factory factories stores headquarters
    bid offer takeover customers employees staff products
    """
)
# A name holding one of these words names an organisation ("Fjord Bank", "Halden Group",
# "Health Watch Nigeria", "Supreme Court"), whatever the text says around it: the head nouns
# by which the entity finder groups a company's short form with its name, and these.
ORG_HEADS = entities.ORG_HEADS | _words(
    """
    airline alliance board clinic court department exchange festival forum laboratories llc
    ministry museum network office organisation organization press register resources
    school services telecoms underwriting ventures watch
    academy administration army assembly brigade bureau cabinet cartel church coalition
    commissioner conservancy conservatory consortium constabulary cooperative co-op corps
    directorate embassy enterprise enterprises gendarmerie guild inspectorate institution
    militia navy orchestra parliament philharmonic police polytechnic regiment secretariat
    seminary senate service syndicate treasury tribunal utility utilities waterworks
    airways brewing brewery breweries cargo catering chemicals construction consulting
    developments distillery engineering lines mills properties ratings realty software
    solutions textiles trading transit transport
    banco compañía compania construtora constructora cooperativa empresa fundación fundacion
    fundação grupo industrias instituto sindicato sociedad asociación federación
    gesellschaft stiftung verein werke société compagnie groupe banque srl bv oy pty pte bhd
    tbk
    cycling racing motorsport team hospitality partnership
    servicios serviços servizi seguros assicurazioni assurances versicherung verzekeringen
    medios logística logistica transportes energie gruppe gruppo banca società azienda
    fondazione associazione consorzio istituto università universidad universidade
    université universität universiteit uniwersytet uniwersytetu spółka fundacja
    stowarzyszenie związek instytut samorząd verband stichting vereniging syndicat
    fédération holding sanayi ticaret
    """
)
# "an analyst at Liffey Stockbrokers", "chief executive of Halden": where a person works.
_WORKS_AT = _words(
    """
    executive executives chairman chairwoman chief director directors founder cofounder head
    ceo cfo coo cto spokesman spokeswoman spokesperson analyst analysts economist lawyer
    lawyers owner boss manager managers shareholder shareholders employee employees staff
    engineer engineers researcher researchers partner partners
    """
)
_PERSON_PRONOUNS = _words("he she his her him hers himself herself")
_ORG_PRONOUNS = _words("it its itself")
PRONOUN_REACH = 6


def mention_marks(tokens: Sequence[str], i: int) -> list[str]:
    """What the words around the mention at `i` say its name is: PLACE_MARK (and
    COUNTRY_MARK), PERSON_MARK, ORG_MARK, or nothing."""
    before = tokens[i - 1] if i > 0 else ""
    before2 = tokens[i - 2] if i > 1 else ""
    after = tokens[i + 1 : i + 4]
    marks = []
    if (
        (before in LOCATIVE and not (before == "in" and before2 in _OWNED_IN))
        or (before in _DIRECTIONS and before2 in LOCATIVE)
        or (before in ("to", "from") and before2 in _MOTION)
        or (before == "of" and before2 in _PLACE_OF)
        or (len(after) > 1 and after[0] == "," and after[1] in entities.MONTHS)  # a dateline
        or after[:2] == ["-", "based"]
        or _owns(after, _PLACE_OWNS, _PLACE_BODIES)
    ):
        marks.append(PLACE_MARK)
    if _owns(after, _STATE_OWNS, _STATE_BODIES):
        marks.append(COUNTRY_MARK)
    pronoun = _next_pronoun(tokens, i)
    if (
        before in ROLES
        or pronoun == PERSON_MARK
        or (len(after) > 2 and after[0] == "," and after[1].isdigit() and after[2] == ",")
        or after[:2] == [",", "who"]
        or _role_appositive(tokens, i)
    ):
        marks.append(PERSON_MARK)
    if (
        before in ORG_NOUNS
        or (before in ("at", "of") and before2 in _WORKS_AT)
        or (pronoun == ORG_MARK and PERSON_MARK not in marks)
        or after[:2] == [",", "which"]
        or _acronym_after(after)
        or _owns(after, _ORG_OWNS)
    ):
        marks.append(ORG_MARK)
    return marks


def _owns(
    after: Sequence[str], nouns: frozenset[str], bodies: frozenset[str] = frozenset()
) -> bool:
    """Whether the words after a name say it has one of `nouns` ("Greece's government") or,
    one word on, one of `bodies` ("Indonesia's medicines regulator")."""
    if after[:1] != ["'s"]:
        return False
    return (len(after) > 1 and after[1] in nouns) or (len(after) > 2 and after[2] in bodies)


def _acronym_after(after: Sequence[str]) -> bool:
    """ "the Hellenic Spectrum Authority (HSA)": a name followed by its own short form in
    brackets (one entity, so one marker) is an organisation's."""
    return len(after) > 2 and after[0] == "(" and after[1].startswith("@entity") and after[2] == ")"


def _next_pronoun(tokens: Sequence[str], i: int) -> str | None:
    """PERSON_MARK when he/she/his/her follows the mention within PRONOUN_REACH tokens before
    another name or the sentence's end, ORG_MARK for it/its, else None."""
    other_noun = False  # "Ferri said the federation would review its rules": its, theirs
    for t in tokens[i + 1 : i + 1 + PRONOUN_REACH]:
        if t.startswith("@entity") or t in (".", "!", "?"):
            return None
        if t in _PERSON_PRONOUNS:
            return PERSON_MARK
        if t in _ORG_PRONOUNS:
            return None if other_noun else ORG_MARK
        other_noun = other_noun or t in ("the", "a", "an")
    return None


def _role_appositive(tokens: Sequence[str], i: int) -> bool:
    """ "Orla Keane, an analyst at ...", "Tiago Sousa, a retired navy admiral,": a role
    within a few words of an appositive after the name."""
    if tokens[i + 1 : i + 2] != [","] or tokens[i + 2 : i + 3] not in (["a"], ["an"], ["the"]):
        return False
    for t in tokens[i + 3 : i + 7]:
        if t in ROLES:
            return True
        if t in (",", ".", "@placeholder") or t.startswith("@entity"):
            return False
    return False


# A name ending in one of these names a place or a feature ("Tribhuvan International
# Airport", "Tagus River"); one starting with one of _EVENTS an event ("Cyclone Adjali"):
# never who did something. A name that holds an ORG_HEADS word is an organisation's ("Rift
# Valley Brewing", "Suez Canal Authority").
PLACE_HEADS = _words(
    """
    airport station port harbour harbor bridge street road avenue square river lake sea
    ocean bay gulf strait mountain mountains mount valley island islands peninsula desert
    forest park canal coast province region county district city
    """
)
_EVENTS = _words("cyclone typhoon hurricane storm tropical earthquake")
# The everyday nouns names are made of ("court", "bank", "river"): a question's "Which court
# ...?" is no short form of the Bombay High Court (encoder.text.anonymise.query_matcher).
NAME_NOUNS = ORG_HEADS | ORG_NOUNS | PLACE_HEADS


def names_place(name: Sequence[str]) -> bool:
    """Whether a name's words (lower-cased, in order) say it is a place's, a feature's or an
    event's."""
    if not name or names_organisation(frozenset(name)):
        return False
    return name[-1] in PLACE_HEADS or name[0] in _EVENTS


def names_organisation(name_words: frozenset[str]) -> bool:
    """Whether a name's own words (lower-cased) say it is an organisation's."""
    return not name_words.isdisjoint(ORG_HEADS)
