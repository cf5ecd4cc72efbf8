"""The dialogs a paused run asks in, and the answers read back: a tool approval or a question
(AG-UI interrupts, calls left to the client) as Open WebUI's confirmation or input dialog, its
text defused as Markdown; the typed answer checked against the schema and given back in the shape
the agent's framework reads. Pure: the asking itself is agent_pipe/questions.py."""

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from agent_pipe.helpers import _json_or_none, _str
from agent_pipe.outbound import _question_text
from agent_pipe.recorder import Recorder
from agent_pipe.segments import ToolCall

# --- dialogs: what the user is asked, and how the answer goes back -------------------------------
# Open WebUI's dialog renders its message as Markdown (ConfirmDialog of 0.6.26 to 0.12.4:
# DOMPurify.sanitize(marked.parse(message)); 0.6.5's showed plain text): what the agent wrote
# must not become a link, a remote image (which would tell the image's host the user's address),
# emphasis or HTML there. The marked it calls carries Open WebUI's own extensions (once a chat has
# rendered): its KaTeX one reads \( … \) and \[ … \] as math and renders what is between them as
# raw HTML, so backslash escapes would open it. A numeric character reference is text to CommonMark
# in every context but code, and starts none of those extensions.
_MARKDOWN_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]")
_BACKTICKS = re.compile(r"`+")


def markdown_text(text: str) -> str:
    """Text Markdown shows as written: every ASCII punctuation character as a numeric character
    reference (``(`` is ``&#40;``), so no link, image, emphasis, list, heading, tag or math forms."""
    return _MARKDOWN_PUNCTUATION.sub(lambda match: f"&#{ord(match.group())};", text)


def _fence(text: str, minimum: int) -> str:
    """Backticks longer than any run of them in ``text``: the code it opens cannot be closed early."""
    return "`" * max(minimum, 1 + max((len(run) for run in _BACKTICKS.findall(text)), default=0))


def markdown_code(text: str) -> str:
    """One line as a code span (whitespace folded: a blank line would end the span)."""
    line = " ".join(text.split())
    fence = _fence(line, 1)
    return f"{fence} {line} {fence}"


def markdown_block(text: str) -> str:
    """Any text as a fenced code block: its lines shown as they are, nothing in them markup."""
    fence = _fence(text, 3)
    return f"{fence}\n{text}\n{fence}"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _is_approval(interrupt: Mapping[str, Any], recorder: Recorder) -> bool:
    """A tool approval: its call streamed, or it says so (reason tool_call, an ``approved`` answer)."""
    properties = _mapping(_mapping(interrupt.get("responseSchema")).get("properties"))
    return (
        _str(interrupt.get("toolCallId")) in recorder._calls
        or interrupt.get("reason") == "tool_call"
        or "approved" in properties
    )


def _interrupt_message(interrupt: Mapping[str, Any]) -> str:
    """What the agent asks: the interrupt's message, else Strands' question in metadata.reason.
    CrewAI's @human_feedback asks about its method's output (metadata.crewai.output, what its own
    console shows for review): it follows the question."""
    message = _str(interrupt.get("message"))
    reviewed = _mapping(_mapping(interrupt.get("metadata")).get("crewai")).get("output")
    if reviewed is not None and not isinstance(reviewed, str):
        reviewed = json.dumps(reviewed, ensure_ascii=False)
    if message.strip() and reviewed and reviewed.strip():
        return f"{message}\n\n{reviewed}"
    if message.strip():
        return message
    reason = _mapping(interrupt.get("metadata")).get("reason")
    if isinstance(reason, str):
        return reason
    return _question_text(reason) if isinstance(reason, Mapping) else ""


def _confirmation(name: str, arguments: str, message: str) -> dict[str, Any]:
    """Open WebUI's confirmation dialog for a tool: its name first, then the agent's words as plain
    text, then the arguments as a code block (nothing the agent sent becomes markup)."""
    text = f"The agent wants to run {markdown_code(name)}." if name else "The agent wants to run a tool."
    if message.strip():
        text += "\n\n" + markdown_text(message)
    if arguments:
        text += "\n\nArguments:\n\n" + markdown_block(arguments)
    return {"type": "confirmation", "data": {"title": f"Allow {name[:80] or 'a tool'}?", "message": text}}


def _input(title: str, message: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "input", "data": {"title": title, "message": message, "placeholder": answer_hint(schema)}}


