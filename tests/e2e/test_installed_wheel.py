"""From the user's own repo: the built wheel, installed in a fresh venv, run outside this checkout.

One test, one Open WebUI (the session's), in the order a platform team meets the tool:

1. build the wheel from this repo's sources and install it into a fresh venv;
2. in a temporary directory, `provision init`, then `validate`, `diff --detailed-exitcode` (2),
   `sync`, `diff --detailed-exitcode` (0), with the target `staging` of the generated
   targets.yaml pointed at the local instance (the one edit a user makes) and selected by
   `--target`; the scaffold's own filter (functions/pii_redaction.py) is attached to its agent.
   Then the rows and functions on the instance are checked;
3. the generated GitHub Actions workflow and GitLab CI file are parsed and their `run:` /
   `script:` commands executed in order in that directory, for a pull request and for a push to
   the default branch, with the environment the recipes document (their secrets filled in). The
   only change to a recipe: its `pip install "aihub-provision==X"` installs the wheel built here
   instead of X from a package index. `uses:` steps (checkout, setup-python) are not run: the
   directory is the checkout and the venv is the Python.

The subprocesses get a clean environment (no PYTHONPATH, no OPENWEBUI_*), so nothing of this
checkout leaks in; the test asserts that the `provision` they run lives in the fresh venv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from provisioner import __version__
from tests.support.builders import REPO

MODEL = "aihub_agent_pipe.it-helpdesk.default"
FUNCTIONS = {
    "aihub_feature_filter",
    "aihub_agent_pipe",
    "aihub_toggle_knowledge_base",
    "aihub_toggle_web_search",
    "pii_redaction",
}
PIN = f'"aihub-provision=={__version__}"'
AGENT_KEY = "helpdesk-backend-key-for-the-wheel-test"
# What the wheel is built from: the package, the bundle it carries, the project metadata.
SOURCES = ("pyproject.toml", "README.md", "provisioner", "owui_functions")


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"


def sh(args: list[str], *, cwd: Path, env: Mapping[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=dict(env), capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout
    )


def clean_env(installed: Installed, home: Path, **extra: str) -> dict[str, str]:
    """A CI-like environment: the venv first on PATH, nothing of this checkout or the caller."""
    env = {
        "PATH": f"{installed.bin}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    if os.environ.get("PIP_INDEX_URL"):  # the machine's package index, as pip itself would use
        env["PIP_INDEX_URL"] = os.environ["PIP_INDEX_URL"]
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel built from a copy of the sources (the checkout stays clean), in a fresh venv."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    src.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(path, src / name)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    built = sh(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(root / "dist"), str(src)], cwd=root, env=env
    )
    assert built.returncode == 0, built.stderr
    [wheel] = (root / "dist").glob("aihub_provision-*.whl")
    made = sh([sys.executable, "-m", "venv", str(root / "venv")], cwd=root, env=env)
    assert made.returncode == 0, made.stderr
    pip = sh([str(root / "venv" / "bin" / "pip"), "install", "-q", str(wheel)], cwd=root, env=env)
    assert pip.returncode == 0, pip.stderr
    return Installed(wheel, root / "venv")


def test_the_wheel_carries_the_bundle_and_the_init_templates(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    assert {"provisioner/bundle/aihub_feature_filter.py", "provisioner/bundle/aihub_agent_pipe.py"} <= names
    assert "provisioner/toggle_filters.py" in names  # the toggle filters' template
    from provisioner.scaffold import FILES

    assert {f"provisioner/templates/init/{t}" for t in FILES.values()} <= names


def test_from_a_new_repo_to_a_synced_instance_and_the_ci_recipes_run(
    installed: Installed, clean_openwebui: Any, tmp_path: Path
) -> None:
    owui = clean_openwebui
    repo = tmp_path / "our-agents"
    env = clean_env(installed, tmp_path, OPENWEBUI_TOKEN_STAGING=owui.token, HELPDESK_AGENT_KEY=AGENT_KEY)

    def provision(*args: str) -> subprocess.CompletedProcess[str]:
        return sh(["provision", *args], cwd=repo, env=env)

    where = sh(
        ["python", "-c", "import provisioner, shutil; print(provisioner.__file__); print(shutil.which('provision'))"],
        cwd=tmp_path,
        env=env,
    )
    assert where.stdout.splitlines() == [
        str(
            installed.venv
            / "lib"
            / f"python{sys.version_info.major}.{sys.version_info.minor}"
            / "site-packages"
            / "provisioner"
            / "__init__.py"
        ),
        str(installed.bin / "provision"),
    ], where.stdout + where.stderr

    # 1. init, and the one edit a user makes: staging is this instance.
    made = sh(["provision", "init", str(repo)], cwd=tmp_path, env=env)
    assert made.returncode == 0, made.stderr
    assert not (repo / "owui_functions").exists()  # the bundle stays inside the installed tool
    point_staging_at(repo / "targets.yaml", owui.url)

    # 2. validate, diff (2), sync, diff (0), with the target selected by --target.
    for args, expected in (
        (["validate"], 0),
        (["validate", "--target", "staging"], 0),
        (["diff", "--target", "staging", "--detailed-exitcode"], 2),
        (["sync", "--target", "staging", "--yes"], 0),
        (["diff", "--target", "staging", "--detailed-exitcode"], 0),
    ):
        result = provision(*args)
        assert result.returncode == expected, f"provision {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
        assert owui.token not in result.stdout + result.stderr and AGENT_KEY not in result.stdout + result.stderr
    check_instance(owui)

    # 3. The CI recipes, as written, for a pull request and then a push to main.
    workflow = yaml.safe_load((repo / ".github" / "workflows" / "provision.yml").read_text())
    secrets = {"OPENWEBUI_TOKEN_STAGING": owui.token, "HELPDESK_AGENT_KEY": AGENT_KEY}
    owui.reset()
    summary = tmp_path / "step_summary.md"
    ran = run_github(
        workflow, repo, installed, tmp_path, secrets, event="pull_request", ref="refs/pull/1/merge", summary=summary
    )
    assert ran == ["plan"]
    text = summary.read_text()
    assert MODEL in text and "|" in text and "pii_redaction" in text  # the plan as Markdown
    assert owui.token not in text and AGENT_KEY not in text
    assert instance_is_empty(owui)  # a pull request writes nothing
    ran = run_github(workflow, repo, installed, tmp_path, secrets, event="push", ref="refs/heads/main", summary=summary)
    assert ran == ["sync-staging"]
    check_instance(owui)
    assert provision("diff", "--target", "staging", "--detailed-exitcode").returncode == 0

    gitlab = yaml.safe_load((repo / ".gitlab-ci.yml").read_text())
    owui.reset()
    ran = run_gitlab(
        gitlab,
        repo,
        installed,
        tmp_path,
        secrets,
        {"CI_PIPELINE_SOURCE": "merge_request_event", "CI_COMMIT_BRANCH": ""},
    )
    assert ran == ["validate", "plan"]
    assert MODEL in (repo / "plan.md").read_text()
    assert instance_is_empty(owui)
    ran = run_gitlab(
        gitlab, repo, installed, tmp_path, secrets, {"CI_PIPELINE_SOURCE": "push", "CI_COMMIT_BRANCH": "main"}
    )
    assert ran == ["validate", "sync-staging"]
    check_instance(owui)
    assert provision("diff", "--target", "staging", "--detailed-exitcode").returncode == 0

    # 4. The scheduled drift check, against production (here the same instance): clean, then
    # after an edit in Open WebUI the job fails with the report in its summary or artifact.
    point_at(repo / "targets.yaml", "production", owui.url)
    secrets = {**secrets, "OPENWEBUI_TOKEN_PRODUCTION": owui.token}
    drift_flow = yaml.safe_load((repo / ".github" / "workflows" / "provision-drift.yml").read_text())
    assert "schedule" in (drift_flow.get("on") or drift_flow.get(True))
    summary.write_text("")
    assert run_github(
        drift_flow, repo, installed, tmp_path, secrets, event="schedule", ref="refs/heads/main", summary=summary
    ) == ["drift"]
    assert "**No drift.**" in summary.read_text()
    scheduled = {"CI_PIPELINE_SOURCE": "schedule", "CI_COMMIT_BRANCH": "main"}
    assert run_gitlab(gitlab, repo, installed, tmp_path, secrets, scheduled) == ["drift"]  # no sync on a schedule
    with owui.client() as http:
        row = http.get("/api/v1/models/model", params={"id": MODEL}).raise_for_status().json()
        form = {k: row[k] for k in ("id", "name", "meta", "params")}
        form["name"] = "Helpdesk (renamed by hand)"
        http.post("/api/v1/models/model/update", json=form).raise_for_status()
    summary.write_text("")
    assert run_github(
        drift_flow,
        repo,
        installed,
        tmp_path,
        secrets,
        event="schedule",
        ref="refs/heads/main",
        summary=summary,
        last_step_exit=2,
    ) == ["drift"]
    for report in (summary.read_text(), ""):
        if not report:
            assert run_gitlab(gitlab, repo, installed, tmp_path, secrets, scheduled, expect=2) == ["drift"]
            report = (repo / "drift.md").read_text()
        assert "#### Changed in Open WebUI" in report and MODEL in report and "`name`" in report
        assert owui.token not in report


# ---------------------------------------------------------------- the repo and the instance


def point_at(targets_file: Path, target: str, url: str) -> None:
    data = yaml.safe_load(targets_file.read_text())
    data["targets"][target]["url"] = url
    targets_file.write_text(yaml.safe_dump(data, sort_keys=False))


def point_staging_at(targets_file: Path, url: str) -> None:
    data = yaml.safe_load(targets_file.read_text())
    data["targets"]["staging"]["url"] = url
    data["targets"]["staging"]["variables"]["AGENTS_BASE_URL"] = "http://127.0.0.1:8700"
    targets_file.write_text(yaml.safe_dump(data, sort_keys=False))


def get(owui: Any, path: str, **params: Any) -> Any:
    with owui.client() as http:
        return http.get(path, params=params).raise_for_status().json()


def instance_is_empty(owui: Any) -> bool:
    return not get(owui, "/api/v1/models/all") and not get(owui, "/api/v1/functions/list")


def check_instance(owui: Any) -> None:
    """The scaffold's agent, its custom toggle and the user's filter, as a sync leaves them."""
    [row] = get(owui, "/api/v1/models/all")
    assert row["id"] == MODEL and row["name"] == "IT Helpdesk"
    meta = row["meta"]
    assert meta["filterIds"] == [
        "aihub_feature_filter",
        "aihub_toggle_knowledge_base",
        "aihub_toggle_web_search",
        "pii_redaction",
    ]
    assert meta["defaultFilterIds"] == ["aihub_toggle_knowledge_base"]
    # web_search is the bundle's toggle filter; Open WebUI's own stays off
    assert meta["capabilities"]["web_search"] is False and meta["capabilities"]["memory"] is False
    assert meta["aihub"]["managed_by"] == "aihub-provision"
    functions = {f["id"]: f for f in get(owui, "/api/v1/functions/export")}
    assert set(functions) == FUNCTIONS
    for function in functions.values():
        assert function["is_active"] and not function["is_global"], function["id"]
        assert function["meta"]["aihub"]["managed_by"] == "aihub-provision"
    assert functions["pii_redaction"]["type"] == "filter"
    assert functions["aihub_toggle_knowledge_base"]["meta"]["toggle"] is True
    valves = get(owui, "/api/v1/functions/id/aihub_agent_pipe/valves")
    [agent] = json.loads(valves["AGENTS"])
    assert agent["url"] == "http://127.0.0.1:8700/it-helpdesk"  # ${AGENTS_BASE_URL} from the target
    assert json.loads(valves["API_KEYS"]) == {"HELPDESK_AGENT_KEY": AGENT_KEY}


# ---------------------------------------------------------------- running the recipes


def with_wheel(command: str, installed: Installed) -> str:
    """The recipe's command, its pinned install pointed at the wheel built here."""
    return command.replace(f"pip install {PIN}", f'pip install "{installed.wheel}"')


