"""What an agent receives through a real Open WebUI 0.12.4 (issue 19): the user's files and images
with their bytes, who asks (signed two ways), which chat and message, the trace and the user's
context, for both transports.

A user in a group uploads a document and an image through Open WebUI's files API, and chats as
the 0.12.4 browser does: the chat is stored with the files on its user message, and the request
carries `chat_id`, `user_message` and the assistant message `id` (Open WebUI then loads the
history from its database). A loopback agent records each request's headers and body. The
session instance runs with ENABLE_FORWARD_USER_INFO_HEADERS, an HS256 secret and the pipe's
Ed25519 key in its environment (tests/support/owui_instance.py IDENTITY_ENV). A tripwire function
inside the server records every file retrieval Open WebUI itself starts, and a control agent
whose row keeps `file_context` on shows the tripwire works.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
import yaml
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from demo_agents.sse_handler import SSEHandler
from tests.support.builders import CAPABILITIES, FEATURES, write_function_dir
from tests.support.chat_support import AGENT_PIPE
from tests.support.file_chat import reference
from tests.support.owui_instance import FORWARD_JWT_SECRET, IDENTITY_KID, IDENTITY_PEM

TRIPWIRE = Path(__file__).parent / "fixtures" / "retrieval_tripwire.py"
TRIPWIRE_ID = "zz_test_retrieval_tripwire"
ANSWER = "Files received."
GROUP = "Finance Analysts"
PARENT_GROUP = "Finance"  # GROUP nests in it (0.12): Open WebUI counts its members as Finance's too
MEMBER_EMAIL = "inbound-member@example.org"
DOCUMENT = b"%PDF-1.4\n% the quarterly report, version one\n" + bytes(range(256)) * 4
IMAGE = b"\x89PNG\r\n\x1a\n" + hashlib.sha256(b"chart").digest() * 16
THEIRS = b"the admin's private notes: do not share"
MODELS = {"agui": "aihub_agent_pipe.inbound.default", "openai": "aihub_agent_pipe.inbound-oa.default"}
# agents that read documents only, and nothing at all (issue 29.3: inlined images follow `reads`)
READS_MODELS = {
    "documents": "aihub_agent_pipe.inbound-docs.default",
    "nothing": "aihub_agent_pipe.inbound-none.default",
}
CONTROL = "aihub_agent_pipe.inbound-rag.default"


# --- a loopback agent that records what it received -----------------------------------------------


@dataclass
class RecordingAgent:
    """Answers AG-UI (any path) or OpenAI (``.../chat/completions``) with ANSWER; keeps every request."""

    requests: list[dict[str, Any]] = field(default_factory=list)

    def start(self) -> RecordingAgent:
        agent = self

        class Handler(SSEHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.read_body())
                agent.requests.append(
                    {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "json": body}
                )
                self.start_stream()
                if self.path.endswith("/chat/completions"):
                    self.send_event({"choices": [{"index": 0, "delta": {"content": ANSWER}}]})
                    self.send_event("[DONE]")
                else:
                    ids = {"threadId": body.get("threadId"), "runId": body.get("runId")}
                    self.send_event({"type": "RUN_STARTED", **ids})
                    self.send_event({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"})
                    self.send_event({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": ANSWER})
                    self.send_event({"type": "TEXT_MESSAGE_END", "messageId": "m"})
                    self.send_event({"type": "RUN_FINISHED", **ids})
                self.end_stream()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# --- the site: blueprints synced, a member in a group, the tripwire ------------------------------


@dataclass
class Site:
    owui: Any
    agent: RecordingAgent
    member_id: str
    member_token: str
    group_id: str
    parent_group_id: str
    tripwire_log: Path

    def member(self, timeout: float = 60):
        return self.owui.client(token=self.member_token, timeout=timeout)

    def upload(self, name: str, data: bytes, mime: str, *, as_admin: bool = False) -> dict[str, Any]:
        """Through Open WebUI's files API, as the browser uploads (no processing: the agent reads it)."""
        client = self.owui.client() if as_admin else self.member()
        with client as http:
            response = http.post("/api/v1/files/", params={"process": "false"}, files={"file": (name, data, mime)})
        assert response.status_code == 200, response.text
        return response.json()

    def retrievals(self) -> list[dict[str, Any]]:
        lines = self.tripwire_log.read_text(encoding="utf-8").splitlines() if self.tripwire_log.exists() else []
        return [json.loads(line) for line in lines if line]


