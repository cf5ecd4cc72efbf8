"""Stored assistant content -> segments: the inverse of rendering, for the next turn's history."""

import html
import re
from collections.abc import Callable, Mapping

from agent_pipe.segments import Error, Reasoning, Segment, Subagent, Text, ToolCall, ToolStep

# === parsing stored content back ==================================================================


_BLOCK = re.compile(r'<details type="(tool_calls|reasoning)"([^>]*)>\n(.*?)</details>\n?', re.S)
_ATTRS = re.compile(r'(\w+)="([^"]*)"')
_ERROR_TAIL = re.compile(r"(?:\n\n)?> \[!CAUTION\]\n> Agent error: ((?:[^\n]*)(?:\n> [^\n]*)*)\n?\Z")


def parse_content(
    content: str, id_prefix: str = "aihub", verify: Callable[[ToolCall, str], bool] | None = None
) -> list[Segment]:
    """Turn stored assistant content back into segments: the inverse of render_segments.

    Text outside our blocks is kept verbatim. Tool blocks in a row that share ``message_id`` form
    one step; blocks without one (Open WebUI's own legacy markup) in a row form one step too.
    ``verify(call, message_id)`` decides which tool blocks count: a block it rejects stays text,
    markup and all (history passes the Signer, so a forged block never becomes a call).
    """
    error: Error | None = None
    tail = _ERROR_TAIL.search(content)
    if tail:
        error = Error(html.unescape(tail.group(1).replace("\n> ", "\n")))
        content = content[: tail.start()]
    segments: list[Segment] = []
    start = 0
    for block in _SUBAGENT_HEAD.finditer(content):
        if block.start() < start:
            continue  # inside the subagent block before
        close = _closing(content, block.start())
        if close < 0:
            break  # not closed (edited): the rest is read as it is
        _parse_flat(content[start : block.start()], id_prefix, verify, segments, before_block=True)
        attrs = {key: html.unescape(value) for key, value in _ATTRS.findall(block.group(1))}
        body = content[block.end() : close - len("</details>")]
        body = body.split("\n", 1)[1] if body.startswith("<summary>") and "\n" in body else body
        inner = parse_content(body[:-1] if body.endswith("\n") else body, id_prefix, None if verify is None else _none)
        segments.append(Subagent(attrs.get("id", ""), attrs.get("name", ""), inner, attrs.get("status") == "failed"))
        start = close + (1 if content.startswith("\n", close) else 0)
    _parse_flat(content[start:], id_prefix, verify, segments, before_block=False)
    if error:
        segments.append(error)
    return segments


_SUBAGENT_HEAD = re.compile(r'<details type="subagent"([^>]*)>\n')


def _none(call: ToolCall, message_id: str) -> bool:
    """A subagent's calls are its own: none of them becomes a call of the agent's history."""
    return False


def _closing(content: str, start: int) -> int:
    """Where the details block opened at ``start`` ends (after its "</details>"), counting the
    blocks inside it as Open WebUI does; -1 when it is not closed."""
    depth, index = 0, start
    while True:
        opening, closing = content.find("<details", index), content.find("</details>", index)
        if closing < 0:
            return -1
        if 0 <= opening < closing:
            depth, index = depth + 1, opening + len("<details")
            continue
        depth, index = depth - 1, closing + len("</details>")
        if depth == 0:
            return index


def _parse_flat(
    content: str,
    id_prefix: str,
    verify: Callable[[ToolCall, str], bool] | None,
    segments: list[Segment],
    before_block: bool,
) -> None:
    """Tool and reasoning blocks and the text around them, appended to ``segments``."""
    step_key: str | None = None  # message_id of the step the next adjacent block may join
    position = 0
    for match in _BLOCK.finditer(content):
        gap = content[position : match.start()]
        attrs = {key: html.unescape(value) for key, value in _ATTRS.findall(match.group(2))}
        if match.group(1) == "reasoning":
            _append_gap(segments, gap)
            position = match.end()
            segments.append(_parse_reasoning(match.group(3), attrs, f"{id_prefix}-r{len(segments)}"))
            step_key = None
            continue
        unreported = attrs.get("unreported") == "true"
        call = ToolCall(
            id=attrs.get("id", ""),
            name=attrs.get("name", ""),
            arguments=attrs.get("arguments", ""),
            result=attrs.get("result", "") if attrs.get("done") == "true" and not unreported else None,
            unreported=unreported,
            result_id=attrs.get("result_id"),
            failed=attrs.get("status") == "failed",
            turn=attrs.get("turn", ""),
            sig=attrs.get("sig", ""),
        )
        message_id = attrs.get("message_id", "")
        if verify is not None and not verify(call, message_id):
            continue  # not ours, or altered: the markup stays in the text around it
        if gap:
            _append_gap(segments, gap)
            step_key = None
        position = match.end()
        last = segments[-1] if segments else None
        if isinstance(last, ToolStep) and step_key == message_id:
            last.calls.append(call)
        else:
            segments.append(ToolStep(message_id=message_id or f"{id_prefix}-tc{len(segments)}", calls=[call]))
            step_key = message_id
    (_append_gap if before_block else _append_text)(segments, content[position:])


def _parse_reasoning(body: str, attrs: Mapping[str, str], fallback_id: str) -> Reasoning:
    if body.startswith("<summary>"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
    body = body[:-1] if body.endswith("\n") else body
    lines = [line[2:] if line.startswith("> ") else line.lstrip(">") for line in body.split("\n")]
    duration = attrs.get("duration", "")
    return Reasoning(
        id=attrs.get("id") or fallback_id,
        text=html.unescape("\n".join(lines)),
        duration=int(duration) if duration.isdigit() else 0,
    )


def _append_text(segments: list[Segment], text: str) -> None:
    if text.strip():
        segments.append(Text(text))


def _append_gap(segments: list[Segment], gap: str) -> None:
    """Text before a block: render_piece put one "\n" between text and the block that follows it."""
    _append_text(segments, gap[:-1] if gap.endswith("\n") else gap)
