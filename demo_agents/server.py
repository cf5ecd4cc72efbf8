"""The demo agents over HTTP on 127.0.0.1: AG-UI at ``POST /<agent>``, OpenAI-compatible at
``POST /v1/chat/completions`` (the agent is the ``model``) and ``GET /v1/models``, ``GET /health``.

Every port serves both, so the samples' two URLs (``:8700/<agent>`` and ``:8701/v1``) are two
ports of one process.
"""

from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer
from typing import Any

from demo_agents.answers import AGENTS, answer, parse_request
from demo_agents.sse_handler import SSEHandler
from demo_agents.wire import to_agui, to_openai


class DemoHandler(SSEHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/health":
            self.send_json({"status": "ok", "agents": list(AGENTS)})
        elif path == "/v1/models":
            self.send_json(
                {
                    "object": "list",
                    "data": [
                        {"id": agent, "object": "model", "owned_by": "demo-agents", "created": 0} for agent in AGENTS
                    ],
                }
            )
        else:
            self.send_json({"detail": "not found"}, 404)

    def do_POST(self) -> None:  # noqa: N802 (http.server's method name)
        path = self.path.split("?", 1)[0].rstrip("/")
        try:
            body = json.loads(self.read_body() or b"{}")
        except ValueError:
            self.send_json({"detail": "the body is not JSON"}, 400)
            return
        if not isinstance(body, dict):
            self.send_json({"detail": "the body is not a JSON object"}, 400)
            return
        if path.endswith("/chat/completions"):
            agent = str(body.get("model") or "")
            if agent not in AGENTS:
                self.send_json({"error": {"message": f"no demo agent {agent!r}; try one of {list(AGENTS)}"}}, 404)
                return
            turn = answer(parse_request(agent, body.get("messages")))
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self.stream(to_openai(turn, agent, include_usage))
            return
        agent = path.strip("/")
        if agent not in AGENTS:
            self.send_json({"detail": f"no demo agent at {path!r}; try one of {['/' + a for a in AGENTS]}"}, 404)
            return
        turn = answer(parse_request(agent, body.get("messages"), body.get("resume")))
        self.stream(
            to_agui(turn, str(body.get("threadId") or "demo-thread"), str(body.get("runId") or "demo-run"), agent)
        )

    def stream(self, events: list[Any]) -> None:
        self.start_stream()
        for event in events:
            self.send_event(event)
        self.end_stream()


def start_servers(ports: list[int]) -> list[ThreadingHTTPServer]:
    """One server per port (0: a free one), each on a daemon thread; ``.server_port`` says which."""
    servers = []
    for port in ports:
        server = ThreadingHTTPServer(("127.0.0.1", port), DemoHandler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    return servers
