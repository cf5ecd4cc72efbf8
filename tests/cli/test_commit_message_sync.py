"""`provision sync` sends each write's commit message to Open WebUI, and --message replaces it
(the message itself: tests/core/test_commit_message.py)."""

from __future__ import annotations

import provisioner.cli as cli
from provisioner import __version__
from tests.support.builders import REPO
from tests.support.fake_owui import fake_instance_for_cli

GITHUB = {
    "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
    "GITHUB_SERVER_URL": "https://github.example.com/",
    "GITHUB_REPOSITORY": "acme/agents",
    "GITHUB_RUN_ID": "4242",
}


def test_sync_sends_the_message_and_message_flag_overrides(monkeypatch) -> None:
    for key, value in GITHUB.items():
        monkeypatch.setenv(key, value)
    bodies: list[dict] = []
    with fake_instance_for_cli(monkeypatch, "sk-test") as server:
        server.faults.append(
            lambda m, p, b: bodies.append(b) if isinstance(b, dict) and "commit_message" in b else None
        )
        assert cli.main(["sync", "-p", str(REPO / "blueprints"), "--yes"]) == 0
        messages = {b["id"]: b["commit_message"] for b in bodies}
        row = "aihub_agent_pipe.policy-faq.default"
        assert messages[row].startswith(f"provision {__version__} sync of ")
        assert f"of {REPO / 'blueprints' / 'policy_faq.yaml'}; commit" in messages[row]
        assert "commit 0123456789abcdef" in messages[row]
        assert messages["aihub_feature_filter"].startswith(
            f"provision {__version__} sync of the provision bundle's aihub_feature_filter.py"
        )
        # --message on the next write
        server.models[row]["name"] = "edited"
        bodies.clear()
        assert cli.main(["sync", "-p", str(REPO / "blueprints"), "--yes", "--message", "rollback to v3"]) == 0
        assert [b["commit_message"] for b in bodies] == ["rollback to v3"]
