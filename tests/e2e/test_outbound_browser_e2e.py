"""What an agent shows beside its answer in Open WebUI's own chat page, in a real Chromium (issue 20):
its question to the user, its sources and its token usage.

The agent is the session's real Agent Framework 1.7.0 AG-UI server (tests/support/agui_server), scenario
`approval`: its model calls `book_hotel`, a tool with `approval_mode="always_require"`, so the run
pauses with an interrupt. The pipe opens Open WebUI's confirmation dialog in the browser; Confirm
resumes the run and the tool runs (the server records it), Cancel resumes it declined and the tool
never runs. Each answer goes on in the same message. Scenario `cited` cites a page: its chip is
under the answer after a reload; its two model calls report their token usage, which the message's
info button shows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser_support import ChatPage, chromium_session, logged_in_page
from tests.support.builders import blueprint, write_blueprint_dir, write_function_dir
from tests.support.chat_support import AGENT_PIPE, provision
from tests.support.owui_instance import unavailable

MODEL = "aihub_agent_pipe.approve.default"
# What scenario `cited` reports (tests/agui_server/app.py SCRIPTS): (10 in, 3 out), then (20, 6)
CITED_USAGE = {"input_tokens": 30, "output_tokens": 9, "total_tokens": 39}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium_session(unavailable)


@pytest.fixture
def page(
    owui: Any,
    agui_server: Any,
    browser: Any,
    tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> Iterator[ChatPage]:
    root = write_blueprint_dir(
        tmp_path / "blueprints",
        [
            blueprint("approve", calls=["summarise"], backend={"transport": "agui", "url": agui_server.agent_url}),
            blueprint("cited", calls=["summarise"], backend={"transport": "agui", "url": agui_server.agent_url}),
        ],
    )
    code, out, err = provision(
        capsys, "sync", "-p", str(root), "--bundle", str(write_function_dir(tmp_path / "functions", root, AGENT_PIPE))
    )
    assert code == 0, out + err
    yield from logged_in_page(browser, owui, request)


def _ask_and_answer(page: ChatPage, button: str) -> None:
    page.new_chat(MODEL)
    page.send("scenario:approval")
    dialog = page.page.get_by_text("Allow book_hotel?")
    dialog.wait_for()
    assert page.page.get_by_text('{"hotel": "Ritz"}').count() >= 1  # the tool's arguments are shown
    page.page.get_by_role("button", name=button, exact=True).click()
    page.response("All done.")
    page.wait_done()


def _stored_answer(owui: Any, page: ChatPage) -> str:
    chat_id = page.page.url.rstrip("/").rsplit("/", 1)[-1]
    with owui.client() as http:
        history = http.get(f"/api/v1/chats/{chat_id}").raise_for_status().json()["chat"]["history"]
    return history["messages"][history["currentId"]]["content"]


def test_confirm_runs_the_tool_and_cancel_does_not(owui: Any, agui_server: Any, page: ChatPage) -> None:
    agui_server.clear()
    _ask_and_answer(page, "Confirm")
    assert agui_server.booked() == ["Ritz"]
    content = _stored_answer(owui, page)
    assert 'name="book_hotel"' in content and 'result="[approved by the user] Booked Ritz."' in content
    assert content.startswith("I will book the Ritz.") and content.endswith("All done.")

    agui_server.clear()
    _ask_and_answer(page, "Cancel")
    assert agui_server.booked() == []
    content = _stored_answer(owui, page)
    assert 'result="Not run: the user declined."' in content and content.endswith("All done.")


def test_a_cited_source_shows_as_a_chip_after_a_reload(page: ChatPage) -> None:
    """The agent cites the same page twice (tests/support/agui_server/app.py SCRIPTS["cited"]): one chip."""
    page.new_chat("aihub_agent_pipe.cited.default")
    page.send("scenario:cited")
    page.response("It is sunny in Paris.")
    page.wait_done()
    page.page.reload()
    answer = page.response("It is sunny in Paris.")
    message = answer.locator("xpath=ancestor::*[starts-with(@id,'message-')][1]")
    chip = message.get_by_text(re.compile(r"^\d+ Sources?$"))
    assert chip.inner_text().strip() == "1 Source"  # two citations of one page: one chip
    chip.click()
    cited = message.get_by_text("https://weather.example.org/paris?d=today", exact=True)
    cited.wait_for()
    assert cited.count() == 1
    cited.click()
    snippet = page.page.get_by_text("Sunny, 21 °C")  # the snippet, in Open WebUI's source view
    snippet.wait_for()
    assert snippet.first.is_visible()


def _usage_lines(text: str) -> dict[str, int]:
    """The top-level counts of the usage tooltip (Open WebUI writes the usage as `key: value` lines)."""
    return {key: int(value) for key, value in re.findall(r"^(\w+): (\d+)$", text, re.M)}


def test_the_usage_the_agent_reported_shows_in_the_messages_info(owui: Any, page: ChatPage) -> None:
    """Open WebUI 0.12.4 shows a message's usage as its Info button's tooltip (ResponseMessage.svelte)."""
    page.new_chat("aihub_agent_pipe.cited.default")
    page.send("scenario:cited")
    answer = page.response("It is sunny in Paris.")
    page.wait_done()
    message = answer.locator("xpath=ancestor::*[starts-with(@id,'message-')][1]")
    info = message.get_by_role("button", name="Info", exact=True)
    info.hover()
    tooltip = page.page.locator("pre").filter(has_text="total_tokens:")
    tooltip.wait_for()
    shown = _usage_lines(tooltip.inner_text())
    assert {key: shown.get(key) for key in CITED_USAGE} == CITED_USAGE, shown
    assert (shown.get("prompt_tokens"), shown.get("completion_tokens")) == (30, 9), shown  # OpenAI's names too
    message_id = message.get_attribute("id").removeprefix("message-")
    chat_id = page.page.url.rstrip("/").rsplit("/", 1)[-1]
    with owui.client() as http:
        stored = http.get(f"/api/v1/chats/{chat_id}").raise_for_status().json()["chat"]["history"]["messages"]
    usage = stored[message_id]["usage"]
    assert shown == {key: value for key, value in usage.items() if isinstance(value, int)}  # all of it, as stored
