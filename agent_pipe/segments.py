"""What one turn is made of: text, tool steps, reasoning and an error, in order."""

from dataclasses import dataclass, field

# === segments =====================================================================================


@dataclass
class Text:
    """Assistant text, one or more streamed messages in a row."""

    text: str


@dataclass
class ToolCall:
    """One call; ``result`` stays None until (or unless) its result arrives."""

    id: str
    name: str
    arguments: str = ""
    result: str | None = None
    result_id: str | None = None
    failed: bool = False  # closed by the pipe because the run ended in an error
    # ran on the agent's side, result not streamed (an OpenAI stream went on after the call)
    unreported: bool = False
    # Open WebUI's id of the assistant message the block was rendered in, set with ``sig``
    turn: str = ""
    sig: str = ""  # the Signer's HMAC over the fields above, set when the block is rendered


@dataclass
class ToolStep:
    """Calls made together (parallel calls of one model step): one assistant message."""

    message_id: str
    calls: list[ToolCall] = field(default_factory=list)


@dataclass
class Reasoning:
    """A reasoning block, placed where it streamed; ``duration`` in whole seconds."""

    id: str
    text: str
    duration: int = 0


@dataclass
class Error:
    """Why the run stopped early; always the last segment."""

    message: str


@dataclass
class Subagent:
    """An AG-UI 1.0 subagent's own text, calls and reasoning (events with its subagentRunId), in a
    block named after it, where it started; ``failed`` after its SUBAGENT_ERROR."""

    id: str
    name: str
    segments: "list[Segment]" = field(default_factory=list)
    failed: bool = False


Segment = Text | ToolStep | Reasoning | Error | Subagent
