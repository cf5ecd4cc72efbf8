"""CrewAI through its own AG-UI server: ag-ui-crewai's flow endpoint, in its default configuration.

``add_crewai_flow_fastapi_endpoint(app, OrderFlow(), path)`` as the package's README shows. The
flow's ``@start`` method hands the chat to a CrewAI ``Agent`` (a flow attribute, so the bridge
scopes its memory to the thread) whose LLM is a ``BaseLLM`` subclass playing apps/_common.py's
scripts with native tool calls; the agent runs its tools itself. The bridge streams no text of
an agent's (it drops CrewAI's own LLM stream chunks and streams text only from litellm through
``copilotkit_stream``): the answer reaches the client only in the closing ``MESSAGES_SNAPSHOT``.
A tool run shows as ``TOOL_CALL_*`` + ``TOOL_CALL_RESULT``. CrewAI asks the user at the flow
level, with ``@human_feedback`` and the bridge's ``agui_feedback_provider``: by default the run
ends with a ``CUSTOM on_interrupt`` event (reason ``crewai:human_feedback``, the thread id as
the interrupt id) and a plain ``RUN_FINISHED``, and resumes from AG-UI 1.0's ``resume`` list
(not ``forwardedProps.command.resume``). Runs in its own venv (tests/support/frameworks/harness.py).
"""

from __future__ import annotations

from typing import Any

PINS = (
    "ag-ui-crewai==1.0.0",
    "crewai==1.15.30",
    "ag-ui-protocol==1.0.0",
    "fastapi==0.115.14",
    "uvicorn==0.55.0",
)
AGENT_PATH = "/crewai"
SCENARIOS = ("stream", "tool", "approve", "ask", "tool_error", "model_error", "files", "no_args")
NOT_OFFERED = {
    "client": "a flow's agent runs only its own tools (the tools a client sends reach the flow's "
    "state as copilotkit.actions, for a litellm call through copilotkit_stream)"
}
# The bridge resumes a paused flow from AG-UI 1.0's resume list, whatever event announced the pause.
RESUME = "resume"
# How the pipe's ids, identity and files reach the agent's code (docs/agent-frameworks.md).
REACHES = (
    "`threadId` is the flow's id (`self.state.id`), the key of CrewAI's pending human feedback.",
    "Every `forwardedProps` key the flow's state declares (the pipe's `user_id`, `message_id`) is set on the "
    "state: ag-ui-crewai spreads forwardedProps into the kickoff inputs (tests/functions/test_framework_reaches.py).",
    "The user's files stay in `self.state.messages` (as `image_url` parts): `Agent.kickoff` gives the model "
    "only the text.",
    "The signed identity (`X-AIHub-Identity`) is an HTTP header: read it in a FastAPI dependency "
    "(add_crewai_flow_fastapi_endpoint passes `dependencies=` on to the route).",
)
ANSWERS = {"approve": {"approved": "approved", "declined": "declined"}, "ask": {"answered": "12 Rue de Rivoli, Paris"}}

import os
import tempfile

# No telemetry, no tracing prompt, litellm's bundled model prices (it fetches them otherwise), and
# CrewAI's pending-feedback store in a throwaway dir.
os.environ.update(
    {
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "XDG_DATA_HOME": tempfile.mkdtemp(prefix="crewai-app-"),
    }
)

import _common as common
from crewai.llms.base_llm import BaseLLM, llm_call_context


