"""targets.yaml and ${NAME} variables: resolution, refusals, and errors that name file, line, field."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from provisioner.desired import PIPE_AGENTS_VALVE, PIPE_FUNCTION_ID, build_desired
from provisioner.errors import BlueprintError, ConfigError
from provisioner.function_files import load_function_files
from provisioner.loader import load_catalog
from provisioner.targets import load_targets, select_target
from provisioner.variables import Variables
from tests.support.builders import REPO, blueprint, write_blueprint_dir
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import run_cli

TOKEN = "sk-target-test-token-0123456789"
BUNDLE = ["--bundle", str(REPO / "owui_functions")]


def _agents(catalog) -> list[dict]:
    functions = load_function_files(REPO / "owui_functions")
    state = build_desired(catalog, functions, groups=None)
    return json.loads(state.functions[PIPE_FUNCTION_ID].fields[PIPE_AGENTS_VALVE])


def _bp_dir(tmp_path: Path, **backend: str) -> Path:
    bp = blueprint("research")
    bp["backend"] = {"url": "${AGENTS_BASE_URL}/research", **backend}
    return write_blueprint_dir(tmp_path / "bp", [bp])


def _problems(exc: pytest.ExceptionInfo[BlueprintError]) -> list[str]:
    return [str(p) for p in exc.value.problems]


def test_target_variable_fills_a_blueprint_value(tmp_path: Path) -> None:
    root = _bp_dir(tmp_path)
    variables = Variables(values={"AGENTS_BASE_URL": "https://agents-staging.internal"}, strict=True)
    [entry] = _agents(load_catalog(root, variables))
    assert entry["url"] == "https://agents-staging.internal/research"


def test_target_variable_wins_over_the_environment_which_wins_over_the_default(tmp_path: Path) -> None:
    bp = blueprint("research", description="${WHO:-nobody} at ${WHERE:-home}, ${WHAT:-x}")
    root = write_blueprint_dir(tmp_path / "bp", [bp])
    env = {"WHO": "env", "WHERE": "env"}
    variables = Variables(values={"WHO": "target"}, env=env, env_allow=frozenset(env), strict=True)
    catalog = load_catalog(root, variables)
    assert catalog.blueprints[0].blueprint.description == "target at env, x"


def test_double_dollar_escapes_a_literal_reference(tmp_path: Path) -> None:
    bp = blueprint("research", description="costs $5, write $${HOME} to mean ${HOME}")
    root = write_blueprint_dir(tmp_path / "bp", [bp])
    catalog = load_catalog(root, Variables(env={"HOME": "/root"}, env_allow=frozenset({"HOME"}), strict=True))
    assert catalog.blueprints[0].blueprint.description == "costs $5, write ${HOME} to mean /root"


def test_unresolved_variable_names_file_line_and_field(tmp_path: Path) -> None:
    root = _bp_dir(tmp_path)
    with pytest.raises(BlueprintError) as exc:
        load_catalog(root, Variables(strict=True, target="staging"))
    [problem] = exc.value.problems
    assert problem.file == str(root / "research.yaml") and problem.field == "backend.url"
    lines = (root / "research.yaml").read_text().splitlines()
    assert problem.line is not None and "${AGENTS_BASE_URL}" in lines[problem.line - 1]
    assert "AGENTS_BASE_URL is not set" in problem.message and "targets.staging.variables" in problem.message


def test_offline_unresolved_variable_is_not_an_error_but_bad_syntax_is(tmp_path: Path) -> None:
    root = _bp_dir(tmp_path)
    load_catalog(root)  # offline: a placeholder stands in, the URL check waits for --target
    for bad in ("${AGENTS_BASE_URL", "${1ST}/x", "${BASE:default}", "${}", "${A:-${B}}"):
        bp = blueprint("research")
        bp["backend"] = {"url": bad}
        root = write_blueprint_dir(tmp_path / "bad", [bp])
        with pytest.raises(BlueprintError) as exc:
            load_catalog(root)
        [problem] = exc.value.problems
        assert problem.field == "backend.url" and problem.line == 5, bad
        assert "${NAME:-default}" in problem.message, bad


@pytest.mark.parametrize(
    "backend, message",
    [
        ({"api_key_env": "${KEY_NAME}"}, "no variables in api_key_env"),
        ({"model": "${OPENWEBUI_TOKEN}"}, "holds a secret"),
        ({"api_key_env": "RESEARCH_KEY", "model": "${RESEARCH_KEY}"}, "is a backend's API key"),
    ],
)
def test_secrets_never_go_through_variables(tmp_path: Path, backend: dict, message: str) -> None:
    root = _bp_dir(tmp_path, **backend)
    env = {"KEY_NAME": "RESEARCH_KEY", "OPENWEBUI_TOKEN": TOKEN, "RESEARCH_KEY": "sk-secret"}
    with pytest.raises(BlueprintError) as exc:
        load_catalog(
            root,
            Variables(values={"AGENTS_BASE_URL": "https://a.internal"}, env=env, env_allow=frozenset(env), strict=True),
        )
    assert any(message in p.message and p.field.startswith("backend.") for p in exc.value.problems)
    assert TOKEN not in str(exc.value) and "sk-secret" not in str(exc.value)


TARGETS = """\
targets:
  staging:
    url: https://chat-staging.example.com
    token_env: OPENWEBUI_TOKEN_STAGING
    variables:
      AGENTS_BASE_URL: https://agents-staging.internal
      PORT: 8443
  production:
    url: https://chat.example.com
    token_file: secrets/prod-token
