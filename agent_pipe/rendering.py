"""Segments -> Open WebUI assistant content, exactly the markup Open WebUI reads."""

import html
from collections.abc import Iterable

from agent_pipe.segments import Error, Reasoning, Segment, Subagent, Text, ToolCall, ToolStep

# === rendering ====================================================================================


def _attr(value: str) -> str:
    """Escape an attribute value; newlines too, since Open WebUI's attribute regex is one line."""
    return html.escape(value, quote=True).replace("\r", "&#13;").replace("\n", "&#10;")


def render_tool_call(call: ToolCall, message_id: str) -> str:
    done = call.result is not None or call.unreported
    attrs = [
        ("type", "tool_calls"),
        ("done", "true" if done else "false"),
        ("id", call.id),
        ("name", call.name),
        ("arguments", call.arguments),
    ]
    if call.result is not None:
        attrs.append(("result", call.result))
    elif call.unreported:
        attrs.append(("unreported", "true"))
    attrs.append(("message_id", message_id))
    if call.result is not None and call.result_id:
        attrs.append(("result_id", call.result_id))
    if call.failed:
        attrs.append(("status", "failed"))  # Open WebUI shows a failed call as done, with an error mark
    if call.turn:
        attrs.append(("turn", call.turn))
    if call.sig:
        attrs.append(("sig", call.sig))
    summary = ("Tool Failed" if call.failed else "Tool Executed") if done else "Executing..."
    head = " ".join(f'{key}="{_attr(value)}"' for key, value in attrs)
    return f"<details {head}>\n<summary>{summary}</summary>\n</details>\n"


def render_reasoning(reasoning: Reasoning) -> str:
    body = "\n".join("> " + line for line in html.escape(reasoning.text, quote=False).split("\n"))
    return (
        f'<details type="reasoning" done="true" duration="{reasoning.duration}" id="{_attr(reasoning.id)}">\n'
        f"<summary>Thought for {reasoning.duration} seconds</summary>\n{body}\n</details>\n"
    )


_ERROR_LEAD = "> [!CAUTION]\n> Agent error: "


def render_error(error: Error) -> str:
    lines = html.escape(error.message, quote=False).split("\n")
    return _ERROR_LEAD + "\n> ".join(lines) + "\n"


def render_piece(previous: Segment | None, segment: Segment) -> str:
    """One segment's markup, with the separator that keeps it a block of its own."""
    if isinstance(segment, Text):
        return segment.text
    after_text = isinstance(previous, Text)
    if isinstance(segment, ToolStep):
        return ("\n" if after_text else "") + "".join(render_tool_call(c, segment.message_id) for c in segment.calls)
    if isinstance(segment, Reasoning):
        return ("\n" if after_text else "") + render_reasoning(segment)
    if isinstance(segment, Subagent):
        return ("\n" if after_text else "") + render_subagent(segment)
    return ("\n\n" if after_text else "") + render_error(segment)


def render_subagent(subagent: Subagent) -> str:
    """A subagent's work as a collapsible block named after it (Open WebUI shows a details block
    of another type with its summary as the title, and its inner blocks as they are)."""
    failed = ' status="failed"' if subagent.failed else ""
    head = f'<details type="subagent" done="true" id="{_attr(subagent.id)}" name="{_attr(subagent.name)}"{failed}>'
    summary = html.escape(subagent.name, quote=False).replace("\n", " ") or "Subagent"
    return f"{head}\n<summary>{summary}</summary>\n{render_segments(subagent.segments)}\n</details>\n"


def render_segments(segments: Iterable[Segment]) -> str:
    out: list[str] = []
    previous: Segment | None = None
    for segment in segments:
        out.append(render_piece(previous, segment))
        previous = segment
    return "".join(out)
