"""Groups a blueprint grants access to that do not exist on the instance yet. Pure.

Open WebUI creates a group from the identity provider only when a first member logs in, so a
fresh instance often lacks the groups the blueprints name. Each target chooses
(`missing_groups` in targets.yaml):

- `fail` (default): validation error naming the file, line and group; nothing is written.
- `skip`: the grant is left out (the agent stays private to admins until the group exists and
  sync runs again), and the plan says so.
- `create`: the plan shows the group as one to create, with a placeholder id in the grants
  (`<new group NAME>`); sync creates the empty group, marked as provision's own (`data.aihub`),
  only once the plan is confirmed, before it writes the rows, and writes its real id instead.
  `--prune` deletes such a group once no blueprint names it, and never one that has members.

Layer: core.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from .blueprints import GroupAccess
from .loader import Catalog
from .state import MANAGED_BY, MARKER_KEY

MissingGroups = Literal["fail", "skip", "create"]
MISSING_GROUP_MODES: tuple[str, ...] = ("fail", "skip", "create")
GROUP_DESCRIPTION = "Created by provision for agent access; members come from your identity provider or an admin."


def named_groups(catalog: Catalog) -> list[str]:
    """Every group name an agent's access names, sorted."""
    return sorted(
        {
            name
            for lb in catalog.blueprints
            for agent in lb.blueprint.agents
            if isinstance(agent.access, GroupAccess)
            for name in agent.access.groups
        }
    )


def missing_groups(catalog: Catalog, live: Mapping[str, str]) -> list[str]:
    """The names the blueprints grant access to that the instance has no group for."""
    return [name for name in named_groups(catalog) if name not in live]


def placeholder_id(name: str) -> str:
    """The grant's principal in a plan made before the group exists (diff with `create`)."""
    return f"<new group {name}>"


def group_form(name: str) -> dict[str, Any]:
    """The create body: an empty group with our marker (in `data`, which Open WebUI keeps)."""
    return {"name": name, "description": GROUP_DESCRIPTION, "data": {MARKER_KEY: {"managed_by": MANAGED_BY}}}


def is_own_group(group: Mapping[str, Any]) -> bool:
    data = group.get("data")
    marker = data.get(MARKER_KEY) if isinstance(data, Mapping) else None
    return isinstance(marker, Mapping) and marker.get("managed_by") == MANAGED_BY


def member_count(group: Mapping[str, Any]) -> int | None:
    """How many members the listing says the group has; None when it does not say."""
    count = group.get("member_count")
    if isinstance(count, int):
        return count
    users = group.get("user_ids")  # releases before member_count listed the ids
    return len(users) if isinstance(users, list) else None


def subtree(group: Mapping[str, Any], groups: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The group and, where groups nest (0.12), every group below it, nearest first."""
    below: dict[str, list[Mapping[str, Any]]] = {}
    for g in groups:
        if g.get("parent_group_id"):
            below.setdefault(str(g["parent_group_id"]), []).append(g)
    found, seen, i = [group], {str(group.get("id"))}, 0
    while i < len(found):
        for child in below.get(str(found[i].get("id")), []):
            if str(child.get("id")) not in seen:
                seen.add(str(child.get("id")))
                found.append(child)
        i += 1
    return found


def group_has_members(group: Mapping[str, Any], groups: Sequence[Mapping[str, Any]]) -> bool:
    """Whether anyone gets what is given to a group: its own members (the listing's count is only
    those) or, where groups nest (0.12), a member of any group below it, whom Open WebUI counts as a
    member of every group above. An unknown count counts as members."""
    return any(member_count(g) != 0 for g in subtree(group, groups))


def groups_below_that_may_upload(group: Mapping[str, Any], groups: Sequence[Mapping[str, Any]]) -> list[str]:
    """The groups below a group whose own members may upload files: those members count as the
    group's own (0.12) and have their own group's permissions too, so they see the attach button
    on an agent given to the group though the group itself grants nothing."""
    return sorted(
        str(g.get("name"))
        for g in subtree(group, groups)[1:]
        if member_count(g) != 0 and group_file_upload(g, groups) is True
    )


def group_file_upload(group: Mapping[str, Any], groups: Sequence[Mapping[str, Any]]) -> bool | None:
    """A group's own chat.file_upload, or where groups nest (0.12) the first grant on a group
    above it: Open WebUI makes a member of a group a member of every group above it and combines
    their permissions. None where no group on the way says."""
    by_id = {str(g.get("id")): g for g in groups}
    found: bool | None = None
    seen: set[str] = set()
    current: Mapping[str, Any] | None = group
    while current is not None and str(current.get("id")) not in seen:
        own = file_upload(current.get("permissions"))
        if own is True:
            return True
        found = False if own is False else found
        seen.add(str(current.get("id")))
        parent = current.get("parent_group_id")
        current = by_id.get(str(parent)) if parent else None
    return found


def members_may_upload(
    group: Mapping[str, Any], groups: Sequence[Mapping[str, Any]], default: bool | None
) -> bool | None:
    """Whether a group's members may upload files: Open WebUI gives them the most permissive of the
    default permission and the group's own or an ancestor's grant. None where it cannot tell."""
    if default is True or group_file_upload(group, groups) is True:
        return True
    return False if default is False else None


def file_upload(permissions: Mapping[str, Any] | None) -> bool | None:
    value = ((permissions or {}).get("chat") or {}).get("file_upload")
    return value if isinstance(value, bool) else None


def stale_own_groups(
    live: Iterable[Mapping[str, Any]], wanted: Iterable[str]
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """Provision's own groups no blueprint names: (empty ones, safe to delete; ones with members,
    of their own or in a group below them, or an unknown count, kept)."""
    live = list(live)
    wanted_set = set(wanted)
    stale = [g for g in live if is_own_group(g) and str(g.get("name")) not in wanted_set]
    kept = [g for g in stale if group_has_members(g, live)]
    empty = [g for g in stale if g not in kept]
    return empty, kept


def missing_group_notes(missing: Iterable[str], mode: str) -> list[str]:
    """What the plan says about each missing group."""
    notes = []
    for name in missing:
        if mode == "skip":
            notes.append(
                f"group {name!r} does not exist in Open WebUI: its grant is left out (missing_groups: skip); "
                "the agents it would open stay private until the group exists and sync runs again"
            )
        else:
            notes.append(
                f"group {name!r} does not exist in Open WebUI: sync creates it, empty (missing_groups: create)"
            )
    return notes


def with_group_ids(value: Any, ids: Mapping[str, str]) -> Any:
    """`value` with every placeholder id (placeholder_id) replaced by the real id of the group
    apply created; the rest unchanged. Walks a row body or a field's value."""
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, Mapping):
        return {k: with_group_ids(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [with_group_ids(v, ids) for v in value]
    return value