def run_shell(script: str, repo: Path, env: Mapping[str, str], what: str, expect: int = 0) -> None:
    assert "${{" not in script, f"{what}: an expression the test does not fill in: {script}"
    result = sh(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=repo, env=env)
    assert result.returncode == expect, (
        f"{what} exited {result.returncode}, not {expect}:\n{script}\n{result.stdout}\n{result.stderr}"
    )


# The job conditions the generated workflow uses, evaluated for the simulated event; a condition
# the test does not know fails the test instead of being guessed.
GITHUB_IFS: dict[str, Callable[[str, str], bool]] = {
    "true": lambda event, ref: True,  # a job without `if:` (the drift workflow's)
    "github.event_name == 'pull_request'": lambda event, ref: event == "pull_request",
    "github.event_name == 'push' && github.ref == 'refs/heads/main'": lambda event, ref: (
        event == "push" and ref == "refs/heads/main"
    ),
    "github.event_name == 'push' && startsWith(github.ref, 'refs/tags/v')": lambda event, ref: (
        event == "push" and ref.startswith("refs/tags/v")
    ),
}


def fill_secrets(value: Any, secrets: Mapping[str, str]) -> str:
    text = str(value)
    for name, secret in secrets.items():
        text = text.replace(f"${{{{ secrets.{name} }}}}", secret)
    return text


