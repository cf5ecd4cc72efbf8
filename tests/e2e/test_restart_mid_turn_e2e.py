"""Open WebUI stopped in the middle of a turn (issue 29, "not yet tried, and expected to hold"):
after the pipe sent the agent the user's file and the agent streamed back an image, before the run
finished and the image was stored. Open WebUI 0.12.4 is stopped there and started again on its
data.

What must hold: the store has no image from the cut-off turn (the pipe holds an image in memory
until the turn ends, so nothing half-written is left), the user's file is intact, and the next turn
reads the same file and stores its image as usual.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest

from tests.support.chat_support import stored_message, ui_body
from tests.support.file_chat import ANSWER, DRAWN, MODEL, DrawingAgent, received, reference, sync, upload
from tests.support.owui_instance import OpenWebUIInstance

DOCUMENT = b"%PDF-1.4\n% read before and after a restart\n" + os.urandom(8192)


def file_ids(owui: OpenWebUIInstance) -> set[str]:
    with owui.client() as http:
        listed = http.get("/api/v1/files/").raise_for_status().json()
    items = listed if isinstance(listed, list) else listed.get("items", [])
    return {str(f["id"]) for f in items}


def start_turn(owui: OpenWebUIInstance, files: list[dict[str, Any]]) -> tuple[str, str]:
    """One message as the 0.12.4 browser sends it (answered in the background): (chat id, answer id)."""
    user_id, assistant_id = str(uuid.uuid4()), str(uuid.uuid4())
    body = ui_body(MODEL, "Read it and draw.", user_id=user_id, assistant_id=assistant_id, parent_id=None, first=True)
    body["user_message"]["files"] = body["files"] = files
    with owui.client(timeout=60) as http:
        response = http.post("/api/chat/completions", json=body)
    assert response.status_code == 200, response.text
    return response.json()["chat_id"], assistant_id


def test_a_restart_mid_turn_leaves_no_half_stored_image_and_the_next_turn_reads_the_file_again(
    owui: OpenWebUIInstance, tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = DrawingAgent()
    agent.hold = True
    try:
        sync(owui, agent, tmp_path, capsys, monkeypatch)
        document = upload(owui, owui.url, owui.token, "report.pdf", DOCUMENT, "application/pdf")
        before = file_ids(owui)
        assert document["id"] in before

        start_turn(owui, [reference(document, "file")])
        assert agent.drew.wait(60), owui.log_tail()  # the file went out, the image came back: mid-turn
        assert received(agent.requests[0])[0] == [DOCUMENT]
        owui.stop(keep_data=True)
        owui.start()
        monkeypatch.setenv("OPENWEBUI_URL", owui.url)
        monkeypatch.setenv("OPENWEBUI_TOKEN", owui.token)

        assert file_ids(owui) == before  # no image of the cut-off turn, nothing half-written
        with owui.client() as http:
            assert http.get(f"/api/v1/files/{document['id']}/content").content == DOCUMENT

        agent.hold = False
        chat_id, assistant_id = start_turn(owui, [reference(document, "file")])
        stored = stored_message(owui, chat_id, assistant_id, timeout=120)
        assert received(agent.requests[-1])[0] == [DOCUMENT]
        assert stored["content"] == ANSWER
        (image,) = [f for f in stored.get("files") or [] if f.get("type") == "image"]
        with owui.client() as http:
            assert http.get(image["url"]).content == DRAWN
        assert len(file_ids(owui) - before) == 1
    finally:
        agent.close()
