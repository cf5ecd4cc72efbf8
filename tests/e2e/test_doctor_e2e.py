"""`provision doctor` against a real Open WebUI 0.12.4 that has each problem (issue 31).

One Open WebUI for the module. The backends are loopback servers of this test: an AG-UI stub
that answers, one that answers 401 to the key it gets, one behind TLS with a certificate of a CA
made here (Open WebUI does not trust it), one stopped, one that takes the request and never
answers, and a web app's HTML page. The pipe probes them from Open WebUI's process; then the pipe
is switched off, and last the server restarts with ENABLE_FUNCTIONS=false.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import ssl
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from demo_agents.sse_handler import SSEHandler, serve_loopback, stop_loopback
from tests.support.builders import REPO, closed_port, samples_on, set_backend
from tests.support.chat_support import provision
from tests.support.doctor_support import GOOD_KEY, WRONG_KEY, Agent, doctor
from tests.support.owui_instance import OpenWebUIInstance, started
from tests.support.pipe_support import pipe_module

PIPE = "aihub_agent_pipe"


class Silent(SSEHandler):
    """Takes the connection and the request, and never answers (a hung backend)."""

    seen: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's method name)
        self.read_body()
        type(self).seen.append(self.path)  # then back to waiting for a next request that never comes


class WebPage(SSEHandler):
    """A web app where the agent should be: 200 and an HTML page to any request."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's method name)
        self.read_body()
        page = b"<!doctype html><html><head><title>Intranet</title></head><body>Welcome</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    do_GET = do_POST  # noqa: N815 (http.server's method name)


def throwaway_tls(tmp: Path) -> ssl.SSLContext:
    """A server context with a certificate for 127.0.0.1 signed by a CA made now (trusted by nobody)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "doctor e2e throwaway CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = tmp / "server.pem"
    pem.write_bytes(
        cert.public_bytes(serialization.Encoding.PEM)
        + ca.public_bytes(serialization.Encoding.PEM)
        + key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pem)
    return context


@pytest.fixture(scope="module")
def owui() -> Iterator[OpenWebUIInstance]:
    instance = started(OpenWebUIInstance(f"doctor-{os.getpid()}"), "Open WebUI")
    yield instance
    instance.purge()


@pytest.fixture(scope="module")
def silent() -> Iterator[ThreadingHTTPServer]:
    """The backend that never answers. The first test stops it once probed: a stopped backend
    refuses at once, where a silent one costs every later doctor run the probe's timeout."""
    server, _ = serve_loopback(Silent)
    yield server
    stop_loopback(server)


@pytest.fixture(scope="module")
def backends(tmp_path_factory: pytest.TempPathFactory, silent: ThreadingHTTPServer) -> Iterator[dict[str, str]]:
    """The URL of each backend: answering, refusing the key, behind untrusted TLS, stopped,
    silent, a web page."""
    keyed = type("Keyed", (Agent,), {"key": GOOD_KEY, "seen": []})
    plain, plain_url = serve_loopback(Agent)
    refusing, refusing_url = serve_loopback(keyed)
    page, page_url = serve_loopback(WebPage)
    tls, _ = serve_loopback(Agent)
    tls.socket = throwaway_tls(tmp_path_factory.mktemp("tls")).wrap_socket(tls.socket, server_side=True)
    yield {
        "answering": plain_url + "/agent",
        "refusing": refusing_url + "/agent",
        "tls": f"https://127.0.0.1:{tls.server_address[1]}/agent",
        "stopped": f"http://127.0.0.1:{closed_port()}/agent",
        "silent": f"http://127.0.0.1:{silent.server_address[1]}/agent",
        "page": page_url + "/agent",
    }
    for server in (plain, refusing, page, tls):
        stop_loopback(server)


