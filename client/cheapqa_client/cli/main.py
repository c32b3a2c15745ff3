"""`cheapqa-client`: the client commands against a running service (CHEAPQA_URL, default
http://127.0.0.1:8000; the key in CHEAPQA_API_KEY). The full install's `cheapqa` offers the
same commands: it calls `register` below.

Each command module has `register(subparsers)`, which adds its parser and sets
`run(args) -> int` (the exit status)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from cheapqa_client.cli import ask, documents, index
from cheapqa_client.client import __version__

Run = Callable[[argparse.Namespace], int]

COMMANDS = (index, ask, documents)


def register(sub: Any) -> None:
    for command in COMMANDS:
        command.register(sub)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="cheapqa-client", description="the cheapqa service's client commands"
    )
    parser.add_argument("--version", action="version", version=f"cheapqa-client {__version__}")
    register(parser.add_subparsers(dest="command", metavar="COMMAND"))
    args = parser.parse_args(argv)
    if args.command is None:  # bare command: the help, and no error
        parser.print_help()
        return 0
    run: Run = args.run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
