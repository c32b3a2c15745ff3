"""The stories indexed and asked through the service itself, the answers scored beside two
rules that do not read.

The app is built with `create_app` and its lifespan runs (embedded store in a temporary
folder, the in-process worker, the readers of the settings); each story is posted to
`POST /v1/documents` and every question asked of `POST /v1/documents/{id}/answers` in every
mode, so what is scored is what a user of the API gets: the entity finder, the question
conversion, the reader.

Beside the readers, on the same served document and cloze sentence (the worker's own
anonymisation, the `cloze` the API echoes): *word matching*, the candidate whose mentions
share the most neighbouring words with the blank (3 each side at the same offsets;
`encoder.training.data.questions.context_match_scores`, the context-match baseline of every built
set), and *most frequent*, the candidate the story mentions most. Ties count as the expected
accuracy of breaking them at random. A question the service refuses counts as wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from bench.realistic.stories import Asked, Story
from encoder.text.anonymise import anonymise_query
from encoder.text.tokens import PLACEHOLDER, entity_index
from encoder.training.data.questions import context_match_scores
from service.app import create_app
from service.readers import anonymise
from service.settings import Settings

BASELINES = ("word matching", "most frequent")
POST_BATCH = 8  # stories a request: one set's, within the request body's limit


@dataclass
class Answered:
    """One question asked in one mode (or answered by one baseline)."""

    story: Story
    asked: Asked
    by: str  # a mode, or a baseline's name
    answer: str | None  # the top answer; None when refused or no entity
    score: float  # its probability (a baseline: its expected accuracy, 0 or 1/ties)
    right: float  # 1.0, 0.0, or a baseline's expected accuracy over its ties
    refused: str | None = None  # the error's message when the service refused the question
    result: dict[str, Any] = field(default_factory=dict)  # the API's result for it, as sent

    @property
    def support_share(self) -> float | None:
        """The top answer's share of the support (None for a baseline or no answer)."""
        answers = self.result.get("answers") or [{}]
        value = answers[0].get("support_share")
        return None if value is None else float(value)

    @property
    def support(self) -> float | None:
        """The service's support of the top answer (None for a baseline or no answer)."""
        answers = self.result.get("answers") or [{}]
        value = answers[0].get("support")
        return None if value is None else float(value)


