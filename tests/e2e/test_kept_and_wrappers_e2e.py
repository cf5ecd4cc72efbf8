"""Through a real Open WebUI 0.12.4: a kept agent keeps answering (issue 8 point 2), and a
workspace model wrapping an agent is left to its own filters and named by diff (point 5)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.chat_support import AGENT_ANSWER, ChatRig, chat, provision

DESK = "aihub_agent_pipe.support-desk.tier2"
RESEARCH = "aihub_agent_pipe.research-assistant.default"
WRAPPER = "my-researcher"


def own_copy(chat_bundle: list[str], tmp_path: Path) -> tuple[Path, list[str]]:
    """The chat bundle's blueprint dir copied, so a test can delete a blueprint from it."""
    source = Path(chat_bundle[chat_bundle.index("-p") + 1])
    root = tmp_path / "blueprints"
    shutil.copytree(source, root)
    args = list(chat_bundle)
    args[args.index("-p") + 1] = str(root)
    return root, args


def test_an_agent_kept_without_prune_keeps_answering_until_pruned(
    chat_rig: ChatRig, chat_bundle, tmp_path, capsys
) -> None:
    root, args = own_copy(chat_bundle, tmp_path)
    (root / "support_desk.yaml").unlink()
    code, out, err = provision(capsys, "sync", *args)
    assert code == 0, out + err
    assert (
        f"{DESK}  (kept and still served by the pipe from {chat_rig.server.agent_url} (its last backend) until --prune)"
        in err
    )
    seen = chat(chat_rig, DESK, features={"web_search": True}, filter_ids=["aihub_toggle_deep_research"])
    assert sorted(seen.forwarded) == ["deep_research", "web_search"]

    code, out, err = provision(capsys, "sync", *args, "--prune")
    assert code == 0, out + err
    with chat_rig.client(timeout=60) as http:
        response = http.post(
            "/api/chat/completions", json={"model": DESK, "messages": [{"role": "user", "content": "hi"}]}
        )
    assert response.status_code != 200 and AGENT_ANSWER not in response.text


def test_a_wrapper_runs_its_own_filters_only_and_diff_names_it(chat_rig: ChatRig, chat_bundle, capsys) -> None:
    row = {
        "id": WRAPPER,
        "base_model_id": RESEARCH,
        "name": "My researcher",
        "params": {},
        "access_grants": [],
        "meta": {
            "description": "A user's own preset on the research agent",
            "capabilities": {"web_search": True, "code_interpreter": True},
        },
    }
    with chat_rig.client() as http:
        http.post("/api/v1/models/create", json=row).raise_for_status()
        http.get("/api/models", params={"refresh": "true"}).raise_for_status()
    features = {"web_search": True, "code_interpreter": True}
    seen = chat(chat_rig, WRAPPER, features=dict(features), filter_ids=["aihub_toggle_web_search"])
    # Neither the feature filter nor the agent's toggles run: Open WebUI's own toggles are left
    # as sent, and the agent is asked for nothing.
    assert seen.forwarded == []
    assert {k: seen.features.get(k) for k in features} == features
    assert seen.requested is None

    code, out, err = provision(capsys, "diff", *chat_bundle)
    assert code == 0 and "No changes." in out
    assert "Warning: 1 workspace model(s) wrap an agent" in err
    assert f"model {WRAPPER} (owner: Local Admin <admin@localhost>) wraps {RESEARCH}" in err
    code, out, err = provision(capsys, "list")
    assert code == 0 and f"model {WRAPPER} (owner: Local Admin <admin@localhost>)" in err
