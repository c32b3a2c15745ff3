"""Progress bars for the long commands: on a terminal only (stderr is a tty), quiet when
piped or logged, or when the command prints JSON."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from cheapqa_client.cli.progress import shown

T = TypeVar("T")


def bar(
    desc: str, json_output: bool = False, **tqdm_args: Any
) -> Callable[[Iterable[T]], Iterable[T]]:
    """A wrapper for an iterable that shows a tqdm bar when `shown`."""
    from tqdm import tqdm

    disable = not shown(json_output)
    return lambda items: tqdm(items, desc=desc, disable=disable, leave=False, **tqdm_args)
