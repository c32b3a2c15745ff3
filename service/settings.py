"""One settings class for the whole service, read from CHEAPQA_* environment variables.

Built once at the entry point (CLI) and passed down; no other module reads the environment.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from pydantic_settings.exceptions import SettingsError

from encoder.model.modes import MODES, Mode

LIST_FORMS = 'a comma-separated list (linear,gated) or a JSON list (["linear", "gated"])'


def _list_setting(value: object) -> object:
    """A list typed into the environment: a JSON list, or comma-separated values."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)  # a ValueError here is a validation error of the setting
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


# NoDecode: the environment's string reaches `_list_setting` instead of a JSON parse.
ListSetting = Annotated[list[str], NoDecode, BeforeValidator(_list_setting)]
SecretListSetting = Annotated[list[SecretStr], NoDecode, BeforeValidator(_list_setting)]
ModesSetting = Annotated[list[Mode], NoDecode, BeforeValidator(_list_setting)]


# The service's λ of support (`Settings.support_weight`), the benches' as served too.
SUPPORT_WEIGHT = 12.0


class Settings(BaseSettings):
    # hide_input_in_errors: a ValidationError printed or logged never shows a key.
    model_config = SettingsConfigDict(
        env_prefix="CHEAPQA_", extra="ignore", hide_input_in_errors=True
    )

    # --- store ---
    store_url: str = Field(
        default="",
        description="redis://host:port/db for Redis; empty means the embedded store in data_dir.",
    )
    data_dir: Path = Field(default=Path(".cheapqa"), description="Embedded store and queue files.")
    key_prefix: str = Field(default="cheapqa", description="Prefix of every Redis key.")
    state_dtype: Literal["float32", "float16"] = "float16"
    redis_timeout_s: float = Field(default=2.0, gt=0, description="Socket timeout for Redis calls.")

    # --- models ---
    modes: ModesSetting = Field(
        default_factory=lambda: list(MODES), description=f"Modes to serve: {LIST_FORMS}."
    )
    default_mode: Mode = "linear"
    checkpoint_dir: Path | None = Field(
        default=None, description="Folder with <mode>.pt checkpoints; None means the shipped ones."
    )
    support_weight: float = Field(
        default=SUPPORT_WEIGHT,
        ge=0.0,
        le=100.0,
        description="λ of the answers' ranking p(e) ∝ p_reader(e) · exp(λ · support(e)); 0: the "
        "reader alone. 12 was best of 0, 1, 3, 5, 8, 12, 16, 24 and support first on the "
        "hand-written stories and the validation sets together (RESULTS.md); a request's "
        "support_weight overrides it.",
    )
    meaning: bool = Field(
        default=True,
        description="Embed the sentences naming each entity when a document is indexed, and "
        "each question asked in words, so that the ranking weighs how near in meaning they are "
        "(encoder/text/meaning.py; about 14 ms a sentence to index, 8 ms a question not asked "
        "lately: BENCHMARKS.md). Off: neither, and the ranking fitted without it.",
    )
    reading: bool = Field(
        default=True,
        description="With meaning on, read each question asked in words beside the sentences "
        "naming its likeliest answers (`reading_candidates`) with the pair reader "
        "(encoder/text/reading.py, reading.pt beside the checkpoints, fitted by `cheapqa bench "
        "fit-reading`) and rank those again with what it reads (a request's `reading: false` "
        "skips it). It runs the sentence model on those sentences for every question not read "
        "lately: about 0.1-0.15 s a question on one CPU thread (BENCHMARKS.md). Checkpoints "
        "without reading.pt are served without it (logged); set to true explicitly, a missing "
        "one fails the start.",
    )
    reading_candidates: int = Field(
        default=8,
        ge=1,
        le=32,
        description="How many of a question's likeliest answers the pair reader reads (it is "
        "fitted on 8). Its time grows with them: 4 take about half the time of 8 (76 against "
        "142 ms a question on one CPU thread) and answered 0.1 to 0.9 points fewer questions "
        'right on the story sets (RESULTS.md, "Ideas tried").',
    )
    reading_max_waiting: int = Field(
        default=64,
        ge=0,
        description="Questions in words that may wait for the pair reader (it reads one "
        "request at a time, in its own thread; 64 are some 7 s on one CPU thread): a request "
        "that would wait behind more is answered without it, each result `read` false, rather "
        "than wait; a request finding none waiting is always read. 0: never read.",
    )
    device: str = Field(default="cpu", description="torch device for the models, e.g. cuda:0.")
    torch_threads: int = Field(
        default=1,
        ge=1,
        description="torch intra-op threads per process. One: on a busy 2-core machine two "
        "threads ran encoding 40-100x slower (RELIABILITY.md); scale with processes instead.",
    )

    # --- HTTP ---
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = Field(
        default=1,
        ge=1,
        description="Server processes on the one port (uvicorn workers), at most one a core: "
        "each has its own models, batcher, metrics (GET /metrics shows one process's) and, "
        "where it runs one, ingestion worker. BENCHMARKS.md measures what two give.",
    )
    api_keys: SecretListSetting = Field(
        default_factory=list,
        description=f"When non-empty, /v1 routes need a Bearer key (printed masked); {LIST_FORMS}.",
    )
    allow_open_bind: bool = Field(
        default=False,
        description="Serve on a non-loopback address without API keys (refused otherwise).",
    )
    protect_ops_routes: bool = Field(
        default=False,
        description="Put /metrics, /readyz, /docs and /openapi.json behind the API key too.",
    )
    public_base_url: str | None = Field(
        default=None,
        description="Base of the status_url in answers (e.g. https://qa.example.com); None: "
        "relative URLs. Never taken from the request's Host header.",
    )
    limit_concurrency: int = Field(
        default=1024,
        gt=0,
        description="Requests served at once (in flight, counted once their head is in: idle "
        "connections do not count); more get 503 with Retry-After.",
    )
    header_timeout_s: int = Field(
        default=5,
        ge=1,
        description="A connection must deliver a complete request head within this of opening "
        "(or of its last response; the keep-alive idle time too), else it is closed.",
    )
    body_timeout_s: float = Field(
        default=30.0, gt=0, description="A request body must arrive within this (else 408)."
    )

    # --- limits ---
    max_document_bytes: int = Field(default=1_000_000, gt=0)
    max_body_bytes: int = Field(
        default=16_000_000,
        gt=0,
        description="Largest request body; checked (Content-Length, or bytes counted as they "
        "arrive) before the body is read.",
    )
    max_document_tokens: int = Field(
        default=300_000, gt=0, description="Largest document, appends included, in tokens."
    )
    max_batch_documents: int = Field(default=64, gt=0)
    max_queries: int = Field(default=64, gt=0)
    max_top_k: int = Field(default=20, gt=0)
    answer_states_max_bytes: int = Field(
        default=256_000_000,
        gt=0,
        description="Decoded document states that answers in flight may hold at once "
        "(requests for the same document share one); past it an answer is 429.",
    )

    # --- query batching ---
    query_max_batch: int = Field(default=64, gt=0)
    query_max_wait_ms: float = Field(default=2.0, ge=0)
    query_queue_size: int = Field(default=2048, gt=0)
    query_encoder_thread: bool = Field(
        default=False,
        description="Run the question GRU in a worker thread, freeing the event loop while it "
        "runs (a batch is at most query_max_batch questions, ~1-2 ms). Off: on the 2-core "
        "machine measured the thread hop cost more than it gave (BENCHMARKS.md).",
    )

    # --- ingestion ---
    ingest_max_batch: int = Field(default=16, gt=0)
    ingest_max_batch_tokens: int = Field(
        default=300_000,
        gt=0,
        description="Tokens one encoder call of the worker holds (documents x the longest, "
        "padding included); its memory follows this. A longer document is encoded alone.",
    )
    ingest_block_ms: int = Field(default=1000, gt=0)
    ingest_max_deliveries: int = Field(default=3, gt=0)
    ingest_claim_idle_ms: int = Field(default=30_000, gt=0)
    ingest_max_queue_depth: int = Field(
        default=10_000, gt=0, description="Entries waiting; past it POST answers 429."
    )
    ingest_max_queue_bytes: int = Field(
        default=1_000_000_000, gt=0, description="Bytes of text waiting; past it POST answers 429."
    )
    ingest_sweep_after_ms: int = Field(
        default=600_000,
        gt=0,
        description="A record queued this long whose queue entry is gone becomes failed.",
    )
    ingest_consumer_idle_ms: int = Field(
        default=3_600_000,
        gt=0,
        description="Redis consumers idle this long with nothing pending leave the group.",
    )
    consumer_name: str | None = None
    serve_worker: bool | None = Field(
        default=None,
        description="Run an ingestion worker inside `cheapqa serve`; None: only with the "
        "embedded store.",
    )

    @field_validator("api_keys")
    @classmethod
    def _no_empty_key(cls, keys: list[SecretStr]) -> list[SecretStr]:
        # A template with an unset variable gives "": a bare `Bearer` header would match it.
        if any(not key.get_secret_value().strip() for key in keys):
            raise ValueError("an API key is empty (an unset variable in a template?)")
        return keys


