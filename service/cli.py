"""The `cheapqa` command. Settings are built here, once, and passed down.

Each subcommand lives in its own module under `service/commands/` with
`register(subparsers)`, which adds its parser and sets `handler(args, settings) -> int`.
Modules are imported only when the CLI starts, so importing this file stays cheap.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from service.settings import Settings

Handler = Callable[[argparse.Namespace, Settings], int]

# One line per command module; each registers one or more subcommands.
COMMAND_MODULES: tuple[str, ...] = (
    "service.commands.config",
    "service.commands.data",
    "service.commands.train",
    "service.commands.evaluate",
    "service.commands.serve",
    "service.commands.worker",
    "service.commands.bench",
    "service.commands.loadtest",
    "service.commands.soak",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cheapqa", description="cheapqa: cheap-linear-attention question answering service"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = Settings()
    handler: Handler = args.handler
    return handler(args, settings)


if __name__ == "__main__":
    sys.exit(main())