"""


def test_targets_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "targets.yaml").write_text(TARGETS)
    targets = load_targets(tmp_path / "targets.yaml")
    assert targets["staging"].variables == {"AGENTS_BASE_URL": "https://agents-staging.internal", "PORT": "8443"}
    assert targets["staging"].token_env == "OPENWEBUI_TOKEN_STAGING" and targets["staging"].token_file is None
    assert targets["production"].token_file == tmp_path / "secrets/prod-token"


@pytest.mark.parametrize(
    "edit, line, field, message",
    [
        (("    token_env: OPENWEBUI_TOKEN_STAGING\n", ""), 2, "targets.staging", "exactly one of token_env"),
        (
            ("    token_file: secrets/prod-token\n", "    token_file: x\n    token_env: T\n"),
            8,
            "targets.production",
            "exactly one",
        ),
        (("    variables:\n", "    varaibles:\n"), 5, "targets.staging.varaibles", "did you mean 'variables'"),
        (("      PORT: 8443\n", "      PORT: yes\n"), 7, "targets.staging.variables.PORT", "boolean"),
        (("    url: https://chat.example.com\n", "    url: chat.example.com\n"), 9, "targets.production.url", "http"),
    ],
)
def test_targets_file_errors_name_line_and_field(
    tmp_path: Path, edit: tuple[str, str], line: int, field: str, message: str
) -> None:
    assert edit[0] in TARGETS
    (tmp_path / "targets.yaml").write_text(TARGETS.replace(*edit))
    with pytest.raises(BlueprintError) as exc:
        load_targets(tmp_path / "targets.yaml")
    assert any(p.line == line and p.field == field and message in p.message for p in exc.value.problems), _problems(exc)


def test_unknown_target_suggests_the_close_one_and_missing_file_says_where(tmp_path: Path) -> None:
    (tmp_path / "targets.yaml").write_text(TARGETS)
    with pytest.raises(ConfigError, match="did you mean 'staging'"):
        select_target("stagin", tmp_path / "targets.yaml")
    with pytest.raises(ConfigError, match="no targets file"):
        select_target("staging", tmp_path / "nope.yaml")


# --- the CLI -------------------------------------------------------------------------------


def _repo(tmp_path: Path, base_url: str) -> tuple[Path, Path]:
    """A blueprint repo with a `local` target pointing at `base_url`."""
    root = _bp_dir(tmp_path)
    targets = tmp_path / "targets.yaml"
    targets.write_text(
        "targets:\n"
        "  local:\n"
        f"    url: {base_url}\n"
        "    token_env: LOCAL_TOKEN\n"
        "    variables:\n"
        "      AGENTS_BASE_URL: https://agents-local.internal\n"
    )
    return root, targets


run = functools.partial(run_cli, secrets=(TOKEN,))


def test_target_selects_url_token_and_variables(
    capsys, fake: FakeOpenWebUI, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root, targets = _repo(tmp_path, fake.base_url)
    monkeypatch.setenv("OPENWEBUI_URL", "http://127.0.0.1:1")  # replaced by the target's
    monkeypatch.delenv("OPENWEBUI_TOKEN")
    monkeypatch.setenv("LOCAL_TOKEN", TOKEN)
    args = ["-p", str(root), *BUNDLE, "--targets-file", str(targets), "-o", "json"]
    code, out, _ = run(capsys, "sync", *args, "--target", "local", "--yes")
    assert code == 0, out
    valves = fake.functions[PIPE_FUNCTION_ID]["valves"]
    assert json.loads(valves["AGENTS"])[0]["url"] == "https://agents-local.internal/research"
    monkeypatch.setenv("PROVISION_TARGET", "local")  # the same, from the environment
    code, out, _ = run(capsys, "diff", *args, "--detailed-exitcode")
    assert code == 0 and json.loads(out)["summary"] == {"add": 0, "change": 0, "destroy": 0}


def test_target_with_explicit_url_is_a_usage_error(capsys, fake: FakeOpenWebUI, tmp_path: Path) -> None:
    root, targets = _repo(tmp_path, fake.base_url)
    code, _, err = run(
        capsys,
        "diff",
        "-p",
        str(root),
        *BUNDLE,
        "--targets-file",
        str(targets),
        "--target",
        "local",
        "--url",
        fake.base_url,
    )
    assert code == 1 and "--url' : --target says where to connect" in err.replace("': ", "' : ")
    assert fake.calls == []


def test_target_token_env_unset_is_named(
    capsys, fake: FakeOpenWebUI, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root, targets = _repo(tmp_path, fake.base_url)
    monkeypatch.delenv("LOCAL_TOKEN", raising=False)
    code, _, err = run(capsys, "diff", "-p", str(root), *BUNDLE, "--targets-file", str(targets), "--target", "local")
    assert code == 1 and "LOCAL_TOKEN is not set" in err


def test_diff_without_target_resolves_only_allowed_environment_names_or_fails_before_connecting(
    capsys, fake: FakeOpenWebUI, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root = _bp_dir(tmp_path)
    targets = tmp_path / "targets.yaml"
    args = ["diff", "-p", str(root), *BUNDLE, "--targets-file", str(targets)]
    monkeypatch.delenv("AGENTS_BASE_URL", raising=False)
    code, _, err = run(capsys, *args)
    assert code == 1 and f"{root / 'research.yaml'}:5: backend.url: variable AGENTS_BASE_URL is not set" in err
    assert fake.calls == []
    monkeypatch.setenv("AGENTS_BASE_URL", "https://agents.internal")
    code, _, err = run(capsys, *args)  # set, but no targets file allows it: no fallback to the environment
    assert code == 1 and "the environment has AGENTS_BASE_URL, but" in err and "env_allow" in err, err
    assert fake.calls == []
    targets.write_text("env_allow: [AGENTS_BASE_URL]\ntargets:\n  x: {url: 'https://x.example', token_env: X_TOKEN}\n")
    assert run(capsys, *args)[0] == 0


def test_validate_checks_syntax_offline_and_resolution_with_target(
    capsys, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("AGENTS_BASE_URL", raising=False)
    root, targets = _repo(tmp_path, "https://chat.example.com")
    args = ["validate", "-p", str(root), *BUNDLE, "--targets-file", str(targets)]
    assert run(capsys, *args)[0] == 0
    assert run(capsys, *args, "--target", "local")[0] == 0
    targets.write_text(targets.read_text().replace("AGENTS_BASE_URL", "OTHER"))
    assert run(capsys, *args)[0] == 0  # offline: only syntax
    code, _, err = run(capsys, *args, "--target", "local")
    assert code == 1 and "backend.url: variable AGENTS_BASE_URL is not set" in err


def test_validate_reports_problems_in_the_targets_file(capsys, tmp_path: Path) -> None:
    root, targets = _repo(tmp_path, "https://chat.example.com")
    targets.write_text(targets.read_text().replace("token_env", "token_evn"))
    code, _, err = run(capsys, "validate", "-p", str(root), *BUNDLE, "--targets-file", str(targets))
    assert code == 1 and f"{targets}:4: targets.local.token_evn: unknown field (did you mean 'token_env'?)" in err
