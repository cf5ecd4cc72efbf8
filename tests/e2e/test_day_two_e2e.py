"""Day two on a real Open WebUI 0.12.4: what sync leaves in Open WebUI's own version history,
groups that do not exist yet, and edits made in Open WebUI traced to the admin who made them.
"""

from __future__ import annotations

import json
import uuid

import pytest

from provisioner import __version__

try:  # tests/e2e may become a package; work either way (as conftest.py does)
    from .chat_support import get, provision
except ImportError:
    from chat_support import get, provision

POLICY = "aihub_agent_pipe.policy-faq.default"
GITHUB_ENV = {
    "GITHUB_SHA": "c0ffee0123456789c0ffee0123456789c0ffee01",
    "GITHUB_SERVER_URL": "https://github.example.com",
    "GITHUB_REPOSITORY": "acme/agents",
    "GITHUB_RUN_ID": "9001",
}


def test_sync_writes_its_commit_message_into_open_webui_history(owui, bundle, capsys, monkeypatch) -> None:
    for key, value in GITHUB_ENV.items():
        monkeypatch.setenv(key, value)
    code, out, err = provision(capsys, "sync", *bundle, "--yes")
    assert code == 0, out + err
    [entry] = get(owui, "/api/v1/models/model/history", id=POLICY)
    message = entry["commit_message"]
    assert message.startswith(f"provision {__version__} sync of ")
    assert message.split(" sync of ")[1].split(";")[0].endswith("policy_faq.yaml")
    assert f"commit {GITHUB_ENV['GITHUB_SHA']}" in message
    assert "run https://github.example.com/acme/agents/actions/runs/9001" in message
    [fn_entry] = get(owui, "/api/v1/functions/id/aihub_feature_filter/history")
    assert fn_entry["commit_message"].startswith(
        f"provision {__version__} sync of the provision bundle's aihub_feature_filter.py; commit c0ffee"
    )

    # A changed row gets a new version with the --message given.
    with owui.client() as http:
        row = http.get("/api/v1/models/model", params={"id": POLICY}).raise_for_status().json()
        form = {k: row[k] for k in ("id", "name", "meta", "params")}
        form["meta"]["description"] = "edited by hand"
        http.post("/api/v1/models/model/update", json=form).raise_for_status()
    code, out, err = provision(capsys, "sync", *bundle, "--yes", "--message", "restore the FAQ description")
    assert code == 0, out + err
    history = get(owui, "/api/v1/models/model/history", id=POLICY)
    assert [h["commit_message"] for h in history][:1] == ["restore the FAQ description"]
    assert len(history) == 3


def _targets(tmp_path, url: str, mode: str):
    path = tmp_path / "targets.yaml"
    path.write_text(
        f"targets:\n  prod:\n    url: {url}\n    token_env: OPENWEBUI_TOKEN\n    missing_groups: {mode}\n",
        encoding="utf-8",
    )
    return ["--target", "prod", "--targets-file", str(path)]


def _group_blueprints(tmp_path, groups: list[str]) -> list[str]:
    from tests.builders import blueprint, write_blueprint_dir, write_function_dir

    agents = [{"id": "counsel", "name": "Counsel", "access": {"groups": groups} if groups else "private"}]
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("legal", agents=agents)])
    functions = tmp_path / "fn"
    if not functions.exists():
        write_function_dir(functions, root)
    return ["-p", str(root), "--bundle", str(functions)]


COUNSEL = "aihub_agent_pipe.legal.counsel"


def _grant_ids(owui) -> list[str]:
    return [g["principal_id"] for g in get(owui, "/api/v1/models/model", id=COUNSEL)["access_grants"]]


def test_missing_group_skip_leaves_the_grant_out_and_says_so(owui, capsys, tmp_path) -> None:
    with owui.client() as http:
        legal = http.post("/api/v1/groups/create", json={"name": "Legal", "description": ""}).raise_for_status().json()
    args = _group_blueprints(tmp_path, ["Legal", "Compliance"])
    code, out, err = provision(capsys, "diff", *args, *_targets(tmp_path, owui.url, "fail"))
    assert code == 1 and "no group named 'Compliance'" in err and "missing_groups: skip" in err

    target = _targets(tmp_path, owui.url, "skip")
    code, out, err = provision(capsys, "sync", *args, *target, "--yes")
    assert code == 0, out + err
    assert "group 'Compliance' does not exist in Open WebUI: its grant is left out (missing_groups: skip)" in err
    assert _grant_ids(owui) == [legal["id"]]
    assert [g["name"] for g in get(owui, "/api/v1/groups/")] == ["Legal"]  # nothing created
    code, out, err = provision(capsys, "diff", *args, *target, "-o", "json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["changes"] == [] and plan["groups"] == [{"name": "Compliance", "action": "skip"}]
    assert "missing_groups: skip" in err  # said again on a clean plan


def test_missing_group_create_makes_an_own_empty_group_and_prune_spares_one_with_members(owui, capsys, tmp_path) -> None:
    target = _targets(tmp_path, owui.url, "create")
    args = _group_blueprints(tmp_path, ["Compliance", "Ops"])
    code, out, err = provision(capsys, "diff", *args, *target, "-o", "json")
    assert code == 0, err
    [row] = [c for c in json.loads(out)["changes"] if c["id"] == COUNSEL]
    [grants] = [f["after"] for f in row["fields"] if f["path"] == "access_grants"]
    assert sorted(g["principal_id"] for g in grants) == ["<new group Compliance>", "<new group Ops>"]
    assert "sync creates it, empty (missing_groups: create)" in err
    assert get(owui, "/api/v1/groups/") == []  # diff writes nothing

    code, out, err = provision(capsys, "sync", *args, *target, "--yes")
    assert code == 0, out + err
    groups = {g["name"]: g for g in get(owui, "/api/v1/groups/")}
    assert set(groups) == {"Compliance", "Ops"}
    assert groups["Compliance"]["data"]["aihub"] == {"managed_by": "aihub-provision"}
    assert groups["Compliance"]["member_count"] == 0
    assert sorted(_grant_ids(owui)) == sorted(g["id"] for g in groups.values())
    code, out, err = provision(capsys, "diff", *args, *target, "--detailed-exitcode")
    assert code == 0, out + err  # idempotent: the groups exist now

    # Ops gets a member; then no blueprint names either group any more.
    with owui.client() as http:
        user = http.post("/api/v1/auths/add", json={
            "name": "Olga Ops", "email": f"olga-{uuid.uuid4().hex[:8]}@example.com", "password": "Pw-0lga-ops!", "role": "user",
        }).raise_for_status().json()
        http.post(f"/api/v1/groups/id/{groups['Ops']['id']}/users/add", json={"user_ids": [user["id"]]}).raise_for_status()
    args = _group_blueprints(tmp_path, [])
    code, out, err = provision(capsys, "sync", *args, *target, "--yes", "--prune")
    assert code == 0, out + err
    assert "group 'Compliance' was created by provision, is empty and no blueprint names it: --prune deletes it" in err
    assert "group 'Ops' was created by provision and no blueprint names it, but it has members: kept" in err
    assert [g["name"] for g in get(owui, "/api/v1/groups/")] == ["Ops"]
