"""A slow AG-UI agent on loopback that notices when the client hangs up (a stopped chat).

Shared by the pipe's own cancel test (tests/functions/test_connections.py) and the one through a real
Open WebUI (tests/e2e/test_chat_cancel_e2e.py).
"""

from __future__ import annotations

import select
import socket
import threading
import time
from http.server import ThreadingHTTPServer

from demo_agents.sse_handler import SSEHandler


class SlowAgent:
    """AG-UI over SSE: RUN_STARTED, then a text delta every 50 ms; notes when the client hangs up."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.disconnected = threading.Event()
        self.disconnected_at = 0.0
        self.deltas = 0
        agent = self

        class Handler(SSEHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's method name)
                self.read_body()
                self.start_stream()
                self.send_event({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
                self.send_event({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"})
                agent.started.set()
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    readable, _, _ = select.select([self.connection], [], [], 0.05)
                    try:
                        if readable and self.connection.recv(1, socket.MSG_PEEK) == b"":
                            raise ConnectionResetError
                        self.send_event({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "more "})
                        agent.deltas += 1
                    except OSError:
                        agent.disconnected_at = time.monotonic()
                        agent.disconnected.set()
                        return
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/agent"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
