"""The quick start's demo agents with a real Open WebUI 0.12.4 (issue 20, point 6): every sample
agent answers (never "cannot be reached"), the Document Analyst quotes a file uploaded to the chat,
the Research Assistant's sources, usage and chart are stored on its message, in a real Chromium an
agent answers, the Research Assistant's chart shows inline from Open WebUI's file store and the
Billing Desk's refund waits for Confirm, and `scripts/quickstart stop` leaves no demo agent
listening.

The agents run as the quick start runs them (`scripts/demo-agents start`), on free ports; the
samples are synced into the session instance with their URLs moved to those ports.
"""

from __future__ import annotations

import base64
import math
import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from demo_agents.answers import growth_chart
from demo_agents.control import is_demo_agents, listening, read_state
from tests.support.browser_support import ChatPage, chromium_session, logged_in_page
from tests.support.builders import REPO, SAMPLE_MODEL_IDS, closed_port, write_function_dir
from tests.support.chat_support import AGENT_PIPE, api_chat, provision, stored_message, ui_turn
from tests.support.owui_instance import unavailable

DEMO = REPO / "scripts" / "demo-agents"
QUICKSTART = REPO / "scripts" / "quickstart"
DOUBLE = "How long would 10,000 EUR take to double at 3.5% a year? Show the calculation."
# (model, prompt, what its answer says): one line per sample agent, as the README's quick start
PROMPTS = {
    "aihub_agent_pipe.document-analyst.default": (
        "Summarise the document I shared in five key points.",
        "No file reached me",
    ),
    "aihub_agent_pipe.policy-faq.default": ("How many days of paid leave do I get this year?", "28 days of paid leave"),
    "aihub_agent_pipe.research-assistant.default": (DOUBLE, "**20.1 years**"),
    "aihub_agent_pipe.support-desk.billing": (
        "The customer was charged twice for order 10023. Check it and refund the duplicate.",
        "once you approve it",
    ),
    "aihub_agent_pipe.support-desk.tier1": ("Where is order 10023?", "Order 10023 shows as delivered"),
    "aihub_agent_pipe.support-desk.tier2": ("Triage this request: 'my app keeps logging me out.'", "account"),
}


