"""Day two on a real Open WebUI 0.12.4: what sync leaves in Open WebUI's own version history,
groups that do not exist yet, and edits made in Open WebUI traced to the admin who made them.
"""

from __future__ import annotations

import json
import uuid

from provisioner import __version__
from tests.support.chat_support import get, provision

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
    head = get(owui, "/api/v1/models/model", id=POLICY)["version_id"]  # the listing orders by second only
    assert {h["id"]: h["commit_message"] for h in history}[head] == "restore the FAQ description"
    assert len(history) == 3


def _targets(tmp_path, url: str, mode: str):
    path = tmp_path / "targets.yaml"
    path.write_text(
        f"targets:\n  prod:\n    url: {url}\n    token_env: OPENWEBUI_TOKEN\n    missing_groups: {mode}\n",
        encoding="utf-8",
    )
    return ["--target", "prod", "--targets-file", str(path)]


def _group_blueprints(tmp_path, groups: list[str], **backend: str) -> list[str]:
    from tests.support.builders import blueprint, write_blueprint_dir, write_function_dir

    agents = [{"id": "counsel", "name": "Counsel", "access": {"groups": groups} if groups else "private"}]
    legal = blueprint("legal", agents=agents)
    legal["backend"].update(backend)
    root = write_blueprint_dir(tmp_path / "bp", [legal])
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


def test_missing_group_create_makes_an_own_empty_group_and_prune_spares_one_with_members(
    owui, capsys, tmp_path
) -> None:
    target = _targets(tmp_path, owui.url, "create")
    args = _group_blueprints(tmp_path, ["Compliance", "Ops"])
    code, out, err = provision(capsys, "diff", *args, *target, "-o", "json")
    assert code == 0, err
    [row] = [c for c in json.loads(out)["changes"] if c["id"] == COUNSEL]
    [grants] = [f["after"] for f in row["fields"] if f["path"] == "access_grants"]
    assert sorted(g["principal_id"] for g in grants) == ["<new group Compliance>", "<new group Ops>"]
    assert "sync creates it, empty (missing_groups: create)" in err
    assert get(owui, "/api/v1/groups/") == []  # diff writes nothing

    # A sync whose plan fails after the groups were looked up (here: the backend key's variable
    # is unset) creates no group either: groups are created only when the rows are written.
    code, out, err = provision(
        capsys,
        "sync",
        *_group_blueprints(tmp_path / "unset-key", ["Compliance", "Ops"], api_key_env="LEGAL_KEY_UNSET"),
        *target,
        "--yes",
    )
    assert code != 0 and "LEGAL_KEY_UNSET" in out + err, out + err
    assert get(owui, "/api/v1/groups/") == []

    code, out, err = provision(capsys, "sync", *args, *target, "--yes")
    assert code == 0, out + err
    assert "0 to destroy; groups: 2 to create." in out  # the rows, then the groups
    assert "; groups: 2 created." in out
    groups = {g["name"]: g for g in get(owui, "/api/v1/groups/")}
    assert set(groups) == {"Compliance", "Ops"}
    assert groups["Compliance"]["data"]["aihub"] == {"managed_by": "aihub-provision"}
    assert groups["Compliance"]["member_count"] == 0
    assert sorted(_grant_ids(owui)) == sorted(g["id"] for g in groups.values())
    code, out, err = provision(capsys, "diff", *args, *target, "--detailed-exitcode")
    assert code == 0, out + err  # idempotent: the groups exist now

    # Ops gets a member; then no blueprint names either group any more.
    with owui.client() as http:
        user = (
            http.post(
                "/api/v1/auths/add",
                json={
                    "name": "Olga Ops",
                    "email": f"olga-{uuid.uuid4().hex[:8]}@example.com",
                    "password": "Pw-0lga-ops!",
                    "role": "user",
                },
            )
            .raise_for_status()
            .json()
        )
        http.post(
            f"/api/v1/groups/id/{groups['Ops']['id']}/users/add", json={"user_ids": [user["id"]]}
        ).raise_for_status()
    args = _group_blueprints(tmp_path, [])
    code, out, err = provision(capsys, "sync", *args, *target, "--yes", "--prune")
    assert code == 0, out + err
    assert "group 'Compliance' was created by provision, is empty and no blueprint names it: --prune deletes it" in err
    assert (
        "group 'Ops' was created by provision and no blueprint names it, but it has members "
        "(of its own, or in a group below it): kept" in err
    )
    assert [g["name"] for g in get(owui, "/api/v1/groups/")] == ["Ops"]


