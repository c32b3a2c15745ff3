"""`cheapqa config`: print the settings in force (environment + defaults) as JSON, with the
checkpoint folder the models load from (the shipped readers' when none is set)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from connections.redis_client import redacted_url
from service.settings import Settings


def _run(args: argparse.Namespace, settings: Settings) -> int:
    # Here, not at the top: every `cheapqa` command imports this module, and a uvicorn worker
    # process (CHEAPQA_WORKERS > 1) imports it again before it answers its supervisor's pings.
    from service.readers import checkpoint_dir

    shown = settings.model_dump(mode="json")  # keys are SecretStr: printed masked
    shown["store_url"] = redacted_url(settings.store_url)
    shown["checkpoint_dir"] = str(checkpoint_dir(settings))
    print(json.dumps(shown, indent=2))
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("config", help="print the settings in force as JSON")
    p.set_defaults(handler=_run)
