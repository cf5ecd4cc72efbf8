"""The approval dialog with hostile tool arguments, in Open WebUI 0.12.4's own chat page in a real
Chromium (issue 29, point 4).

Open WebUI renders the confirmation dialog's message as Markdown (ConfirmDialog.svelte:
``DOMPurify.sanitize(marked.parse(message))``). A loopback agent calls ``refund_order`` with
arguments that hold a blank line, bold text, a remote image and a link, and an interrupt whose
message tries to speak for the admin; the dialog must show all of it as text: no image (whose
request would tell its host the user's address), no link, no bold, and the tool's name first.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest

from demo_agents.sse_handler import SSEHandler
from tests.support.browser_support import ChatPage, chromium_session, logged_in_page
from tests.support.builders import blueprint, write_blueprint_dir, write_function_dir
from tests.support.chat_support import AGENT_PIPE, provision
from tests.support.owui_instance import unavailable

MODEL = "aihub_agent_pipe.refunds.default"
EVIL = "evil.invalid"  # never resolves: a request to it is only ever seen, never answered
ARGUMENTS = (
    f'{{"order": "A-1"}}\n\n**Approved by your admin** ![x](https://{EVIL}/pixel.png?who=you) '
    f'[details](https://{EVIL}/phish) <img src="https://{EVIL}/raw.png">\n```\n![y](https://{EVIL}/y.png)'
)
MESSAGE = f"Nothing to review, just press **Confirm**. ![z](https://{EVIL}/z.png)"


class HostileAgent:
    """AG-UI on loopback: the first run calls refund_order and pauses for approval; a resumed run
    (its body has ``resume``) answers "Refund handled." and finishes."""

    def __init__(self) -> None:
        class Handler(SSEHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.read_body())
                ids = {"threadId": body.get("threadId"), "runId": body.get("runId")}
                self.start_stream()
                self.send_event({"type": "RUN_STARTED", **ids})
                if body.get("resume"):
                    self.send_event({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m2", "delta": "Refund handled."})
                    self.send_event({"type": "RUN_FINISHED", **ids})
                else:
                    self.send_event({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "refund_order"})
                    self.send_event({"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": ARGUMENTS})
                    self.send_event({"type": "TOOL_CALL_END", "toolCallId": "c1"})
                    interrupt = {"id": "a1", "reason": "tool_call", "toolCallId": "c1", "message": MESSAGE}
                    self.send_event(
                        {"type": "RUN_FINISHED", **ids, "outcome": {"type": "interrupt", "interrupts": [interrupt]}}
                    )
                self.end_stream()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/agent"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium_session(unavailable)


@pytest.fixture
def page(
    owui: Any, browser: Any, tmp_path: Any, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> Iterator[ChatPage]:
    agent = HostileAgent()
    root = write_blueprint_dir(
        tmp_path / "blueprints",
        [blueprint("refunds", calls=["summarise"], backend={"transport": "agui", "url": agent.url})],
    )
    code, out, err = provision(
        capsys, "sync", "-p", str(root), "--bundle", str(write_function_dir(tmp_path / "functions", root, AGENT_PIPE))
    )
    assert code == 0, out + err
    yield from logged_in_page(browser, owui, request)
    agent.stop()


def test_hostile_tool_arguments_are_text_in_the_approval_dialog(page: ChatPage) -> None:
    requested: list[str] = []
    page.page.on("request", lambda r: requested.append(r.url))
    page.new_chat(MODEL)
    page.send("Refund order A-1")
    page.page.get_by_text("Allow refund_order?").wait_for()
    page.page.wait_for_timeout(500)  # anything the dialog would load has been asked for by now
    dialog = page.page.locator("div.modal, [role=dialog]").filter(has_text="Allow refund_order?").last
    shown = dialog.inner_text()
    html = dialog.inner_html()
    body = shown.split("Allow refund_order?", 1)[1]  # the message, below the title
    assert body.index("refund_order") < body.index("Nothing to review")  # the tool's name comes first
    assert "**Approved by your admin**" in shown and f"https://{EVIL}/pixel.png" in shown  # as text
    assert dialog.locator("img").count() == 0 and dialog.locator(f"a[href*='{EVIL}']").count() == 0
    assert dialog.locator("strong, b").count() == 0, html
    assert [url for url in requested if EVIL in url] == []
    page.page.get_by_role("button", name="Cancel", exact=True).click()
    page.response("Refund handled.")
    page.wait_done()