def _second_admin(owui) -> tuple[str, str, str]:
    """A second admin (name, email, JWT) who edits rows through the API as the UI would."""
    email = f"alice-{uuid.uuid4().hex[:8]}@example.com"
    with owui.client() as http:
        added = (
            http.post(
                "/api/v1/auths/add",
                json={
                    "name": "Alice Admin",
                    "email": email,
                    "password": "Pw-al1ce-admin!",
                    "role": "admin",
                },
            )
            .raise_for_status()
            .json()
        )
    return "Alice Admin", email, added["token"]


def test_an_edit_in_open_webui_is_traced_to_the_admin_who_made_it(owui, bundle, capsys) -> None:
    code, out, err = provision(capsys, "sync", *bundle, "--yes")
    assert code == 0, out + err
    code, out, err = provision(capsys, "drift")
    assert (code, out.strip()) == (0, "No drift. Open WebUI holds what the last sync wrote."), err

    name, email, jwt = _second_admin(owui)
    with owui.client(token=jwt) as http:
        row = http.get("/api/v1/models/model", params={"id": POLICY}).raise_for_status().json()
        form = {k: row[k] for k in ("id", "name", "meta", "params")}
        form["meta"]["description"] = "Alice's own wording"
        http.post("/api/v1/models/model/update", json=form).raise_for_status()

    code, out, err = provision(capsys, "diff", *bundle)
    assert code == 0, err
    assert "meta.description" in out and "(changed in Open WebUI)" in out
    assert f"changed in Open WebUI by {name} <{email}>, 20" in out

    code, out, err = provision(capsys, "diff", *bundle, "-o", "json")
    plan = json.loads(out)
    [change] = plan["changes"]
    assert change["fields"][0]["origin"] == "openwebui"
    [entry] = plan["drift"]
    assert entry["id"] == POLICY and entry["history"] is True
    [field] = entry["fields"]
    assert field["path"] == "meta.description"
    assert field["changed_by"]["name"] == name and field["changed_by"]["email"] == email

    code, out, err = provision(capsys, "diff", *bundle, "-o", "markdown")
    assert "#### Changed in Open WebUI" in out and f"`{name} <{email}>`" in out

    code, out, err = provision(capsys, "drift", "-o", "json")
    assert code == 2, err
    report = json.loads(out)
    assert [(d["id"], [f["path"] for f in d["fields"]]) for d in report["drift"]] == [(POLICY, ["meta.description"])]
    assert report["drift"][0]["fields"][0]["changed_by"]["email"] == email
    code, out, err = provision(capsys, "drift")
    assert code == 2 and f"meta.description  changed in Open WebUI by {name} <{email}>" in out

    # An access change in Open WebUI is drift too, without a name (no history of access).
    with owui.client(token=jwt) as http:
        http.post("/api/v1/models/model/access/update", json={"id": POLICY, "access_grants": []}).raise_for_status()
    code, out, err = provision(capsys, "drift", "-o", "json")
    fields = {f["path"]: f["changed_by"] for f in json.loads(out)["drift"][0]["fields"]}
    assert code == 2 and set(fields) == {"access_grants", "meta.description"} and fields["access_grants"] is None

    # sync puts the blueprint back; then there is no drift.
    assert provision(capsys, "sync", *bundle, "--yes")[0] == 0
    code, out, err = provision(capsys, "drift", "-o", "markdown")
    assert code == 0 and "**No drift.**" in out


