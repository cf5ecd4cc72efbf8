"""AWS Strands through its own AG-UI adapter (ag-ui-strands), as its README shows.

A ``strands.Agent`` wrapped by ``StrandsAgent`` and served by ``add_strands_fastapi_endpoint``.
The model is a Strands ``Model`` subclass that streams apps/_common.py's scripts as Strands
stream events: text deltas, then ``toolUse`` blocks whose input arrives in pieces, then the
usage metadata. Both ways Strands asks: the adapter's ``ToolBehavior(interrupt_on_call=True)``
(an approval, on ``cancel_order``) and Strands' native ``tool_context.interrupt`` (a question,
in ``ask_address``). Runs in its own venv (tests/support/frameworks/harness.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from typing import Any

import _common as common
from ag_ui.core import RunAgentInput
from ag_ui_strands import StrandsAgent, StrandsAgentConfig, ToolBehavior, add_strands_fastapi_endpoint
from fastapi import FastAPI, Request
from strands import Agent, ToolContext, tool
from strands.models.model import Model

PINS = (
    "ag-ui-strands==1.0.2",
    "ag-ui-protocol==1.0.0",
    "strands-agents==1.62.0",
    "fastapi==0.165.0",
    "uvicorn==0.55.0",
)
AGENT_PATH = "/agent"
SCENARIOS = ("stream", "tool", "approve", "ask", "tool_error", "model_error", "files", "no_args")
NOT_OFFERED = {
    "client": "Strands' frontend tools are the ones a client sends in RunAgentInput.tools, and the pipe sends none"
}
REACHES = (
    "`invocation_state_provider=` of add_strands_fastapi_endpoint gets the HTTP request and the RunAgentInput of "
    "each run: what it returns is the run's `invocation_state`, which a `@tool(context=True)` reads as "
    "`tool_context.invocation_state` (above: `threadId`, the chat id; `forwardedProps.user_id`; the signed "
    "identity header `X-AIHub-Identity`, to verify as docs/agent-pipe.md, 'Who is asking, signed' says). "
    "Its `auth=` dependency can reject a request whose identity does not verify.",
    "The user's image and document arrive as Strands `image` and `document` content blocks on the user message.",
)


CONTEXT = "Context provided by the application:"
_FORMATS = {
    "png": "image/png",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "pdf": "application/pdf",
}


def _result_text(result: dict[str, Any]) -> str:
    parts = result.get("content") or []
    return "".join(str(p.get("text", p.get("json", ""))) for p in parts)


def _seen(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        blocks = message.get("content") or []
        # the adapter writes RunAgentInput.context before the user's text, a blank line between
        text = "".join(b["text"] for b in blocks if "text" in b)
        if text.startswith(CONTEXT):
            text = text.split("\n\n", 1)[1] if "\n\n" in text else ""
        media = []
        for kind in ("image", "document"):
            for b in blocks:
                if kind in b:
                    fmt = b[kind].get("format", "")
                    media.append(common.media(kind, _FORMATS.get(fmt, fmt), b[kind]["source"].get("bytes", b"")))
        results = [(b["toolResult"]["toolUseId"], _result_text(b["toolResult"])) for b in blocks if "toolResult" in b]
        if results:
            out.append(common.seen("tool", results=results))
        elif message["role"] == "user":
            out.append(common.seen("user", text, media=media))
        else:
            out.append(
                common.seen("assistant", text, calls=[b["toolUse"]["toolUseId"] for b in blocks if "toolUse" in b])
            )
    return out


class ScriptedModel(Model):
    """Streams the scripted step as Strands' own providers do (Bedrock's event shapes)."""

    def __init__(self) -> None:
        self.config: dict[str, Any] = {"model_id": "scripted"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, output_model: Any, prompt: Any, system_prompt: Any = None, **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model has no structured output")

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncIterable[Any]:
        step = common.record_model_call(_seen(list(messages)))
        yield {"messageStart": {"role": "assistant"}}
        if step.text:
            yield {"contentBlockStart": {"start": {}}}
            for piece in step.text:
                yield {"contentBlockDelta": {"delta": {"text": piece}}}
            yield {"contentBlockStop": {}}
        if step.fail:
            raise RuntimeError(step.fail)
        for call in step.calls:
            yield {"contentBlockStart": {"start": {"toolUse": {"name": call.name, "toolUseId": call.id}}}}
            for piece in call.pieces:
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": piece}}}}
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use" if step.calls else "end_turn"}}
        inp, outp = step.usage
        yield {
            "metadata": {
                "usage": {"inputTokens": inp, "outputTokens": outp, "totalTokens": inp + outp},
                "metrics": {"latencyMs": 1},
            }
        }


# snippet: start
def run_state(request: Request, run: RunAgentInput) -> dict[str, Any]:
    """What each run's tools may read (its invocation_state): the ids and the signed identity."""
    forwarded = run.forwarded_props if isinstance(run.forwarded_props, dict) else {}
    return {
        "thread_id": run.thread_id,  # the chat id
        "user_id": forwarded.get("user_id"),
        "identity": request.headers.get("X-AIHub-Identity"),  # verify it before you trust it
    }


@tool(context=True)
def lookup_order(order: str, tool_context: ToolContext) -> str:
    """Look an order up."""
    state = tool_context.invocation_state
    thread_id, user_id, identity = state["thread_id"], state["user_id"], state["identity"]
    # snippet: end
    common.reached(thread_id=thread_id, user_id=user_id, identity=identity)
    common.ran("lookup_order", {"order": order})
    return f"order {order} shipped"


@tool
def cancel_order(order: str) -> str:
    """Cancel an order (the adapter asks the user to approve the call first)."""
    common.ran("cancel_order", {"order": order})
    return f"order {order} cancelled"


@tool(context=True)
def ask_address(order: str, tool_context: ToolContext) -> str:
    """Ask the user where an order goes, with Strands' native interrupt (the body runs again on resume)."""
    envelope = tool_context.interrupt("ask_address", reason={"question": common.QUESTION, "order": order})
    if not isinstance(envelope, dict) or envelope.get("cancelled") or envelope.get("response") is None:
        return "no address given"
    common.ran("ask_address", {"order": order, "answer": envelope["response"]})
    return f"shipping to {envelope['response']}"


@tool
def current_time() -> str:
    """The time now (a tool that takes no arguments)."""
    common.ran("current_time", {})
    return "12:00"


@tool
def broken_lookup(order: str) -> str:
    """A tool that fails."""
    common.ran("broken_lookup", {"order": order})
    raise RuntimeError("the order database is down")


# snippet: start
template = Agent(
    model=ScriptedModel(),
    tools=[lookup_order, cancel_order, ask_address, broken_lookup, current_time],
    system_prompt="You are a scripted agent.",
    callback_handler=None,
)
config = StrandsAgentConfig(tool_behaviors={"cancel_order": ToolBehavior(interrupt_on_call=True)})
app = FastAPI(title="Strands AG-UI")
agent = StrandsAgent(agent=template, name="scripted", config=config)
add_strands_fastapi_endpoint(app, agent, AGENT_PATH, invocation_state_provider=run_state)
# snippet: end

if __name__ == "__main__":
    common.serve(app, AGENT_PATH, ["ag-ui-strands", "strands-agents", "ag-ui-protocol"])
