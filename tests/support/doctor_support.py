"""What the doctor's end-to-end tests share: an AG-UI backend stub and `provision doctor -o json`."""

from __future__ import annotations

import json
from typing import Any

from demo_agents.sse_handler import SSEHandler
from tests.support.chat_support import provision

GOOD_KEY = "doctor-e2e-right-key-0123456789"
WRONG_KEY = "doctor-e2e-wrong-key-9876543210"


class Agent(SSEHandler):
    """An AG-UI backend: a run starts and finishes; with a key set, any other key gets 401."""

    key = ""
    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's method name)
        body = self.read_body()
        type(self).seen.append({"headers": dict(self.headers), "body": json.loads(body or b"{}")})
        if self.key and self.headers.get("Authorization") != f"Bearer {self.key}":
            self.send_json({"detail": "Invalid API key"}, 401)
            return
        self.start_stream()
        self.send_event({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
        self.send_event({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
        self.end_stream()


def doctor(capsys: Any, blueprints: list[str]) -> tuple[int, dict[str, Any]]:
    """`provision doctor -o json` with no key of the tests in its output."""
    code, out, err = provision(capsys, "doctor", *blueprints, "-o", "json")
    assert out, err
    assert GOOD_KEY not in out + err and WRONG_KEY not in out + err
    return code, json.loads(out)