@pytest.fixture(scope="module")
def blueprints(tmp_path_factory: pytest.TempPathFactory, backends: dict[str, str]) -> list[str]:
    root = samples_on(tmp_path_factory.mktemp("doctor") / "blueprints", backends["answering"])
    set_backend(root, backends["stopped"], only="policy-faq")
    set_backend(root, backends["tls"], only="research-assistant")
    set_backend(root, backends["refusing"], only="document-analyst")
    desk = root / "support_desk.yaml"  # its agents accept only a signed identity
    desk.write_text(
        desk.read_text(encoding="utf-8").replace(
            f"url: {backends['answering']}", f"url: {backends['answering']}\n  identity: signed"
        ),
        encoding="utf-8",
    )
    # The billing desk's own backend: a name no DNS resolves (RFC 6761). Its first 8 characters are
    # also WRONG_KEY's, a key the pipe holds: the probe's answer is masked, never withheld for that.
    data = yaml.safe_load(desk.read_text(encoding="utf-8"))
    billing = next(a for a in data["agents"] if a["id"] == "billing")
    billing["backend"] = {"url": "https://doctor-e2e.invalid/agent"}
    desk.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    # Two agents of a small blueprint of this test's own: one on the backend that never answers,
    # one on a web app's page (what a backend.url pointing at the wrong server gets).
    lab = {
        "id": "doctor-lab",
        "name": "Doctor lab",
        "backend": {"transport": "agui", "url": backends["silent"]},
        "steps": [{"id": "answer", "calls": ["draft_reply"]}],  # no feature, no file: no other check
        "agents": [
            {"id": "silent", "name": "Silent", "access": "public"},
            {"id": "webpage", "name": "Web page", "access": "public", "backend": {"url": backends["page"]}},
        ],
    }
    (root / "doctor_lab.yaml").write_text(yaml.safe_dump(lab, sort_keys=False), encoding="utf-8")
    path = root / "document_analyst.yaml"
    path.write_text(
        path.read_text(encoding="utf-8").replace(
            f"url: {backends['refusing']}", f"url: {backends['refusing']}\n  api_key_env: DOCTOR_E2E_KEY"
        ),
        encoding="utf-8",
    )
    return ["-p", str(root), "--bundle", str(REPO / "owui_functions")]


