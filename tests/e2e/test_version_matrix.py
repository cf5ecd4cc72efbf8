"""The core cycle against a real Open WebUI of each release in the compatibility matrix.

Which releases: `AIHUB_OWUI_MATRIX` = `all` (every release in provisioner.openwebui.compat.TESTED, what
`.ci/run` sets) or a comma-separated list; unset, only the pinned release (the default suite).
Each release gets a fresh server from `scripts/openwebui-local start --version X` (installed once
per version under the cache dir) and runs: validate, diff, sync, idempotent re-sync, access
(public, private, groups), a change, the feature filter and a toggle filter in the right order,
the pipe answering, a member of a group chatting with a document (the bytes, both signed
identities, a source and the usage on the stored message), prune. Each step's result goes to
`<AIHUB_COMPAT_RESULTS>/<version>.json` (default `.compat/`), which `scripts/compat-table` turns
into the table in docs/openwebui-versions.md.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
import yaml

from provisioner.openwebui import compat
from tests.support.builders import REPO, samples_on
from tests.support.chat_support import AGENT_ANSWER, provision, stored_message, ui_body
from tests.support.header_tap import HeaderTap
from tests.support.owui_instance import (
    FORWARD_JWT_SECRET,
    OpenWebUIInstance,
    OpenWebUIUnavailable,
    started,
    unavailable,
)

MATRIX_ENV = "AIHUB_OWUI_MATRIX"
# Older patch releases that get a short check (start, sign in, list models) beside the newest
# patch of each minor: `scripts/openwebui-local start --version X` must start every release, and
# 0.6.5 once missed a module its slim install left out (issue 23). An early 0.6, a mid 0.6, a 0.8
# and a 0.10. `AIHUB_OWUI_OLDER` = a comma-separated list (or `none`) overrides it; unset, they
# run when the matrix is `all`.
OLDER_PATCHES = ("0.6.5", "0.6.26", "0.8.0", "0.10.0")
OLDER_ENV = "AIHUB_OWUI_OLDER"
RESULTS_DIR = Path(os.environ.get("AIHUB_COMPAT_RESULTS") or REPO / ".compat")
FILE_CHAT = "chat with a file"
STEPS = (
    "validate",
    "diff",
    "sync",
    "idempotent re-sync",
    "access",
    "change",
    "filter order",
    "pipe answers",
    FILE_CHAT,
    "prune",
)
DOCUMENTS = "aihub_agent_pipe.document-analyst.default"
POLICY = "aihub_agent_pipe.policy-faq.default"
TIER1 = "aihub_agent_pipe.support-desk.tier1"
TIER2 = "aihub_agent_pipe.support-desk.tier2"
BILLING = "aihub_agent_pipe.support-desk.billing"
TOGGLE = "aihub_toggle_user_files"
# Open WebUI's own user-info forwarding with an HS256 secret, on every release: the pipe reads it
# from the server's environment. The pipe's EdDSA key is the one sync makes (`provision jwks`).
FORWARD_ENV = {"ENABLE_FORWARD_USER_INFO_HEADERS": "true", "FORWARD_USER_INFO_HEADER_JWT_SECRET": FORWARD_JWT_SECRET}
DOCUMENT = b"%PDF-1.4\n% the matrix's report\n" + bytes(range(256))
CITED = "scenario:cited"  # tests/support/agui_server/app.py: a tool round, a cited answer, usage per model call
CITED_ANSWER = "It is sunny in Paris."
CITED_URL = "https://weather.example.org/paris?d=today"


def selected_versions() -> list[str]:
    wanted = os.environ.get(MATRIX_ENV, "").strip()
    if not wanted:
        return [compat.PINNED]
    if wanted == "all":
        return list(compat.TESTED)
    return [v.strip() for v in wanted.split(",") if v.strip()]


def selected_older_patches() -> list[str]:
    wanted = os.environ.get(OLDER_ENV, "").strip()
    if wanted == "none":  # e.g. a cold machine where each install costs minutes
        return []
    if wanted:
        return [v.strip() for v in wanted.split(",") if v.strip()]
    return list(OLDER_PATCHES) if os.environ.get(MATRIX_ENV, "").strip() == "all" else []


@pytest.fixture(scope="module", autouse=True)
def fresh_results() -> None:
    """A full matrix run replaces every recorded result: a release that did not run this time
    must not keep an old row in the table."""
    if os.environ.get(MATRIX_ENV, "").strip() == "all":
        for old in RESULTS_DIR.glob("*.json"):
            old.unlink()


class StepLog:
    """Each step's outcome, written to the results file whatever happens.

    A step passes as `pass`, or as `pass (note; ...)` when the release did something its own way
    and the step says which (the notes a step appends to the list `run` yields).
    """

    def __init__(self, version: str) -> None:
        self.version = version
        self.results: dict[str, str] = dict.fromkeys(STEPS, "not run")
        self.started = time.monotonic()

    def run(self, name: str):
        log = self

        notes: list[str] = []

        class _Step:
            def __enter__(self) -> list[str]:
                return notes

            def __exit__(self, kind, exc, tb) -> None:  # the error goes on: the step is logged, not hidden
                if kind is None:
                    log.results[name] = f"pass ({'; '.join(notes)})" if notes else "pass"
                else:
                    log.results[name] = f"FAIL: {str(exc).splitlines()[0][:160] if str(exc) else kind.__name__}"
                log.write()

        return _Step()

    def write(self) -> None:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        data = {
            "version": self.version,
            "steps": self.results,
            "seconds": round(time.monotonic() - self.started, 1),
            "recorded_at": int(time.time()),
        }
        (RESULTS_DIR / f"{self.version}.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


@pytest.fixture(scope="module", params=selected_versions())
def release(request: pytest.FixtureRequest) -> Iterator[OpenWebUIInstance]:
    version = request.param
    instance = OpenWebUIInstance(f"matrix-{version}-{os.getpid()}", version=version, extra_env=FORWARD_ENV)
    try:
        instance.start(reuse_data=False, timeout=300.0)
    except OpenWebUIUnavailable as exc:
        StepLog(version).write()  # every step "not run": the table shows it
        try:
            instance.stop(keep_data=False)
        except OpenWebUIUnavailable:
            pass
        reason = f"Open WebUI {version} could not be started: {exc}"
        unavailable(reason)
    yield instance
    if request.session.testsfailed:
        instance.stop(keep_data=False)
        print(f"\nOpen WebUI {version} log kept at {instance.log_file}")
    else:
        instance.purge()


@pytest.fixture(scope="module")
def tap(agui_server: Any) -> Iterator[HeaderTap]:
    """The agents' way to the scripted server, recording each request's headers (the identities)."""
    tap = HeaderTap(agui_server.url)
    yield tap
    tap.close()


def matrix_bundle(tmp: Path, agent_url: str) -> tuple[list[str], Path]:
    """The samples on the scripted AG-UI server; billing is group-only (group Support)."""

    def billing_for_support(agent: dict[str, Any]) -> None:
        if agent["id"] == "billing":
            agent["access"] = {"groups": ["Support"]}

    root = samples_on(tmp / "blueprints", agent_url, adjust=billing_for_support)
    return ["-p", str(root), "--bundle", str(REPO / "owui_functions")], root


def chat(instance: OpenWebUIInstance, agui_server: Any, model: str, **extra: Any) -> list[str]:
    """One chat through the pipe; the features the agent was asked for."""
    agui_server.clear()
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": False, **extra}
    with instance.client(timeout=120) as http:
        response = http.post("/api/chat/completions", json=body)
    assert response.status_code == 200, response.text[:300]
    assert response.json()["choices"][0]["message"]["content"] == AGENT_ANSWER, response.text[:300]
    runs = agui_server.recorded()
    assert len(runs) == 1, runs
    return runs[0]["forwardedProps"]["features"]


def test_core_cycle(
    release: OpenWebUIInstance,
    agui_server: Any,
    tap: HeaderTap,
    tmp_path: Path,
    capsys,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    version = release.version or compat.PINNED
    steps = StepLog(version)
    steps.write()
    monkeypatch.setenv("OPENWEBUI_URL", release.url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", release.token)
    monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
    args, root = matrix_bundle(tmp_path, f"{tap.url}/agent")
    with release.client() as http:
        group = http.post("/api/v1/groups/create", json={"name": "Support", "description": "matrix"})
        group_id = group.raise_for_status().json()["id"]
        member = http.post(
            "/api/v1/auths/add",
            json={
                "name": "Ada Member",
                "email": "matrix-member@example.org",
                "password": uuid.uuid4().hex,
                "role": "user",
            },
        )
        member = member.raise_for_status().json()
        http.post(f"/api/v1/groups/id/{group_id}/users/add", json={"user_ids": [member["id"]]}).raise_for_status()

    with steps.run("validate"):
        code, out, err = provision(capsys, "validate", *args)
        assert code == 0, out + err
    with steps.run("diff"):
        code, out, err = provision(capsys, "diff", *args, "--detailed-exitcode")
        assert code == 2 and "to add" in out, out + err
        assert "outside the tested range" not in err, err
    with steps.run("sync"):
        code, out, err = provision(capsys, "sync", "--yes", *args)
        assert code == 0, out + err
    with steps.run("idempotent re-sync"):
        code, out, err = provision(capsys, "sync", "--yes", *args)
        assert code == 0, out + err
        code, out, err = provision(capsys, "diff", "-o", "json", "--detailed-exitcode", *args)
        assert code == 0 and json.loads(out)["summary"] == {"add": 0, "change": 0, "destroy": 0}, out + err
        # The samples translate an agent and the custom toggles: before 0.12, one note says why
        # only the default language lands (issue 30).
        translation_notes = [n for n in json.loads(out)["notes"] if "translations (i18n)" in n]
        assert len(translation_notes) == (0 if compat.select(version).i18n else 1), translation_notes
    table = compat.select(version)
    with steps.run("access"):
        rows = {r["id"]: r for r in release_rows(release, table)}
        grants = {mid: access_of(rows[mid], table) for mid in (TIER1, TIER2, BILLING)}
        assert grants == {TIER1: [("user", "*")], TIER2: [], BILLING: [("group", group_id)]}, grants
    with steps.run("change"):
        path = root / "support_desk.yaml"
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for agent in data["agents"]:
            agent["name"] = agent["name"] + " (v2)"
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        code, out, err = provision(capsys, "sync", "--yes", *args)
        assert code == 0 and "4 changed" in out, out + err  # three rows and the pipe's AGENTS
        assert provision(capsys, "diff", *args, "--detailed-exitcode")[0] == 0
        rows = {r["id"]: r for r in release_rows(release, table)}
        assert rows[TIER2]["name"].endswith("(v2)")
        if table.access_control:  # a write without access_control would have made it public
            assert rows[TIER2]["access_control"] is not None and rows[BILLING]["access_control"]["read"][
                "group_ids"
            ] == [group_id]
        else:
            assert rows[TIER2].get("access_grants") == [] and len(rows[BILLING]["access_grants"]) == 1
    with steps.run("filter order"):
        # The toggle filter (priority 10) must run after the feature filter (0), which resets the
        # requested list: in the wrong order the custom feature is dropped.
        for _ in range(3):
            assert chat(release, agui_server, DOCUMENTS, filter_ids=[TOGGLE]) == ["user_files"]
        assert chat(release, agui_server, POLICY, features={"web_search": True}) == []
    with steps.run("pipe answers"):
        assert chat(release, agui_server, TIER1) == []
    with steps.run(FILE_CHAT) as notes:
        notes += chat_with_a_file(release, agui_server, tap, member, group_id, capsys)
    with steps.run("prune"):
        (root / "support_desk.yaml").unlink()
        code, out, err = provision(capsys, "sync", "--yes", "--prune", *args)
        assert code == 0 and "3 destroyed" in out, out + err
        ids = {r["id"] for r in release_rows(release, table)}
        assert not ids & {TIER1, TIER2, BILLING} and DOCUMENTS in ids
        with release.client() as http:
            served = {m["id"] for m in http.get("/api/models").raise_for_status().json()["data"]}
        assert TIER1 not in served and DOCUMENTS in served


def chat_with_a_file(
    release: OpenWebUIInstance, agui_server: Any, tap: HeaderTap, member: dict[str, Any], group_id: str, capsys
) -> list[str]:
    """A member of group Support uploads a document and chats with the Document Analyst as the page
    does. The agent gets the bytes and two identities that verify (Open WebUI's HS256 JWT with the
    server's secret, the pipe's EdDSA token with `provision jwks`); the source and the usage it
    sends are on the stored message. Returns what this release does its own way."""
    notes: list[str] = []
    version = compat.parse_version(release.version or compat.PINNED) or (0, 0, 0)
    code, out, err = provision(capsys, "jwks", "-o", "json")
    assert code == 0, out + err
    keys = jwt.PyJWKSet.from_dict(json.loads(out))
    with release.client(token=member["token"]) as http:
        uploaded = http.post(
            "/api/v1/files/", params={"process": "false"}, files={"file": ("report.pdf", DOCUMENT, "application/pdf")}
        )
    assert uploaded.status_code == 200, uploaded.text[:300]
    file = uploaded.json()
    ref = {
        "type": "file",
        "id": file["id"],
        "name": "report.pdf",
        "status": "uploaded",
        "size": len(DOCUMENT),
        "content_type": "application/pdf",
    }
    agui_server.clear()
    tap.headers.clear()
    chat_id, answer_id, stored = page_turn(release, member["token"], version, ref, notes)

    (run,) = agui_server.recorded()
    parts = [p for p in run["messages"][-1]["content"] if isinstance(p, dict) and p.get("type") == "document"]
    assert [base64.b64decode(p["source"]["value"]) for p in parts] == [DOCUMENT], run["messages"][-1]
    seen = [m for call in agui_server.model_calls() for message in call for m in message["media"]]
    assert hashlib.sha256(DOCUMENT).hexdigest() in {m["sha256"] for m in seen}, seen  # the agent's model got it
    assert "<source" not in json.dumps(run["messages"]), run["messages"]  # no retrieval text in the prompt
    (headers,) = tap.headers
    claims = jwt.decode(headers["x-openwebui-user-jwt"], FORWARD_JWT_SECRET, algorithms=["HS256"])
    assert (claims["sub"], claims["groups"], claims["chat_id"], claims["message_id"]) == (
        member["id"],
        [{"id": group_id, "name": "Support"}],
        chat_id,
        answer_id,
    ), claims
    token = headers["x-aihub-identity"]
    signed = jwt.decode(
        token,
        keys[jwt.get_unverified_header(token)["kid"]].key,
        algorithms=["EdDSA"],
        audience=DOCUMENTS,
        issuer="aihub-agent-pipe",
    )
    assert (signed["sub"], signed["groups"], signed["message_id"]) == (member["id"], claims["groups"], answer_id)

    # 0.10.2 keeps the answer as `output` items only, with no `content`
    assert CITED_ANSWER in (stored.get("content") or json.dumps(stored.get("output"))), stored
    usage = stored.get("usage") or {}
    assert (usage.get("input_tokens"), usage.get("output_tokens")) == (30, 9), stored
    sources = stored.get("sources") or []
    theirs = [s for s in sources if s["source"].get("url") != CITED_URL]
    assert len(sources) - len(theirs) == 1, sources  # the agent's source, once
    if theirs and version < (0, 7, 0):  # 0.7 added the row's file_context switch the pipe's rows turn off
        assert [(s["source"].get("id"), s.get("document")) for s in theirs] == [(file["id"], [])], theirs
        notes.append(
            "0.6 runs its own retrieval on the file (no file_context switch before 0.7): it finds "
            "nothing, and its empty source for the file sits beside the agent's"
        )
    else:
        assert theirs == [], theirs
    return notes


def page_turn(
    release: OpenWebUIInstance, token: str, version: compat.Version, ref: dict[str, Any], notes: list[str]
) -> tuple[str, str, dict[str, Any]]:
    """One message with the file, sent as that release's chat page sends it: the chat saved first,
    the answer made in the background for the page's socket. Returns (chat id, answer id, the
    stored answer)."""
    user_id, answer_id = str(uuid.uuid4()), str(uuid.uuid4())
    body = ui_body(DOCUMENTS, CITED, user_id=user_id, assistant_id=answer_id, parent_id=None, first=False, files=[ref])
    if version < (0, 10, 0):
        body.pop("message_ids")  # 0.9 reads it as a dict of model -> message id, and before 0.9 not at all
    if version < (0, 9, 0):  # that page sends the history, and the user message as parent_message
        body.update(messages=[{"role": "user", "content": CITED}], parent_message=body.pop("user_message"))
    user = {**(body.get("user_message") or body["parent_message"]), "childrenIds": [answer_id]}
    answer = {
        "id": answer_id,
        "parentId": user_id,
        "childrenIds": [],
        "role": "assistant",
        "content": "",
        "model": DOCUMENTS,
    }
    chat = {
        "title": "matrix",
        "models": [DOCUMENTS],
        "messages": [user, answer],
        "history": {"messages": {user_id: user, answer_id: answer}, "currentId": answer_id},
    }
    page = PageSocket(release.url, token)
    try:
        body["session_id"] = page.sid
        with release.client(token=token, timeout=60) as http:
            chat_id = http.post("/api/v1/chats/new", json={"chat": chat}).raise_for_status().json()["id"]
            body["chat_id"] = chat_id
            started = http.post("/api/chat/completions", json=body)
        assert started.status_code == 200 and started.json().get("status") is True, started.text[:300]
        stored = stored_message(release, chat_id, answer_id, token=token)
        if version < (0, 8, 0):
            page.save(release, chat_id, stored, token)
            notes.append("0.6 and 0.7 store no usage or sources: the page's save stores them")
            stored = stored_message(release, chat_id, answer_id, token=token)
    finally:
        page.close()
    return chat_id, answer_id, stored


class PageSocket:
    """Open WebUI's socket as the chat page holds it, signed in as the user: every event of each
    message is kept. Open WebUI 0.6 and 0.7 store no usage and no sources themselves; the page
    puts what these events bring on the message and saves the chat (`save`)."""

    def __init__(self, url: str, token: str) -> None:
        import socketio  # python-socketio, the test extra

        self.events: dict[str, list[dict[str, Any]]] = {}
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client = socketio.AsyncClient()
        self.client.on("events", self._on_event)
        self._run(
            self.client.connect(
                url, socketio_path="/ws/socket.io", transports=["websocket"], auth={"token": token}, wait_timeout=30
            )
        )

    @property
    def sid(self) -> str:
        return self.client.get_sid()

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(60)

    async def _on_event(self, event: dict[str, Any]) -> None:
        self.events.setdefault(event.get("message_id") or "", []).append(event.get("data") or {})

    def beside_the_answer(self, message_id: str) -> dict[str, Any]:
        """The usage and sources the page puts on the message from its events (Chat.svelte)."""
        found: dict[str, Any] = {"sources": []}
        for envelope in self.events.get(message_id, []):
            kind, data = envelope.get("type"), envelope.get("data") or {}
            if kind == "chat:completion" and data.get("usage"):
                found["usage"] = data["usage"]
            if kind == "chat:completion" and data.get("sources"):
                found["sources"] = list(data["sources"])
            if kind in ("source", "citation"):
                found["sources"].append(data)
        return found

    def save(self, release: OpenWebUIInstance, chat_id: str, message: dict[str, Any], token: str) -> None:
        """Save the chat with the finished message, as the page does when the answer is done."""
        message = {**message, **self.beside_the_answer(message["id"]), "done": True}
        with release.client(token=token) as http:
            chat = http.get(f"/api/v1/chats/{chat_id}").raise_for_status().json()["chat"]
            chat["history"]["messages"][message["id"]] = message
            chat["messages"] = [message if m.get("id") == message["id"] else m for m in chat.get("messages") or []]
            http.post(f"/api/v1/chats/{chat_id}", json={"chat": chat}).raise_for_status()

    def close(self) -> None:
        try:
            self._run(self.client.disconnect())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)


def access_of(row: dict[str, Any], table: compat.Compat) -> list[tuple[str, str]]:
    """Who may read a row, read straight from the release's own field."""
    if table.access_control:
        control = row.get("access_control")
        if control is None:
            return [("user", "*")]
        read = control.get("read") or {}
        return sorted(
            [("group", g) for g in read.get("group_ids") or []] + [("user", u) for u in read.get("user_ids") or []]
        )
    return sorted((g["principal_type"], g["principal_id"]) for g in row.get("access_grants") or [])


