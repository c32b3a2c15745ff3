"""`cheapqa-client`: the client commands against a running service (CHEAPQA_URL, default
http://127.0.0.1:8000; the key in CHEAPQA_API_KEY). The full install's `cheapqa` offers the
same commands: it calls `register` below.

Each command module has `register(subparsers)`, which adds its parser and sets
`run(args) -> int` (the exit status)."""

from __future__ import annotations

import argparse
import os
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


# The exit status of a command whose output's reader left (`--json | head`): a program
# SIGPIPE ends exits with 128 + 13.
BROKEN_PIPE = 141


def until_the_reader_leaves(command: Callable[[], int]) -> int:
    """`command()`; when whoever reads its output stops reading (`... --json | head`), it
    ends quietly instead of with a BrokenPipeError traceback."""
    try:
        status = command()
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # Python's recipe: stdout is dead, so point it at /dev/null, or the interpreter's
        # own flush at exit raises again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return BROKEN_PIPE


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
    return until_the_reader_leaves(lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