def run_github(
    workflow: dict[Any, Any],
    repo: Path,
    installed: Installed,
    home: Path,
    secrets: Mapping[str, str],
    *,
    event: str,
    ref: str,
    summary: Path,
    last_step_exit: int = 0,
) -> list[str]:
    """Run the jobs the event triggers, in file order; return their names. Each job's last step
    must exit `last_step_exit` (2: the drift job reports drift), every other step 0."""
    triggers = workflow.get("on") or workflow.get(True)  # PyYAML reads the key `on` as true
    assert triggers and event in triggers
    assert workflow["defaults"]["run"]["shell"] == "bash"  # GitHub runs it as bash -eo pipefail
    ran = []
    for name, job in workflow["jobs"].items():
        condition = job.get("if", "true")
        assert condition in GITHUB_IFS, f"job {name}: the test cannot evaluate `if: {condition}`"
        if not GITHUB_IFS[condition](event, ref):
            continue
        job_env = {k: fill_secrets(v, secrets) for k, v in {**workflow.get("env", {}), **job.get("env", {})}.items()}
        env = clean_env(
            installed,
            home,
            CI="true",
            GITHUB_ACTIONS="true",
            GITHUB_EVENT_NAME=event,
            GITHUB_REF=ref,
            GITHUB_STEP_SUMMARY=str(summary),
            **job_env,
        )
        installs = 0
        for index, step in enumerate(job["steps"]):
            if "uses" in step:
                assert step["uses"].split("@")[0] in ("actions/checkout", "actions/setup-python"), step
                continue
            installs += f"pip install {PIN}" in step["run"]
            expect = last_step_exit if index == len(job["steps"]) - 1 else 0
            run_shell(
                with_wheel(step["run"], installed),
                repo,
                env,
                f"job {name}, step {step.get('name', step['run'])!r}",
                expect,
            )
        assert installs == 1, f"job {name} should install the pinned provision once"
        ran.append(name)
    return ran