SECRET_SETTINGS = frozenset({"api_keys"})  # their values are never printed, not even in errors


class InvalidSetting(ValueError):
    """A CHEAPQA_* variable holds a value its setting does not accept; the message is one
    line that names the variable and what it accepts."""


def load_settings() -> Settings:
    """The settings from the environment; raises InvalidSetting (one line) for a bad value."""
    try:
        return Settings()
    except ValidationError as exc:
        raise InvalidSetting(invalid_setting_line(exc)) from None
    except SettingsError as exc:
        raise InvalidSetting(f"invalid setting: {exc}") from None


def invalid_setting_line(exc: ValidationError) -> str:
    """One line for every wrong variable: its name, the value, and what it accepts."""
    prefix = Settings.model_config.get("env_prefix", "")
    parts = []
    for error in exc.errors():
        field, *where = (str(part) for part in error["loc"])
        item = f" (item {int(where[0]) + 1})" if where and where[0].isdigit() else ""
        msg = str(error["msg"])
        problem = (
            f"should be {msg.removeprefix('Input should be ')}"
            if msg.startswith("Input should be ")
            else msg.removeprefix("Value error, ")
        )
        if NoDecode in Settings.model_fields[field].metadata:
            problem += f"; a list is {LIST_FORMS}"
        value = json.dumps(error["input"], ensure_ascii=False, default=str)[:80]
        if field in SECRET_SETTINGS:
            value = "**********"
        parts.append(f"{prefix}{field.upper()}={value}{item}: {problem}")
    return ("invalid setting " + "; ".join(parts)).replace("\n", " ")
