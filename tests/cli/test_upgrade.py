"""The marker records the provision version that wrote each object; an upgrade shows in diff."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import provisioner.desired
from provisioner.plan import remerge_model_form
from tests.support.builders import REPO, write_blueprint_dir
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import run_cli

TOKEN = "sk-upgrade-test-token-0123456789"
FILTER = "aihub_feature_filter"


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Blueprints, a copy of the bundle (to change as an upgrade would), a user functions folder."""
    root = write_blueprint_dir(tmp_path / "bp")
    bundle = tmp_path / "bundle"
    shutil.copytree(REPO / "owui_functions", bundle, ignore=shutil.ignore_patterns("__pycache__"))
    own = tmp_path / "functions"
    own.mkdir()
    (own / "pii_redact.py").write_text(
        '"""\ntitle: PII redaction\ndescription: Masks e-mail addresses.\n"""\n\n\nclass Filter:\n'
        "    def inlet(self, body: dict) -> dict:\n        return body\n"
    )
    return root, bundle, own


def run(capsys, monkeypatch, version: str, repo: tuple[Path, Path, Path], *args: str) -> tuple[int, str]:
    monkeypatch.setattr(provisioner.desired, "__version__", version)
    root, bundle, own = repo
    code, out, _ = run_cli(
        capsys, *args, "-p", str(root), "--bundle", str(bundle), "--functions", str(own), secrets=(TOKEN,)
    )
    return code, out


def test_marker_records_the_version_that_wrote_each_object(capsys, monkeypatch, fake: FakeOpenWebUI, repo) -> None:
    assert run(capsys, monkeypatch, "0.1.0", repo, "sync", "--yes")[0] == 0
    assert fake.models and fake.functions
    for record in [*fake.models.values(), *fake.functions.values()]:
        assert record["meta"]["aihub"]["version"] == "0.1.0", record["id"]


def test_a_new_version_alone_changes_nothing(capsys, monkeypatch, fake: FakeOpenWebUI, repo) -> None:
    run(capsys, monkeypatch, "0.1.0", repo, "sync", "--yes")
    code, out = run(capsys, monkeypatch, "0.2.0", repo, "diff", "--detailed-exitcode")
    assert code == 0 and out.startswith("No changes.")


def test_diff_after_upgrade_names_changed_bundle_functions_and_both_versions(
    capsys, monkeypatch, fake: FakeOpenWebUI, repo
) -> None:
    root, bundle, own = repo
    run(capsys, monkeypatch, "0.1.0", repo, "sync", "--yes")
    # The upgrade ships a new feature filter; the user edits their own function at the same time.
    path = bundle / f"{FILTER}.py"
    path.write_text(path.read_text() + "\n# 0.2.0\n")
    (own / "pii_redact.py").write_text((own / "pii_redact.py").read_text() + "\n# edited\n")

    code, out = run(capsys, monkeypatch, "0.2.0", repo, "diff", "--detailed-exitcode")
    assert code == 2
    assert f"Upgrade: {FILTER} changed between provision 0.1.0 on the instance -> 0.2.0 installed." in out
    [line] = [line for line in out.splitlines() if f"function  {FILTER}" in line]
    assert line.endswith("(bundle changed: provision 0.1.0 on the instance -> 0.2.0 installed)")
    [user_line] = [line for line in out.splitlines() if "function  pii_redact" in line]
    assert "bundle changed" not in user_line  # the user's own function is not part of an upgrade

    code, out = run(capsys, monkeypatch, "0.2.0", repo, "diff", "-o", "json")
    changes = {c["id"]: c for c in json.loads(out)["changes"]}
    assert changes[FILTER]["upgrade"] == {"from": "0.1.0", "to": "0.2.0"}
    assert "upgrade" not in changes["pii_redact"]

    assert run(capsys, monkeypatch, "0.2.0", repo, "sync", "--yes")[0] == 0
    assert fake.functions[FILTER]["meta"]["aihub"]["version"] == "0.2.0"


def test_objects_from_before_versions_were_recorded_say_so(capsys, monkeypatch, fake: FakeOpenWebUI, repo) -> None:
    root, bundle, _ = repo
    run(capsys, monkeypatch, "0.1.0", repo, "sync", "--yes")
    del fake.functions[FILTER]["meta"]["aihub"]["version"]
    path = bundle / f"{FILTER}.py"
    path.write_text(path.read_text() + "\n# new\n")
    code, out = run(capsys, monkeypatch, "0.2.0", repo, "diff")
    assert code == 0 and "an earlier provision on the instance -> 0.2.0 installed" in out


def test_a_retried_model_write_keeps_the_new_version() -> None:
    from provisioner.plan import Action, Change, FieldChange

    change = Change(
        "model",
        "m",
        Action.UPDATE,
        (FieldChange("name", "a", "b"),),
        body={"meta": {"aihub": {"managed_by": "aihub-provision", "version": "0.2.0"}}},
    )
    live = {"id": "m", "name": "a", "meta": {"aihub": {"managed_by": "aihub-provision", "version": "0.1.0"}}}
    assert remerge_model_form(live, change)["meta"]["aihub"]["version"] == "0.2.0"