GITLAB_IFS: dict[str, Callable[[Mapping[str, str]], bool]] = {
    '$CI_PIPELINE_SOURCE == "schedule"': lambda v: v["CI_PIPELINE_SOURCE"] == "schedule",
    '$CI_PIPELINE_SOURCE == "merge_request_event"': lambda v: v["CI_PIPELINE_SOURCE"] == "merge_request_event",
    "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH": lambda v: (
        bool(v["CI_COMMIT_BRANCH"]) and v["CI_COMMIT_BRANCH"] == v["CI_DEFAULT_BRANCH"]
    ),
    "$CI_COMMIT_TAG =~ /^v/": lambda v: v.get("CI_COMMIT_TAG", "").startswith("v"),
}
GITLAB_KEYWORDS = {"stages", "default", "variables", "workflow", "include", "image", "before_script", "after_script"}


def run_gitlab(
    pipeline: dict[str, Any],
    repo: Path,
    installed: Installed,
    home: Path,
    secrets: Mapping[str, str],
    predefined: Mapping[str, str],
    expect: int = 0,
) -> list[str]:
    """Run the jobs the pipeline source triggers, stage by stage; return their names. As in
    GitLab, a job's first rule that matches decides (`when: never` keeps it out)."""
    ci = {"CI": "true", "GITLAB_CI": "true", "CI_DEFAULT_BRANCH": "main", **predefined}
    jobs = {name: job for name, job in pipeline.items() if name not in GITLAB_KEYWORDS and not name.startswith(".")}
    order = {stage: i for i, stage in enumerate(pipeline["stages"])}
    ran = []
    for name, job in sorted(
        jobs.items(), key=lambda item: order[item[1]["stage"]]
    ):  # stable: file order within a stage
        for rule in job["rules"]:
            assert rule["if"] in GITLAB_IFS, f"job {name}: the test cannot evaluate `if: {rule['if']}`"
        first = next((rule for rule in job["rules"] if GITLAB_IFS[rule["if"]](ci)), None)
        if first is None or first.get("when") == "never":
            continue
        variables = {**pipeline.get("variables", {}), **job.get("variables", {})}
        env = clean_env(installed, home, **ci, **secrets, **{k: str(v) for k, v in variables.items()})
        lines = [*job.get("before_script", pipeline["default"]["before_script"]), *job["script"]]
        assert sum(f"pip install {PIN}" in line for line in lines) == 1, (
            f"job {name} should install the pinned provision once"
        )
        run_shell("\n".join(with_wheel(line, installed) for line in lines), repo, env, f"job {name}", expect)
        ran.append(name)
    return ran
