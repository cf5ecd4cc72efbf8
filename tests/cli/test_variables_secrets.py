"""`${NAME}` cannot reach a secret (issue 23, findings 2 and 6).

Only the targets' variables and the environment names the targets file allows (`env_allow`)
are offered; every target's token variable is refused by name, in values and in
`api_key_env`; an expanded value that holds the token in use or a backend key is refused,
whatever variable brought it; and expansion stops as soon as a value or a file passes its cap.
"""

from __future__ import annotations

import functools
import json
import time
import tracemalloc
from pathlib import Path

import pytest

from provisioner.errors import BlueprintError
from provisioner.loader import load_catalog
from provisioner.targets import load_targets_config
from provisioner.variables import MAX_FILE_CHARS, MAX_VALUE_CHARS, Variables
from tests.support.builders import REPO, blueprint, write_blueprint_dir
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import run_cli

TOKEN = "sk-staging-token-Vb7Nm2Qw9Er4Ty6U"
PROD_TOKEN = "sk-production-token-Lk3Jh8Gf5Ds1Az0X"
BACKEND_KEY = "bk-research-key-Pq4Wx7Ez2Rc9Tv5B"
CI_SECRET = "aws-secret-Hy6Uj1Ik8Ol3Mn0B"
BUNDLE = ["--bundle", str(REPO / "owui_functions")]
run = functools.partial(run_cli, secrets=(TOKEN, PROD_TOKEN, BACKEND_KEY, CI_SECRET))

TARGETS = """\
env_allow: [TEAM]
targets:
  staging:
    url: {url}
    token_env: OPENWEBUI_TOKEN_STAGING
    env_allow: [MY_ALIAS, KEY_ALIAS]
    variables:
      AGENTS_BASE_URL: https://agents-staging.internal
  production:
    url: https://chat.example.com
    token_env: OPENWEBUI_TOKEN_PRODUCTION
"""


@pytest.fixture
def repo(tmp_path: Path, fake: FakeOpenWebUI, monkeypatch: pytest.MonkeyPatch):
    """A targets file for staging (the fake) and production, and the CI environment's secrets."""
    (tmp_path / "targets.yaml").write_text(TARGETS.format(url=fake.base_url))
    monkeypatch.delenv("OPENWEBUI_TOKEN")
    monkeypatch.setenv("OPENWEBUI_TOKEN_STAGING", TOKEN)
    monkeypatch.setenv("OPENWEBUI_TOKEN_PRODUCTION", PROD_TOKEN)
    monkeypatch.setenv("RESEARCH_KEY", BACKEND_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CI_SECRET)
    monkeypatch.setenv("MY_ALIAS", f"token {TOKEN}")  # MY_ALIAS=$OPENWEBUI_TOKEN_STAGING
    monkeypatch.setenv("KEY_ALIAS", BACKEND_KEY)
    monkeypatch.setenv("TEAM", "")
    return tmp_path


def _bp(tmp_path: Path, **backend: str) -> Path:
    bp = blueprint("research", description=backend.pop("description", "Research"))
    bp["backend"] = {"url": "${AGENTS_BASE_URL}/research", "api_key_env": "RESEARCH_KEY", **backend}
    return write_blueprint_dir(tmp_path / "bp", [bp])


def _diff(capsys, repo: Path, root: Path, *extra: str) -> tuple[int, str, str]:
    return run(
        capsys,
        "diff",
        "-p",
        str(root),
        *BUNDLE,
        "--targets-file",
        str(repo / "targets.yaml"),
        "--target",
        "staging",
        *extra,
    )


def test_the_sample_setup_still_diffs(capsys, repo: Path, fake: FakeOpenWebUI) -> None:
    code, out, err = _diff(capsys, repo, _bp(repo), "-o", "json")
    assert code == 0, err
    assert fake.calls  # it connected: nothing above was refused


