"""A loopback forwarder that records the headers of each request on its way to an agent server.

The scripted AG-UI server (tests/support/agui_server) records bodies, not headers; the tests that
check what the pipe sends in headers (a key, the signed identities) put this in front of it.
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


class HeaderTap:
    """A loopback forwarder in front of the AG-UI server that records each request's headers.

    The scripted server records the RunAgentInput body only; this sits on the wire in front of
    it, so a test can see the `Authorization` header the pipe sent while the run still reaches
    the real server and streams back unchanged.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self.headers: list[dict[str, str]] = []
        tap = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                tap.headers.append({k.lower(): v for k, v in self.headers.items()})
                forward = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                upstream = http.client.HTTPConnection(tap.upstream.hostname or "", tap.upstream.port, timeout=60)
                try:
                    upstream.request("POST", self.path, body=body, headers=forward)
                    response = upstream.getresponse()
                    self.send_response(response.status)
                    for name, value in response.getheaders():
                        if name.lower() not in ("transfer-encoding", "content-length", "connection"):
                            self.send_header(name, value)
                    self.send_header("Connection", "close")  # HTTP/1.0: the body ends when we close
                    self.end_headers()
                    while chunk := response.read1(65536):
                        self.wfile.write(chunk)
                        self.wfile.flush()
                finally:
                    upstream.close()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