def _seen(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        content = m.get("content")
        parts = content if isinstance(content, list) else [content or ""]
        text = "".join(
            p if isinstance(p, str) else p.get("text", "")
            for p in parts
            if isinstance(p, str) or p.get("type") == "text"
        )
        media = []
        for p in parts:
            if isinstance(p, dict) and p.get("type") == "image_url":
                head, _, data = str((p.get("image_url") or {}).get("url", "")).partition(",")
                media.append(common.media("image_url", head.removeprefix("data:").split(";")[0], data))
        if m.get("role") == "tool":
            out.append(common.seen("tool", results=[(m.get("tool_call_id"), text)]))
        else:
            calls = [c.get("id") for c in m.get("tool_calls") or []]
            out.append(common.seen(str(m.get("role")), text, calls=calls, media=media))
    return out


class ScriptedLLM(BaseLLM):
    """A CrewAI LLM with native tool calling that plays the scripted step."""

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        listed = [{"role": "user", "content": messages}] if isinstance(messages, str) else list(messages)
        step = common.record_model_call(_seen(listed))
        with llm_call_context():
            for piece in step.text:  # a streaming provider reports its chunks so
                self._emit_stream_chunk_event(piece, from_task=from_task, from_agent=from_agent)
        if step.fail:
            raise RuntimeError(step.fail)
        inp, outp = step.usage
        if inp or outp:
            self._track_token_usage_internal(
                {"prompt_tokens": inp, "completion_tokens": outp, "total_tokens": inp + outp}
            )
        if step.calls and tools:
            return [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": "".join(c.pieces)}}
                for c in step.calls
            ]
        return "".join(step.text)

    async def acall(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        return self.call(messages, tools, callbacks, available_functions, from_task, from_agent, response_model)

    def supports_function_calling(self) -> bool:
        return True


# snippet: start
from ag_ui_crewai import CopilotKitState, add_crewai_flow_fastapi_endpoint, agui_feedback_provider
from crewai import Agent
from crewai.flow.flow import Flow, listen, router, start
from crewai.flow.human_feedback import human_feedback
from crewai.tools import tool
from fastapi import FastAPI


class OrderState(CopilotKitState):
    """The flow's state: the bridge fills ``messages``, and every forwardedProps key the state
    declares (the pipe's user_id, message_id); the flow's id is the AG-UI threadId."""

    user_id: str = ""
    message_id: str = ""
    pending: str = ""  # the action a tool asked the user about: "cancel:<order>" or "address:<order>"


# snippet: end


@tool("lookup_order")
def lookup_order(order: str) -> str:
    """Look an order up."""
    common.ran("lookup_order", {"order": order})
    return f"order {order} shipped"


@tool("cancel_order")
def cancel_order(order: str) -> str:
    """Cancel an order: the flow asks the user to approve it before anything is cancelled."""
    FLOW_PENDING.append(f"cancel:{order}")
    return f"cancelling order {order} awaits the user's approval"


@tool("ask_address")
def ask_address(order: str) -> str:
    """Ask the user where an order goes: the flow asks the question."""
    FLOW_PENDING.append(f"address:{order}")
    return "the user will be asked for the address"


@tool("current_time")
def current_time() -> str:
    """The time now (a tool that takes no arguments)."""
    common.ran("current_time", {})
    return "12:00"


@tool("broken_lookup")
def broken_lookup(order: str) -> str:
    """A tool that fails."""
    common.ran("broken_lookup", {"order": order})
    raise RuntimeError("the order database is down")


FLOW_PENDING: list[str] = []  # what the tools asked for during this turn (one flow run at a time here)


# snippet: start
class OrderFlow(Flow[OrderState]):
    agent = Agent(
        role="Order assistant",
        goal="Answer questions about orders",
        backstory="You help customers with their orders.",
        llm=ScriptedLLM(model="scripted"),
        tools=[lookup_order, cancel_order, ask_address, broken_lookup, current_time],
    )

    @start()
    async def chat(self) -> str:
        FLOW_PENDING.clear()
        result = await self.agent.kickoff_async(self.state.messages)
        self.state.messages.append({"role": "assistant", "content": result.raw})
        self.state.pending = FLOW_PENDING[-1] if FLOW_PENDING else ""
        return result.raw

    # snippet: end

    @router(chat)
    def needs_the_user(self) -> str:
        return {"cancel": "needs_approval", "address": "needs_address"}.get(
            self.state.pending.partition(":")[0], "done"
        )

    # snippet: start
    # The method's return value is what the user is asked about (the interrupt's metadata.crewai.output).
    @listen("needs_approval")
    @human_feedback(message="Do you approve cancelling this order?", provider=agui_feedback_provider)
    def approve_cancel(self) -> str:
        return f"Cancel order {self.state.pending.partition(':')[2]}"

    # snippet: end

    @listen("needs_address")
    @human_feedback(message=common.QUESTION, provider=agui_feedback_provider)
    def ask_for_address(self) -> str:
        return f"Order {self.state.pending.partition(':')[2]}"

    @listen(approve_cancel)
    def cancel_if_approved(self) -> None:
        order = self.state.pending.partition(":")[2]
        answer = self.last_human_feedback.feedback.strip() if self.last_human_feedback else ""
        if answer.strip('"').lower() in ("approved", "yes", "true"):
            common.ran("cancel_order", {"order": order})
            self.reply(f"Order {order} is cancelled.")
        else:
            self.reply(f"Order {order} stays as it is: you said {answer!r}.")

    @listen(ask_for_address)
    def ship_to_answer(self) -> None:
        order = self.state.pending.partition(":")[2]
        answer = self.last_human_feedback.feedback.strip() if self.last_human_feedback else ""
        common.ran("ask_address", {"order": order, "answer": answer})
        self.reply(f"Order {order} ships to {answer}.")

    def reply(self, text: str) -> None:
        self.state.pending = ""
        self.state.messages.append({"role": "assistant", "content": text})


# snippet: start
app = FastAPI(title="CrewAI AG-UI")
add_crewai_flow_fastapi_endpoint(app, OrderFlow(), AGENT_PATH)
# snippet: end

if __name__ == "__main__":
    common.serve(app, AGENT_PATH, ["ag-ui-crewai", "crewai", "ag-ui-protocol", "fastapi", "uvicorn"])
