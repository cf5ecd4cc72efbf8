"""The user's own functions: uploaded and owned like the bundle's, attached by `filters`/`actions`.

The located errors of bad attachments are cases of the bad-input corpus (filter_*, action_*,
user_function_takes_a_bundle_id); these tests pin what a valid attachment produces.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from provisioner.desired import build_desired
from provisioner.openwebui.observed import observe
from provisioner.pipeline import load_inputs
from provisioner.plan import make_plan
from tests.support.builders import REPO, blueprint, write_blueprint_dir
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import run_cli as run

TOKEN = "sk-user-functions-test-0123456789"
FILTER = (
    '"""\ntitle: PII redaction\ndescription: Masks e-mail addresses.\n"""\n\n\n'
    "class Filter:\n    def inlet(self, body: dict) -> dict:\n        return body\n"
)
ACTION = '"""\ntitle: Copy answer\n"""\n\n\nclass Action:\n    async def action(self, body: dict) -> None:\n        return None\n'


def repo_with_functions(tmp_path: Path, **bp_extra) -> tuple[Path, Path]:
    agents: list[dict[str, Any]] = [
        {"id": "plain", "name": "Plain", "access": "public"},
        {"id": "audited", "name": "Audited", "access": "public", "filters": ["audit"], "actions": ["copy_answer"]},
    ]
    root = write_blueprint_dir(
        tmp_path / "blueprints",
        [blueprint("demo", calls=["read_user_files"], agents=agents, filters=["pii_redaction"], **bp_extra)],
    )
    functions = tmp_path / "functions"
    functions.mkdir()
    (functions / "pii_redaction.py").write_text(FILTER)
    (functions / "audit.py").write_text(FILTER.replace("PII redaction", "Audit"))
    (functions / "copy_answer.py").write_text(ACTION)
    return root, functions


def rows(tmp_path: Path) -> dict[str, dict]:
    root, functions = repo_with_functions(tmp_path)
    catalog, files = load_inputs(root, functions, REPO / "owui_functions")
    desired = build_desired(catalog, files, groups=None)
    return {ident: dict(row.fields) for ident, row in desired.models.items()}


def test_user_filters_run_after_the_feature_filter_and_the_toggles(tmp_path: Path) -> None:
    found = rows(tmp_path)
    plain = found["aihub_agent_pipe.demo.plain"]
    audited = found["aihub_agent_pipe.demo.audited"]
    assert plain["meta.filterIds"] == ["aihub_feature_filter", "aihub_toggle_user_files", "pii_redaction"]
    # an agent's own filters follow the blueprint's
    assert audited["meta.filterIds"] == ["aihub_feature_filter", "aihub_toggle_user_files", "pii_redaction", "audit"]
    assert plain["meta.actionIds"] == [] and audited["meta.actionIds"] == ["copy_answer"]


def test_user_functions_are_uploaded_owned_and_activated(tmp_path: Path) -> None:
    root, functions = repo_with_functions(tmp_path)
    catalog, files = load_inputs(root, functions, REPO / "owui_functions")
    state = build_desired(catalog, files, groups=None).functions
    for ident in ("pii_redaction", "audit", "copy_answer"):
        fields = state[ident].fields
        assert fields["is_active"] is True and fields["is_global"] is False
        assert fields["meta.aihub"] == {"managed_by": "aihub-provision"}
        assert fields["content"] == (functions / f"{ident}.py").read_text()


def test_rows_written_before_actions_existed_need_no_write(tmp_path: Path) -> None:
    """A live row without `meta.actionIds` has no actions: the same as the `[]` we want."""
    root, functions = repo_with_functions(tmp_path)
    catalog, files = load_inputs(root, functions, REPO / "owui_functions")
    desired = build_desired(catalog, files, groups=None)
    live = []
    for row in desired.models.values():
        record: dict = {"id": row.id, "meta": {}, "params": {}, "access_grants": []}
        for path, value in row.fields.items():
            if path == "meta.actionIds" and value == []:
                continue  # an old row: the key was never written
            if path == "access_grants":
                record["access_grants"] = value
                continue
            parts = path.split(".")
            target = record
            for part in parts[:-1]:
                target = target.setdefault(part, {})
            target[parts[-1]] = value
        live.append(record)
    functions_live = [
        {
            "id": f.id,
            "name": f.fields["name"],
            "content": f.fields["content"],
            "is_active": True,
            "is_global": False,
            "meta": {"description": f.fields["meta.description"], "aihub": f.fields["meta.aihub"]},
            "valves": {k.removeprefix("valves."): v for k, v in f.fields.items() if k.startswith("valves.")},
        }
        for f in desired.functions.values()
    ]
    plan = make_plan(desired, observe(live, functions_live))
    assert plan.is_empty, plan.to_json()


def test_sync_writes_the_attachments_and_diff_shows_a_removed_action(
    fake: FakeOpenWebUI, tmp_path: Path, capsys
) -> None:
    root, functions = repo_with_functions(tmp_path)
    args = ["-p", str(root), "--functions", str(functions), "--bundle", str(REPO / "owui_functions")]
    assert run(capsys, "sync", *args, "--yes")[0] == 0
    audited = fake.models["aihub_agent_pipe.demo.audited"]
    assert audited["meta"]["actionIds"] == ["copy_answer"]
    assert audited["meta"]["filterIds"][-2:] == ["pii_redaction", "audit"]
    assert {"pii_redaction", "audit", "copy_answer"} <= set(fake.functions)
    assert all(fake.functions[i]["is_active"] for i in ("pii_redaction", "audit", "copy_answer"))
    # An admin removes the action button by hand: diff shows it, one field, and sync restores it.
    audited["meta"]["actionIds"] = []
    code, out, _ = run(capsys, "diff", *args, "-o", "json", "--detailed-exitcode")
    assert code == 2
    plan = json.loads(out)
    [change] = plan["changes"]
    assert change["id"] == "aihub_agent_pipe.demo.audited"
    assert change["fields"] == [
        {"path": "meta.actionIds", "before": [], "after": ["copy_answer"], "origin": "openwebui"}
    ]