def _blueprints(root: Path, url: str) -> Path:
    root.mkdir(parents=True)
    catalog = {
        "capabilities": {
            **CAPABILITIES["capabilities"],
            "read_attachments": {"reads": ["documents", "images"]},
            "read_documents": {"reads": ["documents"]},
        }
    }
    (root / "capabilities.yaml").write_text(yaml.safe_dump(catalog), encoding="utf-8")
    (root / "features.yaml").write_text(yaml.safe_dump(FEATURES), encoding="utf-8")
    backends = {
        "inbound": {"transport": "agui", "url": f"{url}/agent"},
        "inbound-oa": {"transport": "openai", "url": f"{url}/v1", "model": "recorder"},
        "inbound-rag": {"transport": "agui", "url": f"{url}/agent"},
        "inbound-docs": {"transport": "agui", "url": f"{url}/agent"},
        "inbound-none": {"transport": "agui", "url": f"{url}/agent"},
    }
    calls = {"inbound-docs": ["read_documents"], "inbound-none": ["summarise"]}
    for bp_id, backend in backends.items():
        # `reads` gives the rows file_upload and vision; the control keeps Open WebUI's retrieval on
        capabilities = {"file_context": True} if bp_id == "inbound-rag" else {}
        blueprint = {
            "id": bp_id,
            "name": bp_id.title(),
            "description": "issue 19",
            "backend": backend,
            "openwebui_capabilities": capabilities,
            "steps": [{"id": "main", "calls": calls.get(bp_id, ["read_attachments"])}],
            "agents": [{"id": "default", "name": f"{bp_id} agent", "access": "public"}],
        }
        (root / f"{bp_id}.yaml").write_text(yaml.safe_dump(blueprint, sort_keys=False), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def site(openwebui, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    if not openwebui.healthy():
        openwebui.start()
    openwebui.reset()
    tmp = tmp_path_factory.mktemp("inbound")
    agent = RecordingAgent().start()
    root = _blueprints(tmp / "blueprints", agent.url)
    functions = write_function_dir(tmp / "functions", root, AGENT_PIPE)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OPENWEBUI_URL", openwebui.url)
        env.setenv("OPENWEBUI_TOKEN", openwebui.token)
        env.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
        code = provision_quietly("sync", "-p", str(root), "--bundle", str(functions))
        assert code == 0
    log = tmp / "retrievals.jsonl"
    password = uuid.uuid4().hex
    with openwebui.client() as http:
        form = {
            "id": TRIPWIRE_ID,
            "name": "Retrieval tripwire",
            "content": TRIPWIRE.read_text(encoding="utf-8"),
            "meta": {"description": "e2e only"},
        }
        http.post("/api/v1/functions/create", json=form).raise_for_status()
        http.post(f"/api/v1/functions/id/{TRIPWIRE_ID}/toggle").raise_for_status()
        http.post(f"/api/v1/functions/id/{TRIPWIRE_ID}/toggle/global").raise_for_status()
        http.post(f"/api/v1/functions/id/{TRIPWIRE_ID}/valves/update", json={"path": str(log)}).raise_for_status()
        parent = http.post("/api/v1/groups/create", json={"name": PARENT_GROUP, "description": ""}).raise_for_status()
        group = http.post(
            "/api/v1/groups/create", json={"name": GROUP, "description": "", "parent_group_id": parent.json()["id"]}
        )
        group = group.raise_for_status().json()
        assert group.get("parent_group_id") == parent.json()["id"], group  # the release nests groups
        for user in (
            http.get("/api/v1/users/", params={"query": MEMBER_EMAIL}).raise_for_status().json().get("users", [])
        ):
            if user["email"] == MEMBER_EMAIL:  # left by an interrupted run on a kept instance
                http.delete(f"/api/v1/users/{user['id']}").raise_for_status()
        member = (
            http.post(
                "/api/v1/auths/add",
                json={"name": "Ada Member", "email": MEMBER_EMAIL, "password": password, "role": "user"},
            )
            .raise_for_status()
            .json()
        )
        http.post(f"/api/v1/groups/id/{group['id']}/users/add", json={"user_ids": [member["id"]]}).raise_for_status()
    yield Site(openwebui, agent, member["id"], member["token"], group["id"], parent.json()["id"], log)
    agent.stop()
    with openwebui.client() as http:
        http.delete(f"/api/v1/users/{member['id']}")
    openwebui.reset()


def provision_quietly(*args: str) -> int:
    import provisioner.cli as cli

    return cli.main(list(args))


# --- chatting as the browser does ----------------------------------------------------------------


class Chat:
    """A stored chat driven turn by turn: the history is written as the browser saves it."""

    def __init__(self, site: Site, model: str) -> None:
        self.site, self.model = site, model
        self.messages: dict[str, dict[str, Any]] = {}
        self.last: str | None = None
        with site.member() as http:
            created = http.post(
                "/api/v1/chats/new",
                json={
                    "chat": {
                        "title": "inbound",
                        "models": [model],
                        "history": {"messages": {}, "currentId": None},
                        "messages": [],
                    }
                },
            )
        assert created.status_code == 200, created.text
        self.id = created.json()["id"]

    def turn(self, text: str, files: list[dict[str, Any]], chat_files: list[dict[str, Any]]) -> tuple[str, str, str]:
        """One turn: returns (user message id, assistant message id, the answer's content)."""
        user_id, assistant_id = str(uuid.uuid4()), str(uuid.uuid4())
        user: dict[str, Any] = {
            "id": user_id,
            "parentId": self.last,
            "childrenIds": [],
            "role": "user",
            "content": text,
            "files": files,
            "timestamp": int(time.time()),
            "models": [self.model],
        }
        if self.last:
            self.messages[self.last]["childrenIds"].append(user_id)
        self.messages[user_id] = user
        self._save(user_id)
        body = {
            "model": self.model,
            "stream": False,
            "chat_id": self.id,
            "id": assistant_id,
            "user_message": user,
            "messages": [{"role": "user", "content": text}],
            "files": chat_files,
            "variables": {
                "{{USER_LANGUAGE}}": "en-GB",
                "{{CURRENT_DATETIME}}": "2026-12-02 10:00:00",
                "{{CURRENT_TIMEZONE}}": "Europe/London",
            },
        }
        with self.site.member(timeout=120) as http:
            response = http.post("/api/chat/completions", json=body)
        assert response.status_code == 200, response.text
        content = response.json()["choices"][0]["message"]["content"]
        self.messages[assistant_id] = {
            "id": assistant_id,
            "parentId": user_id,
            "childrenIds": [],
            "role": "assistant",
            "content": content,
            "model": self.model,
            "done": True,
            "timestamp": int(time.time()),
        }
        user["childrenIds"].append(assistant_id)
        self.last = assistant_id
        self._save(assistant_id)
        return user_id, assistant_id, content

    def _save(self, current: str) -> None:
        chain, node = [], self.messages.get(current)
        while node:
            chain.append(node)
            node = self.messages.get(node["parentId"]) if node["parentId"] else None
        chat = {
            "title": "inbound",
            "models": [self.model],
            "history": {"messages": self.messages, "currentId": current},
            "messages": list(reversed(chain)),
        }
        with self.site.member() as http:
            http.post(f"/api/v1/chats/{self.id}", json={"chat": chat}).raise_for_status()


# --- what the agent received ---------------------------------------------------------------------


def _users(request: dict[str, Any]) -> list[Any]:
    return [m["content"] for m in request["json"]["messages"] if m["role"] == "user"]


def _documents_and_images(content: Any, transport: str) -> tuple[list[bytes], list[bytes], list[str]]:
    """(document bytes, image bytes, text lines) of one user message, in either transport's shape."""
    documents: list[bytes] = []
    images: list[bytes] = []
    texts: list[str] = []
    for part in content if isinstance(content, list) else [{"type": "text", "text": content}]:
        kind = part["type"]
        if kind == "text":
            texts.append(part["text"])
        elif transport == "agui" and kind in ("document", "image"):
            assert part["source"]["type"] == "data"
            (documents if kind == "document" else images).append(base64.b64decode(part["source"]["value"]))
        elif kind == "file":
            documents.append(base64.b64decode(part["file"]["file_data"].partition(";base64,")[2]))
        elif kind == "image_url":
            images.append(base64.b64decode(part["image_url"]["url"].partition(";base64,")[2]))
    return documents, images, texts


def _public_key() -> Any:
    return load_pem_private_key(IDENTITY_PEM.encode(), password=None).public_key()


@pytest.mark.parametrize("transport", ["agui", "openai"])
def test_a_members_document_and_image_reach_the_agent_with_a_verifiable_identity(site: Site, transport: str) -> None:
    model = MODELS[transport]
    document = site.upload("q3-report.pdf", DOCUMENT, "application/pdf")
    image = site.upload("chart.png", IMAGE, "image/png")
    theirs = site.upload("admin-notes.txt", THEIRS, "text/plain", as_admin=True)
    chat = Chat(site, model)
    site.agent.requests.clear()
    injected = {"type": "file", "id": theirs["id"]}  # another user's file id, as an API client could send it

    # turn 1: the document and the image on the user's message, the other user's id injected
    user_1, answer_1, content = chat.turn(
        "Summarise the report",
        [reference(document, "file"), reference(image, "image")],
        [reference(document, "file"), injected],
    )
    assert content == ANSWER
    (request,) = site.agent.requests
    (message,) = _users(request)
    documents, images, texts = _documents_and_images(message, transport)
    assert documents == [DOCUMENT] and images == [IMAGE]
    assert texts[0] == "Summarise the report"
    assert texts[1:] == [f'[The attached file "{theirs["id"]}" was left out: it is not a file you may read.]']
    raw = json.dumps(request)
    assert base64.b64encode(THEIRS).decode() not in raw and "admin-notes" not in raw
    if transport == "agui":
        (part,) = [p for p in message if p["type"] == "document"]
        assert part["metadata"] == {"filename": "q3-report.pdf", "file_id": document["id"], "size": len(DOCUMENT)}

    # who asks: Open WebUI's HS256 JWT and the pipe's EdDSA token for this agent alone
    headers = request["headers"]
    claims = jwt.decode(headers["x-openwebui-user-jwt"], FORWARD_JWT_SECRET, algorithms=["HS256"])
    assert (claims["sub"], claims["email"], claims["role"], claims["iss"]) == (
        site.member_id,
        MEMBER_EMAIL,
        "user",
        "open-webui",
    )
    # the group the member is in, and the group it nests in, as Open WebUI's own access rules count them
    assert sorted(claims["groups"], key=lambda g: g["name"]) == [
        {"id": site.parent_group_id, "name": PARENT_GROUP},
        {"id": site.group_id, "name": GROUP},
    ]
    assert (claims["model"], claims["chat_id"], claims["message_id"]) == (model, chat.id, answer_1)
    token = headers["x-aihub-identity"]
    assert jwt.get_unverified_header(token)["kid"] == IDENTITY_KID
    signed = jwt.decode(token, _public_key(), algorithms=["EdDSA"], audience=model, issuer="aihub-agent-pipe")
    assert (signed["sub"], signed["groups"], signed["message_id"]) == (site.member_id, claims["groups"], answer_1)

    # which chat and message, the trace, the user's context
    trace = headers["traceparent"].split("-")
    assert len(trace) == 4 and len(trace[1]) == 32 and len(trace[2]) == 16
    if transport == "agui":
        body = request["json"]
        assert (body["threadId"], body["runId"]) == (chat.id, answer_1)
        assert body["forwardedProps"]["user_id"] == site.member_id
        assert (body["forwardedProps"]["message_id"], body["forwardedProps"]["user_message_id"]) == (answer_1, user_1)
        assert {"description": "The user's language", "value": "en-GB"} in body["context"]
    else:
        assert (headers["x-openwebui-chat-id"], headers["x-openwebui-message-id"]) == (chat.id, answer_1)
        assert request["json"]["metadata"]["current_timezone"] == "Europe/London"
        assert request["json"]["user"] == site.member_id

    # turn 2: the document still goes with the first message, and with it only
    site.agent.requests.clear()
    chat.turn("Compare it with last year", [], [reference(document, "file")])
    (request,) = site.agent.requests
    first, second = _users(request)
    assert _documents_and_images(first, transport)[:2] == ([DOCUMENT], [IMAGE])
    assert _documents_and_images(second, transport)[:2] == ([], [])

    # Open WebUI did none of the file work itself
    assert [r for r in site.retrievals() if r.get("model") == model] == []
    stored = json.dumps(site.owui.client(token=site.member_token).get(f"/api/v1/chats/{chat.id}").json())
    for secret in (token, headers["x-openwebui-user-jwt"], base64.b64encode(DOCUMENT).decode()):
        assert secret not in stored


def test_the_tripwire_sees_open_webuis_retrieval_when_a_row_asks_for_it(site: Site) -> None:
    """The control: with `file_context` on, Open WebUI runs its own file handler, and the tripwire says so."""
    document = site.upload("control.txt", b"control text", "text/plain")
    chat = Chat(site, CONTROL)
    chat.turn("Read it", [reference(document, "file")], [reference(document, "file")])
    assert [r["called"] for r in site.retrievals() if r.get("model") == CONTROL] == ["chat_completion_files_handler"]


# --- images Open WebUI inlines itself (issue 29.3) ------------------------------------------------


MB = 1024 * 1024


def _png(size: int, seed: bytes) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + (hashlib.sha256(seed).digest() * (size // 32 + 1))[: size - 8]


@contextmanager
def pipe_valves(site: Site, **changes: Any) -> Iterator[None]:
    """The agent pipe's valves changed for a test, as an admin changes them, and put back after."""
    path = "/api/v1/functions/id/aihub_agent_pipe/valves"
    with site.owui.client() as http:
        before = http.get(path).raise_for_status().json()
        http.post(f"{path}/update", json={**before, **changes}).raise_for_status()
    try:
        yield
    finally:
        with site.owui.client() as http:
            http.post(f"{path}/update", json=before).raise_for_status()


def test_images_open_webui_inlines_obey_the_file_limits_and_only_images_pass(site: Site) -> None:
    """0.12.4 turns each image reference of a stored user message into a data: part itself
    (process_chat_payload, then convert_url_images_to_base64, with the file's own content type):
    the pipe's MAX_FILE_MB and MAX_TURN_FILES_MB hold for those too, and a text/html file
    referenced as an image never reaches the agent as an image."""
    small = [_png(600 * 1024, bytes([n])) for n in range(2)]
    refs = [reference(site.upload(f"small-{n}.png", data, "image/png"), "image") for n, data in enumerate(small)]
    refs.append(reference(site.upload("big.png", _png(3 * MB, b"big"), "image/png"), "image"))
    page = site.upload("page.html", b"<html><script>alert(1)</script></html>", "text/html")
    refs.append(reference(page, "image"))
    chat = Chat(site, MODELS["agui"])
    site.agent.requests.clear()
    with pipe_valves(site, MAX_FILE_MB=1, MAX_TURN_FILES_MB=1):
        chat.turn("Look at these", refs, refs)
    (request,) = site.agent.requests
    (message,) = _users(request)
    _, images, texts = _documents_and_images(message, "agui")
    assert images == [small[0]]  # the first fits; the second would pass the turn's 1 MB, the third its own
    assert [p["source"]["mimeType"] for p in message if p["type"] == "image"] == ["image/png"]
    raw = json.dumps(request)
    assert "text/html" not in raw and base64.b64encode(b"<html><script>").decode()[:12] not in raw
    left_out = "\n".join(texts[1:])
    assert "would be over the limit of 1 MB" in left_out and "3.0 MB is over the limit of 1 MB per file" in left_out
    assert "it is not an image an agent gets" in left_out


@pytest.mark.parametrize("reads", ["documents", "nothing"])
def test_an_agent_that_reads_no_images_gets_no_image_open_webui_inlined(site: Site, reads: str) -> None:
    image = site.upload("chart.png", IMAGE, "image/png")
    chat = Chat(site, READS_MODELS[reads])
    site.agent.requests.clear()
    chat.turn("What is this?", [reference(image, "image")], [reference(image, "image")])
    (request,) = site.agent.requests
    (message,) = _users(request)
    _, images, texts = _documents_and_images(message, "agui")
    assert images == [] and base64.b64encode(IMAGE).decode()[:40] not in json.dumps(request)
    assert any("this agent does not read images" in line for line in texts), texts
