"""A progress bar for long syncs: on stderr, only when stderr is a terminal and output is text."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .apply import ChangeResult

# Below this many changes a bar only flickers.
MIN_CHANGES_FOR_BAR = 10


@contextmanager
def progress_reporter(
    err: Console, *, total: int, enabled: bool
) -> Iterator[Callable[[ChangeResult], None]]:
    if not (enabled and err.is_terminal and total >= MIN_CHANGES_FOR_BAR):
        yield lambda _result: None
        return
    with Progress(
        TextColumn("Applying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True,
    ) as bar:
        task = bar.add_task("sync", total=total)
        yield lambda _result: bar.advance(task)
