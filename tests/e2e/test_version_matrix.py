"""The core cycle against a real Open WebUI of each release in the compatibility matrix.

Which releases: `AIHUB_OWUI_MATRIX` = `all` (every release in provisioner.compat.TESTED, what
`.ci/run` sets) or a comma-separated list; unset, only the pinned release (the default suite).
Each release gets a fresh server from `scripts/openwebui-local start --version X` (installed once
per version under the cache dir) and runs: validate, diff, sync, idempotent re-sync, access
(public, private, groups), a change, the feature filter and a toggle filter in the right order,
the pipe answering, prune. Each step's result goes to `<AIHUB_COMPAT_RESULTS>/<version>.json`
(default `.compat/`), which `scripts/compat-table` turns into the table in
docs/openwebui-versions.md.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from provisioner import compat

from tests.support.builders import REPO, samples_on
from tests.support.chat_support import AGENT_ANSWER, provision
from tests.support.owui_instance import OpenWebUIInstance, OpenWebUIUnavailable, started, unavailable

MATRIX_ENV = "AIHUB_OWUI_MATRIX"
# Older patch releases that get a short check (start, sign in, list models) beside the newest
# patch of each minor: `scripts/openwebui-local start --version X` must start every release, and
# 0.6.5 once missed a module its slim install left out (issue 23). An early 0.6, a mid 0.6, a 0.8
# and a 0.10. `AIHUB_OWUI_OLDER` = a comma-separated list (or `none`) overrides it; unset, they
# run when the matrix is `all`.
OLDER_PATCHES = ("0.6.5", "0.6.26", "0.8.0", "0.10.0")
OLDER_ENV = "AIHUB_OWUI_OLDER"
RESULTS_DIR = Path(os.environ.get("AIHUB_COMPAT_RESULTS") or REPO / ".compat")
STEPS = (
    "validate", "diff", "sync", "idempotent re-sync", "access", "change",
    "filter order", "pipe answers", "prune",
)
DOCUMENTS = "aihub_agent_pipe.document-analyst.default"
POLICY = "aihub_agent_pipe.policy-faq.default"
TIER1 = "aihub_agent_pipe.support-desk.tier1"
TIER2 = "aihub_agent_pipe.support-desk.tier2"
BILLING = "aihub_agent_pipe.support-desk.billing"
TOGGLE = "aihub_toggle_user_files"


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
    """Each step's outcome, written to the results file whatever happens."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.results: dict[str, str] = dict.fromkeys(STEPS, "not run")
        self.started = time.monotonic()

    def run(self, name: str):
        log = self

        class _Step:
            def __enter__(self) -> None:
                return None

            def __exit__(self, kind, exc, tb) -> bool:
                log.results[name] = "pass" if kind is None else f"FAIL: {str(exc).splitlines()[0][:160] if str(exc) else kind.__name__}"
                log.write()
                return False

        return _Step()

    def write(self) -> None:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        data = {"version": self.version, "steps": self.results,
                "seconds": round(time.monotonic() - self.started, 1), "recorded_at": int(time.time())}
        (RESULTS_DIR / f"{self.version}.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


@pytest.fixture(scope="module", params=selected_versions())
def release(request: pytest.FixtureRequest) -> Iterator[OpenWebUIInstance]:
    version = request.param
    instance = OpenWebUIInstance(f"matrix-{version}-{os.getpid()}", version=version)
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


def test_core_cycle(release: OpenWebUIInstance, agui_server: Any, tmp_path: Path, capsys,
                    monkeypatch: pytest.MonkeyPatch) -> None:
    version = release.version or compat.PINNED
    steps = StepLog(version)
    steps.write()
    monkeypatch.setenv("OPENWEBUI_URL", release.url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", release.token)
    monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
    args, root = matrix_bundle(tmp_path, agui_server.agent_url)
    with release.client() as http:
        group = http.post("/api/v1/groups/create", json={"name": "Support", "description": "matrix"})
        group_id = group.raise_for_status().json()["id"]

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
            assert rows[TIER2]["access_control"] is not None and rows[BILLING]["access_control"]["read"]["group_ids"] == [group_id]
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
    with steps.run("prune"):
        (root / "support_desk.yaml").unlink()
        code, out, err = provision(capsys, "sync", "--yes", "--prune", *args)
        assert code == 0 and "3 destroyed" in out, out + err
        ids = {r["id"] for r in release_rows(release, table)}
        assert not ids & {TIER1, TIER2, BILLING} and DOCUMENTS in ids
        with release.client() as http:
            served = {m["id"] for m in http.get("/api/models").raise_for_status().json()["data"]}
        assert TIER1 not in served and DOCUMENTS in served


def access_of(row: dict[str, Any], table: compat.Compat) -> list[tuple[str, str]]:
    """Who may read a row, read straight from the release's own field."""
    if table.access_control:
        control = row.get("access_control")
        if control is None:
            return [("user", "*")]
        read = control.get("read") or {}
        return sorted([("group", g) for g in read.get("group_ids") or []] + [("user", u) for u in read.get("user_ids") or []])
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
        instance = started(OpenWebUIInstance(f"older-{version}-{os.getpid()}", version=version), f"Open WebUI {version}")
        try:
            admin = json.loads((instance.instance_dir / "admin.json").read_text(encoding="utf-8"))
            with instance.client(token="") as http:
                assert http.get("/api/version").raise_for_status().json()["version"] == version
                signed_in = http.post("/api/v1/auths/signin",
                                      json={"email": admin["email"], "password": admin["password"]})
                assert signed_in.status_code == 200 and signed_in.json()["role"] == "admin", signed_in.text[:300]
            with instance.client() as http:  # the API key the script minted
                models = http.get("/api/models")
                assert models.status_code == 200 and isinstance(models.json()["data"], list), models.text[:300]
            # provision reads the release, or refuses it by name (compat.MINIMUM) before any write.
            monkeypatch.setenv("OPENWEBUI_URL", instance.url)
            monkeypatch.setenv("OPENWEBUI_TOKEN", instance.token)
            monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
            code, out, err = provision(capsys, "diff", "-p", str(REPO / "blueprints"), "--bundle", str(REPO / "owui_functions"))
            if compat.parse_version(version) < compat.MINIMUM:
                assert code == 1 and f"Open WebUI {version} is not supported: provision needs 0.6.27 or later" in err, out + err
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
    form = {k: row[k] for k in ("id", "base_model_id", "name", "meta", "params") if k in row}
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
