"""The AG-UI fixtures follow AG-UI 1.0 (issue 32, item 3): ag-ui-protocol 1.0.0's models validate
every event of every capture the tests replay, and every run request the captures were made with.

The events tests write themselves are checked where they are sent (tests/support/pipe_support.py:
the SSE stub and ``record``), and every run the pipe asks the stub for is checked there too. A
capture is what a real server sent: where one departs from 1.0 it is named below, with why, and
the test fails the day it no longer does, so the list cannot outlive what it excuses.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.agui_schema import NotAnAgUiEvent, NotAnAgUiRun, check_event, check_run

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "agui_captures"
STREAMS = sorted(str(p.relative_to(CAPTURES)) for p in CAPTURES.glob("*/*.sse"))
REQUESTS = sorted(str(p.relative_to(CAPTURES)) for p in CAPTURES.glob("*/*.request.json"))

# (capture, event type) -> why that real server's event is not AG-UI 1.0
DEPARTURES: dict[tuple[str, str], str] = {
    ("agent_framework/files.sse", "MESSAGES_SNAPSHOT"): (
        "agent-framework-ag-ui 1.7.0 pins ag-ui-protocol 0.1.22 and echoes the user's files as 0.1.x "
        "'binary' parts, where 1.0 has image and document parts"
    ),
}


def _events(capture: str) -> list[dict[str, object]]:
    body = (CAPTURES / capture).read_text(encoding="utf-8")
    data = [
        "\n".join(line[5:].lstrip() for line in block.splitlines() if line.startswith("data:"))
        for block in body.split("\n\n")
    ]
    return [json.loads(d) for d in data if d]


def test_there_are_captures_of_every_framework() -> None:
    frameworks = {capture.split("/")[0] for capture in STREAMS}
    assert len(frameworks) == 8 and len(STREAMS) > 80, (frameworks, len(STREAMS))


@pytest.mark.parametrize("capture", STREAMS)
def test_every_event_a_capture_holds_is_ag_ui_1_0(capture: str) -> None:
    events = _events(capture)
    assert events, f"{capture} holds no events"
    departed = set()
    for event in events:
        why = DEPARTURES.get((capture, str(event.get("type"))))
        try:
            check_event(event)
        except NotAnAgUiEvent:
            if why is None:
                raise
            departed.add(event["type"])
    named = {kind for (name, kind) in DEPARTURES if name == capture}
    assert departed == named, f"{capture}: the departures named are {named}, the capture has {departed}"


@pytest.mark.parametrize("request_file", REQUESTS)
def test_every_run_a_capture_was_made_with_is_an_ag_ui_1_0_run(request_file: str) -> None:
    check_run(json.loads((CAPTURES / request_file).read_text(encoding="utf-8")))


def test_the_checks_reject_what_1_0_rejects() -> None:
    with pytest.raises(NotAnAgUiEvent):
        check_event({"type": "TEXT_MESSAGE_CONTENT", "delta": "x"})  # no messageId
    run = {
        "threadId": "t",
        "runId": "r",
        "state": {},
        "messages": [],
        "tools": [],
        "context": [],
        "forwardedProps": {},
        "protocolVersion": "1.0",
    }
    check_run(run)
    with pytest.raises(NotAnAgUiRun):
        check_run({**run, "protocolVersion": "0.1"})
    with pytest.raises(NotAnAgUiRun):  # a 0.1.x binary part is not a 1.0 user message
        check_run({**run, "messages": [{"id": "u", "role": "user", "content": [{"type": "binary", "mimeType": "x"}]}]})
