"""`cheapqa config`: print the settings in force (environment + defaults) as JSON."""

from __future__ import annotations

import argparse
import json
from typing import Any

from service.settings import Settings


def _run(args: argparse.Namespace, settings: Settings) -> int:
    print(json.dumps(settings.model_dump(mode="json"), indent=2))
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("config", help="print the settings in force as JSON")
    p.set_defaults(handler=_run)
