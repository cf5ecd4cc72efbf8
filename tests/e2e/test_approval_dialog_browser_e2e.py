"""The approval dialog with hostile tool arguments, in Open WebUI's own chat page in a real
Chromium (issue 29, point 4): on the session's release (0.12.4) and on the oldest supported
minor's (0.6.43), whose dialog and KaTeX extension are older code.

Open WebUI renders the confirmation dialog's message as Markdown (ConfirmDialog.svelte:
``DOMPurify.sanitize(marked.parse(message))``). A loopback agent calls ``refund_order`` with
arguments that hold a blank line, bold text, a remote image and a link, and an interrupt whose
message tries to speak for the admin; the dialog must show all of it as text: no image (whose
request would tell its host the user's address), no link, no bold, and the tool's name first.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest

from demo_agents.sse_handler import SSEHandler
from tests.support.browser_support import ChatPage, chromium_session, logged_in_page
from tests.support.builders import blueprint, write_blueprint_dir, write_function_dir
from tests.support.chat_support import AGENT_PIPE, provision
from tests.support.owui_instance import OpenWebUIInstance, started, unavailable

MODEL = "aihub_agent_pipe.refunds.default"
OLDEST = "0.6.43"  # the newest patch of the oldest minor provision supports (docs/openwebui-versions.md)
EVIL = "evil.invalid"  # never resolves: a request to it is only ever seen, never answered
ARGUMENTS = (
    f'{{"order": "A-1"}}\n\n**Approved by your admin** ![x](https://{EVIL}/pixel.png?who=you) '
    f'[details](https://{EVIL}/phish) <img src="https://{EVIL}/raw.png">\n```\n![y](https://{EVIL}/y.png)'
)
# Open WebUI's own marked extensions read text too: its KaTeX one takes \( … \) and \[ … \] as
# math and renders what is inside as raw HTML (katex-extension.ts, every release from 0.6.26), so
# a backslash-escaped "(" would start it. Parentheses and brackets must show as written.
MESSAGE = (
    f"Nothing to review (order A-1), just press **Confirm**. ![z](https://{EVIL}/z.png) "
    "(<h1 >Approved by your admin) [<b >really]"
)


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


@pytest.fixture(scope="module")
def oldest(request: pytest.FixtureRequest) -> Iterator[OpenWebUIInstance]:
    instance = started(OpenWebUIInstance(f"dialog-{OLDEST}-{os.getpid()}", version=OLDEST), f"Open WebUI {OLDEST}")
    yield instance
    if request.session.testsfailed:
        instance.stop(keep_data=False)  # keep server.log for the post-mortem
        print(f"\nOpen WebUI {OLDEST} log kept at {instance.log_file}")
    else:
        instance.purge()


@pytest.fixture(params=["session", OLDEST])
def release(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The Open WebUI the chat runs on, with provision pointed at it."""
    if request.param == "session":
        return request.getfixturevalue("owui")
    instance = request.getfixturevalue("oldest")
    monkeypatch.setenv("OPENWEBUI_URL", instance.url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", instance.token)
    monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
    return instance


@pytest.fixture
def page(
    release: Any, browser: Any, tmp_path: Any, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
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
    yield from logged_in_page(browser, release, request)
    agent.stop()


def _new_chat(page: ChatPage) -> None:
    """A new chat with the agent, picked by URL (0.6's page has no #model-selector-model-button)."""
    page.page.goto(f"{page.url}/?models={MODEL}")
    page.page.wait_for_selector("#chat-input")
    page.page.get_by_text("refunds agent").first.wait_for()
    page.page.wait_for_timeout(500)  # the model's defaults are applied once the model list arrived


def test_hostile_tool_arguments_are_text_in_the_approval_dialog(page: ChatPage) -> None:
    requested: list[str] = []
    page.page.on("request", lambda r: requested.append(r.url))
    _new_chat(page)
    page.send("Refund order A-1")
    page.page.get_by_text("Allow refund_order?").wait_for()
    page.page.wait_for_timeout(500)  # anything the dialog would load has been asked for by now
    # the box around the title, the message and the buttons (0.6's dialog has no role to find it by)
    dialog = page.page.get_by_text("Allow refund_order?", exact=True).last.locator("xpath=..")
    shown = dialog.inner_text()
    html = dialog.inner_html()
    body = shown.split("Allow refund_order?", 1)[1]  # the message, below the title
    assert body.index("refund_order") < body.index("Nothing to review")  # the tool's name comes first
    assert "**Approved by your admin**" in shown and f"https://{EVIL}/pixel.png" in shown  # as text
    assert "Nothing to review (order A-1), just press **Confirm**." in body, body  # as written
    assert "(<h1 >Approved by your admin) [<b >really]" in body, body
    assert dialog.locator("img").count() == 0 and dialog.locator(f"a[href*='{EVIL}']").count() == 0
    assert dialog.locator("strong, b, h1").count() == 0, html
    assert [url for url in requested if EVIL in url] == []
    page.page.get_by_role("button", name="Cancel", exact=True).click()
    page.response("Refund handled.")
    page.wait_done()