def question_of(interrupt: Mapping[str, Any], recorder: Recorder) -> dict[str, Any]:
    """The dialog for an interrupt: a confirmation for a tool approval or a yes/no answer, else an
    input the user types (keys masked; nothing the agent sent becomes markup in the dialog)."""
    redact = recorder.scrubber.redact
    call = recorder._calls.get(_str(interrupt.get("toolCallId")))
    schema = _mapping(interrupt.get("responseSchema"))
    message = redact(_interrupt_message(interrupt))
    if isinstance(interrupt.get("action"), Mapping):  # a HumanInTheLoopMiddleware action: its own name and args
        action = interrupt["action"]
        return _confirmation(
            " ".join(redact(_str(action.get("name"))).split()), redact(_str(action.get("arguments"))), ""
        )
    if _is_approval(interrupt, recorder):
        name = " ".join(redact(call[1].name).split()) if call else ""
        return _confirmation(name, redact(call[1].arguments) if call else "", message)
    if schema.get("type") == "boolean":
        return {"type": "confirmation", "data": {"title": "The agent asks", "message": markdown_text(message)}}
    return _input("The agent asks", markdown_text(message or "The agent asks for your answer."), schema)


ADK_CONFIRMATION = "adk_request_confirmation"  # ADK's tool_context.request_confirmation(): a call left to the client


def _example_schema(example: Any) -> dict[str, Any]:
    """The schema of an answer shaped like ``example`` (ADK's confirmation payload is an example of
    the data it needs: ``{"address": ""}``), for the input's hint and its check."""
    if isinstance(example, bool):
        return {"type": "boolean"}
    if isinstance(example, int):
        return {"type": "integer"}
    if isinstance(example, float):
        return {"type": "number"}
    if isinstance(example, list):
        return {"type": "array"}
    if isinstance(example, Mapping):
        return {"type": "object", "properties": {str(k): _example_schema(v) for k, v in example.items()}}
    return {"type": "string"}


def _adk_confirmation(call: ToolCall) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """ADK's confirmation call: the call it confirms, and the ToolConfirmation it asks for."""
    arguments = _mapping(_json_or_none(call.arguments))
    return _mapping(arguments.get("originalFunctionCall")), _mapping(arguments.get("toolConfirmation"))


def client_question(call: ToolCall, recorder: Recorder) -> tuple[dict[str, Any], Mapping[str, Any]]:
    """The dialog for a call the run left for the client (ADK's long-running tools and its
    confirmations, LlamaIndex's frontend tools, Agno's confirmations, pendingToolCallIds), and the
    schema its answer is checked against: a yes or no, built from the call's name and arguments (for
    ADK's confirmation, of the call it confirms); ADK's confirmation that asks for a payload
    (``request_confirmation(hint=..., payload=...)``) is its hint as a question, answered in the
    payload's shape."""
    redact = recorder.scrubber.redact
    name, arguments = call.name, call.arguments
    if call.name == ADK_CONFIRMATION:
        original, confirmation = _adk_confirmation(call)
        if confirmation.get("payload") is not None:
            schema = _example_schema(confirmation["payload"])
            hint = redact(_str(confirmation.get("hint"))) or "The agent asks for your answer."
            return _input("The agent asks", markdown_text(hint), schema), schema
        if original.get("name"):
            name = _str(original["name"])
            arguments = json.dumps(original.get("args"), ensure_ascii=False) if original.get("args") is not None else ""
    return _confirmation(" ".join(redact(name).split()), redact(arguments), ""), {}


AGNO = "agno"  # the source Agno's AG-UI interface names in its RAW events
ACCEPTED = "The user accepted this call."


def client_answer(call: ToolCall, accepted: bool, framework: str, *, why: str = "", value: Any = None) -> str:
    """The tool message that answers a call left to the client, in the shape its framework reads
    (``why``: why a call that was not accepted did not run; ``value``: the answer typed for ADK's
    confirmation that asks for a payload). ADK's confirmation reads ``{"confirmed": ..., "payload":
    ...}``. Agno's paused call ``{"accepted": ..., "values": {}}`` (a "no" with its ``note``, which
    Agno tells the agent): Agno's stream does not say which of its pauses a call is, and each reads
    its own key (a requires_user_input call's fields are not on the wire, so it gets none). Any other
    call gets words for its model: Agent Framework takes a tool message holding ``accepted`` for an
    approval of its own, and drops it."""
    if call.name == ADK_CONFIRMATION:
        return json.dumps({"confirmed": accepted, **({"payload": value} if accepted and value is not None else {})})
    if framework == AGNO:
        return json.dumps({"accepted": accepted, "values": {}, **({} if accepted else {"note": why})})
    return ACCEPTED if accepted else why


