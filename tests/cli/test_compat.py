"""Every Open WebUI release from 0.6 on, through the one compat table (respx fake per release).

The fake answers as each release was observed to (issue 10): no `/models/all` before 0.11.4 (the
web page instead), `access_control` on 0.6/0.7 (a write without it makes the row public), a 500
for an update without `access_grants` on 0.9/0.10, the access endpoint missing on 0.6/0.7.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from provisioner.errors import ConfigError
from provisioner.openwebui import compat
from tests.support.builders import REPO, blueprint, write_blueprint_dir
from tests.support.fake_owui import SPA_PAGE, FakeOpenWebUI
from tests.support.run_cli import run_cli

TOKEN = "sk-compat-test-token-0123456789"
BUNDLE = ["--bundle", str(REPO / "owui_functions")]
RANGES = ["0.6.27", "0.6.43", "0.7.2", "0.8.12", "0.9.6", "0.10.2", "0.11.0", "0.11.3", "0.11.4", "0.12.0", "0.12.4"]


run = functools.partial(run_cli, secrets=(TOKEN,))


def access_blueprints(root: Path) -> list[str]:
    """One agent per kind of access: public, private, group-only."""
    agents: list[dict[str, Any]] = [
        {"id": "open", "name": "Open", "access": "public"},
        {"id": "closed", "name": "Closed", "access": "private"},
        {"id": "team", "name": "Team", "access": {"groups": ["Support"]}},
    ]
    path = write_blueprint_dir(root, [blueprint("demo", agents=agents)])
    return ["-p", str(path), *BUNDLE]


# -- the table ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "list_all", "access_control", "access_in_update", "priority_in_valves"),
    [
        ("0.6.27", False, True, True, True),
        ("0.6.43", False, True, True, True),
        ("0.7.2", False, True, True, True),
        ("0.8.12", False, False, True, True),
        ("0.9.6", False, False, True, False),
        ("0.10.2", False, False, True, False),
        ("0.11.3", False, False, True, False),
        ("0.11.4", True, False, True, False),
        ("0.12.0", True, False, False, False),
        ("0.12.4", True, False, False, False),
        ("0.13.1", True, False, False, False),
    ],
)
def test_each_release_range_selects_its_row(
    version, list_all, access_control, access_in_update, priority_in_valves
) -> None:
    row = compat.select(version)
    assert (row.list_all, row.access_control, row.access_in_update, row.filter_priority_in_valves) == (
        list_all,
        access_control,
        access_in_update,
        priority_in_valves,
    )


@pytest.mark.parametrize("version", ["0.5.20", "0.6.0", "0.6.5", "0.6.26"])
def test_releases_before_0_6_27_are_refused_by_name(version: str) -> None:
    """0.6.26 and earlier list functions without their valves (and before 0.6.19 no model rows)."""
    with pytest.raises(
        ConfigError, match=rf"Open WebUI {re.escape(version)} is not supported: provision needs 0\.6\.27 or later"
    ):
        compat.select(version)


def test_only_the_exact_releases_the_suite_runs_count_as_tested() -> None:
    assert all(compat.select(v).tested for v in compat.TESTED)
    assert not any(compat.select(v).tested for v in ("0.11.3", "0.12.3", "0.13.0", "nightly"))


@pytest.mark.parametrize(
    "control", [None, {}, {"read": {"group_ids": ["g1"], "user_ids": []}, "write": {"group_ids": [], "user_ids": []}}]
)
def test_access_control_round_trips_through_grants(control) -> None:
    grants = compat.control_to_grants(control)
    back = compat.grants_to_control(grants)
    if control is None:
        assert back is None
    else:
        assert compat.control_to_grants(back) == grants


# -- the CLI against each release -----------------------------------------------------------


@pytest.mark.parametrize("version", RANGES)
def test_sync_is_right_and_idempotent_on_every_release(
    capsys, fake: FakeOpenWebUI, tmp_path: Path, version: str
) -> None:
    fake.version = version
    fake.groups = [{"id": "g-support", "name": "Support"}]
    args = access_blueprints(tmp_path / "bp")
    code, _, err = run(capsys, "sync", "--yes", *args)
    assert code == 0, err
    rows = {mid.rsplit(".", 1)[1]: row for mid, row in fake.models.items()}
    row = compat.select(version)
    if row.access_control:
        assert rows["open"]["access_control"] is None
        assert rows["closed"]["access_control"] == {
            "read": {"group_ids": [], "user_ids": []},
            "write": {"group_ids": [], "user_ids": []},
        }
        assert rows["team"]["access_control"]["read"]["group_ids"] == ["g-support"]
    else:
        assert [g["principal_id"] for g in rows["open"]["access_grants"]] == ["*"]
        assert rows["closed"]["access_grants"] == []
        assert [g["principal_id"] for g in rows["team"]["access_grants"]] == ["g-support"]
    fake.calls.clear()
    code, out, _ = run(capsys, "diff", *args, "--detailed-exitcode")
    assert code == 0, out
    assert fake.writes == []


@pytest.mark.parametrize("version", RANGES)
def test_a_changed_row_keeps_its_access_on_every_release(
    capsys, fake: FakeOpenWebUI, tmp_path: Path, version: str
) -> None:
    """0.6/0.7 make a row public on any update without access_control; 0.9/0.10 answer 500."""
    fake.version = version
    fake.groups = [{"id": "g-support", "name": "Support"}]
    root = tmp_path / "bp"
    args = access_blueprints(root)
    assert run(capsys, "sync", "--yes", *args)[0] == 0
    text = (root / "demo.yaml").read_text().replace("name: Closed", "name: Closed (renamed)")
    (root / "demo.yaml").write_text(text)
    code, _, err = run(capsys, "sync", "--yes", *args)
    assert code == 0, err
    closed = fake.models["aihub_agent_pipe.demo.closed"]
    assert closed["name"] == "Closed (renamed)"
    assert run(capsys, "diff", *args, "--detailed-exitcode")[0] == 0
    if compat.select(version).access_control:
        assert closed["access_control"] is not None  # not public
    else:
        assert closed["access_grants"] == []


@pytest.mark.parametrize("version", RANGES)
def test_access_drift_is_put_back_on_every_release(capsys, fake: FakeOpenWebUI, tmp_path: Path, version: str) -> None:
    fake.version = version
    fake.groups = [{"id": "g-support", "name": "Support"}]
    args = access_blueprints(tmp_path / "bp")
    assert run(capsys, "sync", "--yes", *args)[0] == 0
    team = fake.models["aihub_agent_pipe.demo.team"]
    if compat.select(version).access_control:
        team["access_control"] = None  # an admin made it public by hand
    else:
        team["access_grants"] = [dict(compat.PUBLIC_GRANT)]
    code, out, _ = run(capsys, "diff", *args, "-o", "json")
    [change] = json.loads(out)["changes"]
    assert change["id"] == "aihub_agent_pipe.demo.team" and [f["path"] for f in change["fields"]] == ["access_grants"]
    assert run(capsys, "sync", "--yes", *args)[0] == 0
    assert compat.select(version).observed_grants(team) == [
        {"principal_type": "group", "principal_id": "g-support", "permission": "read"}
    ]


@pytest.mark.parametrize(
    ("version", "stored"), [("0.6.43", True), ("0.7.2", True), ("0.8.12", True), ("0.9.6", False), ("0.12.4", False)]
)
def test_filter_priority_is_stored_where_the_release_reads_only_stored_valves(
    capsys, fake: FakeOpenWebUI, version: str, stored: bool
) -> None:
    fake.version = version
    code, _, err = run(capsys, "sync", "--yes", "-p", str(REPO / "blueprints"), *BUNDLE)
    assert code == 0, err
    priorities = {fid: fn["valves"].get("priority") for fid, fn in fake.functions.items() if fid != "aihub_agent_pipe"}
    assert set(priorities) >= {"aihub_feature_filter", "aihub_toggle_user_files"}
    expected = {fid: (0 if fid == "aihub_feature_filter" else 10) if stored else None for fid in priorities}
    assert priorities == expected


# -- errors ---------------------------------------------------------------------------------


def test_a_release_before_0_6_is_refused_before_anything_is_written(capsys, fake: FakeOpenWebUI) -> None:
    fake.version = "0.5.20"
    code, _, err = run(capsys, "sync", "--yes", "-p", str(REPO / "blueprints"), *BUNDLE)
    assert code == 1 and "Open WebUI 0.5.20 is not supported" in err
    assert fake.writes == []


def test_a_missing_endpoint_is_named_with_the_version(capsys, fake: FakeOpenWebUI) -> None:
    """A release that claims /models/all but serves its web page there (as 0.11.0-0.11.3 do)."""
    import httpx

    fake.version = "0.11.4"
    fake.faults.append(
        lambda method, path, body: (
            httpx.Response(200, text=SPA_PAGE, headers={"content-type": "text/html"})
            if path == "/api/v1/models/all"
            else None
        )
    )
    code, _, err = run(capsys, "diff", "-p", str(REPO / "blueprints"), *BUNDLE)
    assert code == 1
    assert "Open WebUI 0.11.4 has no endpoint GET /api/v1/models/all" in err
    assert "is this an Open WebUI URL" not in err


def test_a_web_page_instead_of_the_version_still_asks_whether_the_url_is_open_webui(
    capsys, fake: FakeOpenWebUI
) -> None:
    import httpx

    fake.faults.append(lambda method, path, body: httpx.Response(200, text="<html>router login</html>"))
    code, _, err = run(capsys, "diff", "-p", str(REPO / "blueprints"), *BUNDLE)
    assert code == 1 and "GET /api/version: answer is not JSON (is this an Open WebUI URL?)" in err


@pytest.mark.parametrize(
    ("version", "warned"), [("0.12.4", False), ("0.6.43", False), ("0.11.2", True), ("0.12.5", True)]
)
def test_the_untested_warning_covers_exactly_the_untested_releases(
    capsys, fake: FakeOpenWebUI, version: str, warned: bool
) -> None:
    fake.version = version
    code, _, err = run(capsys, "diff", "-p", str(REPO / "blueprints"), *BUNDLE)
    assert code == 0 and ("outside the tested range" in err) is warned


# -- 0.6/0.7: an empty or missing access_control is private, never public ------------------------


@pytest.mark.parametrize("version", ["0.6.43", "0.7.2"])
@pytest.mark.parametrize(
    "row", [{"id": "x"}, {"id": "x", "access_control": {}}, {"id": "x", "access_control": {"read": {}}}]
)
def test_a_row_with_empty_or_missing_access_control_is_observed_as_private(version: str, row: dict) -> None:
    """On 0.6/0.7 only `access_control: null` is public; reading `{}` or a missing key as public
    would let a public agent's plan skip the write and leave, or a private one's plan call it public."""
    grants = compat.select(version).observed_grants(row)
    assert grants == []
    assert compat.PUBLIC_GRANT not in grants


@pytest.mark.parametrize("version", ["0.6.43", "0.7.2"])
@pytest.mark.parametrize("body", [{"id": "x"}, {"id": "x", "access_grants": []}, {"id": "x", "access_grants": None}])
def test_a_write_without_grants_sends_a_private_access_control_never_null_or_empty(version: str, body: dict) -> None:
    """0.6/0.7 make a row public when the write's access_control is null (or absent): a private
    row's write must carry read and write with empty id lists."""
    form = compat.select(version).model_form(body)
    private: dict[str, dict[str, list[str]]] = {
        "read": {"group_ids": [], "user_ids": []},
        "write": {"group_ids": [], "user_ids": []},
    }
    assert "access_grants" not in form and form["access_control"] == private
