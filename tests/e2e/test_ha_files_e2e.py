"""Files and images across two replicas (issue 29, "not yet tried, and expected to hold"): Open
WebUI 0.12.4 on PostgreSQL + Redis with two replicas (`scripts/openwebui-local --topology ha`,
one DATA_DIR shared by both, as a shared volume behind a load balancer).

A member uploads a document and an image through replica 1 and chats through replica 2, as the
0.12.4 browser does. The pipe on replica 2 reads both files from Open WebUI's store (limits and
owner checks included) and sends their bytes to the agent; the agent answers with an image,
which the pipe on replica 2 stores in the member's name. Replica 1 then serves that image to the
member and to no one else, and the stored message holds its URL, not its bytes.

The groups cache: each replica's pipe keeps a user's groups for GROUPS_TTL_SECONDS in its own
process, so a group change made through replica 1 reaches the agent's signed identity through
replica 2 within that time, when the member joins and when they leave.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest

from tests.support.chat_support import stored_message, ui_body
from tests.support.file_chat import (
    ANSWER,
    DRAWN,
    MODEL,
    DrawingAgent,
    add_user,
    received,
    reference,
    sync,
    upload,
)
from tests.support.owui_instance import OpenWebUIInstance, started
from tests.support.pipe_support import pipe_module

IDENTITY_HEADER = pipe_module.IDENTITY_HEADER  # the pipe's own signed identity
GROUPS_TTL_SECONDS = pipe_module.GROUPS_TTL_SECONDS  # how long each pipe process keeps a user's groups

DOCUMENT = b"%PDF-1.4\n% uploaded through replica 1\n" + os.urandom(4096)
PICTURE = b"\x89PNG\r\n\x1a\n" + hashlib.sha256(b"the member's picture").digest() * 64


@pytest.fixture(scope="module")
def ha() -> Iterator[OpenWebUIInstance]:
    instance = started(OpenWebUIInstance(f"ha-files-{os.getpid()}", topology="ha"), "ha topology")
    assert len(instance.replica_urls) == 2 and instance.replica_urls[0] == instance.url
    yield instance
    instance.purge()


@pytest.fixture
def agent() -> Iterator[DrawingAgent]:
    agent = DrawingAgent()
    yield agent
    agent.close()


def test_files_uploaded_through_one_replica_reach_the_agent_through_the_other_and_its_image_back(
    ha: OpenWebUIInstance,
    agent: DrawingAgent,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, second = ha.replica_urls
    sync(ha, agent, tmp_path, capsys, monkeypatch)
    member, other = add_user(ha, first, "Member"), add_user(ha, first, "Other")

    document = upload(ha, first, member["token"], "report.pdf", DOCUMENT, "application/pdf")
    picture = upload(ha, first, member["token"], "picture.png", PICTURE, "image/png")
    files = [reference(document, "file"), reference(picture, "image")]
    user_id, assistant_id = str(uuid.uuid4()), str(uuid.uuid4())
    body = ui_body(
        MODEL, "What is in these?", user_id=user_id, assistant_id=assistant_id, parent_id=None, first=True, files=files
    )
    started_at = time.monotonic()
    with ha.client(url=second, token=member["token"], timeout=120) as http:
        response = http.post("/api/chat/completions", json=body)
    assert response.status_code == 200, response.text
    chat_id = response.json()["chat_id"]
    stored = stored_message(ha, chat_id, assistant_id, timeout=120, token=member["token"])  # read on replica 1

    assert len(agent.requests) == 1, f"{len(agent.requests)} requests in {time.monotonic() - started_at:.0f} s"
    documents, images = received(agent.requests[0])
    assert documents == [DOCUMENT]
    assert images == [PICTURE]

    assert stored["content"] == ANSWER
    (image,) = [f for f in stored.get("files") or [] if f.get("type") == "image"]
    url = image["url"]
    assert url.startswith("/api/v1/files/") and url.endswith("/content")
    with ha.client(url=first, token=member["token"]) as http:  # stored on replica 2, read on replica 1
        served = http.get(url)
        assert served.status_code == 200 and served.content == DRAWN
        assert http.get(url.removesuffix("/content")).raise_for_status().json()["user_id"] == member["id"]
        chat = http.get(f"/api/v1/chats/{chat_id}").raise_for_status().json()
    assert len(json.dumps(chat)) < 50_000 < len(DRAWN)  # the row holds the image's URL, not its bytes
    for url_of in (first, second):
        with ha.client(url=url_of, token=other["token"]) as http:
            assert http.get(url).status_code in (403, 404), url_of


def groups_seen(ha: OpenWebUIInstance, agent: DrawingAgent, url: str, token: str) -> list[str]:
    """The group names in the identity token the pipe on replica `url` sends the agent for one chat."""
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Who am I?"}], "stream": False}
    with ha.client(url=url, token=token, timeout=120) as http:
        response = http.post("/api/chat/completions", json=body)
    assert response.status_code == 200, response.text
    token_text = agent.headers[-1][IDENTITY_HEADER.lower()]
    claims = jwt.decode(token_text, options={"verify_signature": False})
    return [g["name"] for g in claims["groups"]]


def test_a_group_change_through_one_replica_reaches_the_agent_through_the_other_within_the_cache_time(
    ha: OpenWebUIInstance,
    agent: DrawingAgent,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each replica's pipe keeps a user's groups for GROUPS_TTL_SECONDS (its own cache, in its own
    process): a change made through replica 1 reaches the agent through replica 2 within that time,
    both ways, and through replica 1 at the next read there."""
    first, second = ha.replica_urls
    sync(ha, agent, tmp_path, capsys, monkeypatch)
    member = add_user(ha, first, "Grouped")
    with ha.client(url=first) as http:
        group = http.post("/api/v1/groups/create", json={"name": "HA Analysts", "description": ""})
        group_id = group.raise_for_status().json()["id"]
    assert groups_seen(ha, agent, second, member["token"]) == []  # replica 2 has read them now

    def through_second_within_the_ttl(expected: list[str]) -> float:
        started = time.monotonic()
        while (seen := groups_seen(ha, agent, second, member["token"])) != expected:
            assert time.monotonic() - started < GROUPS_TTL_SECONDS + 20, seen
            time.sleep(2)
        return time.monotonic() - started

    with ha.client(url=first) as http:
        http.post(f"/api/v1/groups/id/{group_id}/users/add", json={"user_ids": [member["id"]]}).raise_for_status()
    through_second_within_the_ttl(["HA Analysts"])
    with ha.client(url=first) as http:
        http.post(f"/api/v1/groups/id/{group_id}/users/remove", json={"user_ids": [member["id"]]}).raise_for_status()
    through_second_within_the_ttl([])
