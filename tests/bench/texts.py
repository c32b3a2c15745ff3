"""A short story written for these tests: names to detect and sentences to ask about."""

from __future__ import annotations

STORY = """The mill at Brackenford had stood idle for a year when Oswin Farrow bought it. His \
sister Philippa thought he had lost his mind, and said so at every supper.

Oswin repaired the wheel himself. Philippa watched from the bridge and counted the days. \
By the spring the wheel turned again, and the farmers of Brackenford brought their grain.

A clerk named Tamsin Hale kept the accounts for Oswin. She noticed that the miller in \
Dunmere charged twice as much, and she told Philippa before she told anyone else.

Philippa laughed and admitted that Oswin had been right. The three of them walked to \
Dunmere that summer to see the old miller for themselves."""

QUESTIONS_JSONL = [
    {
        "id": "w0-q0",
        "document": "@entity0 kept the books for @entity1 at the mill . @entity1 trusted her .",
        "query": "@placeholder kept the books at the mill .",
        "answer": "@entity0",
        "candidates": ["@entity0", "@entity1"],
    },
    {
        "id": "w0-q1",
        "document": "@entity0 kept the books for @entity1 at the mill . @entity1 trusted her .",
        "query": "@entity0 kept the books for @placeholder .",
        "answer": "@entity1",
        "candidates": ["@entity0", "@entity1"],
    },
    {
        "id": "w1-q0",
        "document": "the wheel of @entity2 turned again when @entity3 mended it in spring .",
        "query": "@placeholder mended the wheel .",
        "answer": "@entity3",
        "candidates": ["@entity2", "@entity3"],
    },
]
