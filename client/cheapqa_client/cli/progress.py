"""Progress on a terminal only (stderr is a tty): quiet when piped or logged, or when the
command prints JSON."""

from __future__ import annotations

import sys
from typing import Any


def shown(json_output: bool = False) -> bool:
    return not json_output and sys.stderr.isatty()


class Counter:
    """`indexed 3/10` on stderr, redrawn in place as things finish; silent unless `enabled`."""

    def __init__(self, label: str, total: int, enabled: bool) -> None:
        self.label, self.total, self.enabled, self.done = label, total, enabled, 0

    def update(self, *_: Any) -> None:
        self.done += 1
        if self.enabled:
            print(f"\r{self.label} {self.done}/{self.total}", end="", file=sys.stderr, flush=True)

    def __enter__(self) -> Counter:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled and self.done:
            print(file=sys.stderr)
