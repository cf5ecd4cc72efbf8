"""A progress bar for long syncs: on stderr, only when stderr is a terminal and output is text.

A sync of hundreds of agents takes seconds (about 12 ms per model write on a local SQLite Open
WebUI, see bench/README.md); the bar shows it is moving and which object it is on. It is transient
(erased when done), never touches stdout (the answer stream), and is off in pipes, CI logs and
with `-o json`, where it would only be noise.

Layer: output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .openwebui.apply import ChangeResult

# Below this many changes a bar only flickers.
MIN_CHANGES_FOR_BAR = 10


def bar_enabled(err: Console, *, total: int, enabled: bool) -> bool:
    """Whether a sync of `total` changes shows a bar on `err`."""
    return enabled and err.is_terminal and not err.is_dumb_terminal and total >= MIN_CHANGES_FOR_BAR


@contextmanager
def progress_reporter(err: Console, *, total: int, enabled: bool) -> Iterator[Callable[[ChangeResult], None]]:
    """Yield the `on_progress` callback for apply_plan: advances a bar, or does nothing."""
    if not bar_enabled(err, total=total, enabled=enabled):
        yield lambda _result: None
        return
    with Progress(
        TextColumn("Applying"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=True,
        redirect_stdout=False,  # stdout carries the plan and the result; never divert it to stderr
    ) as bar:
        task = bar.add_task("", total=total)

        def tick(result: ChangeResult) -> None:
            change = result.change
            bar.update(task, advance=1, description=escape(f"{change.kind} {change.id}"))

        yield tick
