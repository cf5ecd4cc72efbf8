"""`provision init`: a working blueprint repo, never an overwritten file.

The installed-wheel e2e test (tests/e2e/test_installed_wheel.py) runs the same scaffold, and its
CI recipes, against a real Open WebUI; these tests pin the offline promises.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml

from provisioner import __version__
from provisioner.scaffold import FILES
from tests.support.loading import load_file
from tests.support.run_cli import run_cli as run


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_init_writes_a_repo_that_validates_with_default_options(tmp_path: Path, capsys, monkeypatch) -> None:
    code, out, err = run(capsys, "init", str(tmp_path / "agents"))
    assert (code, err) == (0, "")
    repo = tmp_path / "agents"
    assert set(tree(repo)) == set(FILES)
    for name in FILES:
        assert f"created  {repo / name}" in out
    monkeypatch.chdir(repo)
    monkeypatch.delenv("PROVISION_TARGET", raising=False)
    code, out, err = run(capsys, "validate")  # the installed bundle, functions/, targets.yaml: all defaults
    assert code == 0, err
    assert out.startswith("Valid: 1 blueprint, 1 agent, 5 functions.")  # filter, pipe, 2 toggles, pii_redaction
    code, out, err = run(capsys, "validate", "--target", "production")  # every ${NAME} resolves
    assert code == 0, err


def test_init_in_the_current_directory(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "init")[0] == 0
    assert (tmp_path / ".github" / "workflows" / "provision.yml").is_file()
    assert (tmp_path / ".gitlab-ci.yml").is_file()


def test_init_never_overwrites_and_writes_nothing_when_a_file_exists(tmp_path: Path, capsys) -> None:
    repo = tmp_path / "agents"
    (repo / "blueprints").mkdir(parents=True)
    (repo / "blueprints" / "capabilities.yaml").write_text("capabilities: {mine: {}}\n")
    (repo / "README.md").write_text("our readme\n")
    before = tree(repo)
    code, out, err = run(capsys, "init", str(repo))
    assert (code, out) == (1, "")
    assert "wrote nothing" in err
    assert f"  {repo / 'README.md'}" in err.splitlines()
    assert f"  {repo / 'blueprints' / 'capabilities.yaml'}" in err.splitlines()
    assert tree(repo) == before
    assert not (repo / "targets.yaml").exists()


def test_ci_recipes_pin_this_version_and_select_targets(tmp_path: Path, capsys) -> None:
    assert run(capsys, "init", str(tmp_path))[0] == 0
    github = yaml.safe_load((tmp_path / ".github" / "workflows" / "provision.yml").read_text())
    gitlab = yaml.safe_load((tmp_path / ".gitlab-ci.yml").read_text())
    pin = f'pip install "aihub-provision=={__version__}"'
    github_runs = [s.get("run", "") for job in github["jobs"].values() for s in job["steps"]]
    assert pin in github_runs
    assert any("diff" in r and "-o markdown" in r and "$GITHUB_STEP_SUMMARY" in r for r in github_runs)
    assert any(r.startswith("provision sync --target") and "--prune --yes" in r for r in github_runs)
    assert gitlab["default"]["before_script"] == [pin]
    scripts = [line for job in gitlab.values() if isinstance(job, dict) and "script" in job for line in job["script"]]
    assert any("-o markdown > plan.md" in line for line in scripts)
    targets = yaml.safe_load((tmp_path / "targets.yaml").read_text())["targets"]
    assert set(targets) == {"staging", "production"}
    # every token the recipes hand over is a target's token_env
    token_envs = {t["token_env"] for t in targets.values()}
    github_env = {k for job in github["jobs"].values() for k in job.get("env", {}) if k.startswith("OPENWEBUI_TOKEN")}
    assert github_env == token_envs


def test_the_example_filter_masks_addresses_and_numbers(tmp_path: Path, capsys) -> None:
    assert run(capsys, "init", str(tmp_path))[0] == 0
    module = load_file(tmp_path / "functions" / "pii_redaction.py", keep=False)
    body = {
        "messages": [
            {"role": "system", "content": "ops@example.com stays"},
            {"role": "user", "content": "I am jane.doe@example.com, call +49 30 1234567."},
        ]
    }
    out = module.Filter().inlet(body)
    assert out["messages"][1]["content"] == "I am [e-mail], call [phone]."
    assert out["messages"][0]["content"] == "ops@example.com stays"
    assert module.Filter().inlet({"messages": "odd"}) == {"messages": "odd"}  # never raises on an odd body


def snapshot(root: Path) -> dict[str, tuple[str, str]]:
    """Every entry under root, symlinks not followed: (type, content hash or link target)."""
    entries: dict[str, tuple[str, str]] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if path.is_symlink():
            entries[name] = ("link", str(path.readlink()))
        elif path.is_dir():
            entries[name] = ("dir", "")
        else:
            entries[name] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
    return entries


def test_init_refuses_a_symlinked_directory_and_writes_nothing_anywhere(tmp_path: Path, capsys) -> None:
    """DIR/blueprints -> /elsewhere: writing through it would put files outside DIR."""
    repo, elsewhere = tmp_path / "agents", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    (repo / "blueprints").symlink_to(elsewhere)
    before = snapshot(tmp_path)
    code, out, err = run(capsys, "init", str(repo))
    assert (code, out) == (1, "")
    assert "wrote nothing" in err and f"{repo / 'blueprints'}: a symlink" in err
    assert snapshot(tmp_path) == before


def test_init_refuses_a_file_where_a_directory_goes_and_writes_nothing(tmp_path: Path, capsys) -> None:
    """DIR/.github a plain file: init used to write 7 files first, then fail half-way."""
    repo = tmp_path / "agents"
    repo.mkdir()
    (repo / ".github").write_text("not a directory\n")
    before = snapshot(tmp_path)
    code, out, err = run(capsys, "init", str(repo))
    assert (code, out) == (1, "")
    assert f"{repo / '.github'}: exists and is not a directory" in err and "wrote nothing" in err
    assert snapshot(tmp_path) == before
    (repo / ".github").unlink()  # once the obstacle is gone, init works: nothing was half-written
    assert run(capsys, "init", str(repo))[0] == 0


def test_init_into_a_file_writes_nothing(tmp_path: Path, capsys) -> None:
    (tmp_path / "file").write_text("x\n")
    before = snapshot(tmp_path)
    code, _, err = run(capsys, "init", str(tmp_path / "file"))
    assert code == 1 and f"{tmp_path / 'file'}: exists and is not a directory" in err
    code, _, err = run(capsys, "init", str(tmp_path / "file" / "agents"))
    assert code == 1 and f"{tmp_path / 'file'}: exists and is not a directory" in err
    assert snapshot(tmp_path) == before


def test_a_write_that_fails_part_way_removes_what_init_wrote(tmp_path: Path, capsys, monkeypatch) -> None:
    """A full disk after some files: the ones written and the directories made are removed."""
    import provisioner.scaffold as scaffold

    real_open = Path.open
    written: list[Path] = []

    def open_failing_on_the_fourth(self: Path, mode: str = "r", *args, **kwargs):
        if mode == "x":
            if len(written) == 3:
                raise OSError(28, "No space left on device", str(self))
            written.append(self)
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(scaffold.Path, "open", open_failing_on_the_fourth)
    code, out, err = run(capsys, "init", str(tmp_path / "agents"))
    assert code == 1 and "No space left on device" in err and "wrote nothing" in err
    assert len(written) == 3 and list(tmp_path.iterdir()) == []


def test_init_writes_a_scheduled_drift_check_for_github_and_gitlab(tmp_path: Path, capsys) -> None:
    assert run(capsys, "init", str(tmp_path))[0] == 0
    github = yaml.safe_load((tmp_path / ".github" / "workflows" / "provision-drift.yml").read_text())
    triggers = github.get("on") or github.get(True)
    assert triggers["schedule"][0]["cron"] and "workflow_dispatch" in triggers
    [job] = github["jobs"].values()
    assert job["env"]["TARGET"] == "production"
    [report] = [s["run"] for s in job["steps"] if "provision drift" in s.get("run", "")]
    assert "-o markdown" in report and '>> "$GITHUB_STEP_SUMMARY"' in report and 'exit "$status"' in report
    gitlab = yaml.safe_load((tmp_path / ".gitlab-ci.yml").read_text())
    assert gitlab["drift"]["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "schedule"'}]
    assert any("provision drift --target" in line for line in gitlab["drift"]["script"])
    # a scheduled pipeline runs on the default branch: it must not sync
    for name in ("validate", "sync-staging"):
        assert gitlab[name]["rules"][0] == {"if": '$CI_PIPELINE_SOURCE == "schedule"', "when": "never"}


def test_the_sample_agent_and_its_custom_toggle_are_translated(tmp_path: Path, capsys) -> None:
    """A new repo shows how translations are written (issue 30): one translated agent, one toggle."""
    from provisioner.loader import load_catalog

    assert run(capsys, "init", str(tmp_path / "agents"))[0] == 0
    catalog = load_catalog(tmp_path / "agents" / "blueprints")
    (agent,) = [a for lb in catalog.blueprints for a in lb.blueprint.agents]
    assert agent.i18n and {"de", "fr"} <= set(agent.i18n)
    assert agent.i18n["de"].suggestions is not None and len(agent.i18n["de"].suggestions) == len(
        catalog.blueprints[0].blueprint.suggestions or []
    )
    assert catalog.features["knowledge_base"].i18n["de"].title == "Wissensdatenbank"