def tells_the_agent(call: ToolCall, framework: str) -> bool:
    """A call nobody answered that is still answered in a new run, as declined: ADK's confirmation
    and Agno's paused calls are approvals the framework holds open (an approval nobody gave is a
    "no" the agent hears). Any other call is closed as not run, and the agent reads so next turn."""
    return call.name == ADK_CONFIRMATION or framework == AGNO


# --- answers checked against the interrupt's responseSchema ------------------------------------------

_BOOLEANS = {"yes": True, "y": True, "true": True, "no": False, "n": False, "false": False}


def answer_hint(schema: Mapping[str, Any]) -> str:
    """The input's placeholder: what kind of answer the schema takes."""
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "One of: " + ", ".join(map(str, schema["enum"]))[:200]
    kind = schema.get("type")
    properties = _mapping(schema.get("properties"))
    if kind == "object" and len(properties) == 1:
        return answer_hint(_mapping(next(iter(properties.values()))))
    return {
        "integer": "A whole number",
        "number": "A number",
        "boolean": "yes or no",
        "array": "A JSON list",
        "object": "A JSON object",
    }.get(_str(kind), "Your answer")


def parse_answer(schema: Mapping[str, Any], text: str) -> tuple[Any, str]:
    """The typed answer the schema asks for, and "" — or None and why the text is not one."""
    kind, enum = schema.get("type"), schema.get("enum")
    properties = _mapping(schema.get("properties"))
    value: Any = text
    if kind == "object" and len(properties) == 1:  # one field: the answer is that field's value
        ((field, inner),) = properties.items()
        value, problem = parse_answer(_mapping(inner), text)
        return ({field: value}, "") if not problem else (None, problem)
    if kind == "integer":
        try:
            value = int(text.strip())
        except ValueError:
            return None, "The answer must be a whole number."
    elif kind == "number":
        try:
            value = float(text.strip())
        except ValueError:
            return None, "The answer must be a number."
        value = int(value) if value.is_integer() and "." not in text else value
    elif kind == "boolean":
        if text.strip().lower() not in _BOOLEANS:
            return None, "The answer must be yes or no."
        value = _BOOLEANS[text.strip().lower()]
    elif kind in ("object", "array"):
        value = _json_or_none(text)
        wanted = dict if kind == "object" else list
        if not isinstance(value, wanted):
            return None, f"The answer must be a JSON {'object' if kind == 'object' else 'list'}."
        missing = [k for k in schema.get("required") or [] if kind == "object" and k not in value]
        if missing:
            return None, "The answer must have " + ", ".join(map(str, missing)) + "."
    if isinstance(enum, list) and enum and value not in enum:
        return None, "The answer must be one of: " + ", ".join(map(str, enum)) + "."
    return value, ""


def resume_entry(interrupt: Mapping[str, Any], question: Mapping[str, Any], answer: Any) -> dict[str, Any]:
    """The AG-UI ``resume`` entry for the user's answer (None: nobody answered). A declined tool is
    resolved ``{"approved": false}`` (it does not run, the agent goes on); a question nobody
    answered is ``cancelled``, never an approval (Pydantic AI denies it, Strands answers its tool
    {"cancelled": true}; Agent Framework 1.0.0rc8 ends the run in an error)."""
    entry: dict[str, Any] = {"interruptId": _str(interrupt.get("id"))}
    if answer is None:
        return {**entry, "status": "cancelled"}
    if question["type"] == "confirmation":
        approval = "approved" in _mapping(_mapping(interrupt.get("responseSchema")).get("properties")) or (
            _mapping(interrupt.get("responseSchema")).get("type") != "boolean"
        )
        return {**entry, "status": "resolved", "payload": {"approved": answer is True} if approval else answer is True}
    return {**entry, "status": "resolved", "payload": answer}


def seconds_left(interrupt: Mapping[str, Any], now: float) -> float | None:
    """How long an interrupt stays answerable (its ``expiresAt``, ISO 8601), or None: no bound."""
    expires = _str(interrupt.get("expiresAt"))
    if not expires:
        return None
    try:
        moment = datetime.fromisoformat(expires.replace("Z", "+00:00"))
    except ValueError:
        return None  # not a date: the interrupt looks unexpired, as the protocol says
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp() - now
