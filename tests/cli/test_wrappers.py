"""Workspace models that wrap an agent: named in diff and list, and the feature filter leaves them
alone (issue 8 point 5)."""

from __future__ import annotations

import functools
import json

from tests.support.builders import REPO
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import run_cli

TOKEN = "sk-wrapper-test-token-0123456789"
SAMPLES = ["-p", str(REPO / "blueprints"), "--bundle", str(REPO / "owui_functions")]
AGENT = "aihub_agent_pipe.research-assistant.default"


run = functools.partial(run_cli, secrets=(TOKEN,))


def add_wrappers(fake: FakeOpenWebUI) -> None:
    fake.users["u-alice"] = {"id": "u-alice", "name": "Alice", "email": "alice@example.com"}
    fake.models["my-researcher"] = {
        "id": "my-researcher",
        "base_model_id": AGENT,
        "name": "My researcher",
        "user_id": "u-alice",
        "meta": {"capabilities": {"web_search": True}},
        "params": {"system": "Be brief."},
        "access_grants": [],
    }
    fake.models["gone-owner"] = {
        "id": "gone-owner",
        "base_model_id": "aihub_agent_pipe.policy-faq.default",
        "name": "Old",
        "user_id": "u-gone",
        "meta": {},
        "params": {},
        "access_grants": [],
    }
    fake.models["plain-preset"] = {  # wraps a plain LLM: not ours to warn about
        "id": "plain-preset",
        "base_model_id": "gpt-4o",
        "name": "Preset",
        "user_id": "u-alice",
        "meta": {},
        "params": {},
        "access_grants": [],
    }


def test_diff_names_each_wrapper_with_its_owner_and_changes_nothing_of_it(capsys, fake) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    add_wrappers(fake)
    before = json.loads(json.dumps(fake.models["my-researcher"]))
    code, out, err = run(capsys, "diff", *SAMPLES)
    assert code == 0 and "No changes." in out
    assert "Warning: 2 workspace model(s) wrap an agent" in err
    assert f"model my-researcher (owner: Alice <alice@example.com>) wraps {AGENT}" in err
    assert "model gone-owner (owner: u-gone) wraps aihub_agent_pipe.policy-faq.default" in err
    assert "plain-preset" not in err
    code, out, _ = run(capsys, "sync", *SAMPLES, "--prune", "-o", "json")
    assert code == 0 and json.loads(out)["plan"]["wrappers"][0] == {
        "id": "gone-owner",
        "name": "Old",
        "base_model_id": "aihub_agent_pipe.policy-faq.default",
        "owner": "u-gone",
    }
    assert fake.models["my-researcher"] == before  # never changed, never pruned


def test_list_names_wrappers_in_text_and_json(capsys, fake) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    add_wrappers(fake)
    code, out, err = run(capsys, "list")
    assert code == 0 and "my-researcher (owner: Alice <alice@example.com>)" in err
    code, out, _ = run(capsys, "list", "-o", "json")
    assert [w["id"] for w in json.loads(out)["wrappers"]] == ["gone-owner", "my-researcher"]


def test_without_wrappers_there_is_no_warning(capsys, fake) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    code, out, err = run(capsys, "diff", *SAMPLES)
    assert code == 0 and "wrap" not in err


def test_the_feature_filter_leaves_a_wrappers_request_as_open_webui_made_it() -> None:
    # A wrapper's registry entry carries the wrapper's own meta (no ownership marker) and names
    # the agent only as its base model. Should the wrapper list the feature filter among its own
    # filterIds, the filter still changes nothing: its own capabilities and filters apply.
    from tests.support.filter_support import call_like_openwebui, ff

    wrapper = {
        "id": "my-researcher",
        "info": {
            "base_model_id": AGENT,
            "meta": {"capabilities": {"web_search": True}, "filterIds": ["aihub_feature_filter"]},
        },
    }
    features = {"web_search": True, "image_generation": False, "code_interpreter": True, "memory": True}
    metadata = {"features": features}
    body = {"features": features, "metadata": metadata}
    result = call_like_openwebui(ff.Filter().inlet, body, metadata=metadata, model=wrapper)
    assert result["features"] == {
        "web_search": True,
        "image_generation": False,
        "code_interpreter": True,
        "memory": True,
    }
    assert "aihub_requested_features" not in metadata


def test_a_wrapper_with_no_owner_is_named_unknown_and_no_user_is_looked_up(capsys, fake) -> None:
    """A row without `user_id` (written by an admin script, or its owner field cleared)."""
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    for owner in ({}, {"user_id": None}, {"user_id": ""}):
        fake.models["ownerless"] = {
            "id": "ownerless",
            "base_model_id": AGENT,
            "name": "Nobody's",
            **owner,
            "meta": {},
            "params": {},
            "access_grants": [],
        }
        fake.calls.clear()
        code, out, err = run(capsys, "diff", *SAMPLES)
        assert code == 0 and f"model ownerless (owner: (unknown)) wraps {AGENT}" in err, (owner, err)
        assert not [path for _, path in fake.calls if path.startswith("/api/v1/users/")]
        code, out, _ = run(capsys, "diff", *SAMPLES, "-o", "json")
        assert json.loads(out)["wrappers"] == [
            {"id": "ownerless", "name": "Nobody's", "base_model_id": AGENT, "owner": "(unknown)"}
        ]
