"""A real Agno AG-UI server (AgentOS with the AGUI interface) whose model is a script.

Runs inside a venv with ``agno[os]`` (tests/support/frameworks/pins), never in the project
venv. The agent, its tool loop, AgentOS and the AGUI interface are Agno's own, in their default
configuration; only the model is a ``Model`` subclass that plays a script: no LLM, no network.

The scenario is named in the last user message (``scenario:<name>``); the model's step is the
number of tool results after that message. AG-UI endpoint: ``POST /agno/agui``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from app_common import EFFECTS, MODEL_CALLS, add_test_routes, scenario_of, serve, words  # noqa: E402

from agno.models.base import Model  # noqa: E402
from agno.models.message import Message  # noqa: E402
from agno.metrics import MessageMetrics  # noqa: E402
from agno.models.response import ModelResponse  # noqa: E402

# Scripts: a list of model steps; each step is a list of (kind, value).
SCRIPTS: dict[str, list[list[tuple[str, Any]]]] = {
    "stream": [[("text", "Hello from the scripted Agno agent.")]],
    "tool": [
        [("text", "Let me look up the weather."), ("call", ("get_weather", {"city": "Paris"}))],
        [("text", "It is sunny in Paris.")],
    ],
    "approve": [
        [("text", "I will book the Ritz."), ("call", ("book_hotel", {"hotel": "Ritz"}))],
        [("text", "The booking is settled.")],
    ],
    "error": [
        [("text", "Let me look up the weather."), ("call", ("get_weather", {"city": "Paris"}))],
        [("raise", "scripted model failure")],
    ],
    "tool_error": [
        [("text", "Let me check the order."), ("call", ("check_order", {"order": "10023"}))],
        [("text", "The order service failed.")],
    ],
    "usage": [[("text", "Counted answer."), ("usage", (12, 4))]],
    "image": [[("text", "I received your files.")]],
}


def describe(message: Message) -> dict[str, Any]:
    """A message as the model saw it, with its media as type and hash (never the bytes)."""

    def media(items: Any, kind: str) -> list[dict[str, Any]]:
        out = []
        for item in items or []:
            content = getattr(item, "content", None)
            data = content if isinstance(content, bytes) else None
            out.append({"kind": kind, "mime_type": getattr(item, "mime_type", None) or getattr(item, "format", None),
                        "sha256": hashlib.sha256(data).hexdigest() if data else None,
                        "url": getattr(item, "url", None), "name": getattr(item, "filename", None) or getattr(item, "name", None)})
        return out

    text = message.content if isinstance(message.content, str) else json.dumps(message.content, default=str)
    return {
        "role": message.role,
        "text": text,
        "calls": [c.get("function", {}).get("name") for c in message.tool_calls or []],
        "tool_call_id": message.tool_call_id,
        "media": media(message.images, "image") + media(message.files, "file"),
    }


class ScriptedModel(Model):
    """Plays ``SCRIPTS`` as a streaming chat model would: text deltas, then whole tool calls."""

    def _step(self, messages: list[Message]) -> list[tuple[str, Any]]:
        MODEL_CALLS.append([describe(m) for m in messages])
        last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
        text = messages[last_user].get_content_string() if last_user >= 0 else ""
        rounds = sum(1 for m in messages[last_user + 1 :] if m.role == "assistant" and m.tool_calls)
        steps = SCRIPTS.get(scenario_of(text), SCRIPTS["stream"])
        return steps[min(rounds, len(steps) - 1)]

    def _deltas(self, step: list[tuple[str, Any]]) -> Iterator[ModelResponse]:
        for n, (kind, value) in enumerate(step):
            if kind == "raise":
                raise RuntimeError(value)
            if kind == "text":
                for delta in words(value):
                    yield ModelResponse(role="assistant", content=delta)
            elif kind == "call":
                name, args = value
                call = {"id": f"call_{os.urandom(4).hex()}_{n}", "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)}}
                yield ModelResponse(role="assistant", tool_calls=[call])
            elif kind == "usage":
                yield ModelResponse(role="assistant", response_usage=MessageMetrics(
                    input_tokens=value[0], output_tokens=value[1], total_tokens=value[0] + value[1]))

    def invoke(self, messages: list[Message], assistant_message: Message, **_: Any) -> ModelResponse:
        whole = ModelResponse(role="assistant", content="")
        for delta in self._deltas(self._step(messages)):
            whole.content += delta.content or ""
            whole.tool_calls.extend(delta.tool_calls)
        return whole

    async def ainvoke(self, messages: list[Message], assistant_message: Message, **kwargs: Any) -> ModelResponse:
        return self.invoke(messages, assistant_message, **kwargs)

    def invoke_stream(self, messages: list[Message], assistant_message: Message, **_: Any) -> Iterator[ModelResponse]:
        yield from self._deltas(self._step(messages))

    async def ainvoke_stream(
        self, messages: list[Message], assistant_message: Message, **_: Any
    ) -> AsyncIterator[ModelResponse]:
        for delta in self._deltas(self._step(messages)):
            await asyncio.sleep(0)
            yield delta

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response


from agno.tools import tool  # noqa: E402


@tool
def check_order(order: str) -> str:
    """An order lookup that fails, to show a tool exception."""
    raise RuntimeError(f"order service unavailable for {order}")


# region agno-server
from agno.agent import Agent  # noqa: E402
from agno.db.in_memory import InMemoryDb  # noqa: E402
from agno.os import AgentOS  # noqa: E402
from agno.os.interfaces.agui import AGUI  # noqa: E402
from agno.run import RunContext  # noqa: E402


@tool
def get_weather(city: str, run_context: RunContext) -> str:
    """Weather for a city (canned). Agno hands the tool the run's context: the AG-UI
    threadId is its session_id, and what the pipe forwards arrives in its dependencies."""
    return json.dumps({"city": city, "sky": "sunny", "temp_c": 21, "session": run_context.session_id})


@tool(requires_confirmation=True)
def book_hotel(hotel: str) -> str:
    """Book a hotel: Agno pauses the run for the user's confirmation first."""
    EFFECTS.append(f"booked {hotel}")
    return f"Booked {hotel}."


# A paused run resumes from the agent's database: without one, Agno answers a confirmation
# with "Frontend tool resume requires a database".
agent = Agent(name="scripted", model=ScriptedModel(id="scripted"), db=InMemoryDb(),
              tools=[get_weather, book_hotel, check_order])
app = AgentOS(agents=[agent], interfaces=[AGUI(agent=agent, prefix="/agno")]).get_app()
# endregion agno-server

add_test_routes(app, "/agno/agui", ("agno", "ag-ui-protocol", "fastapi"))

if __name__ == "__main__":
    serve(app)
