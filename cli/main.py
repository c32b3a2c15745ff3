"""The `cheapqa` command. Settings are built here, once, and passed down.

Each command module has `register(subparsers)`, which adds its parser and sets
`handler(args, settings) -> int`. Command modules import their libraries inside the handler,
so `cheapqa --help` stays cheap.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from cli import bench, config, data, evaluate, loadtest, serve, soak, train, worker
from service.settings import InvalidSetting, Settings, load_settings

Handler = Callable[[argparse.Namespace, Settings], int]

COMMANDS = (config, data, train, evaluate, serve, worker, bench, loadtest, soak)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cheapqa", description="cheapqa: cheap-linear-attention question answering service"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
    except InvalidSetting as exc:
        # One line that names the variable, no traceback: a typo is not a crash.
        print(f"cheapqa: {exc}", file=sys.stderr)
        return 2
    handler: Handler = args.handler
    return handler(args, settings)


if __name__ == "__main__":
    sys.exit(main())