@pytest.mark.parametrize("output", ["text", "json", "markdown"])
@pytest.mark.parametrize(
    "description, message",
    [
        ("Prod: ${OPENWEBUI_TOKEN_PRODUCTION}", "${OPENWEBUI_TOKEN_PRODUCTION} holds a secret"),
        ("Keys: ${AWS_SECRET_ACCESS_KEY}", "the environment has AWS_SECRET_ACCESS_KEY, but"),
        ("Alias: ${MY_ALIAS}", "contains the Open WebUI admin token in use"),
        ("Alias: ${KEY_ALIAS}", "contains the value of RESEARCH_KEY (a backend's API key)"),
    ],
)
def test_no_variable_reaches_a_token_a_ci_secret_or_a_backend_key(
    capsys, repo: Path, fake: FakeOpenWebUI, description: str, message: str, output: str
) -> None:
    root = _bp(repo, description=description)
    code, out, err = _diff(capsys, repo, root, "-o", output)  # run() fails the test on any secret printed
    assert code == 1 and message in err, err
    line = next(i for i, text in enumerate((root / "research.yaml").read_text().splitlines(), 1) if description in text)
    assert f"{root / 'research.yaml'}:{line}: description:" in err
    assert not [c for c in fake.calls if c[0] != "GET"]


def test_a_value_aliasing_the_token_in_use_is_refused_when_it_comes_from_a_token_file(
    capsys, repo: Path, fake: FakeOpenWebUI, monkeypatch: pytest.MonkeyPatch
) -> None:
    token_file = repo / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    (repo / "targets.yaml").write_text(
        TARGETS.format(url=fake.base_url).replace("token_env: OPENWEBUI_TOKEN_STAGING", "token_file: token")
    )
    monkeypatch.delenv("OPENWEBUI_TOKEN_STAGING")
    code, _, err = _diff(capsys, repo, _bp(repo, description="${MY_ALIAS}"))
    assert code == 1 and "contains the Open WebUI admin token in use" in err, err


def test_another_targets_token_variable_is_refused_as_api_key_env(capsys, repo: Path, fake: FakeOpenWebUI) -> None:
    code, _, err = _diff(capsys, repo, _bp(repo, api_key_env="OPENWEBUI_TOKEN_PRODUCTION"))
    assert code == 1 and "backend.api_key_env: OPENWEBUI_TOKEN_PRODUCTION holds an Open WebUI admin token" in err, err
    assert not [c for c in fake.calls if c[0] != "GET"]


def test_validate_with_a_target_refuses_another_targets_token_too(capsys, repo: Path) -> None:
    root = _bp(repo, api_key_env="OPENWEBUI_TOKEN_PRODUCTION")
    args = ["validate", "-p", str(root), *BUNDLE, "--targets-file", str(repo / "targets.yaml")]
    for extra in ([], ["--target", "staging"]):
        code, _, err = run(capsys, *args, *extra)
        assert code == 1 and "OPENWEBUI_TOKEN_PRODUCTION holds an Open WebUI admin token" in err, (extra, err)


@pytest.mark.parametrize(
    "edit, line, field",
    [
        (("env_allow: [TEAM]", "env_allow: [TEAM, OPENWEBUI_TOKEN_PRODUCTION]"), 1, "env_allow[1]"),
        (("env_allow: [MY_ALIAS, KEY_ALIAS]", "env_allow: [OPENWEBUI_TOKEN]"), 6, "targets.staging.env_allow[0]"),
        (("env_allow: [TEAM]", "env_allow: [WEBUI_SECRET_KEY]"), 1, "env_allow[0]"),
    ],
)
def test_env_allow_cannot_name_a_secret(tmp_path: Path, edit: tuple[str, str], line: int, field: str) -> None:
    path = tmp_path / "targets.yaml"
    path.write_text(TARGETS.format(url="https://s.example").replace(*edit))
    with pytest.raises(BlueprintError) as exc:
        load_targets_config(path)
    [problem] = exc.value.problems
    assert (problem.file, problem.line, problem.field) == (str(path), line, field), problem
    assert "cannot be allowed" in problem.message


