"""The message every version sync writes carries into Open WebUI's history (commit_message.py)."""

from __future__ import annotations

from provisioner.commit_message import MAX_MESSAGE, CommitInfo
from provisioner.observed import observe
from provisioner.plan import make_plan
from provisioner.state import InstanceState, ObjectState

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
