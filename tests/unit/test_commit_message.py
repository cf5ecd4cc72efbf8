"""The message every version sync writes carries into Open WebUI's history (commit_message.py)."""

from __future__ import annotations

import json

from provisioner import __version__
from provisioner.commit_message import MAX_MESSAGE, CommitInfo
from provisioner.observed import observe
from provisioner.plan import make_plan
from provisioner.state import InstanceState, ObjectState

from tests.fake_owui import fake_instance_for_cli
from tests.builders import REPO

GITHUB = {
    "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
    "GITHUB_SERVER_URL": "https://github.example.com/",
    "GITHUB_REPOSITORY": "acme/agents",
    "GITHUB_RUN_ID": "4242",
}
GITLAB = {"CI_COMMIT_SHA": "feedface" * 5, "CI_PIPELINE_URL": "https://gitlab.example.com/acme/agents/-/pipelines/7"}


def test_github_actions_message_names_version_file_commit_and_run() -> None:
    info = CommitInfo.from_env("1.2.3", GITHUB)
    assert info.message("blueprints/support.yaml") == (
        "provision 1.2.3 sync of blueprints/support.yaml; commit 0123456789abcdef0123456789abcdef01234567; "
        "run https://github.example.com/acme/agents/actions/runs/4242"
    )


def test_gitlab_ci_message_names_commit_and_pipeline() -> None:
    message = CommitInfo.from_env("1.2.3", GITLAB).message("b.yaml")
    assert message == f"provision 1.2.3 sync of b.yaml; commit {'feedface' * 5}; run {GITLAB['CI_PIPELINE_URL']}"


def test_outside_ci_message_has_no_commit() -> None:
    assert CommitInfo.from_env("1.2.3", {"GITHUB_RUN_ID": "1"}).message(None) == "provision 1.2.3 sync"


def test_override_replaces_the_message_on_one_line_and_is_cut() -> None:
    info = CommitInfo.from_env("1.2.3", GITHUB, override="  hotfix:\nrevert the\tsupport prompt ")
    assert info.message("b.yaml") == "hotfix: revert the support prompt"
    long = CommitInfo("1", override="x" * 2000).message(None)
    assert len(long) == MAX_MESSAGE and long.endswith("…")


def test_each_write_of_a_plan_carries_its_own_source() -> None:
    row = ObjectState("model", "m1", {"name": "A"}, source="blueprints/a.yaml")
    fn = ObjectState("function", "f1", {"name": "F", "content": "x"}, source="functions/f1.py")
    plan = make_plan(InstanceState(functions={"f1": fn}, models={"m1": row}), observe([], []),
                     commit=CommitInfo("9.9.9", commit="abc"))
    messages = {c.id: c.body["commit_message"] for c in plan.changes}
    assert messages == {
        "f1": "provision 9.9.9 sync of functions/f1.py; commit abc",
        "m1": "provision 9.9.9 sync of blueprints/a.yaml; commit abc",
    }


def test_sync_sends_the_message_and_message_flag_overrides(monkeypatch, tmp_path) -> None:
    import provisioner.cli as cli

    for key, value in GITHUB.items():
        monkeypatch.setenv(key, value)
    bodies: list[dict] = []
    with fake_instance_for_cli(monkeypatch, "sk-test") as server:
        server.faults.append(lambda m, p, b: bodies.append(b) if isinstance(b, dict) and "commit_message" in b else None)
        assert cli.main(["sync", "-p", str(REPO / "blueprints"), "--yes"]) == 0
        messages = {b["id"]: b["commit_message"] for b in bodies}
        row = "aihub_agent_pipe.policy-faq.default"
        assert messages[row].startswith(f"provision {__version__} sync of ")
        assert f"of {REPO / 'blueprints' / 'policy_faq.yaml'}; commit" in messages[row]
        assert "commit 0123456789abcdef" in messages[row]
        assert messages["aihub_feature_filter"].startswith(f"provision {__version__} sync of the provision bundle's aihub_feature_filter.py")
        # --message on the next write
        server.models[row]["name"] = "edited"
        bodies.clear()
        assert cli.main(["sync", "-p", str(REPO / "blueprints"), "--yes", "--message", "rollback to v3"]) == 0
        assert [b["commit_message"] for b in bodies] == ["rollback to v3"]
    assert json.dumps(messages)  # plain strings
