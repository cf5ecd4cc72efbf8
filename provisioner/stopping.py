"""SIGINT and SIGTERM during a sync: finish the write in flight, start no new one, then report.

Killing provision between two writes loses nothing (the next sync finishes the job), but
killing it gives no report of what was done. While `stop_requests()` is active the first
signal only asks apply to stop; a second one acts as usual (the handlers are restored).

Layer: vocabulary.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_requests(notice: Callable[[str], None]) -> Iterator[Callable[[], str]]:
    """Yield `stopping()`: the name of the first signal received ("SIGTERM"), or "" while none was.

    `notice(name)` is called once, from the signal handler, to tell the person what happens."""
    received: list[str] = []
    if threading.current_thread() is not threading.main_thread():  # only the main thread takes signals
        yield lambda: ""
        return
    previous: dict[signal.Signals, Any] = {}  # what each signal's handler was (signal.signal's answer)

    def on_signal(signum: int, _frame: object) -> None:
        if received:
            return
        received.append(signal.Signals(signum).name)
        for sig, handler in previous.items():  # a second signal stops at once
            signal.signal(sig, handler)
        notice(received[0])

    for sig in SIGNALS:
        previous[sig] = signal.signal(sig, on_signal)
    try:
        yield lambda: received[0] if received else ""
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def exit_code(signal_name: str) -> int:
    """The shell's code for a process ended by that signal: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + signal.Signals[signal_name].value
