"""What each Open WebUI release needs, in one table. Pure.

The version is read once (`GET /api/version`) and picks one `Compat`; the client, the desired
state and apply ask it and never compare version numbers themselves. Every row was observed on
a real server (issue 10): listing endpoints, how access is written, where a filter's priority
is read from.

Layer: adapter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..grants import PUBLIC_GRANT

Version = tuple[int, int, int]

# The first release provision can read: before 0.6.19 there is no `GET /api/v1/models/export`
# (the rows cannot be listed), and before 0.6.27 the function export ignores `include_valves`, so
# the pipe's stored valves (its agents, keys and signing keys) read as empty and every sync would
# write new keys. Checked in each release's wheel (routers/models.py, routers/functions.py).
MINIMUM: Version = (0, 6, 27)
# The exact releases the suite runs the core cycle against (tests/e2e/test_version_matrix.py);
# anything else gets the "outside the tested range" warning.
TESTED: tuple[str, ...] = ("0.6.43", "0.7.2", "0.8.12", "0.9.6", "0.10.2", "0.11.4", "0.12.4")
PINNED = "0.12.4"


@dataclass(frozen=True)
class Compat:
    """How provision talks to one Open WebUI release.

    - `list_all`: `GET /api/v1/models/all` lists every row (from 0.11.4); before that the rows
      come from `/models/base` (pipe sub-models, `base_model_id` null) plus `/models/export`.
    - `access_control`: access is the `access_control` dict (`null` = public) of 0.6 and 0.7,
      not the `access_grants` list; every write must carry it or the row turns public.
    - `access_in_update`: the model update writes access itself (before 0.12), so one write
      carries it; 0.9 and 0.10 even answer 500 to an update without `access_grants`. From 0.12
      the update ignores access and `/models/model/access/update` writes it.
    - `filter_priority_in_valves`: up to 0.8 a filter's priority is read from its stored valves
      only (the class default is ignored), so sync stores it.
    - `history`: every write of a model row or function is kept as a version with its author
      (0.12+), so drift can name who changed a field (drift.py).
    - `i18n`: the chat page shows a model's and a function's `meta.i18n` in the user's
      interface language (0.12+, `localizedContent.ts`); before, only the default text shows,
      so sync writes no translations there.
    """

    version: str
    list_all: bool
    access_control: bool
    access_in_update: bool
    filter_priority_in_valves: bool
    history: bool = False
    i18n: bool = False

    @property
    def tested(self) -> bool:
        return self.version in TESTED

    @property
    def model_listing(self) -> tuple[str, ...]:
        if self.list_all:
            return ("/api/v1/models/all",)
        return ("/api/v1/models/base", "/api/v1/models/export")

    # -- access ---------------------------------------------------------------------------

    def observed_grants(self, raw: Mapping[str, Any]) -> Any:
        """A row's access in the grant-list form the plan compares (not yet normalised)."""
        if not self.access_control:
            return raw.get("access_grants")
        return control_to_grants(raw.get("access_control", None) if "access_control" in raw else {})

    def model_form(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A model create/update body as this release expects it (access in its own form)."""
        form = dict(body)
        if self.access_control:
            grants = form.pop("access_grants", [])
            form["access_control"] = grants_to_control(grants or [])
        return form


def parse_version(text: str) -> Version | None:
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", text.strip())
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


_PINNED_VERSION: Version = parse_version(PINNED) or (0, 0, 0)


def select(version_text: str) -> Compat:
    """The Compat for a version string from `/api/version`; refuses releases before MINIMUM.

    An unreadable version is treated as the pinned release (and warned about as untested).
    """
    parsed = parse_version(version_text)
    if parsed is None:
        return _row(_PINNED_VERSION, version_text or "(unknown version)")
    if parsed < MINIMUM:
        raise ConfigError(
            f"Open WebUI {version_text} is not supported: provision needs {'.'.join(map(str, MINIMUM))} or later "
            f"(earlier releases list no function valves, and before 0.6.19 no model rows; "
            f"tested: {', '.join(TESTED)}). Upgrade Open WebUI."
        )
    return _row(parsed, version_text)


def _row(v: Version, text: str) -> Compat:
    # The table: each line is a boundary observed on a real server.
    return Compat(
        version=text,
        list_all=v >= (0, 11, 4),
        access_control=v < (0, 8, 0),
        access_in_update=v < (0, 12, 0),
        filter_priority_in_valves=v < (0, 9, 0),
        history=v >= (0, 12, 0),
        i18n=v >= (0, 12, 0),
    )


def control_to_grants(control: Any) -> list[dict[str, str]]:
    """0.6/0.7 `access_control` -> grants: null is public; group/user ids under read/write."""
    if control is None:
        return [dict(PUBLIC_GRANT)]
    grants: list[dict[str, str]] = []
    if not isinstance(control, Mapping):
        return grants
    for permission in ("read", "write"):
        entry = control.get(permission)
        if not isinstance(entry, Mapping):
            continue
        for kind, key in (("group", "group_ids"), ("user", "user_ids")):
            for principal in entry.get(key) or []:
                grants.append({"principal_type": kind, "principal_id": str(principal), "permission": permission})
    return grants


def grants_to_control(grants: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Grants -> 0.6/0.7 `access_control`: public is null, private is empty id lists."""
    if any(g.get("principal_type") == "user" and g.get("principal_id") == "*" for g in grants):
        return None
    control: dict[str, Any] = {p: {"group_ids": [], "user_ids": []} for p in ("read", "write")}
    for grant in grants:
        key = "group_ids" if grant.get("principal_type") == "group" else "user_ids"
        permission = "write" if grant.get("permission") == "write" else "read"
        control[permission][key].append(str(grant.get("principal_id")))
    return control
