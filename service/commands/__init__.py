"""Subcommands of the `cheapqa` CLI, one module each (see service/cli.py)."""