def test_a_blueprint_change_is_not_drift(owui, bundle, capsys, tmp_path) -> None:
    from tests.support.builders import blueprint, write_blueprint_dir, write_function_dir

    agents = [{"id": "counsel", "name": "Counsel", "access": "public"}]
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("legal", agents=agents)])
    args = ["-p", str(root), "--bundle", str(write_function_dir(tmp_path / "fn", root))]
    assert provision(capsys, "sync", *args, "--yes")[0] == 0
    for edit, paths in (({"access": "private"}, ["access_grants"]), ({"name": "Counsel (EU)"}, ["name"])):
        agents[0].update(edit)
        write_blueprint_dir(tmp_path / "bp", [blueprint("legal", agents=agents)])
        code, out, err = provision(capsys, "diff", *args, "-o", "json")
        [change] = json.loads(out)["changes"]
        assert {f["path"]: f.get("origin") for f in change["fields"]} == dict.fromkeys(paths, "blueprint")
        assert json.loads(out)["drift"] == []
        assert provision(capsys, "sync", *args, "--yes")[0] == 0
        # an access-only change rewrites the fingerprint too: no false drift afterwards
        code, out, err = provision(capsys, "drift")
        assert code == 0, out + err


def test_token_signs_in_with_a_password_file_and_reuses_the_admins_key(owui, capsys, tmp_path, monkeypatch) -> None:
    name, email, _jwt = _second_admin(owui)
    password_file = tmp_path / "secret" / "password"
    password_file.parent.mkdir()
    password_file.write_text("Pw-al1ce-admin!\n")
    monkeypatch.setenv("OPENWEBUI_ADMIN_EMAIL", email)
    monkeypatch.setenv("OPENWEBUI_ADMIN_PASSWORD_FILE", str(password_file))
    monkeypatch.delenv("OPENWEBUI_ADMIN_PASSWORD", raising=False)
    out_file = tmp_path / "token"
    code, out, err = provision(capsys, "token", "--out", str(out_file))
    assert code == 0, err
    assert out == "" and "Created the API key of" in err and "Pw-al1ce" not in err
    key = out_file.read_text().strip()
    assert key.startswith("sk-") and key not in err
    assert (out_file.stat().st_mode & 0o777) == 0o600
    with owui.client(token=key) as http:  # an admin's key works on admin endpoints
        assert http.get("/api/v1/models/all").status_code == 200
    code, out, err = provision(capsys, "token")  # stdout, and the same key: never rotated
    assert code == 0 and out.strip() == key, err

    password_file.write_text("wrong password")
    code, out, err = provision(capsys, "token")
    assert code == 1 and "POST /api/v1/auths/signin" in err and "wrong password" not in err + out


def test_a_group_create_whose_answer_is_lost_is_made_once(owui, capsys, tmp_path, monkeypatch) -> None:
    """0.12.4 makes a second group of a name it has (no unique name), so a create retried after
    its answer was lost would leave a group nothing records; the retry finds the first instead."""
    import httpx

    import provisioner.openwebui.client as client_module

    with owui.client() as http:
        for _ in range(2):
            http.post("/api/v1/groups/create", json={"name": "Twice", "description": ""}).raise_for_status()
        assert [g["name"] for g in http.get("/api/v1/groups/").json()].count("Twice") == 2  # the premise
        for group in http.get("/api/v1/groups/").json():
            http.delete(f"/api/v1/groups/id/{group['id']}/delete").raise_for_status()

    lost: list[str] = []

    def lose_the_first_ops_answer(response: httpx.Response) -> None:
        request = response.request
        if request.url.path == "/api/v1/groups/create" and b'"Ops"' in request.content and not lost:
            lost.append(request.url.path)
            raise httpx.ReadTimeout("answer lost after the server made the group", request=request)

    real = client_module.make_http_client

    def losing_client(timeout: float) -> httpx.Client:
        http = real(timeout)
        http.event_hooks["response"].append(lose_the_first_ops_answer)
        return http

    monkeypatch.setattr(client_module, "make_http_client", losing_client)
    args = _group_blueprints(tmp_path, ["Compliance", "Ops"])
    code, out, err = provision(capsys, "sync", *args, *_targets(tmp_path, owui.url, "create"), "--yes")
    assert code == 0, out + err
    assert lost and "; groups: 2 created." in out
    names = [g["name"] for g in get(owui, "/api/v1/groups/")]
    assert sorted(names) == ["Compliance", "Ops"], names  # Ops once
    ops = next(g["id"] for g in get(owui, "/api/v1/groups/") if g["name"] == "Ops")
    assert ops in _grant_ids(owui)
