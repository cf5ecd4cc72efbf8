"""Drift: the fingerprint sync leaves in the marker, which side moved, and who moved it."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console

from provisioner.fingerprint import digest, fingerprint, origin
from provisioner.openwebui.drift import attribute, find_drift
from provisioner.openwebui.observed import observe
from provisioner.plan import make_plan
from provisioner.render_drift import drift_markdown, render_drift_text
from provisioner.state import InstanceState, ObjectState

MARKER = {"managed_by": "aihub-provision", "blueprint": "b", "agent": "a"}


def desired(**fields) -> InstanceState:
    base = {"name": "A", "meta.description": "d", "access_grants": [], "meta.aihub": MARKER}
    return InstanceState(models={"m": ObjectState("model", "m", {**base, **fields}, written_by="1.0")})


def synced_row(state: InstanceState) -> dict:
    """The row as Open WebUI holds it after sync wrote the plan's create body."""
    [change] = make_plan(state, observe([], [])).changes
    body = json.loads(json.dumps(change.body))
    return {**body, "access_grants": body.get("access_grants", [])}


def test_sync_records_a_hash_per_field_but_not_of_secrets_or_the_marker() -> None:
    target = ObjectState(
        "function",
        "f",
        {"name": "F", "valves.KEY": "s3cret", "is_active": True, "meta.aihub": MARKER},
        sensitive=frozenset({"valves.KEY"}),
    )
    assert fingerprint(target) == {"name": digest("F")}


def test_each_side_of_a_change_is_told_apart() -> None:
    written = {"name": digest("old")}
    assert origin("name", "edited", "old", written) == "openwebui"
    assert origin("name", "old", "new", written) == "blueprint"
    assert origin("name", "edited", "new", written) == "both"
    assert origin("name", "edited", "new", None) is None


def test_an_edit_in_open_webui_is_drift_and_marked_in_the_plan() -> None:
    row = synced_row(desired())
    assert row["meta"]["aihub"]["written"]["meta.description"] == digest("d")
    assert find_drift(observe([row], [])) == ([], [])
    row["meta"]["description"] = "edited by hand"
    [item], untracked = find_drift(observe([row], []))
    assert (item.id, item.paths, untracked) == ("m", ("meta.description",), [])
    [change] = make_plan(desired(name="B"), observe([row], [])).changes
    assert {f.path: f.origin for f in change.fields} == {"meta.description": "openwebui", "name": "blueprint"}
    assert not change.rewrite_marker or change.fields  # the update writes the new fingerprint


def test_a_blueprint_access_change_rewrites_the_fingerprint() -> None:
    row = synced_row(desired())
    [change] = make_plan(
        desired(access_grants=[{"principal_type": "user", "principal_id": "*", "permission": "read"}]),
        observe([row], []),
    ).changes
    assert [f.path for f in change.fields] == ["access_grants"] and change.rewrite_marker
    # an access change made in Open WebUI and put back by sync leaves the fingerprint as it is
    row["access_grants"] = [{"principal_type": "user", "principal_id": "*", "permission": "read"}]
    [change] = make_plan(desired(), observe([row], [])).changes
    assert change.fields[0].origin == "openwebui" and not change.rewrite_marker


def test_rows_written_before_fingerprints_are_untracked_not_drifted() -> None:
    row = {"id": "m", "name": "A", "meta": {"aihub": MARKER}}
    assert find_drift(observe([row], [])) == ([], [("model", "m")])


def test_the_oldest_of_the_newest_versions_holding_the_live_value_is_its_author() -> None:
    entries = [{"id": "3", "user_id": "bob"}, {"id": "2", "user_id": "alice"}, {"id": "1", "user_id": "provision"}]
    snapshots = {
        "3": {"name": "Bob's", "meta": {"description": "Alice's"}},
        "2": {"name": "A", "meta": {"description": "Alice's"}},
        "1": {"name": "A", "meta": {"description": "d"}},
    }
    found = attribute(
        "model",
        ["meta.description", "name", "access_grants"],
        {"meta.description": "Alice's", "name": "Bob's", "access_grants": []},
        entries,
        lambda e: snapshots[e["id"]],
    )
    assert {p: e["user_id"] for p, e in found.items()} == {"meta.description": "alice", "name": "bob"}


def test_drift_renders_who_and_when_escaped(capsys) -> None:
    entries = [
        {
            "kind": "model",
            "id": "m",
            "history": True,
            "fields": [
                {
                    "path": "meta.description",
                    "changed_by": {
                        "name": "Eve | [b]x[/b]",
                        "email": "e@x",
                        "at": 0,
                        "at_text": "1970-01-01 00:00 UTC",
                    },
                },
                {"path": "access_grants", "changed_by": None},
            ],
        }
    ]
    out = Console(width=200, record=True, no_color=True)
    render_drift_text(entries, out, heading="Changed:")
    text = out.export_text()
    assert "meta.description  changed in Open WebUI by Eve | [b]x[/b] <e@x>, 1970-01-01 00:00 UTC" in text
    assert "access_grants     changed in Open WebUI (not in Open WebUI's version history)" in text
    markdown = drift_markdown(entries)
    assert "| model `m` | `meta.description` | `Eve \\| [b]x[/b] <e@x>` | 1970-01-01 00:00 UTC |" in markdown
    old = [{**entries[0], "history": False}]
    console = Console(width=200, record=True)
    render_drift_text(old, console, heading="")
    assert "no name: Open WebUI keeps no version history before 0.12" in console.export_text()


def test_versions_are_ordered_by_their_parent_links_not_the_listing() -> None:
    from provisioner.openwebui.drift import in_order

    listed: list[dict[str, Any]] = [
        {"id": "b", "parent_id": "c"},
        {"id": "a", "parent_id": None},
        {"id": "c", "parent_id": "a"},
    ]
    assert [e["id"] for e in in_order(listed, "b")] == ["b", "c", "a"]
    assert [e["id"] for e in in_order(listed, "unknown")] == ["b", "a", "c"]  # no head: as listed


def test_a_value_that_went_a_b_a_is_credited_to_the_newest_version_that_brought_it_back() -> None:
    # Newest first: carol put "A" back over bob's "B"; alice wrote "A" first. Carol's is the live "A".
    entries = [
        {"id": "4", "user_id": "dave"},
        {"id": "3", "user_id": "carol"},
        {"id": "2", "user_id": "bob"},
        {"id": "1", "user_id": "alice"},
    ]
    snapshots = {
        "4": {"name": "A", "meta": {"description": "dave's"}},
        "3": {"name": "A", "meta": {"description": "x"}},
        "2": {"name": "B", "meta": {"description": "x"}},
        "1": {"name": "A", "meta": {"description": "x"}},
    }
    found = attribute("model", ["name"], {"name": "A"}, entries, lambda e: snapshots[e["id"]])
    assert {p: e["user_id"] for p, e in found.items()} == {"name": "carol"}
