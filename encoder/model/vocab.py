"""The word vocabulary: reserved tokens first (padding, unknown, placeholder, entity markers).

Entity markers take the ids `entity_offset .. entity_offset + max_entities - 1` in order, so a
marker's id minus `entity_offset` is its output slot and renumbering entities is a table lookup.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from encoder.text.tokens import PLACEHOLDER, entity_index, entity_marker

PAD = "<pad>"
UNK = "<unk>"


class Vocabulary:
    pad_id = 0
    unk_id = 1
    placeholder_id = 2
    entity_offset = 3

    def __init__(self, tokens: Sequence[str]) -> None:
        tokens = list(tokens)
        if tokens[:3] != [PAD, UNK, PLACEHOLDER]:
            raise ValueError(f"a vocabulary starts with {PAD}, {UNK}, {PLACEHOLDER}")
        max_entities = 0
        while self.entity_offset + max_entities < len(tokens) and tokens[
            self.entity_offset + max_entities
        ] == entity_marker(max_entities):
            max_entities += 1
        if max_entities == 0:
            raise ValueError("a vocabulary holds at least @entity0")
        if len(set(tokens)) != len(tokens):
            raise ValueError("vocabulary tokens must be unique")
        self.tokens = tokens
        self.max_entities = max_entities
        self._ids = {t: i for i, t in enumerate(tokens)}

    @classmethod
    def build(
        cls,
        token_lists: Iterable[Sequence[str]],
        *,
        max_entities: int,
        max_size: int = 10_000,
        min_count: int = 2,
    ) -> Vocabulary:
        """The reserved tokens, then the most frequent words (at least `min_count` times) up to
        `max_size` tokens in all. Ties are broken alphabetically, so the result is deterministic.
        """
        reserved = [PAD, UNK, PLACEHOLDER, *(entity_marker(i) for i in range(max_entities))]
        if max_size < len(reserved):
            raise ValueError(f"max_size {max_size} is below the {len(reserved)} reserved tokens")
        counts: Counter[str] = Counter()
        for tokens in token_lists:
            counts.update(t for t in tokens if t != PLACEHOLDER and entity_index(t) is None)
        words = sorted(
            (w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w)
        )
        return cls(reserved + words[: max_size - len(reserved)])

    def __len__(self) -> int:
        return len(self.tokens)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.tokens == other.tokens

    def __hash__(self) -> int:
        return hash(tuple(self.tokens))

    def id_of(self, token: str) -> int:
        return self._ids.get(token, self.unk_id)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Token ids; unknown words (and markers beyond max_entities) become `unk_id`."""
        get, unk = self._ids.get, self.unk_id
        return [get(t, unk) for t in tokens]

    def encode_marked(self, tokens: Sequence[str]) -> tuple[list[int], list[int]]:
        """The mentions mode's input: token ids in which marker i reads as marker i mod E (so
        every entity has an input id, however many the text names), and each token's entity
        index i (-1 for other words), which its answer points at."""
        E, offset = self.max_entities, self.entity_offset
        ids = self.encode(tokens)
        found = [entity_index(t) if t.startswith("@") else None for t in tokens]
        entities = [-1 if e is None else e for e in found]
        ids = [i if e < 0 else offset + e % E for i, e in zip(ids, entities, strict=True)]
        return ids, entities

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.tokens[i] for i in ids]

    def entity_id(self, slot: int) -> int:
        if not 0 <= slot < self.max_entities:
            raise ValueError(f"entity slot {slot} outside 0..{self.max_entities - 1}")
        return self.entity_offset + slot