def release_rows(instance: OpenWebUIInstance, table: compat.Compat) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    with instance.client() as http:
        for path in table.model_listing:
            for row in http.get(path).raise_for_status().json():
                rows.setdefault(row["id"], row)
    return list(rows.values())


# Defined only when older patches are selected: a default run shows no empty-parameter skip.
if selected_older_patches():

    @pytest.mark.parametrize("version", selected_older_patches())
    def test_an_older_patch_release_starts_signs_in_and_lists_models(
        version: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        instance = started(
            OpenWebUIInstance(f"older-{version}-{os.getpid()}", version=version), f"Open WebUI {version}"
        )
        try:
            admin = json.loads((instance.instance_dir / "admin.json").read_text(encoding="utf-8"))
            with instance.client(token="") as http:
                assert http.get("/api/version").raise_for_status().json()["version"] == version
                signed_in = http.post(
                    "/api/v1/auths/signin", json={"email": admin["email"], "password": admin["password"]}
                )
                assert signed_in.status_code == 200 and signed_in.json()["role"] == "admin", signed_in.text[:300]
            with instance.client() as http:  # the API key the script minted
                models = http.get("/api/models")
                assert models.status_code == 200 and isinstance(models.json()["data"], list), models.text[:300]
            # provision reads the release, or refuses it by name (compat.MINIMUM) before any write.
            monkeypatch.setenv("OPENWEBUI_URL", instance.url)
            monkeypatch.setenv("OPENWEBUI_TOKEN", instance.token)
            monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
            code, out, err = provision(
                capsys, "diff", "-p", str(REPO / "blueprints"), "--bundle", str(REPO / "owui_functions")
            )
            if (compat.parse_version(version) or (0, 0, 0)) < compat.MINIMUM:
                assert code == 1 and f"Open WebUI {version} is not supported: provision needs 0.6.27 or later" in err, (
                    out + err
                )
            else:
                assert code == 0, out + err
        finally:
            instance.purge()


def test_drift_is_reported_on_every_release_and_named_where_history_is_kept(
    release: OpenWebUIInstance, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit made in Open WebUI after a sync is drift on every release; only from 0.12 (which
    keeps a version history) does it carry who made it. Nothing errors where there is none."""
    from tests.support.builders import blueprint, write_blueprint_dir

    version = release.version or compat.PINNED
    table = compat.select(version)
    monkeypatch.setenv("OPENWEBUI_URL", release.url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", release.token)
    monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
    agents = [{"id": "watched", "name": "Watched", "access": "public"}]
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("drift", agents=agents)])
    args = ["-p", str(root), "--bundle", str(REPO / "owui_functions")]
    assert provision(capsys, "sync", "--yes", *args)[0] == 0
    model_id = "aihub_agent_pipe.drift.watched"
    [row] = [r for r in release_rows(release, table) if r["id"] == model_id]
    form: dict[str, Any] = {k: row[k] for k in ("id", "base_model_id", "name", "meta", "params") if k in row}
    form["meta"]["description"] = "edited in Open WebUI"
    if table.access_control:
        form["access_control"] = row.get("access_control")
    elif table.access_in_update:
        form["access_grants"] = row.get("access_grants") or []
    with release.client() as http:
        http.post("/api/v1/models/model/update", params={"id": model_id}, json=form).raise_for_status()

    code, out, err = provision(capsys, "drift", "-o", "json")
    assert code == 2, out + err
    [entry] = json.loads(out)["drift"]
    fields = {f["path"]: f["changed_by"] for f in entry["fields"]}
    assert entry["id"] == model_id and entry["history"] is table.history and "meta.description" in fields
    if table.history:
        assert fields["meta.description"] is not None and fields["meta.description"]["name"]
    else:
        assert set(fields.values()) == {None}
    code, out, err = provision(capsys, "diff", *args)
    assert code == 0 and "(changed in Open WebUI)" in out, out + err
    if not table.history:
        assert "no name: Open WebUI keeps no version history before 0.12" in out
    assert provision(capsys, "sync", "--yes", *args)[0] == 0
    assert provision(capsys, "drift")[0] == 0