def test_env_allow_is_the_files_and_the_targets_own(tmp_path: Path) -> None:
    path = tmp_path / "targets.yaml"
    path.write_text(TARGETS.format(url="https://s.example"))
    config = load_targets_config(path)
    assert config.env_allow == {"TEAM"}
    assert config.targets["staging"].env_allow == {"TEAM", "MY_ALIAS", "KEY_ALIAS"}
    assert config.targets["production"].env_allow == {"TEAM"}
    assert config.token_variables == {"OPENWEBUI_TOKEN_STAGING", "OPENWEBUI_TOKEN_PRODUCTION"}


# --- ${X:-default} with X empty -------------------------------------------------------------------


def test_an_empty_variable_takes_the_default_and_without_one_stays_empty(tmp_path: Path) -> None:
    """As in a POSIX shell: `${X:-d}` is d when X is unset or empty; `${X}` is then just empty."""
    bp = blueprint("research", description="[${TEAM:-nobody}] [${TEAM}] [${GONE:-x}]")
    root = write_blueprint_dir(tmp_path / "bp", [bp])
    variables = Variables(values={"TEAM": ""}, strict=True)
    assert load_catalog(root, variables).blueprints[0].blueprint.description == "[nobody] [] [x]"
    env_variables = Variables(env={"TEAM": ""}, env_allow=frozenset({"TEAM"}), strict=True)
    assert load_catalog(root, env_variables).blueprints[0].blueprint.description == "[nobody] [] [x]"


# --- caps (finding 6) -------------------------------------------------------------------------------


def _expand_fast(root: Path, variables: Variables) -> BlueprintError:
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(BlueprintError) as exc:
            load_catalog(root, variables)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert time.monotonic() - started < 10
    assert peak < 100_000_000, f"built {peak} bytes before stopping"
    return exc.value


def test_20000_references_to_a_100_kb_variable_in_one_value_stop_at_the_value_cap(tmp_path: Path) -> None:
    bp = blueprint("research", description="${D}" * 20_000)  # 80 KB of references
    root = write_blueprint_dir(tmp_path / "bp", [bp])
    error = _expand_fast(root, Variables(values={"D": "x" * 100_000}, strict=True))
    [problem] = error.problems
    assert problem.field == "description" and problem.line
    assert f"longer than {MAX_VALUE_CHARS} characters once its variables are expanded" in problem.message


def test_2000_references_in_separate_values_stop_at_the_file_cap(tmp_path: Path) -> None:
    bp = blueprint("research")
    bp["agents"][0]["suggestions"] = ["${D}"] * 2_000
    root = write_blueprint_dir(tmp_path / "bp", [bp])
    error = _expand_fast(root, Variables(values={"D": "x" * 60_000}, strict=True))
    [problem] = error.problems
    assert problem.field.startswith("agents[0].suggestions[") and problem.line
    assert f"pass {MAX_FILE_CHARS} characters" in problem.message


def test_the_cli_reports_the_cap_as_a_problem_not_a_memory_error(capsys, repo: Path) -> None:
    (repo / "targets.yaml").write_text(
        (repo / "targets.yaml")
        .read_text()
        .replace("      AGENTS_BASE_URL", f"      D: {'y' * 100_000}\n      AGENTS_BASE_URL")
    )
    root = _bp(repo, description="${D}" * 20_000)
    code, _, err = _diff(capsys, repo, root)
    assert code == 1 and "once its variables are expanded" in err and "MemoryError" not in err


def test_json_plan_of_an_allowed_variable_shows_its_value(capsys, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEAM", "blue")
    code, out, err = _diff(capsys, repo, _bp(repo, description="Team ${TEAM}"), "-o", "json")
    assert code == 0, err
    fields = {f["path"]: f["after"] for c in json.loads(out)["changes"] for f in c["fields"]}
    assert fields["meta.description"] == "Team blue"