def demo_agents(command: str, state: Path, *ports: int) -> str:
    args = ["--dir", str(state)] + (["--agui-port", str(ports[0]), "--openai-port", str(ports[1])] if ports else [])
    result = subprocess.run(
        [str(DEMO), command, *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert result.returncode == 0, result.stderr
    return result.stderr


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The demo agents started as the quick start starts them, and the samples pointed at them."""
    tmp = tmp_path_factory.mktemp("demo-agents")
    agui_port, openai_port = closed_port(), closed_port()
    demo_agents("start", tmp / "state", agui_port, openai_port)
    root = tmp / "blueprints"
    shutil.copytree(REPO / "blueprints", root)
    for path in root.glob("*.yaml"):
        text = path.read_text(encoding="utf-8").replace("127.0.0.1:8700/", f"127.0.0.1:{agui_port}/")
        path.write_text(text.replace("127.0.0.1:8701/", f"127.0.0.1:{openai_port}/"), encoding="utf-8")
    functions = write_function_dir(tmp / "functions", root, AGENT_PIPE)
    yield {"bundle": ["-p", str(root), "--bundle", str(functions)], "state": tmp / "state"}
    demo_agents("stop", tmp / "state")


@pytest.fixture
def synced(owui: Any, demo: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> Any:
    code, out, err = provision(capsys, "sync", *demo["bundle"])
    assert code == 0, out + err
    return owui


def test_every_sample_agent_answers_with_its_tool_calls(synced: Any) -> None:
    assert set(PROMPTS) == set(SAMPLE_MODEL_IDS)
    for model, (prompt, expected) in PROMPTS.items():
        answer = api_chat(synced, model, [{"role": "user", "content": prompt}])
        assert "cannot be reached" not in answer and expected in answer, (model, answer)
        assert '<details type="tool_calls"' in answer, (model, answer)
    billing = api_chat(
        synced,
        "aihub_agent_pipe.support-desk.billing",
        [{"role": "user", "content": PROMPTS["aihub_agent_pipe.support-desk.billing"][0]}],
    )
    assert 'name="refund_payment"' in billing and "is refunded" not in billing  # it waits for the approval


def test_research_assistant_message_stores_its_sources_usage_and_chart(synced: Any) -> None:
    model = "aihub_agent_pipe.research-assistant.default"
    chat_id, _, answer = ui_turn(synced, model, DOUBLE, chat_id=None, parent_id=None, first=True)
    stored = stored_message(synced, chat_id, answer)  # what a reload shows
    assert "**20.1 years**" in stored["content"] and 'name="web_research"' in stored["content"]
    assert [s["source"]["url"] for s in stored["sources"]] == [
        "https://example.org/demo-research/overview",
        "https://example.com/demo-research/figures",
    ]
    usage = stored["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] and usage["output_tokens"] > 0
    images = [f for f in stored.get("files") or [] if f.get("type") == "image"]
    assert len(images) == 1 and images[0]["url"].startswith("/api/v1/files/")
    assert "base64" not in stored["content"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium_session(unavailable)


@pytest.fixture
def page(synced: Any, browser: Any, request: pytest.FixtureRequest) -> Iterator[ChatPage]:
    """The admin's tab on the synced instance; on failure saved under test-artifacts/."""
    yield from logged_in_page(browser, synced, request)


def test_demo_agents_answer_in_the_browser_and_the_refund_waits_for_confirm(page: ChatPage) -> None:
    page.new_chat("aihub_agent_pipe.policy-faq.default")
    page.send("How many days of paid leave do I get this year?")
    answer = page.response("28 days of paid leave")
    page.wait_done()
    assert "cannot be reached" not in answer.inner_text()
    assert answer.get_by_role("button").filter(has_text="retrieve_policies").count() == 1
    page.new_chat("aihub_agent_pipe.support-desk.billing")  # asks before it acts
    page.send(PROMPTS["aihub_agent_pipe.support-desk.billing"][0])
    page.page.get_by_text("Allow refund_payment?").wait_for()
    page.page.get_by_role("button", name="Confirm", exact=True).click()
    page.response("is refunded")
    page.wait_done()


def _shown_images(message: Any) -> list[dict[str, Any]]:
    """Every loaded <img> of a message: its src as written, its natural width, its bytes (base64)."""
    return message.evaluate(
        """async el => {
            const out = [];
            for (const img of el.querySelectorAll('img')) {
                img.scrollIntoView();
                try { await img.decode(); } catch (e) { /* a broken image: naturalWidth stays 0 */ }
                const bytes = new Uint8Array(await (await fetch(img.currentSrc || img.src)).arrayBuffer());
                let text = ''; for (const b of bytes) text += String.fromCharCode(b);
                out.push({src: img.getAttribute('src'), width: img.naturalWidth, data: btoa(text)});
            }
            return out;
        }"""
    )


def test_research_assistants_chart_shows_inline_from_the_file_store(page: ChatPage) -> None:
    """The chart the demo agent drew is an <img> of the message, loaded from Open WebUI's file URL
    (never base64 in the message), live and after a reload."""
    rate = 3.5
    chart = growth_chart(rate, math.ceil(math.log(2) / math.log1p(rate / 100)))
    page.new_chat("aihub_agent_pipe.research-assistant.default")
    page.send(DOUBLE)
    for reloaded in (False, True):
        answer = page.response("20.1 years")
        page.wait_done()
        message = answer.locator("xpath=ancestor::*[starts-with(@id,'message-')][1]")
        message.locator("img[src*='/api/v1/files/']").first.wait_for()
        images = [i for i in _shown_images(message) if "/api/v1/files/" in i["src"]]
        assert len(images) == 1, (reloaded, images)
        (image,) = images
        assert re.search(r"/api/v1/files/[\w-]+/content$", image["src"]) and not image["src"].startswith("data:"), image
        assert image["width"] == 360, (reloaded, image["width"])  # it loaded: the chart's own width
        assert base64.b64decode(image["data"]) == chart, reloaded  # the bytes the agent sent
        if not reloaded:
            page.page.reload()


def test_quickstart_reuses_its_demo_agents_and_its_stop_leaves_none_listening(openwebui: Any, tmp_path: Path) -> None:
    """The real scripts/quickstart, on the session instance (no new start), then scripts/quickstart stop
    with an instance name that does not exist (so the session instance keeps running)."""
    ports = closed_port(), closed_port()
    env = {
        **os.environ,
        "QUICKSTART_NAME": openwebui.name,
        "DEMO_AGENTS_DIR": str(tmp_path / "demo"),
        "DEMO_AGENTS_AGUI_PORT": str(ports[0]),
        "DEMO_AGENTS_OPENAI_PORT": str(ports[1]),
    }

    def quickstart(*args: str, **overrides: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(QUICKSTART), *args],
            capture_output=True,
            text=True,
            timeout=300,
            env={**env, **overrides},
            stdin=subprocess.DEVNULL,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result

    try:
        first = quickstart()
        assert "demo agents started" in first.stderr and "Billing Desk:" in first.stdout
        # its doctor probes the samples' backends (8700/8701, which this test's demo agents do not
        # take; whatever it finds there, the quick start goes on)
        assert "$ provision doctor" in first.stdout and "\nDoctor: " in first.stdout
        assert first.stdout.count("  backend  ") == 6, first.stdout
        pid = (read_state(tmp_path / "demo") or {})["pid"]
        assert all(map(listening, ports))
        again = quickstart()
        assert "demo agents already running" in again.stderr and (read_state(tmp_path / "demo") or {})["pid"] == pid
        stopped = quickstart("stop", QUICKSTART_NAME=f"absent-{os.getpid()}")
        assert "demo agents stopped" in stopped.stderr
        assert not any(map(listening, ports)) and read_state(tmp_path / "demo") is None
        assert not is_demo_agents(pid)
    finally:
        subprocess.run([str(DEMO), "stop", "--dir", str(tmp_path / "demo")], capture_output=True)
        openwebui.reset()


MANUAL = b"Our office opens at 8 am on weekdays.\nInvoices are due by 2026-03-31.\nVisitors sign in at the desk.\n"


def test_document_analyst_quotes_a_file_uploaded_to_the_chat(synced: Any) -> None:
    """As the browser does it: upload the file, save the user message holding it, then ask."""
    model = "aihub_agent_pipe.document-analyst.default"
    with synced.client(timeout=120) as http:
        upload = (
            http.post(
                "/api/v1/files/", params={"process": "false"}, files={"file": ("office.txt", MANUAL, "text/plain")}
            )
            .raise_for_status()
            .json()
        )
        ref = {
            "type": "file",
            "id": upload["id"],
            "name": "office.txt",
            "status": "uploaded",
            "size": len(MANUAL),
            "content_type": "text/plain",
        }
        text = "Summarise the document I shared in five key points."
        user_id, answer_id = str(uuid.uuid4()), str(uuid.uuid4())
        user = {
            "id": user_id,
            "parentId": None,
            "childrenIds": [],
            "role": "user",
            "content": text,
            "files": [ref],
            "timestamp": int(time.time()),
            "models": [model],
        }
        chat = {
            "title": "demo",
            "models": [model],
            "history": {"messages": {user_id: user}, "currentId": user_id},
            "messages": [user],
        }
        chat_id = http.post("/api/v1/chats/new", json={"chat": chat}).raise_for_status().json()["id"]
        response = http.post(
            "/api/chat/completions",
            json={
                "model": model,
                "stream": False,
                "chat_id": chat_id,
                "id": answer_id,
                "user_message": user,
                "messages": [{"role": "user", "content": text}],
                "files": [ref],
            },
        )
    assert response.status_code == 200, response.text
    answer = response.json()["choices"][0]["message"]["content"]
    assert "*office.txt*" in answer and '"Our office opens at 8 am on weekdays."' in answer, answer
    assert '"Invoices are due by 2026-03-31."' in answer and "No file reached me" not in answer
