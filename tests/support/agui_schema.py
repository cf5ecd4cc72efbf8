"""AG-UI 1.0's own models check the events the pipe's tests send (issue 32, item 3).

ag-ui-protocol 1.0.0's models are generated from the protocol's JSON Schema, so an event they
accept is one a 1.0 server may send. Only the THINKING_* events of 0.1.x servers (gone in 1.0,
still accepted by the pipe) are checked against their 0.1.22 shape by hand, and the pipe's own
events (which only its OpenAI adapter makes) are left alone.
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import Event, RunAgentInput
from pydantic import TypeAdapter, ValidationError

_EVENT: TypeAdapter[Any] = TypeAdapter(Event)
# ag-ui-protocol 0.1.22's THINKING_* events: their required fields (all strings)
LEGACY = {
    "THINKING_START": (),
    "THINKING_END": (),
    "THINKING_TEXT_MESSAGE_START": (),
    "THINKING_TEXT_MESSAGE_CONTENT": ("delta",),
    "THINKING_TEXT_MESSAGE_END": (),
}


class NotAnAgUiEvent(AssertionError):
    """A test sends an event AG-UI 1.0's schema rejects."""


class NotAnAgUiRun(AssertionError):
    """A request for an AG-UI run that AG-UI 1.0's RunAgentInput rejects."""


def check_event(event: Any, own: tuple[str, ...] = ()) -> None:
    """Raise NotAnAgUiEvent unless ``event`` is an AG-UI 1.0 event (or a 0.1.x THINKING_* one).
    Strings (bad JSON on purpose, "[DONE]") and dicts without a type (OpenAI chunks) pass."""
    if not isinstance(event, dict) or "type" not in event or event["type"] in own:
        return
    kind = event["type"]
    if kind in LEGACY:
        missing = [f for f in LEGACY[kind] if not isinstance(event.get(f), str)]
        if missing:
            raise NotAnAgUiEvent(f"{kind} without {', '.join(missing)}: {event}")
        return
    try:
        _EVENT.validate_python(event)
    except ValidationError as exc:
        raise NotAnAgUiEvent(f"not an AG-UI 1.0 event: {event}\n{exc}") from None


def check_run(body: Any) -> None:
    """Raise NotAnAgUiRun unless ``body`` is an AG-UI 1.0 RunAgentInput that says it is 1.0."""
    try:
        run = RunAgentInput.model_validate(body)
    except ValidationError as exc:
        raise NotAnAgUiRun(f"not an AG-UI 1.0 run: {exc}") from None
    if run.protocol_version != "1.0":
        raise NotAnAgUiRun(f"the run says protocolVersion {run.protocol_version!r}, not 1.0")