@pytest.fixture
def connected(owui: OpenWebUIInstance, monkeypatch: pytest.MonkeyPatch) -> OpenWebUIInstance:
    monkeypatch.setenv("OPENWEBUI_URL", owui.url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", owui.token)
    monkeypatch.setenv("DOCTOR_E2E_KEY", WRONG_KEY)
    monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
    return owui


def by_subject(report: dict[str, Any], check: str) -> dict[str, dict[str, Any]]:
    return {c.get("subject", ""): c for c in report["checks"] if c["id"] == check}


def test_each_backend_is_reached_or_not_from_open_webuis_side_with_the_reason(
    connected, blueprints, backends, silent, capsys
) -> None:
    code, out, err = provision(capsys, "sync", "--yes", *blueprints)
    assert code == 0, out + err
    Agent.seen.clear()
    code, report = doctor(capsys, blueprints)
    stop_loopback(silent)  # probed: later doctor runs find it stopped (refused at once)
    assert code == 1
    backend = by_subject(report, "backend")
    assert {k for k, c in backend.items() if c["status"] == "pass"} == {"support-desk.tier1", "support-desk.tier2"}
    assert backend["support-desk.billing"]["message"].endswith(
        "not reached from Open WebUI at doctor-e2e.invalid: the host name does not resolve"
    )
    assert backend["support-desk.billing"]["fix"].startswith("the host name does not resolve from Open WebUI's side")
    assert "(AG-UI, " in backend["support-desk.tier1"]["message"]
    assert backend["policy-faq.default"]["message"].endswith("connection refused: nothing listens there")
    assert "the TLS handshake failed (certificate not trusted?)" in backend["research-assistant.default"]["message"]
    assert backend["research-assistant.default"]["fix"].startswith(
        "Open WebUI does not trust the backend's certificate"
    )
    assert "answered HTTP 401: the backend refused the key" in backend["document-analyst.default"]["message"]
    # the backend that took the request and never answered: the probe's own timeout, through Open WebUI
    assert Silent.seen == ["/agent"]
    assert backend["doctor-lab.silent"]["status"] == "fail"
    assert backend["doctor-lab.silent"]["message"] == (
        f"doctor-lab.silent: not reached from Open WebUI at 127.0.0.1:{silent.server_address[1]}: "
        f"no answer within {pipe_module.PROBE_TIMEOUT_SECONDS:g} seconds"  # the pipe Open WebUI runs
    )
    assert backend["doctor-lab.silent"]["fix"] == (
        "the backend accepted the connection but did not answer: check that it is healthy"
    )
    # a web app's 200 text/html page where the agent should be
    assert backend["doctor-lab.webpage"]["status"] == "fail"
    assert backend["doctor-lab.webpage"]["message"] == (
        f"doctor-lab.webpage: not reached from Open WebUI at {backends['page'].split('/')[2]}: "
        "answered, but not as an AG-UI endpoint (text/html, not an AG-UI event stream)"
    )
    assert backend["doctor-lab.webpage"]["fix"] == (
        "point backend.url at the agent's AG-UI endpoint (or set transport: openai)"
    )
    assert len(backend) == 8, sorted(backend)
    # what the answering backend got: a run with no messages and nothing of the admin who asked
    assert Agent.seen and all(
        s["body"]["messages"] == [] and s["body"]["forwardedProps"] == {"aihub_probe": True} for s in Agent.seen
    )
    assert not any(h.lower().startswith(("x-openwebui", "x-aihub")) for s in Agent.seen for h in s["headers"])
    # the instance's own checks pass on a synced instance
    passed = {c["id"] for c in report["checks"] if c["status"] == "pass"}
    assert {"release", "functions-enabled", "pipe-active", "bundle-functions", "pipe-valves", "agent-rows"} <= passed
    # explain reads Open WebUI's own switches of the native features from their admin settings
    code, out, err = provision(
        capsys, "explain", "research-assistant", *blueprints[:2], "--url", connected.url, "-o", "json"
    )
    assert code == 0, err
    notes = {n["about"]: n["note"] for n in json.loads(out)["instance"]}
    with connected.client() as http:
        web = http.get("/api/v1/retrieval/config").raise_for_status().json()["web"]["ENABLE_WEB_SEARCH"]
        image = http.get("/api/v1/images/config").raise_for_status().json()["ENABLE_IMAGE_GENERATION"]
        code_on = http.get("/api/v1/configs/code_execution").raise_for_status().json()["ENABLE_CODE_INTERPRETER"]
    assert ("web_search" in notes) == (web is False) and ("image_generation" in notes) == (image is False)
    assert ("code_interpreter" in notes) == (code_on is False) and {web, image, code_on} <= {True, False}
    assert False in {web, image, code_on}, "0.12.4 ships with web search and image generation off"
    # no probe left a chat behind
    with connected.client() as http:
        assert http.get("/api/v1/chats/").raise_for_status().json() == []


def test_a_members_probe_marker_is_an_ordinary_chat(connected, blueprints, capsys) -> None:
    """Only an admin's request makes the pipe probe: a member who sends the marker through the
    real Open WebUI chats as any member does (the backend gets the member's words, no probe)."""
    with connected.client() as http:
        member = (
            http.post(
                "/api/v1/auths/add",
                json={
                    "name": "Member",
                    "email": f"member-{os.getpid()}@example.com",
                    "password": "Pw-member-1!",
                    "role": "user",
                },
            )
            .raise_for_status()
            .json()
        )
    try:
        Agent.seen.clear()
        with connected.client(token=member["token"]) as http:
            answer = http.post(
                "/api/chat/completions",
                json={
                    "model": "aihub_agent_pipe.support-desk.tier1",  # public
                    "messages": [{"role": "user", "content": "member words"}],
                    "stream": False,
                    "aihub_probe": {"version": 1},
                },
            )
        assert answer.status_code == 200, answer.text
        assert "aihub_probe" not in answer.text and "replica" not in answer.text
        [request] = Agent.seen
        assert "member words" in json.dumps(request["body"]["messages"])
        assert "aihub_probe" not in json.dumps(request["body"].get("forwardedProps") or {})
    finally:
        with connected.client() as http:
            http.delete(f"/api/v1/users/{member['id']}")


def test_what_an_admin_switched_is_found_with_its_fix_by_doctor_and_explain(connected, blueprints, capsys) -> None:
    """The instance checks against the real server's own answers: users may not upload by default,
    a toggle filter switched off and another made global, an agent's row switched off, and a
    workspace model wrapping an agent; then a sync and the permission put back pass again."""
    research, faq = "aihub_agent_pipe.research-assistant.default", "aihub_agent_pipe.policy-faq.default"
    with connected.client() as http:
        permissions = http.get("/api/v1/users/default/permissions").raise_for_status().json()
        no_upload = {**permissions, "chat": {**permissions["chat"], "file_upload": False}}
        http.post("/api/v1/users/default/permissions", json=no_upload).raise_for_status()
        http.post("/api/v1/functions/id/aihub_toggle_web_search/toggle").raise_for_status()
        http.post("/api/v1/functions/id/aihub_toggle_image_generation/toggle/global").raise_for_status()
        http.post("/api/v1/models/model/toggle", params={"id": faq}).raise_for_status()
        wrapper = {"id": "doctor-wrapper", "base_model_id": research, "name": "Wrapped", "meta": {}, "params": {}}
        http.post("/api/v1/models/create", json=wrapper).raise_for_status()
    try:
        code, report = doctor(capsys, blueprints)
        found = {(c["id"], c.get("subject", "")): c for c in report["checks"] if c["status"] != "pass"}
        assert code == 1
        assert {k: c["status"] for k, c in found.items() if k[0] != "backend"} == {
            ("agent-rows", "policy-faq.default"): "fail",
            ("file-upload", "document-analyst.default"): "fail",
            ("file-upload", "research-assistant.default"): "fail",  # it reads images
            ("bundle-functions", "aihub_toggle_web_search"): "warn",
            ("bundle-functions", "aihub_toggle_image_generation"): "warn",
            ("wrappers", "doctor-wrapper"): "warn",
            ("embedding-bypass", ""): "warn",
        }, found
        assert all(c["fix"] for c in found.values())
        code, out, err = provision(capsys, "explain", "research-assistant", *blueprints[:2], "--url", connected.url)
        assert code == 0, err
        instance = out.split("On the instance:\n", 1)[1].split("\n\n", 1)[0]
        for words in (
            "aihub_toggle_web_search is inactive: its toggle does not show on any agent",
            "aihub_toggle_image_generation is global",
            "workspace model doctor-wrapper (Wrapped) wraps this agent",
            "users may not upload files by default",
        ):
            assert words in instance, instance
        assert instance.count("    fix: ") == 4
    finally:
        with connected.client() as http:
            http.post("/api/v1/users/default/permissions", json=permissions).raise_for_status()
            http.post("/api/v1/models/model/delete", json={"id": "doctor-wrapper"}).raise_for_status()
    code, out, err = provision(capsys, "sync", "--yes", *blueprints)
    assert code == 0, out + err
    code, report = doctor(capsys, blueprints)
    assert not [c for c in report["checks"] if c["status"] != "pass" and c["id"] not in ("backend", "embedding-bypass")]


def test_nested_groups_reach_the_members_below_and_give_them_the_permissions_on_the_way(
    connected, blueprints, capsys, tmp_path
) -> None:
    """0.12 nests groups: a member of a group is a member of every group above it, with the
    permissions of each. With uploads off by default, Legal above Analysts, and one member in
    Analysts: the research assistant (it reads images) is given to Legal, the document analyst to
    Analysts. Open WebUI's own answers for the member (the models it lists, /users/permissions)
    are the premise at each step; doctor and explain must agree with them:
    nobody grants uploads, then Analysts does (the member may, though Legal grants nothing),
    then Legal does."""
    import shutil

    from tests.support.file_chat import add_user

    root = tmp_path / "blueprints"
    shutil.copytree(blueprints[1], root)
    for name, group in (("document_analyst.yaml", "Analysts"), ("research_assistant.yaml", "Legal")):
        path = root / name
        path.write_text(path.read_text(encoding="utf-8").replace("access: public", f"access: {{groups: [{group}]}}"))
    variant = ["-p", str(root), blueprints[2], blueprints[3]]
    with connected.client() as http:
        permissions = http.get("/api/v1/users/default/permissions").raise_for_status().json()
        no_upload = {**permissions, "chat": {**permissions["chat"], "file_upload": False}}
        http.post("/api/v1/users/default/permissions", json=no_upload).raise_for_status()
        legal = http.post("/api/v1/groups/create", json={"name": "Legal", "description": "parent"}).raise_for_status()
        parent = legal.json()
        child = (
            http.post(
                "/api/v1/groups/create",
                json={"name": "Analysts", "description": "child", "parent_group_id": parent["id"]},
            )
            .raise_for_status()
            .json()
        )
    member = add_user(connected, connected.url, "Analyst")
    try:
        with connected.client() as http:
            http.post(
                f"/api/v1/groups/id/{child['id']}/users/add", json={"user_ids": [member["id"]]}
            ).raise_for_status()
        code, out, err = provision(capsys, "sync", "--yes", *variant)
        assert code == 0, out + err

        def member_may_upload() -> bool:
            with connected.client(token=member["token"]) as http:
                found = http.get("/api/v1/users/permissions").raise_for_status().json()
            return bool(found["chat"]["file_upload"])

        def explain(agent: str) -> str:
            code, out, err = provision(capsys, "explain", agent, "-p", str(root), "--url", connected.url)
            assert code == 0, err
            return out

        def upload_checks() -> dict[str, dict[str, Any]]:
            report = doctor(capsys, variant)[1]
            return {c.get("subject", ""): c for c in report["checks"] if c["id"] == "file-upload"}

        def grant(group: dict[str, Any]) -> None:
            with connected.client() as http:
                body = {**group, "permissions": {"chat": {"file_upload": True}}}
                http.post(f"/api/v1/groups/id/{group['id']}/update", json=body).raise_for_status()

        with connected.client(token=member["token"]) as http:
            listed = {m["id"] for m in http.get("/api/models").raise_for_status().json()["data"]}
        assert "aihub_agent_pipe.research-assistant.default" in listed  # given to Legal, reached through Analysts
        report = doctor(capsys, variant)[1]
        access = [c for c in report["checks"] if c["id"] == "access"]
        assert access and all(c["status"] == "pass" for c in access), access
        assert "has no members" not in explain("research-assistant")
        # nobody grants uploads
        assert member_may_upload() is False
        checks = upload_checks()
        assert checks["document-analyst.default"]["status"] == "fail", checks
        assert checks["document-analyst.default"]["message"].endswith("none of its groups (Analysts) may upload files")
        assert checks["research-assistant.default"]["status"] == "fail", checks
        assert "group 'Analysts' lacks the chat.file_upload permission" in explain("document-analyst")
        # Analysts grants them: its member may upload, though Legal, the research assistant's group, grants nothing
        grant(child)
        assert member_may_upload() is True
        checks = upload_checks()
        assert "document-analyst.default" not in checks, checks
        assert checks["research-assistant.default"]["status"] == "warn", checks
        assert checks["research-assistant.default"]["message"].endswith(
            "of its groups (Legal) only the members of Analysts, below them, may upload files"
        )
        assert "only the members of 'Analysts', below it, see an attach button" in explain("research-assistant")
        # Legal grants them too: nothing is left to say
        grant(parent)
        checks = upload_checks()
        assert set(checks) == {""} and checks[""]["status"] == "pass", checks
        for agent in ("document-analyst", "research-assistant"):
            assert "chat.file_upload" not in explain(agent)
    finally:
        with connected.client() as http:
            http.post("/api/v1/users/default/permissions", json=permissions).raise_for_status()
            for group in (child, parent):
                http.delete(f"/api/v1/groups/id/{group['id']}/delete").raise_for_status()
            http.delete(f"/api/v1/users/{member['id']}").raise_for_status()
    code, out, err = provision(capsys, "sync", "--yes", *blueprints)
    assert code == 0, out + err


def test_a_signed_identity_no_replica_can_sign_is_found_by_the_probe(connected, blueprints, capsys) -> None:
    with connected.client() as http:
        valves = http.get(f"/api/v1/functions/id/{PIPE}/valves").raise_for_status().json()
        assert valves.get("IDENTITY_KEYS")
        http.post(f"/api/v1/functions/id/{PIPE}/valves/update", json={**valves, "IDENTITY_KEYS": ""}).raise_for_status()
    code, report = doctor(capsys, blueprints)
    identity = by_subject(report, "identity")
    assert code == 1 and set(identity) == {"support-desk.tier1", "support-desk.tier2", "support-desk.billing"}
    assert all(c["status"] == "fail" and "can sign none" in c["message"] for c in identity.values())
    code, out, err = provision(capsys, "sync", "--yes", *blueprints)  # a sync gives the pipe a key again
    assert code == 0, out + err
    identity = by_subject(doctor(capsys, blueprints)[1], "identity")
    assert {c["status"] for c in identity.values()} == {"pass"}


def test_a_deactivated_pipe_fails_first_and_diff_and_sync_warn_once(connected, blueprints, capsys) -> None:
    with connected.client() as http:
        assert http.post(f"/api/v1/functions/id/{PIPE}/toggle").raise_for_status().json()["is_active"] is False
    code, out, _ = provision(capsys, "doctor", *blueprints)
    assert code == 1 and out.startswith("FAIL  pipe-active")
    assert "the agents' backends were not probed: the pipe is not active" in out
    code, _, err = provision(capsys, "diff", *blueprints)
    assert code == 0 and err.count(f"Warning: the agent pipe {PIPE} is inactive") == 1
    code, out, err = provision(capsys, "sync", "--yes", *blueprints)
    assert code == 0 and err.count(f"Warning: the agent pipe {PIPE} is inactive") == 1, out + err
    assert by_subject(doctor(capsys, blueprints)[1], "pipe-active")[PIPE]["status"] == "pass"


def test_functions_switched_off_are_found_though_open_webui_reports_them_to_no_api_key(
    connected, blueprints, capsys
) -> None:
    """Last: it restarts the server with ENABLE_FUNCTIONS=false."""
    connected.extra_env["ENABLE_FUNCTIONS"] = "false"
    connected.stop()
    connected.start()
    code, report = doctor(capsys, blueprints)
    assert code == 1 and report["checks"][0]["id"] == "functions-enabled" and report["checks"][0]["status"] == "fail"
    assert report["checks"][0]["fix"].startswith("set ENABLE_FUNCTIONS=true")
    code, _, err = provision(capsys, "diff", *blueprints)
    assert err.count("Warning: functions are switched off on this Open WebUI") == 1
    # sync warns as well and goes ahead: its first write meets the functions it could not list
    code, out, err = provision(capsys, "sync", "--yes", *blueprints)
    assert err.count("Warning: functions are switched off on this Open WebUI") == 1
    assert code == 1 and "POST /api/v1/functions/create" in err, out + err
