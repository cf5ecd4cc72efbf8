"""Day two on a real Open WebUI 0.12.4: what sync leaves in Open WebUI's own version history,
groups that do not exist yet, and edits made in Open WebUI traced to the admin who made them.
"""

from __future__ import annotations

import pytest

from provisioner import __version__

try:  # tests/e2e may become a package; work either way (as conftest.py does)
    from .chat_support import get, provision
except ImportError:
    from chat_support import get, provision

POLICY = "aihub_agent_pipe.policy-faq.default"
GITHUB_ENV = {
    "GITHUB_SHA": "c0ffee0123456789c0ffee0123456789c0ffee01",
    "GITHUB_SERVER_URL": "https://github.example.com",
    "GITHUB_REPOSITORY": "acme/agents",
    "GITHUB_RUN_ID": "9001",
}


def test_sync_writes_its_commit_message_into_open_webui_history(owui, bundle, capsys, monkeypatch) -> None:
    for key, value in GITHUB_ENV.items():
        monkeypatch.setenv(key, value)
    code, out, err = provision(capsys, "sync", *bundle, "--yes")
    assert code == 0, out + err
    [entry] = get(owui, "/api/v1/models/model/history", id=POLICY)
    message = entry["commit_message"]
    assert message.startswith(f"provision {__version__} sync of ")
    assert message.split(" sync of ")[1].split(";")[0].endswith("policy_faq.yaml")
    assert f"commit {GITHUB_ENV['GITHUB_SHA']}" in message
    assert "run https://github.example.com/acme/agents/actions/runs/9001" in message
    [fn_entry] = get(owui, "/api/v1/functions/id/aihub_feature_filter/history")
    assert fn_entry["commit_message"].startswith(
        f"provision {__version__} sync of the provision bundle's aihub_feature_filter.py; commit c0ffee"
    )

    # A changed row gets a new version with the --message given.
    with owui.client() as http:
        row = http.get("/api/v1/models/model", params={"id": POLICY}).raise_for_status().json()
        form = {k: row[k] for k in ("id", "name", "meta", "params")}
        form["meta"]["description"] = "edited by hand"
        http.post("/api/v1/models/model/update", json=form).raise_for_status()
    code, out, err = provision(capsys, "sync", *bundle, "--yes", "--message", "restore the FAQ description")
    assert code == 0, out + err
    history = get(owui, "/api/v1/models/model/history", id=POLICY)
    assert [h["commit_message"] for h in history][:1] == ["restore the FAQ description"]
    assert len(history) == 3