async def _ready(client: httpx.AsyncClient, timeout_s: float = 120.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while (await client.get("/readyz")).status_code != 200:
        if asyncio.get_running_loop().time() > deadline:
            raise RuntimeError(f"the app was not ready after {timeout_s:.0f}s")
        await asyncio.sleep(0.05)


async def _indexed(client: httpx.AsyncClient, doc_id: str, timeout_s: float = 300.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        body = (await client.get(f"/v1/documents/{doc_id}")).json()
        if body["status"] == "indexed":
            return
        if body["status"] == "failed" or asyncio.get_running_loop().time() > deadline:
            raise RuntimeError(f"{doc_id} was not indexed: {body}")
        await asyncio.sleep(0.05)


def _share_right(scores: dict[int, float], right: set[int]) -> float:
    """The expected accuracy of picking among the best-scoring slots at random."""
    if not scores:
        return 0.0
    best = max(scores.values())
    winners = [s for s, v in scores.items() if v == best]
    return sum(1 for s in winners if s in right) / len(winners)


def baseline_answers(
    story: Story,
    asked: Asked,
    cloze: str,
    tokens: Sequence[str],
    entities: Sequence[str],
    exclude_named: bool,
) -> list[Answered]:
    """Word matching and most frequent on the served document's tokens and the served cloze
    sentence, among the candidates the readers answer from (exclude_named: less the
    entities the question names)."""
    query = anonymise_query(cloze, entities)
    named = {i for t in query if (i := entity_index(t)) is not None} if exclude_named else set()
    candidates = [i for i in range(len(entities)) if i not in named] or list(range(len(entities)))
    right = {i for i in candidates if story.is_right(entities[i], asked.answer)}
    markers = [f"@entity{i}" for i in candidates]
    match = context_match_scores(tokens, query, markers)
    counts = Counter(t for t in tokens if t in set(markers))
    out = []
    for name, scores in (
        ("word matching", {entity_index(m) or 0: v for m, v in match.items()}),
        ("most frequent", {entity_index(m) or 0: float(counts[m]) for m in markers}),
    ):
        share = _share_right(scores, right)
        best = max(scores, key=lambda s: scores[s]) if scores else None
        out.append(
            Answered(
                story,
                asked,
                name,
                None if best is None else entities[best],
                share,
                share,
            )
        )
    return out


@contextlib.asynccontextmanager
async def served(
    stories: Sequence[Story], settings: Settings, progress: Callable[[str], None]
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """The app, running, with every story posted and indexed, and a client of it."""
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            await _ready(client)
            for at in range(0, len(stories), POST_BATCH):
                docs = [{"id": s.id, "text": s.text} for s in stories[at : at + POST_BATCH]]
                response = await client.post("/v1/documents", json={"documents": docs})
                response.raise_for_status()
            for story in stories:
                await _indexed(client, story.id)
            progress(f"indexed {len(stories)} stories")
            yield app, client


async def answer_stories(
    stories: Sequence[Story],
    settings: Settings,
    modes: Sequence[str],
    exclude_named: bool,
    progress: Callable[[str], None] = lambda line: None,
) -> list[Answered]:
    """Every question of every story asked in every mode, and the baselines' answers."""
    out: list[Answered] = []
    async with served(stories, settings, progress) as (_, client):
        for story in stories:
            anon = anonymise(story.text)  # the worker's own reading of the story
            for asked in story.questions:
                mine = [await _ask(client, story, asked, m, exclude_named) for m in modes]
                out += mine
                cloze = mine[0].result.get("cloze") if mine else None
                if cloze is None or PLACEHOLDER not in cloze:
                    refused = mine[0].refused if mine else "not asked"
                    out += [Answered(story, asked, b, None, 0.0, 0.0, refused) for b in BASELINES]
                    continue
                tokens, names = anon.tokens, anon.entities
                out += baseline_answers(story, asked, cloze, tokens, names, exclude_named)
            progress(f"asked {story.id}")
    return out


async def _ask(
    client: httpx.AsyncClient, story: Story, asked: Asked, mode: str, exclude_named: bool
) -> Answered:
    body = {
        "queries": [asked.question],
        "mode": mode,
        "top_k": 5,
        "exclude_question_entities": exclude_named,
    }
    response = await client.post(f"/v1/documents/{story.id}/answers", json=body)
    if response.status_code >= 500:  # the service failing is no refusal: no figure stands
        raise RuntimeError(f"{asked.id} ({mode}): HTTP {response.status_code}: {response.text}")
    if response.status_code != 200:
        message = response.json().get("error", {}).get("message", response.text)
        return Answered(story, asked, mode, None, 0.0, 0.0, refused=message)
    result = response.json()["results"][0]
    if result.get("error"):
        return Answered(story, asked, mode, None, 0.0, 0.0, result["error"]["message"], result)
    answers = result["answers"]
    if not answers:
        return Answered(story, asked, mode, None, 0.0, 0.0, result=result)
    top = answers[0]
    right = float(story.is_right(top["entity"], asked.answer))
    return Answered(story, asked, mode, top["entity"], top["score"], right, result=result)


def local_settings(settings: Settings, modes: Sequence[str], data_dir: Path) -> Settings:
    """The settings with an embedded store and queue of their own in data_dir, serving modes."""
    update: dict[str, Any] = {"store_url": "", "data_dir": data_dir, "modes": list(modes)}
    if settings.default_mode not in modes:  # `--modes softmax`: the app needs its default
        update["default_mode"] = modes[0]
    return settings.model_copy(update=update)


def run(
    stories: Sequence[Story],
    settings: Settings,
    modes: Sequence[str],
    exclude_named: bool = True,
    progress: Callable[[str], None] = lambda line: None,
) -> list[Answered]:
    """`answer_stories` in a temporary data folder (its own store and queue)."""
    with tempfile.TemporaryDirectory(prefix="cheapqa-realistic-") as tmp:
        local = local_settings(settings, modes, Path(tmp))
        return asyncio.run(answer_stories(stories, local, modes, exclude_named, progress))
