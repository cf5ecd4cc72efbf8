"""`provision doctor` against the in-memory Open WebUI: one line per check, failures first, each
with its fix; exit 0/1/2; the JSON and Markdown forms; and the "every agent fails" warnings of
diff and sync (issue 31). The real server's side is tests/e2e/test_doctor_e2e.py."""

from __future__ import annotations

import functools
import json

import httpx

from tests.support.builders import REPO
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import run_cli

TOKEN = "sk-doctor-test-token-0123456789"
SAMPLES = ["-p", str(REPO / "blueprints"), "--bundle", str(REPO / "owui_functions")]
PIPE = "aihub_agent_pipe"

run = functools.partial(run_cli, secrets=(TOKEN,))


def doctor(capsys, *args: str) -> tuple[int, dict]:
    code, out, _ = run(capsys, "doctor", *SAMPLES, "-o", "json", *args)
    return code, json.loads(out)


def statuses(report: dict) -> dict[tuple[str, str], str]:
    return {(c["id"], c.get("subject", "")): c["status"] for c in report["checks"]}


def test_a_synced_instance_passes_and_warns_only_about_embedding(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    code, report = doctor(capsys)
    assert code == 0, report
    assert report["format_version"] == "1" and report["summary"]["fail"] == 0
    assert [c["id"] for c in report["checks"] if c["status"] == "warn"] == ["embedding-bypass"]
    assert {
        "release",
        "functions-enabled",
        "pipe-active",
        "bundle-functions",
        "pipe-valves",
        "agent-rows",
        "file-upload",
    } <= {c["id"] for c in report["checks"] if c["status"] == "pass"}
    assert doctor(capsys, "--strict")[0] == 2
    fake.retrieval["BYPASS_EMBEDDING_AND_RETRIEVAL"] = True
    assert doctor(capsys, "--strict")[0] == 0


def test_functions_switched_off_fails_first_and_diff_warns_once(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    fake.functions_enabled = False
    code, out, _ = run(capsys, "doctor", *SAMPLES)
    assert code == 1
    first = out.splitlines()[0]
    assert first.startswith("FAIL  functions-enabled") and "every chat with an agent fails" in first
    assert "fix: set ENABLE_FUNCTIONS=true" in out.splitlines()[1]
    code, _, err = run(capsys, "diff", *SAMPLES)
    assert code == 0 and err.count("functions are switched off on this Open WebUI") == 1


def test_an_inactive_pipe_fails_and_diff_and_sync_warn_but_never_block(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    fake.functions[PIPE]["is_active"] = False
    code, report = doctor(capsys)
    assert code == 1 and report["checks"][0] == {
        "id": "pipe-active",
        "status": "fail",
        "subject": PIPE,
        "message": f"the agent pipe {PIPE} is inactive: every agent's chat fails",
        "fix": "run `provision sync` (it switches the pipe on), or switch it on in Admin Panel > Functions",
    }
    code, _, err = run(capsys, "diff", *SAMPLES)
    assert code == 0 and err.count(f"Warning: the agent pipe {PIPE} is inactive") == 1
    code, _, err = run(capsys, "sync", *SAMPLES, "--yes")
    assert code == 0 and err.count(f"Warning: the agent pipe {PIPE} is inactive") == 1
    assert fake.functions[PIPE]["is_active"] is True and doctor(capsys)[0] == 0


def test_the_pipes_valves_are_held_to_the_blueprints(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    agents = json.loads(fake.functions[PIPE]["valves"]["AGENTS"])
    agents = [a for a in agents if a["id"] != "policy-faq.default"]
    agents[0]["url"] = "http://127.0.0.1:1/elsewhere"
    fake.functions[PIPE]["valves"]["AGENTS"] = json.dumps(agents)
    code, report = doctor(capsys)
    found = statuses(report)
    assert code == 1
    assert found[("pipe-valves", "policy-faq.default")] == "fail"
    assert found[("pipe-valves", agents[0]["id"])] == "fail"
    message = next(c["message"] for c in report["checks"] if c.get("subject") == agents[0]["id"])
    assert message.endswith("differs from the blueprints (url)")


def test_bundle_functions_missing_inactive_or_global(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    fake.functions["aihub_feature_filter"]["is_active"] = False
    fake.functions["aihub_toggle_web_search"]["is_global"] = True
    del fake.functions["aihub_toggle_user_files"]
    code, report = doctor(capsys)
    found = statuses(report)
    assert code == 1
    assert found[("bundle-functions", "aihub_feature_filter")] == "fail"
    assert found[("bundle-functions", "aihub_toggle_user_files")] == "fail"
    assert found[("bundle-functions", "aihub_toggle_web_search")] == "warn"
    assert [c["status"] for c in report["checks"]] == sorted(
        (c["status"] for c in report["checks"]), key=["fail", "warn", "pass", "skip"].index
    )


def test_document_agents_need_users_who_may_upload(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    fake.default_permissions = {"chat": {"file_upload": False}}
    code, report = doctor(capsys)
    assert code == 1
    uploads = [c for c in report["checks"] if c["id"] == "file-upload"]
    # the document agent and the one that reads images, both public
    assert {c["subject"] for c in uploads} == {"document-analyst.default", "research-assistant.default"}
    assert all(c["status"] == "fail" and "Default permissions: allow File Upload" in c["fix"] for c in uploads)


def test_rows_and_wrappers(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    del fake.models["aihub_agent_pipe.policy-faq.default"]
    fake.models["mine"] = {
        "id": "mine",
        "name": "Mine",
        "base_model_id": "aihub_agent_pipe.support-desk.tier1",
        "meta": {},
    }
    found = statuses(doctor(capsys)[1])
    assert found[("agent-rows", "policy-faq.default")] == "fail"
    assert found[("wrappers", "mine")] == "warn"


def test_without_blueprints_the_instance_alone_is_checked(capsys, fake: FakeOpenWebUI, tmp_path, monkeypatch) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    monkeypatch.chdir(tmp_path)  # no ./blueprints
    code, out, _ = run(capsys, "doctor", "-o", "json")
    report = json.loads(out)
    assert code == 0
    assert statuses(report)[("pipe-valves", "")] == "skip"
    assert statuses(report)[("agent-rows", "")] == "pass"


def test_markdown_is_one_table_with_every_value_in_a_code_span(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    fake.models["x"] = {
        "id": "<img src=x>|`",
        "name": "n",
        "base_model_id": "aihub_agent_pipe.support-desk.tier1",
        "meta": {},
    }
    code, out, _ = run(capsys, "doctor", *SAMPLES, "-o", "markdown")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "### provision doctor" and lines[2].startswith("**Doctor: 0 failed, 2 warnings,")
    assert lines[4] == "| | check | finding | fix |"
    wrapper = next(line for line in lines if "wrappers" in line)
    # the id holds a backtick: the finding's span is fenced by two, and its | is escaped for the table
    assert "| ``workspace model <img src=x>\\|` wraps" in wrapper and wrapper.count("``") == 2


def test_an_unreachable_instance_is_one_failed_check(capsys, fake: FakeOpenWebUI) -> None:
    fake.faults.append(lambda method, path, body: (_ for _ in ()).throw(httpx.ConnectError("refused")))
    code, out, _ = run(capsys, "doctor", *SAMPLES, "--timeout", "0.1")
    assert code == 1 and out.startswith("FAIL  connection  cannot read Open WebUI at http://127.0.0.1:9")


def test_explain_offline_and_with_the_instance(capsys, fake: FakeOpenWebUI, monkeypatch) -> None:
    monkeypatch.delenv("OPENWEBUI_URL")
    code, out, _ = run(capsys, "explain", "document-analyst", "-p", str(REPO / "blueprints"))
    assert code == 0 and fake.calls == []  # offline: nothing read
    assert "    served by capability read_user_files (" in out and "      called by step read (" in out
    assert "On the instance" not in out
    assert run(capsys, "sync", *SAMPLES, "--url", fake.base_url)[0] == 0
    fake.functions["aihub_toggle_user_files"]["is_active"] = False
    code, out, _ = run(
        capsys, "explain", "document-analyst", "-p", str(REPO / "blueprints"), "--url", fake.base_url, "-o", "json"
    )
    notes = json.loads(out)["instance"]
    assert code == 0 and notes == [
        {
            "about": "aihub_toggle_user_files",
            "note": "aihub_toggle_user_files is inactive: its toggle does not show on any agent",
            "fix": "run `provision sync`, or switch it on in Admin Panel > Functions",
        }
    ]
    code, out, _ = run(capsys, "explain", "document-analyst", "-p", str(REPO / "blueprints"), "--url", fake.base_url)
    lines = out.splitlines()
    assert lines[3:6] == [
        "On the instance:",
        "  - aihub_toggle_user_files is inactive: its toggle does not show on any agent",
        "    fix: run `provision sync`, or switch it on in Admin Panel > Functions",
    ]
    assert lines.index("On the instance:") < lines.index("Toggles it shows (1):")


def test_each_backend_as_the_pipe_reached_it_with_the_fix_for_its_reason(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    fake.probe_answers["aihub_agent_pipe.policy-faq.default"] = {
        "reached": False,
        "host": "127.0.0.1:8702",
        "reason": "connection refused: nothing listens there",
    }
    fake.probe_answers["aihub_agent_pipe.support-desk.tier1"] = {
        "reached": False,
        "host": "agents.internal",
        "status": 401,
        "reason": "answered HTTP 401: the backend refused the key (bad key)",
    }
    fake.probe_answers["aihub_agent_pipe.support-desk.tier2"] = {
        "reached": False,
        "host": "agents.internal",
        "status": 404,
        "reason": "answered HTTP 404: Not Found",
    }
    fake.probe_answers["aihub_agent_pipe.support-desk.billing"] = {
        "reached": False,
        "host": "agents.internal",
        "status": 502,
        "reason": "answered HTTP 502: upstream: connection refused",  # the backend's own words
    }
    fake.probe_answers["aihub_agent_pipe.research-assistant.default"] = {
        "reached": True,
        "host": "agents.internal",
        "protocol": "agui",
        "agui_version": "1.0",
        "ms": 12,
    }
    code, report = doctor(capsys)
    backends = {c["subject"]: c for c in report["checks"] if c["id"] == "backend"}
    assert code == 1 and len(backends) == 6
    assert backends["policy-faq.default"]["message"] == (
        "policy-faq.default: not reached from Open WebUI at 127.0.0.1:8702: connection refused: nothing listens there"
    )
    assert backends["policy-faq.default"]["fix"].startswith("start the agent's backend")
    assert backends["support-desk.tier1"]["fix"].startswith("the backend refused the key")
    assert backends["support-desk.tier2"]["fix"].startswith("nothing is served at backend.url's path")
    assert backends["support-desk.billing"]["fix"].startswith("the backend answered with an error")
    assert backends["research-assistant.default"]["message"].endswith("at agents.internal (AG-UI 1.0, 12 ms)")
    assert backends["document-analyst.default"]["status"] == "pass"
    # a chat completion without a chat (nothing stored), carrying nothing of any user
    assert len(fake.probe_bodies) == 6 and all(
        body
        == {
            "model": body["model"],
            "messages": [{"role": "user", "content": "aihub probe"}],
            "stream": False,
            "aihub_probe": {"version": 1},
        }
        for body in fake.probe_bodies
    )


def test_every_replica_is_probed_and_named(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    code, report = doctor(capsys, "--replica", "http://127.0.0.1:9", "--replica", "http://127.0.0.1:10")
    backends = [c for c in report["checks"] if c["id"] == "backend"]
    assert code == 0 and len(backends) == 12
    assert sum("(through http://127.0.0.1:10, fake:1)" in c["message"] for c in backends) == 6


def test_a_pipe_that_predates_probes_is_not_asked(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    fake.functions[PIPE]["content"] = "class Pipe:\n    pass\n"
    code, report = doctor(capsys)
    assert ("POST", "/api/chat/completions") not in fake.calls
    [skipped] = [c for c in report["checks"] if c["id"] == "backend"]
    assert skipped["status"] == "skip" and skipped["fix"] == "run `provision sync` to install this provision's pipe"


def test_explain_says_which_native_features_open_webui_has_switched_off(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    code, out, _ = run(
        capsys, "explain", "research-assistant", "-p", str(REPO / "blueprints"), "--url", fake.base_url, "-o", "json"
    )
    explained = json.loads(out)
    notes = {n["about"]: n["note"] for n in explained["instance"]}
    native = {t["feature"] for t in explained["toggles"] if t["native"]}
    assert code == 0 and native == {"web_search", "image_generation", "code_interpreter"}
    assert notes["web_search"].startswith("Open WebUI's own Web Search is switched off on this instance")
    assert notes["image_generation"].startswith("Open WebUI's own Image is switched off")
    assert "code_interpreter" not in notes  # its switch could not be read: nothing is claimed


def test_a_probe_open_webui_refuses_says_why_and_what_to_do(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    refused = httpx.Response(403, json={"detail": "You do not have permission to access this resource."})
    fake.faults.append(lambda method, path, body: refused if path == "/api/chat/completions" else None)
    code, report = doctor(capsys)
    backends = [c for c in report["checks"] if c["id"] == "backend"]
    assert code == 1 and len(backends) == 6 and all(c["status"] == "fail" for c in backends)
    assert "the probe got no answer: Open WebUI answered 403 to POST /api/chat/completions" in backends[0]["message"]
    assert "BYPASS_ADMIN_ACCESS_CONTROL=false" in backends[0]["fix"]


def test_a_first_sync_onto_switched_off_functions_says_what_may_be_wrong(capsys, fake: FakeOpenWebUI) -> None:
    """On an instance never synced, functions off look like an empty instance until the first
    create fails, with Open WebUI's "[ERROR: Error creating function]" (0.12.4)."""
    failed = httpx.Response(400, json={"detail": "[ERROR: Error creating function]"})
    fake.faults.append(lambda method, path, body: failed if path == "/api/v1/functions/create" else None)
    code, _, err = run(capsys, "sync", *SAMPLES, "--yes")
    assert code == 1 and "with functions switched off (ENABLE_FUNCTIONS=false or ENABLE_PLUGINS=false)" in err


def test_a_targets_replicas_are_each_probed(capsys, fake: FakeOpenWebUI, tmp_path, monkeypatch) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    targets = tmp_path / "targets.yaml"
    targets.write_text(
        "targets:\n  prod:\n    url: http://127.0.0.1:9\n    token_env: DOCTOR_PROD_TOKEN\n"
        "    replicas: [http://127.0.0.1:9, http://127.0.0.1:10]\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("DOCTOR_PROD_TOKEN", TOKEN)
    code, report = doctor(capsys, "--target", "prod", "--targets-file", str(targets))
    backends = [c for c in report["checks"] if c["id"] == "backend"]
    assert code == 0 and report["target"] == "prod" and len(backends) == 12
    assert len(fake.probe_bodies) == 12


def test_a_signed_identity_is_checked_on_each_replica_from_its_probe(
    capsys, fake: FakeOpenWebUI, tmp_path, monkeypatch
) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    monkeypatch.chdir(tmp_path)  # no blueprints: the pipe's own entries say which agent asks for what
    agents = json.loads(fake.functions[PIPE]["valves"]["AGENTS"])
    for entry in agents:
        entry["identity"] = "signed" if entry["id"] == "support-desk.tier1" else entry["identity"]
    fake.functions[PIPE]["valves"]["AGENTS"] = json.dumps(agents)
    fake.probe_answers["aihub_agent_pipe.support-desk.tier1"] = {
        "reached": True,
        "identity_key": False,
        "user_jwt": False,
    }
    found = statuses(json.loads(run(capsys, "doctor", "-o", "json")[1]))
    assert found[("identity", "support-desk.tier1")] == "fail"
    fake.probe_answers["aihub_agent_pipe.support-desk.tier1"] = {
        "reached": True,
        "identity_key": False,
        "user_jwt": True,
    }
    report = json.loads(run(capsys, "doctor", "-o", "json")[1])
    [line] = [c for c in report["checks"] if c["id"] == "identity"]
    assert line["status"] == "pass" and "(X-OpenWebUI-User-Jwt)" in line["message"]


def test_one_fix_for_a_run_of_findings_it_fixes(capsys, fake: FakeOpenWebUI) -> None:
    """Every agent on one stopped backend: a line each, the fix once, under the last of them."""
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    for model in ("policy-faq.default", "support-desk.tier1", "support-desk.tier2"):
        fake.probe_answers[f"aihub_agent_pipe.{model}"] = {
            "reached": False,
            "host": "127.0.0.1:8700",
            "reason": "connection refused: nothing listens there",
        }
    fake.probe_answers["aihub_agent_pipe.support-desk.billing"] = {
        "reached": False,
        "host": "127.0.0.1:8700",
        "reason": "the host name does not resolve",
    }
    code, out, _ = run(capsys, "doctor", *SAMPLES)
    lines = out.splitlines()
    assert code == 1
    # the three refused ones together, where the first of them was, and the fix once under them
    assert [line.split()[0] for line in lines[:6]] == ["FAIL", "FAIL", "FAIL", "fix:", "FAIL", "fix:"]
    assert [("policy-faq.default" in lines[0]), ("tier1" in lines[1]), ("tier2" in lines[2])] == [True] * 3
    assert lines[3].strip().startswith("fix: start the agent's backend") and out.count("fix: start the agent's") == 1
    assert "support-desk.billing" in lines[4] and lines[5].strip().startswith("fix: the host name does not resolve")
    assert lines[-1].startswith("Doctor: 4 failed, ")
    code, report = doctor(capsys)  # the JSON form in the same order
    assert [c.get("subject") for c in report["checks"][:4]] == [
        "policy-faq.default",
        "support-desk.tier1",
        "support-desk.tier2",
        "support-desk.billing",
    ]


def test_a_group_an_agent_is_for_that_is_gone_or_empty(capsys, fake: FakeOpenWebUI, tmp_path) -> None:
    """After a sync an admin deletes or empties a group an agent is for: its members lose the agent."""
    import shutil

    root = tmp_path / "blueprints"
    shutil.copytree(REPO / "blueprints", root)
    desk = root / "support_desk.yaml"
    text = desk.read_text(encoding="utf-8")
    desk.write_text(text.replace("access: private", "access: {groups: [Ops]}", 1), encoding="utf-8")
    args = ["-p", str(root), "--bundle", str(REPO / "owui_functions")]
    fake.groups.append({"id": "g1", "name": "Ops", "member_count": 2, "permissions": None})
    assert run(capsys, "sync", *args)[0] == 0
    code, out, _ = run(capsys, "doctor", *args, "-o", "json")
    assert code == 0 and statuses(json.loads(out))[("access", "")] == "pass"
    fake.groups[0]["member_count"] = 0
    found = {
        (c["id"], c.get("subject", "")): c for c in json.loads(run(capsys, "doctor", *args, "-o", "json")[1])["checks"]
    }
    assert found[("access", "support-desk.tier2")]["status"] == "warn"
    assert (
        found[("access", "support-desk.tier2")]["message"]
        == "support-desk.tier2 is for group(s) Ops, which have no members"
    )
    fake.groups.clear()
    code, out, _ = run(capsys, "doctor", *args, "-o", "json")
    found = {(c["id"], c.get("subject", "")): c for c in json.loads(out)["checks"]}
    assert code == 1 and found[("access", "support-desk.tier2")]["status"] == "fail"
    assert found[("access", "support-desk.tier2")]["fix"].startswith("create the group(s)")


def test_an_oauth_header_a_replicas_forwarding_settings_name_fails(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    reached = {"reached": True, "host": "agents.internal", "protocol": "agui", "ms": 3}
    fake.probe_answers["aihub_agent_pipe.policy-faq.default"] = {**reached, "oauth_header_taken": True}
    fake.probe_answers["aihub_agent_pipe.support-desk.tier1"] = {**reached, "oauth_header_taken": False}
    code, report = doctor(capsys)
    found = {(c["id"], c.get("subject", "")): c for c in report["checks"] if c["id"] == "oauth-header"}
    assert code == 1 and list(found) == [("oauth-header", "policy-faq.default")]
    assert found[("oauth-header", "policy-faq.default")]["fix"].startswith(
        "give the agent's backend.oauth_token_header"
    )


def test_a_refused_key_names_the_variable_it_came_from(capsys, fake: FakeOpenWebUI, tmp_path, monkeypatch) -> None:
    """A 401 from the backend: the shared fix says 'check the variable', the finding says which one
    (or that the agent sends none), so a newcomer with several keys knows what to look at."""
    import shutil

    root = tmp_path / "blueprints"
    shutil.copytree(REPO / "blueprints", root)
    faq = root / "policy_faq.yaml"
    text = faq.read_text(encoding="utf-8")
    faq.write_text(
        text.replace("  transport: agui\n", "  transport: agui\n  api_key_env: FAQ_AGENT_KEY\n", 1), encoding="utf-8"
    )
    monkeypatch.setenv("FAQ_AGENT_KEY", "a-key-of-some-length-123")
    args = ["-p", str(root), "--bundle", str(REPO / "owui_functions")]
    assert run(capsys, "sync", *args)[0] == 0
    refused = {
        "reached": False,
        "host": "127.0.0.1:8700",
        "status": 401,
        "reason": "answered HTTP 401: the backend refused the key",
    }
    fake.probe_answers["aihub_agent_pipe.policy-faq.default"] = dict(refused)
    fake.probe_answers["aihub_agent_pipe.support-desk.tier1"] = dict(refused)
    code, out, _ = run(capsys, "doctor", *args, "-o", "json")
    backends = {c["subject"]: c for c in json.loads(out)["checks"] if c["id"] == "backend"}
    assert code == 1
    assert backends["policy-faq.default"]["message"] == (
        "policy-faq.default: not reached from Open WebUI at 127.0.0.1:8700: answered HTTP 401: the backend refused "
        "the key; its key is $FAQ_AGENT_KEY where provision sync ran (api_key_env)"
    )
    assert backends["support-desk.tier1"]["message"].endswith(
        "; the agent sends no key (its blueprint's backend has no api_key_env)"
    )


def test_a_group_document_agent_needs_a_group_that_may_upload_here_or_above(
    capsys, fake: FakeOpenWebUI, tmp_path
) -> None:
    """Default upload off: the agent's group decides. Where groups nest (0.12), Open WebUI gives a
    member every ancestor's permissions, so a grant on the parent group counts."""
    import shutil

    shutil.copytree(REPO / "blueprints", tmp_path, dirs_exist_ok=True)
    path = tmp_path / "document_analyst.yaml"
    path.write_text(path.read_text().replace("access: public", "access: {groups: [Analysts]}"))
    where = ["-p", str(tmp_path), "--bundle", str(REPO / "owui_functions")]
    fake.groups += [
        {"id": "g-legal", "name": "Legal", "member_count": 3, "permissions": {}},
        {"id": "g-an", "name": "Analysts", "member_count": 2, "parent_group_id": "g-legal", "permissions": {}},
    ]
    assert run(capsys, "sync", *where)[0] == 0
    fake.default_permissions = {"chat": {"file_upload": False}}

    def upload_checks() -> list[dict]:
        report = json.loads(run(capsys, "doctor", *where, "-o", "json")[1])
        return [
            c for c in report["checks"] if c["id"] == "file-upload" and c.get("subject") == "document-analyst.default"
        ]

    mine = upload_checks()
    assert [c["status"] for c in mine] == ["fail"]
    assert mine[0]["message"].endswith("but none of its groups (Analysts) may upload files")
    assert "permissions of its groups" in mine[0]["fix"]
    fake.groups[0]["permissions"] = {"chat": {"file_upload": True}}  # the parent group grants it
    assert upload_checks() == []
