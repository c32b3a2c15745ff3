"""The `cheapqa` command. Settings are built here, once, and passed down.

Each command module has `register(subparsers)`, which adds its parser and sets
`handler(args, settings) -> int`. Command modules import their libraries inside the handler,
so `cheapqa --help` stays cheap. The client commands (index, ask, status, list, delete,
entities) are the light client's own (cheapqa_client.cli): they set `run(args) -> int` and
need no settings.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version

from cheapqa_client.cli import main as client_commands
from cli import bench, config, data, evaluate, loadtest, serve, soak, train, worker
from service.settings import InvalidSetting, Settings, load_settings

Handler = Callable[[argparse.Namespace, Settings], int]

COMMANDS = (config, data, train, evaluate, serve, worker, bench, loadtest, soak)


def installed_version() -> str:
    try:
        return version("cheapqa")
    except PackageNotFoundError:  # a source tree that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cheapqa", description="cheapqa: cheap-linear-attention question answering service"
    )
    parser.add_argument("--version", action="version", version=f"cheapqa {installed_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    client_commands.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # bare `cheapqa`: the help, and no error
        parser.print_help()
        return 0
    if (run := getattr(args, "run", None)) is not None:  # a client command
        client_run: client_commands.Run = run
        return client_commands.until_the_reader_leaves(lambda: client_run(args))
    try:
        settings = load_settings()
    except InvalidSetting as exc:
        # One line that names the variable, no traceback: a typo is not a crash.
        print(f"cheapqa: {exc}", file=sys.stderr)
        return 2
    handler: Handler = args.handler
    return client_commands.until_the_reader_leaves(lambda: handler(args, settings))


if __name__ == "__main__":
    sys.exit(main())
