"""Entities as people mean them: whole multi-word names, acronyms, titles kept out.

One finder serves both the data builder and the service, so a reader is never served entities
of a kind it was not trained on. It is a heuristic over capitalisation (about 10k news
paragraphs a second); docs/DATA.md reports its precision and recall on hand-labelled text.

    "Prime Minister Theresa May met UN officials. May said ..."
        -> Theresa May (2 mentions: "May" alone is her), UN (1)

Rules, in the order they apply:
- a name is a run of capitalised words or acronyms, joined by hyphens, initials ("George W.
  Bush") and lower-case connectors inside names ("Bank of England", "Ludwig van Beethoven");
- titles split runs and stay out of names ("US President George Bush" -> US, George Bush); a
  nationality before a title goes too ("Indian Prime Minister Vajpayee" -> Vajpayee), and so
  does an office's "of X and Y" ("Minister of Energy and Mines Bounthavy Sisouphanh"); a title
  ending a run after "of the" is an office's name ("Office of the Prosecutor General");
- a run's first word at the start of a sentence is a name only if the text never writes it in
  lower case and it is not a common sentence opener; a one-word name met only at sentence
  starts must recur;
- months and weekdays are not names on their own, nor at the start of a run ("Monday Blair");
- the last word of a multi-word name, alone, is that name ("Musharraf said"), when no other
  name shares it and it is no organisation's head noun ("Energy" is not Brekke Energy); an
  acronym of a name's initials is that name ("UN" after "United Nations"); an
  company's or party's name without its head noun is that name ("Halden" for "Halden
  Group", "Van Rijn" for "Van Rijn Capital");
- a name never runs across a line break: a headline without a full stop and the dateline
  under it ("... Halden Group\nOSLO, March 14 -") are two names, and a dateline's city in
  capitals is written as a name ("OSLO" -> "Oslo").
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from encoder.text.name_kinds import name_kind, person_nouns
from encoder.text.tokens import TOKEN_RE
from encoder.text.tokens import word_set as _words

_CONNECTORS = _words(
    "of for the de van von der den da di du do la le del della des bin ibn al el y dos das ter"
)
# Words that name an office or an honorific: they split a run and stay out of the name.
# Words that stand before a person's name (and say it is one: encoder.text.support).
TITLES = _words(
    """
    mr mrs ms miss mx dr sir dame lady lord madam madame master messrs esq
    prefect headmaster headmistress
    president presidents minister ministers secretary premier chancellor senator sen rep
    representative congressman congresswoman governor gov mayor ambassador envoy spokesman
    spokeswoman spokesperson chairman chairwoman chair chief commissioner director
    king queen prince princess duke duchess earl baron count countess emperor empress sultan
    sheikh emir ayatollah pope cardinal bishop archbishop rev reverend father pastor rabbi imam
    judge justice justices magistrate attorney professor prof coach speaker leader executive whip
    colonel col captain capt lieutenant lt sergeant sgt corporal admiral commander commodore
    gen brigadier marshal major inspector detective constable officer agent
    mp mep msp mla ceo cfo cto coo councillor councilman councilwoman lawmaker legislator
    librarian lawyer solicitor barrister prosecutor sheriff founder cofounder curator
    biologist chemist physicist economist scientist researcher historian analyst engineer
    architect designer journalist reporter editor photographer author novelist poet artist
    singer actor actress producer manager striker midfielder defender goalkeeper winger
    forward captain chef nurse doctor teacher headteacher principal activist campaigner
    investor entrepreneur veteran rookie pitcher quarterback trainer referee umpire
    critic commentator columnist writer filmmaker strategist consultant adviser advisor
    broker trader banker diplomat
    frenchman frenchwoman englishman englishwoman irishman irishwoman scotsman scotswoman
    welshman welshwoman dutchman dutchwoman briton spaniard swede dane
    navigator rector superintendent administrator ecologist
    comptroller td
    """
)
# Words that qualify an office: part of a title phrase when a title follows them.
_TITLE_MODIFIERS = _words(
    """
    prime foreign home deputy vice acting interim former defence defense finance treasury
    interior health education trade justice opposition shadow state federal senior chief
    assistant associate executive general junior first lieutenant attorney surgeon grand crown
    labor labour conservative liberal democratic republican majority minority
    culture energy transport infrastructure environment fisheries mining agriculture economy
    industry development communications digital housing tourism sport sports science
    """
)
_MONTH_ABBREVIATIONS = _words("jan feb mar apr jun jul aug sep sept oct nov dec")
MONTHS = _MONTH_ABBREVIATIONS | _words(
    "january february march april may june july august september october november december"
)
_CALENDAR = MONTHS | _words(
    """
    monday tuesday wednesday thursday friday saturday sunday
    mondays tuesdays wednesdays thursdays fridays saturdays sundays
    mon tue tues wed thu thur thurs fri sat sun
    """
)
# Capitalised at a sentence's start, or by convention, but not names.
_NOT_NAMES = _words(
    """
    a an the and or but if of in on at to for from by with as is it its he she his her him they
    them their we us our you your i me my mine this that these those there here then than so
    no not nor yes oh ah well what which who whom whose when where why how all any some one
    every each both such very much many more most do does did have has had be been was were
    are am will would shall should can could may might must let upon after before while though
    although because since until unless indeed perhaps however yet still now only even again
    ever never also just meanwhile yesterday today tonight tomorrow earlier later last next
    during despite among amid under over about into through against between without within
    according asked said says told officials police both another other others many several
    few most some such dear good poor chapter volume book part god heaven aye ay amen
    once twice thus instead soon first firstly second finally next often sometimes always former
    usually already almost nearly together otherwise therefore hence besides nevertheless
    nonetheless certainly surely besides elsewhere everyone everything nobody nothing someone
    something anyone anything none neither either whether whatever whoever whenever wherever
    sir madam yes no please thank thanks hello goodbye alas hush come go look see
    """
)
# Nationalities and other adjectives of place or faith: not a name on their own.
DEMONYMS = _words(
    """
    american british english scottish welsh irish australian canadian indian pakistani chinese
    japanese korean french german italian spanish portuguese dutch belgian swiss austrian
    swedish norwegian danish finnish polish russian ukrainian greek turkish israeli palestinian
    arab arabic iraqi iranian afghan syrian lebanese egyptian saudi jordanian kuwaiti yemeni
    african european asian western eastern northern southern soviet mexican brazilian
    argentine argentinian chilean colombian cuban indonesian malaysian thai vietnamese
    filipino bangladeshi nepalese tibetan kenyan nigerian ethiopian somali sudanese zimbabwean
    muslim christian jewish catholic protestant islamic hindu sikh buddhist
    republican democrat democratic labour labor tory liberal conservative qatari czech korean
    emirati bahraini omani slovak serbian croatian bosnian hungarian romanian bulgarian
    flemish walloon basque catalan kazakh uzbek georgian armenian icelandic estonian latvian
    lithuanian peruvian venezuelan moroccan algerian tunisian libyan ghanaian scottish maori
    """
)


@functools.cache
def is_demonym(word: str) -> bool:
    """Whether a lower-case word is an adjective of place (or faith): one of `DEMONYMS`, or a
    word that the name table (encoder.text.name_kinds) finds a place's adjective by its
    ending, "Transylvanian" of Transylvania, "Sudanese" of Sudan, "Chilean" of Chile: its
    stem a place's name of four letters or more, and the word itself no person's name
    ("Lucian" is one, though Lucia is a place)."""
    if word in DEMONYMS:
        return True
    stems = _DEMONYM_STEMS.get(word[-3:], lambda w: ())(word)
    if not stems or name_kind([word]).person >= _PERSON_NAME:
        return False
    for stem in stems:
        kind = name_kind([stem])
        if len(stem) >= 4 and kind.place >= _PLACE_NAME and kind.place > kind.person:
            return True
    return False


# The names a place's adjective may come from, by its last three letters.
_DEMONYM_STEMS = {
    "ian": lambda w: (w[:-1], w[:-3], w[:-3] + "a", w[:-3] + "y"),  # Bavaria, Brazil, Canada
    "ean": lambda w: (w[:-1], w[:-2]),  # Korea, Chile
    "ese": lambda w: (w[:-3], w[:-3] + "a"),  # Sudan, Malta
}
_PERSON_NAME = 0.3  # a word the table gives at least this person's probability is a name
_PLACE_NAME = 0.5


# Common words that begin place names: at a sentence start they stay ("New Zealand's ...").
_PLACE_OPENERS = _words(
    "new south north east west great united sri hong san santa los las el saint"
)
# Head nouns of organisations' names: "Brekke Energy" never goes by "Energy" alone.
ORG_HEADS = _words(
    """
    group energy shipping rail railways airlines airways air bank banks capital finance
    minerals mining minera metals oil gas petroleum power holdings investments partners securities
    markets diagnostics pharmaceuticals pharma electronics technologies technology systems
    motors media pictures films studios entertainment foods industries corporation corp inc
    ltd plc co company companies trust fund party council hospital institute university
    college foundation association agency authority commission committee union federation
    society league club insurance insurers logistics freight telecom communications labs
    kraft asa ag sa gmbh ab nv spa technik
    """
)
# ... and those of companies and parties, which go by the rest of their name ("Halden" for
# "Halden Group"); not those often named after a place ("Oxford University", "Singapore
# Airlines"), where the rest is the place.
_SHORTENED_HEADS = ORG_HEADS - _words(
    "airlines airways air council hospital institute university college foundation "
    "association agency authority commission committee union federation society league club"
)
_NOT_ACRONYMS = _words("I A OK TV AM PM AD BC II III IV VI VII VIII IX XI XII GMT")
_SENTENCE_END = frozenset({".", "!", "?"})
_OPENERS = frozenset({'"', "'", "(", "[", "“", "‘", "-", "—", "–", ":", ";"})
_DASHES = frozenset({"-", "—", "–"})
_DOTTED = frozenset({"mr", "mrs", "ms", "dr", "st", "messrs", "rev", "col", "capt", "gen", "lt"})


@dataclass(frozen=True)
class Entity:
    name: str  # as first written in full ("Pervez Musharraf")
    mentions: int  # how often the name or an alias occurs
    aliases: tuple[str, ...] = ()  # other surfaces that mean it ("Musharraf", "UN")


@dataclass(frozen=True)
class _Token:
    text: str
    start: int
    end: int
    breaks: int = 0  # line breaks between the token before and this one

    @property
    def line_start(self) -> bool:
        return self.breaks > 0


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    end = 0
    for m in TOKEN_RE.finditer(text):
        tokens.append(_Token(m.group(), m.start(), m.end(), text.count("\n", end, m.start())))
        end = m.end()
    return tokens


def _is_acronym(t: str) -> bool:
    return 2 <= len(t) <= 6 and t.isalpha() and t.isupper() and t not in _NOT_ACRONYMS


def _is_capitalised(t: str) -> bool:
    # "McDonald", "Musharraf"; not "EMMA" (all caps is an acronym or shouting), not "I", not a
    # plural acronym ("MPs", "CEOs").
    if len(t) < 2 or not t[0].isupper() or not t.isalpha() or t.isupper():
        return False
    return not (len(t) > 2 and t[-1] == "s" and t[:-1].isupper())


def _is_name_word(t: str) -> bool:
    return _is_capitalised(t) or _is_acronym(t)


def _sentence_starts(tokens: Sequence[_Token]) -> set[int]:
    """Indices of tokens that begin a sentence (after . ! ? and any opening quote, and after
    a dateline's dash: "OSLO, March 14 - The bank ...")."""
    starts: set[int] = set()
    at_start = True
    dateline = False  # between a dateline's city and its dash
    for i, tok in enumerate(tokens):
        t = tok.text
        if tok.line_start and _is_line_of_its_own(tokens, i):
            at_start = True  # a headline has no full stop: the line under it starts anew
            dateline = _is_dateline(tokens, i)
        if dateline and t in _DASHES:
            at_start, dateline = True, False
        if at_start and t not in _OPENERS:
            starts.add(i)
            at_start = False
        if t in _SENTENCE_END:
            prev = tokens[i - 1].text if i else ""
            # "Mr. Blair", "George W. Bush": the dot ends no sentence.
            at_start = not (t == "." and (prev.lower() in _DOTTED or _is_initial(prev)))
    return starts


def _is_line_of_its_own(tokens: Sequence[_Token], i: int) -> bool:
    """Whether the line break before tokens[i] ends a line that is not a wrapped sentence:
    a blank line comes between, or the new line is a dateline ("OSLO, March 14 -")."""
    return tokens[i].breaks > 1 or _is_dateline(tokens, i)


def _is_dateline(tokens: Sequence[_Token], i: int) -> bool:
    """Whether tokens[i] starts a line with a city in capitals and a comma: "OSLO, March"."""
    j = i
    while j < len(tokens) and j - i < 3 and tokens[j].text.isalpha() and tokens[j].text.isupper():
        j += 1
    return tokens[i].line_start and j > i and j < len(tokens) and tokens[j].text == ","


def _is_initial(t: str) -> bool:
    return len(t) == 1 and t.isalpha() and t.isupper()


# Names of the form "X of Y" have one of these heads; a person "of" a place is two names.
_OF_HEADS = _words(
    """
    bank university house church department ministry office institute college school museum
    academy council court board bureau commission committee league union federation
    association society party republic kingdom states city port bay gulf sea isle isles island
    islands cape lake mount duke duchess earl prince princess queen king bishop archbishop
    order army navy corps chamber hall tower palace battle siege treaty bill act declaration
    festival tournament cup championship organisation organization agency authority centre
    center fund foundation trust company bill secretary minister community states group
    administration commission office friends horn line association council society service
    services agency board bureau institute laboratory laboratories library hospital museum
    """
)


def _glued(a: _Token, b: _Token) -> bool:
    return a.end == b.start


def _name_start(tokens: Sequence[_Token], i: int) -> bool:
    """Whether a name can start at token i: a name word, an initial ("W."), or "O'Brien"."""
    t = tokens[i].text
    if _is_name_word(t):
        return True
    if not _is_initial(t) or i + 1 >= len(tokens):
        return False
    nxt = tokens[i + 1]
    if nxt.text.startswith("'") and nxt.text[1:2].isupper() and _glued(tokens[i], nxt):
        return True
    return nxt.text == "." and i + 2 < len(tokens) and _name_start(tokens, i + 2)


# One romanised Korean or Chinese syllable: the lower-case half of a hyphenated given name.
_SYLLABLE = re.compile(
    r"(?:ch|kk|tt|pp|ss|jj|[bcdghjklmnprstwy])?"
    r"(?:wae|yae|yeo|ae|eo|eu|oe|ui|wa|wo|we|wi|ya|ye|yo|yu|oo|ee|a|e|i|o|u)(?:ng|[nklmptg])?"
)
_NOT_SYLLABLES = _words("run up on man men son")


def _hyphen_connector(tokens: Sequence[_Token], j: int) -> bool:
    """Whether tokens[j] ("-") opens a place name's lower-case middle between hyphens, one
    short word before a capitalised one: "Boulogne-sur-Mer", "Saint-Germain-des-Prés"."""
    if j + 3 >= len(tokens):
        return False
    middle, dash, last = tokens[j + 1], tokens[j + 2], tokens[j + 3]
    return (
        middle.text.isalpha()
        and middle.text.islower()
        and len(middle.text) <= 4
        and dash.text == "-"
        and _glued(middle, dash)
        and _glued(dash, last)
        and _is_capitalised(last.text)
    )


# What an apostrophe glued to a name's word may begin that is no part of the name: a
# possessive ("Anna's") or a contraction ("Tom'll").
_CLITICS = _words("s re ll ve d t m")


def _glued_apostrophe(prev: _Token, t: _Token) -> bool:
    """Whether `t` continues the name word before it across an apostrophe: "Kerloc'h",
    "Ma'ruf"; not "Anna's"."""
    return (
        t.text.startswith("'")
        and len(t.text) > 1
        and t.text[1:].islower()
        and t.text[1:] not in _CLITICS
        and _glued(prev, t)
        and _is_name_word(prev.text)
    )


def _given_name_end(tokens: Sequence[_Token], start: int, j: int) -> bool:
    """Whether tokens[j] ("-") joins the halves of a hyphenated East Asian given name after a
    family name: "Park Ji-hoon" (a run of two short capitalised words, then one syllable in
    lower case that no hyphen follows), not "Sinn Fein-run" or "Kim Jong-un-led"."""
    given, half = tokens[j - 1].text, tokens[j + 1].text
    return (
        j - 1 > start
        and len(tokens[j - 2].text) <= 5
        and len(given) <= 5
        and _is_capitalised(given)
        and _SYLLABLE.fullmatch(half) is not None
        and half not in _NOT_SYLLABLES
        and not (
            j + 2 < len(tokens)
            and tokens[j + 2].text == "-"
            and _glued(tokens[j + 1], tokens[j + 2])
        )
    )


def _runs(tokens: Sequence[_Token]) -> list[tuple[int, int]]:
    """[start, end) token spans of capitalised words with their joiners, before any splitting."""
    runs: list[tuple[int, int]] = []
    i, n = 0, len(tokens)
    while i < n:
        if not _name_start(tokens, i):
            i += 1
            continue
        j = i + 1
        while j < n and not tokens[j].line_start:  # a headline and its dateline are two
            t, prev = tokens[j], tokens[j - 1]
            nxt_starts = j + 1 < n and _name_start(tokens, j + 1)
            if _name_start(tokens, j) or (t.text.startswith("'") and _is_initial(prev.text)):
                j += 1  # a name word, an initial, "O" + "'Brien"
            elif _glued_apostrophe(prev, t):
                j += 1  # "Kerloc'h": a letter after an apostrophe inside a name
            elif t.text == "-" and j + 1 < n and _glued(prev, t) and _glued(t, tokens[j + 1]):
                if _given_name_end(tokens, i, j):
                    j += 2  # "Park Ji-hoon", "Moon Jae-in", "Tsai Ing-wen"
                    continue
                if _hyphen_connector(tokens, j):
                    j += 3  # "Boulogne-sur-Mer", "Chassagne-le-Haut", "Stratford-upon-Avon"
                    continue
                if not (nxt_starts or tokens[j + 1].text.isdigit()):
                    break
                j += 1  # "Al-Qaeda", "Jean-Pierre", "Aurora-2"
            elif t.text.isdigit() and prev.text == "-":
                j += 1
            elif (
                t.text == "."
                and nxt_starts
                and (_is_initial(prev.text) or prev.text.lower() in _DOTTED)
            ):
                j += 1  # "George W. Bush", "Dr. John Smith"
            elif (
                t.text == "'s"
                and nxt_starts
                and _glued(prev, t)
                and _institution(tokens, j + 1)
                and not _is_place(tokens[i:j])
            ):
                j += 1  # "St Mary's Hospital"; not "Kenya's Faith Kipyegon", "Spain's Court"
            elif (
                t.text == "'"
                and nxt_starts
                and _glued(prev, t)
                and prev.text.endswith("s")
                and _institution(tokens, j + 1)
            ):
                j += 1  # "Irish Airline Pilots' Association"
            elif (joined := _connector_end(tokens, i, j)) > j:
                j = joined  # "Bank of England", "Ludwig van der Berg", "Food and Drug ..."
            else:
                break
        runs.append((i, j))
        i = j
    return runs


# How much a possessive's words must read as a place's to split it from the institution after
# it: countries and states read 0.72-0.98 ("Spain", "South Africa"), "Hudson" 0.56 ("Hudson's
# Bay Company" is one name).
PLACE_POSSESSIVE = 0.7


def _is_place(tokens: Sequence[_Token]) -> bool:
    """Whether a name's words read more as a place's than a person's (encoder.text.name_kinds):
    a country's possessive before an institution is two names ("Spain's Supreme Court")."""
    words = [t.text.lower() for t in tokens if t.text.isalpha()]
    kind = name_kind([w for w in words if w not in _NOT_NAMES and w not in _CONNECTORS])
    return kind.place >= PLACE_POSSESSIVE and kind.place > kind.person


def _connector_end(tokens: Sequence[_Token], start: int, j: int) -> int:
    """Where a run continues after lower-case joiners at tokens[j:], or j when it does not.

    "van der", "de la" and the like join always; "of" (with "the") after one word or an
    institution ("Line of Control", "Office of the State Comptroller"), not after a person
    ("John O'Brien of Sydney" is two names); "and"/"&" only into an institution's name
    ("Food and Drug Administration").
    """
    n, k = len(tokens), j
    while k < n and tokens[k].text in _CONNECTORS:
        k += 1
    if k == j and tokens[j].text not in ("and", "&"):
        return j
    if k == j:
        k += 1  # "and" / "&"
    if tokens[j].text == "the":
        return j  # "the" only inside "of the"
    if k >= n or not _name_start(tokens, k):
        return j
    head = tokens[j - 1].text.lower()
    joiner = tokens[j].text
    if joiner == "of":
        # after one word, also after "The" and one word ("The Brotherhood of ... Workers")
        one_word = j - start == 1 or (j - start == 2 and tokens[start].text == "The")
        if one_word:
            return k
        return k if head in _OF_HEADS and head not in _OF_PLACE_AFTER else j
    if joiner == "for":
        return k if head in _OF_HEADS else j
    if joiner == "and":
        return k if _institution(tokens, k) else j
    return k


# A company's name is not "of" a place after it: "Al Noor Hospitality Group of Dubai",
# "Hangang Repertory Company of Seoul" are the company and the city ("Group of Seven" and
# "Company of Archers", one word before "of", still join).
_OF_PLACE_AFTER = _words("group company")


def _institution(tokens: Sequence[_Token], k: int) -> bool:
    """Whether the capitalised words from tokens[k] end in an institution's head noun."""
    end = k
    while end < len(tokens) and _name_start(tokens, end):
        end += 1
    return end > k and tokens[end - 1].text.lower() in _OF_HEADS


# Titles that are surnames too ("Mervyn King"): kept at the end of a run.
_SURNAMES = _words(
    "king queen prince major bishop marshal cardinal judge chancellor earl duke baron count "
    "mayor chair agent father master pope sheikh hunter"
)


def _title_end(words: Sequence[str], i: int) -> int:
    """End of a title phrase starting at words[i] (modifiers, a title, "of State"), else i."""
    j = i
    while j < len(words) and words[j] in _TITLE_MODIFIERS:
        j += 1
    if j < len(words) and words[j] in TITLES:
        j += 1
        # "Secretary of State", "Minister of Defence": the "of X" belongs to the office.
        if j + 1 < len(words) and words[j] == "of" and words[j + 1] in _OFFICE_OBJECTS:
            j += 2
            if j < len(words) and words[j] == "affairs":  # "Minister of Foreign Affairs"
                j += 1
        # "Vice President", "Secretary General", "Director-General"
        while j < len(words) and (words[j] in TITLES or words[j] in ("general", "-")):
            j += 1
        return j
    # "Attorney General": modifiers that end in "general"; "Chief Executive": a modifier that
    # is an office itself.
    if j > i + 1 and words[j - 1] == "general":
        return j
    return j if j > i and words[j - 1] in TITLES else i


_OFFICE_OBJECTS = _words(
    """
    state defence defense justice health education the interior finance foreign home
    agriculture transport labour labor trade energy environment culture tourism economy
    industry commerce housing mines water forestry fisheries planning works
    """
)


def _pieces(tokens: Sequence[_Token], span: tuple[int, int]) -> list[tuple[int, int]]:
    """Split a run at titles (dropped) and trim joiners off the ends of each piece."""
    i, end = span
    words = [t.text.lower() for t in tokens[i:end]]
    pieces: list[tuple[int, int]] = []
    k, piece_start = 0, 0
    while k < len(words):
        title_end = _title_end(words, k)
        title_end = title_end if title_end > k else _office_before_name(words, k) or k
        # A title only where a name follows it ("King Abdullah"), not "Mervyn King"; a run
        # that ends in a title that is never a surname drops it ("Yesterday Dr").
        follows = title_end < len(words) and words[title_end] != "."
        if title_end > k and _hyphen_joined(words, k):
            k = title_end  # "Örme-Sen", a union's name: no title ("Sen") after a hyphen
            continue
        if title_end > k and words[title_end : title_end + 1] == ["'s"]:
            k = title_end  # "Public Defender's Office": a title owning an office is its name
            continue
        if title_end == len(words) and words[max(0, k - 2) : k] == ["of", "the"]:
            break  # "Office of the President": an office named by its title, no person's
        if title_end > k and (
            follows or title_end - k == len(words) or words[title_end - 1] not in _SURNAMES
        ):
            if k > piece_start:
                pieces.append((i + piece_start, i + k))
            # A nationality just before a title is part of it: "Indian Prime Minister".
            last = pieces[-1] if pieces else None
            if (
                last
                and last[1] == i + k
                and last[1] - last[0] == 1
                and is_demonym(tokens[last[0]].text.lower())
            ):
                pieces.pop()
            k = piece_start = title_end
            continue
        k += 1
    if piece_start < len(words):
        pieces.append((i + piece_start, end))
    trimmed = []
    for a, b in pieces:
        while a < b and _is_joiner(tokens[a].text):
            a += 1
        # A possessive before a title ends its piece: "Poland's Minister of ..." names Poland.
        while b > a and (_is_joiner(tokens[b - 1].text) or tokens[b - 1].text == "'s"):
            b -= 1
        if _nationality_before_person(tokens, a, b):
            a += 1
        if _office_after(tokens, a, b):
            a += 1  # "Secretary of State for Culture Marta Lobo": the office's last word
        if a < b:
            trimmed.append((a, b))
    return trimmed


# Offices that are a title only before a name: "Auditor-General Julie Hannaford"; alone they
# are the office ("The Auditor-General said", "Office of the Public Auditor").
_OFFICES_BEFORE_NAMES = _words("auditor")


def _office_before_name(words: Sequence[str], k: int) -> int:
    """End of such an office ("auditor", "auditor-general") at words[k] with a name after it,
    else 0."""
    if words[k] not in _OFFICES_BEFORE_NAMES:
        return 0
    j = k + 1
    while j < len(words) and words[j] in ("-", "general"):
        j += 1
    return j if j < len(words) and words[j].isalpha() else 0


_GIVEN_NAME = 0.5  # a person's probability a given name after a nationality reaches


def _nationality_before_person(tokens: Sequence[_Token], a: int, b: int) -> bool:
    """Whether tokens[a:b] is a nationality and a person's full name: "ahead of Ecuadorian
    Luis Quishpe" names Luis Quishpe. A company's name may open with one ("Indian Oil
    Corporation", "Norwegian Air Shuttle"), a person's given name does not follow it there."""
    if b - a < 3 or not is_demonym(tokens[a].text.lower()):
        return False
    words = [t.text.lower() for t in tokens[a + 1 : b]]
    return name_kind(words[:1]).person >= _GIVEN_NAME and not any(w in ORG_HEADS for w in words)


def _office_after(tokens: Sequence[_Token], a: int, b: int) -> bool:
    """Whether tokens[a] ends an office before a name ("Minister for Health Ana Ruiz",
    "Secretary of State for Culture Marta Lobo", "Minister of Energy and Mines Bounthavy
    Sisouphanh"): a word an office is "of" or "for", after a title (or "State") and "for", or
    after "of", another such word and "and", with a name after it."""
    if b - a < 2 or a < 2 or tokens[a].text.lower() not in _OFFICE_OBJECTS:
        return False
    if tokens[a - 1].text == "and":
        return (
            a >= 3 and tokens[a - 2].text.lower() in _OFFICE_OBJECTS and tokens[a - 3].text == "of"
        )
    return tokens[a - 1].text == "for" and (
        tokens[a - 2].text.lower() in TITLES or tokens[a - 2].text == "State"
    )


def _hyphen_joined(words: Sequence[str], k: int) -> bool:
    """Whether words[k] ends a hyphenated word whose first part is no title or its modifier:
    "Örme-Sen" is one name; "Ex-President", "Vice-President" hold a title."""
    if k < 2 or words[k - 1] != "-":
        return False
    before = words[k - 2]
    return before.isalpha() and before not in _TITLE_PARTS


_TITLE_PARTS = TITLES | _TITLE_MODIFIERS | {"ex"}  # what may stand before a title's hyphen


def _is_joiner(t: str) -> bool:
    return t in _CONNECTORS or t in {".", "-"}


def _surface(text: str, tokens: Sequence[_Token], a: int, b: int) -> str:
    return " ".join(text[tokens[a].start : tokens[b - 1].end].split())


def _last_word(surface: str) -> str:
    return surface.split()[-1].lower()


def name_key(surface: str) -> str:
    """What makes two surfaces the same name: their lower-cased tokens."""
    return " ".join(t.lower() for t in TOKEN_RE.findall(surface))


def is_common_word(words: Sequence[str]) -> bool:
    """A one-word name that is also an everyday word ("May", "March", "Will")."""
    return len(words) == 1 and (words[0] in _NOT_NAMES or words[0] in _CALENDAR)


def _surname(name: str) -> str | None:
    """A multi-word name's family name, the alias it may go by alone: its last word, or the
    first before a hyphenated East Asian given name ("Park" of "Park Ji-hoon"); None for one
    word, or an "X of Y" ("Musharraf" is Pervez Musharraf; "England" is not the Bank of
    England)."""
    words = name.split()
    if len(words) < 2 or " of " in f" {name.lower()} " or words[-1].lower() in ORG_HEADS:
        return None
    given = words[-1].split("-")
    if len(words) == 2 and len(given) == 2 and given[1].islower():
        return words[0]
    return words[-1]


def _paternal_surname(name: str) -> str | None:
    """The first of a Spanish or Portuguese name's two family names, the one news uses alone
    ("Ortega" of "Juan Sebastián Ortega Ruiz", "Bustos" of "Eduardo Bustos Ferreyra"): the
    word before the last of a name of three or four plain capitalised words opening with a
    given name (the name table's), none of them an organisation's head word or a connector;
    None for any other name ("Minera Cotacachi Andina", "Green Riga Alliance")."""
    words = name.split()
    if not 3 <= len(words) <= 4 or not all(w.isalpha() and w.istitle() for w in words):
        return None
    if any(w.lower() in ORG_HEADS or w.lower() in _CONNECTORS for w in words):
        return None
    if name_kind([words[0].lower()]).person < GIVEN_NAME:
        return None
    return words[-2]


# How much a name's first word must read as a person's (encoder.text.name_kinds) for the word
# before its last to be a family name: the table is sure of few women's names ("Ana" 0.11,
# "Lucía" 0.28), so this only keeps out a place ("Riga" 0.01) and a plain word ("Green",
# "Connecting": not in the table, 0).
GIVEN_NAME = 0.1


def short_names(names: Sequence[str]) -> dict[int, str]:
    """index -> the short form a question may name it by: a person's last word ("Musharraf"
    for "Pervez Musharraf"), a company's name without its head noun ("Halden" for "Halden
    Group"), where no other name ends in, shortens to or is that form."""
    keys = {name_key(n) for n in names}
    forms: dict[int, str] = {}
    for i, name in enumerate(names):
        form = _surname(name) or _short_form(name)
        if form is not None:
            forms[i] = form
    owners: dict[str, list[int]] = {}
    for i, form in forms.items():
        owners.setdefault(name_key(form), []).append(i)
    return {
        idx[0]: forms[idx[0]] for key, idx in owners.items() if len(idx) == 1 and key not in keys
    }


def find_entities(text: str, *, min_count: int = 1) -> list[Entity]:
    """The names of `text`, whole, in order of first mention, with their aliases."""
    return _group(_mentions(text), min_count)


_HEADS = ORG_HEADS | _OF_HEADS
# What opens a sentence before "of" and a name, no name's word: "Shares of Berbice Agro rose",
# "Thousands of Fluvial workers", "Residents of Achumani said"
_COUNTED = _words("shares thousands hundreds dozens millions tens scores residents")
# A number alone is no name ("Six passengers ..."; "Three Gorges Dam" is more than one word)
_NUMBERS = _words(
    "two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty "
    "fifty sixty seventy eighty ninety hundred thousand million billion dozen"
)


def _mentions(text: str) -> list[tuple[int, str, bool]]:
    """(token index, surface, at a sentence start) of every name piece, in order."""
    tokens = _tokens(text)
    starts = _sentence_starts(tokens)
    lower_seen = {t.text for t in tokens if t.text.isalpha() and t.text.islower()}
    shouting = _shouting_sentences(tokens, starts)
    pieces = [p for span in _runs(tokens) for p in _pieces(tokens, span)]
    # Last words of multi-word names: alone they are that name, even where they look like a
    # common word ("May said ...") or start a sentence.
    surfaces = [_surface(text, tokens, a, b) for a, b in pieces]
    surnames = {_last_word(s) for s in surfaces if " " in s}
    found: list[tuple[int, str, bool]] = []  # (token index, surface, only sentence-initial)
    for (a, b), surface in zip(pieces, surfaces, strict=True):
        low = tokens[a].text.lower()
        initial = a in starts
        alias = " " not in surface and surface.lower() in surnames
        place = low in _PLACE_OPENERS and b - a > 1  # "New Zealand", "South Korea"
        common = low in _NOT_NAMES or low in lower_seen or low in _CALENDAR or low in _COUNTED
        # "Hospital Universitario La Marina said ...": an institution's head word opening a
        # name of three words or more is its first word, not an ordinary word before it
        institution = low in ORG_HEADS and b - a >= 3
        # "Marine Department Sabah said ...": a word before an institution's head word is its
        # name's ("Yesterday" is in no name: _NOT_NAMES)
        institution = institution or (
            b - a >= 2 and low not in _NOT_NAMES and tokens[a + 1].text.lower() in _HEADS
        )
        opener = initial and not alias and not place and not institution
        role = opener and _role_opener(tokens, a, b)
        if opener and (common or role):
            a += 1  # "The United Nations", "Yesterday Blair": the opener is no name
            # "Forecaster Elena Vlad", "Postmaster General Joseph Mutua": nor is a role
            while a < b and (_is_joiner(tokens[a].text) or (role and tokens[a].text == "General")):
                a += 1
            initial = False
        while a < b and tokens[a].text.lower() in _CALENDAR and not alias:
            if b - a > 1 and tokens[a].text.lower() in _MONTH_ABBREVIATIONS:
                break  # "Jan Haugen": a month is written short before a number, not a name
            a += 1  # "Monday Blair"; a month inside a name stays ("Theresa May")
        if a == b:
            continue
        surface = _surface(text, tokens, a, b)
        if surface.isupper() and _is_dateline(tokens, a):
            surface = surface.title()  # "OSLO, March 14 -": the city, Oslo
        if shouting.get(a, False) and surface.isupper():
            continue  # a heading in capitals, not a run of acronyms
        words = surface.lower().split()
        if len(words) <= 2 and all(w in DEMONYMS for w in words[-1].split("-")):
            continue  # "Indian", "South Korean", "Spanish-Portuguese": adjectives of place
        if len(words) == 1 and _before_its_noun(tokens, b) and is_demonym(words[0]):
            continue  # "the Transylvanian town", not "Meridian said" or "the Mediterranean"
        if len(words) == 1 and not alias:
            word = tokens[a].text
            if _is_acronym(word):
                if shouting.get(a, False):
                    continue
            elif words[0] in _NOT_NAMES or words[0] in lower_seen or words[0] in _NUMBERS:
                continue  # "Six passengers ...": a number alone is no name
            # "Kenya's ...", "Morocco, Spain and Portugal": a name even at a sentence start.
            initial = initial and not _named_by_context(tokens, b)
        found.append((a, surface, initial))
    return found


def _before_its_noun(tokens: Sequence[_Token], b: int) -> bool:
    """Whether the word at `b` reads as the noun an adjective before it describes: a plain
    lower-case word in the singular that is no verb a name is the subject of ("the Taiwanese
    company", "under Namibian law"; not "Meridian said", "Aegean plans", "Aegean cancelled")."""
    if b >= len(tokens):
        return False
    word = tokens[b].text
    return (
        word.isalpha()
        and word.islower()
        and not word.endswith(("s", "ed"))
        and word not in _NOT_NAMES
        and word not in _SUBJECT_VERBS
    )


# Verbs a name is often the subject of that are neither past forms in -ed nor in -s.
_SUBJECT_VERBS = _words(
    "said told made took gave won lost paid sold bought led ran grew fell rose left began "
    "became kept held met sent spent built brought thought found chose wrote"
)


def _role_opener(tokens: Sequence[_Token], a: int, b: int) -> bool:
    """Whether a run that opens a sentence starts with a noun for a person before a name of
    two words or more: "Forecaster Elena Vlad", "Members of the Transit Workers Union",
    "General Abdourahamane Tiani". Not a noun that is a name's word too ("Baker Hughes
    Inc"), nor one most often an adjective before an organisation's name ("General Electric
    Co", "Senior Engineering Group Plc"), nor before one word ("Dean Martin": a one-word name
    is too often a given name's)."""
    word = tokens[a].text.lower()
    found = person_nouns()
    rest = [t for t in tokens[a + 1 : b] if _is_name_word(t.text)]
    if len(rest) < 2 or name_kind([word]).person >= 0.5:
        return False
    if word in found.nouns or (word.endswith("s") and word[:-1] in found.nouns):
        return True
    return word in found.adjectives and rest[-1].text.lower() not in ORG_HEADS


def _named_by_context(tokens: Sequence[_Token], end: int) -> bool:
    """Whether what follows a word shows it is a name: a possessive, or a list of names."""
    nxt = tokens[end].text if end < len(tokens) else ""
    after = tokens[end + 1].text if end + 1 < len(tokens) else ""
    return nxt == "'s" or (nxt in (",", "and") and _is_name_word(after))


def _shouting_sentences(tokens: Sequence[_Token], starts: set[int]) -> dict[int, bool]:
    """Token index -> whether its sentence is mostly in capitals (a heading, not acronyms)."""
    out: dict[int, bool] = {}
    bounds = [*sorted(starts), len(tokens)]
    for a, b in itertools.pairwise(bounds):
        words = [t.text for t in tokens[a:b] if t.text.isalpha() and len(t.text) > 1]
        caps = sum(1 for w in words if w.isupper())
        loud = len(words) >= 3 and caps * 2 > len(words)
        for i in range(a, b):
            out[i] = loud
    return out


def _group(found: Sequence[tuple[int, str, bool]], min_count: int) -> list[Entity]:
    """Merge mentions into entities: same name, surname alone, acronym of the initials."""
    full: dict[str, str] = {}  # key -> first surface
    order: list[str] = []
    mid_sentence: set[str] = set()
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    for index, surface, initial in found:
        key = name_key(surface)
        if key not in full:
            full[key] = surface
            order.append(key)
            first[key] = index
        elif full[key].isupper() and not surface.isupper():
            full[key] = surface  # "BERGEN" in a heading, "Bergen" in the text
        counts[key] = counts.get(key, 0) + 1
        if not initial:
            mid_sentence.add(key)
    owner = _alias_owners([full[k] for k in order if " " in full[k]], set(order))
    merged: dict[str, list[str]] = {k: [] for k in order}
    total = dict(counts)
    for key in order:
        target = owner.get(key)
        if target is not None and target != key:
            merged[target].append(full[key])
            total[target] += counts[key]
            first[target] = min(first[target], first[key])
    entities: list[tuple[int, Entity]] = []
    for key in order:
        if owner.get(key, key) != key:
            continue  # an alias, counted with its owner
        one_word_opener = " " not in key and key not in mid_sentence and not full[key].isupper()
        if one_word_opener and total[key] < 2:
            continue  # seen once, at a sentence start: too likely an ordinary word
        if total[key] >= min_count:
            entities.append((first[key], Entity(full[key], total[key], tuple(merged[key]))))
    return [e for _, e in sorted(entities, key=lambda pair: pair[0])]


def _short_form(name: str) -> str | None:
    """A company's or party's name without its head nouns, the short form news uses after
    the full name ("Halden" for "Halden Group", "Caledonian" for "Caledonian Freight
    Finance"); None for other names and "X of Y"."""
    words = name.split()
    if len(words) < 2 or words[-1].lower() not in _SHORTENED_HEADS or "'s" in name:
        return None
    if " of " in f" {name.lower()} ":
        return None
    while words and words[-1].lower() in ORG_HEADS:
        words.pop()
    if not words or words[0].lower() in _NOT_NAMES or words[-1].lower() in _CONNECTORS:
        return None
    return " ".join(words)


def _alias_owners(multi: Sequence[str], keys: set[str]) -> dict[str, str]:
    """Key of a name -> the key of the multi-word name it abbreviates (its last word, its
    initials, or a company's name without its head noun), where exactly one name fits."""
    claims: dict[str, set[str]] = {}
    for surface in multi:
        key = name_key(surface)
        surname = _surname(surface)
        if surname is not None and len(surname) > 1:
            claims.setdefault(name_key(surname), set()).add(key)
        words = [w for w in surface.split() if w.lower() not in _CONNECTORS]
        initials = "".join(w[0] for w in words if w[0].isalpha()).lower()
        if len(initials) >= 2:
            claims.setdefault(initials, set()).add(key)
        for short in (_short_form(surface), _paternal_surname(surface)):
            if short is not None and len(short) > 1:
                claims.setdefault(name_key(short), set()).add(key)
    return {
        alias: next(iter(names))
        for alias, names in claims.items()
        if len(names) == 1 and alias in keys
    }


def entity_aliases(names: Iterable[str], text: str) -> list[Entity]:
    """Entities for names a client gave: a multi-word name also answers to its last word or
    initials where `text` uses them alone as a name and no other given name claims them."""
    return _with_aliases(names, _mentions(text))


def document_entities(
    text: str, candidates: Iterable[str] | None, known: Iterable[str]
) -> tuple[list[Entity], list[Entity]]:
    """(the known names with their aliases, the new entities: the finder's, or the given
    candidates with their aliases), from one pass of the finder over `text`."""
    mentions = _mentions(text)
    found = _group(mentions, 1) if candidates is None else _with_aliases(candidates, mentions)
    return _with_aliases(known, mentions), found


def _with_aliases(names: Iterable[str], mentions: Sequence[tuple[int, str, bool]]) -> list[Entity]:
    names = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    alone = {name_key(surface): surface for _, surface, _ in mentions if " " not in surface}
    owners = _alias_owners(
        [n for n in names if " " in n], set(alone) - {name_key(n) for n in names}
    )
    return [
        Entity(n, 0, tuple(alone[a] for a, owner in owners.items() if owner == name_key(n)))
        for n in names
    ]
