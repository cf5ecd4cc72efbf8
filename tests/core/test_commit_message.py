"""The message every version sync writes carries into Open WebUI's history (commit_message.py)."""

from __future__ import annotations

import pytest

from provisioner.commit_message import MAX_MESSAGE, CommitInfo
from provisioner.openwebui.observed import observe
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
    plan = make_plan(
        InstanceState(functions={"f1": fn}, models={"m1": row}),
        observe([], []),
        commit=CommitInfo("9.9.9", commit="abc"),
    )
    messages = {c.id: (c.body or {})["commit_message"] for c in plan.changes}
    assert messages == {
        "f1": "provision 9.9.9 sync of functions/f1.py; commit abc",
        "m1": "provision 9.9.9 sync of blueprints/a.yaml; commit abc",
    }


# --- what reaches Open WebUI's history is what a reader sees (issue 29, finding 9c) ------------------

HIDDEN = "\x1b[2J\x00\x07\u202e\u2066\u200b\u200d\u2060\ufeff\u00ad\u061c"


def test_control_bidi_and_zero_width_characters_never_reach_the_history() -> None:
    from provisioner.text import first_hidden

    info = CommitInfo.from_env("1.2.3", {**GITHUB, "GITHUB_SHA": f"abc{HIDDEN}def"}, override=None)
    message = info.message(f"blueprints/sup{HIDDEN}port.yaml")
    assert first_hidden(message) is None, ascii(message)
    assert "blueprints/sup[2Jport.yaml" in message and "commit abc[2Jdef" in message  # dropped, not replaced
    override = CommitInfo("1", override=f"hot\u202efix:{HIDDEN}\u2028revert\u2029it").message(None)
    assert override == "hotfix:[2J revert it", ascii(override)


def test_a_message_of_hidden_characters_alone_falls_back_to_the_default() -> None:
    assert (
        CommitInfo.from_env("1.2.3", {}, override=HIDDEN.replace("[2J", "")).message("b.yaml")
        == "provision 1.2.3 sync of b.yaml"
    )


@pytest.mark.parametrize(
    "env",
    [
        {"CI_PIPELINE_URL": "javascript:alert(document.cookie)"},
        {"CI_PIPELINE_URL": "java\u200bscript:alert(1)"},
        {"CI_PIPELINE_URL": "JavaScript://x.example/%0aalert(1)"},
        {"CI_PIPELINE_URL": "data:text/html,<script>alert(1)</script>"},
        {"CI_PIPELINE_URL": "//evil.example/run"},
        {"CI_PIPELINE_URL": "https://ok.example/run javascript:alert(1)"},
        {"CI_PIPELINE_URL": "https://user:pw@gitlab.example.com/p/7"},
        {"GITHUB_SERVER_URL": "javascript:alert(1)//", "GITHUB_REPOSITORY": "a/b", "GITHUB_RUN_ID": "1"},
    ],
)
def test_a_run_url_that_is_not_plain_http_or_https_is_left_out(env: dict[str, str]) -> None:
    info = CommitInfo.from_env("1.2.3", {"CI_COMMIT_SHA": "abc", **env})
    assert info.run_url is None
    assert info.message("b.yaml") == "provision 1.2.3 sync of b.yaml; commit abc"


def test_an_http_run_url_is_kept() -> None:
    assert CommitInfo.from_env("1", {"CI_PIPELINE_URL": "http://ci.internal/p/7"}).run_url == "http://ci.internal/p/7"
