"""`cheapqa bench <what>`: commands that measure and print figures (never timed tests).

Each benchmark is a module with `register(bench_subparsers)`; adding one is one line here.
"""

from __future__ import annotations

import importlib
from typing import Any

BENCH_MODULES: tuple[str, ...] = (
    "service.commands.bench_store",
    "service.commands.bench_lookup",
)


def register(sub: Any) -> None:
    p = sub.add_parser("bench", help="measure the store and the service, print the figures")
    bench_sub = p.add_subparsers(dest="bench", required=True, metavar="BENCH")
    for name in BENCH_MODULES:
        importlib.import_module(name).register(bench_sub)
