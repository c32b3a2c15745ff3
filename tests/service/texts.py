"""Short English documents written for these tests, with cloze questions about them."""

from __future__ import annotations

import random
from itertools import product

HARBOUR = (
    "The ferry from Port Ellery left at dawn, and Marigold Ashby was the first to board it. "
    "She had promised her brother Tobias that she would reach the island before the storm. "
    "Tobias kept the lighthouse on Gull Rock, and every winter he wrote to Marigold about "
    "the seals that slept on the lower steps. The captain, a quiet man called Halvard, "
    "let her sit in the wheelhouse because the deck was wet. By noon the sky had turned "
    "grey, and Halvard said that Gull Rock would be hard to reach. Marigold only smiled, "
    "for she had crossed worse water with Tobias when they were children. When the island "
    "came into view, the lamp was already lit, and she knew that Tobias was waiting."
)

ORCHARD = (
    "Every autumn the village of Linden Cross held a market in the old orchard. "
    "Agnes Thornbury sold honey from her twelve hives, and her neighbour Cuthbert brought "
    "pears so ripe that they had to be eaten on the spot. This year a stranger named "
    "Elowen arrived with a cart of books, and the children gathered around her at once. "
    "Cuthbert grumbled that books would not feed anyone through the winter, but Agnes "
    "bought three of them and gave one to Cuthbert as a present. By evening the whole "
    "orchard was reading, and Elowen promised to come back to Linden Cross in the spring."
)

OBSERVATORY = (
    "Professor Ingram had spent thirty years at the observatory above Kestrel Bay. "
    "His assistant, Wilhelmina Cole, was the one who noticed the faint comet first. "
    "Ingram refused to believe her until he saw it with his own eyes, and then he "
    "insisted that the discovery be announced under both of their names. The newspapers "
    "in Kestrel Bay called it the Cole comet anyway, which pleased Wilhelmina more than "
    "she admitted. Ingram pretended to be annoyed, but he framed the first article and "
    "hung it above his desk."
)

APPENDIX = (
    "Years later, Marigold returned to Gull Rock with her daughter Rosalind. "
    "Tobias had grown old, but he still climbed the stairs every evening to light the lamp."
)

DOCUMENTS = {"harbour": HARBOUR, "orchard": ORCHARD, "observatory": OBSERVATORY}

QUESTIONS = {
    "harbour": [
        "@placeholder kept the lighthouse on Gull Rock.",
        "The captain @placeholder let her sit in the wheelhouse.",
        "@placeholder was the first to board the ferry.",
    ],
    "orchard": [
        "@placeholder sold honey from her hives.",
        "A stranger arrived with a cart of books and promised to return to @placeholder.",
    ],
    "observatory": ["@placeholder noticed the faint comet first."],
}


def many_names(count: int, seed: int = 7) -> list[str]:
    """`count` distinct made-up two-word names ("Molo Derdon"), none a word of the texts."""
    consonants, vowels = "BDFGKLMNPRSTVZ", "aeiou"
    firsts = [a + b + c + d for a, b, c, d in product(consonants, vowels, "lnrm", vowels)]
    lasts = [a + b + "r" + c + d + "n" for a, b, c, d in product(consonants, vowels, "dgkt", "aeo")]
    rng = random.Random(seed)
    pairs = zip(rng.sample(firsts, count), rng.sample(lasts, count), strict=True)
    return [f"{first} {last}" for first, last in pairs]


CROWD_DEEDS = ["planted a tree", "painted the gate", "mended the boat", "sang at the fair"]


def crowd_text(names: list[str]) -> str:
    """One simple sentence per name, each name its own entity."""
    return " ".join(f"{n} {CROWD_DEEDS[i % 4]} near the river." for i, n in enumerate(names))
