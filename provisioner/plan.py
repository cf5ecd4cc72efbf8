"""Compare desired with observed state and produce the Plan: a plain value apply consumes. Pure.

Only owned fields are compared. For an update, the write body is the live record with the owned
fields replaced (read-merge-write), so fields an admin set (params, own capability keys, profile
image when the blueprint has none) survive, and apply writes exactly what the plan shows.

Layer: core.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from .commit_message import CommitInfo
from .conflicts import Key, Seen, read_by_plan
from .errors import OwnershipError, PruneRefusedError
from .fingerprint import fingerprint, origin, recorded
from .hashing import content_hash
from .redaction import SENSITIVE
from .state import (
    BUNDLE_PREFIX,
    FINGERPRINT_KEY,
    I18N_KEY,
    MARKER_KEY,
    VERSION_KEY,
    InstanceState,
    Kind,
    ObjectState,
    delete_path,
    get_path,
    set_path,
)
from .version import __version__

FORMAT_VERSION = "1"

# Response-only keys of a model record that a ModelForm must not carry.
_MODEL_FORM_KEYS = ("id", "base_model_id", "name", "meta", "params", "is_active")
_FUNCTION_FORM_KEYS = ("id", "name", "content", "meta")


class Action(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"


GroupVerb = Literal["create", "skip", "delete", "keep"]


@dataclass(frozen=True)
class GroupAction:
    """What a plan does with one group (groups.py, the target's missing_groups): a group the
    blueprints name that the instance lacks is skipped or created; one provision made that no
    blueprint names any more is deleted when empty (--prune), else kept. `id` is the instance's
    id of a group that exists (delete, keep)."""

    name: str
    action: GroupVerb
    id: str | None = None

    def __post_init__(self) -> None:
        if (self.id is not None) != (self.action in ("delete", "keep")):
            raise ValueError(
                f"group {self.name!r}: {self.action} {'needs' if self.id is None else 'takes no'} group id"
            )

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, **({"id": self.id} if self.id is not None else {}), "action": self.action}


@dataclass(frozen=True)
class FieldChange:
    path: str
    before: Any = field(repr=False)  # may be a secret: never in a repr or a log line
    after: Any = field(repr=False)
    sensitive: bool = False
    # Which side moved since the last sync (fingerprint.py): "blueprint", "openwebui" or "both";
    # None when that sync recorded nothing for the field (a create, or a row written before).
    origin: str | None = None


@dataclass(frozen=True)
class Change:
    """One object to create, update or delete, with the body apply will send."""

    kind: Kind
    id: str
    action: Action
    fields: tuple[FieldChange, ...] = ()
    body: Mapping[str, Any] | None = field(default=None, repr=False)
    # A bundle function whose content the installed provision changes: (version on the
    # instance, None if it recorded none; version installed).
    upgrade: tuple[str | None, str] | None = None
    # The fingerprint in the marker must be written again although only access changed (an
    # update that otherwise goes to the access endpoint alone writes the row too).
    rewrite_marker: bool = False
    # A function created or changed with `global: true`: it runs on every model of the instance.
    is_global: bool = False

    def changed(self, *paths: str) -> bool:
        """True when any changed field is one of `paths` or lies under one (`valves` → `valves.X`)."""
        return any(f.path == p or f.path.startswith(p + ".") for f in self.fields for p in paths)


@dataclass(frozen=True)
class Plan:
    changes: tuple[Change, ...]
    # Managed objects the blueprints no longer define, kept because --prune was not given.
    orphans: tuple[tuple[Kind, str], ...] = ()
    adopted: tuple[tuple[Kind, str], ...] = field(default=())
    # Orphan model id -> what happens to it while kept (orphans.py: whether the pipe still serves it).
    orphan_notes: Mapping[str, str] = field(default_factory=dict)
    # Workspace models whose base model is one of our agents (wrappers.py): warned about, never changed.
    wrappers: tuple[Mapping[str, str], ...] = ()
    # Plain-text notes on choices the plan made (e.g. how native features reach agents).
    notes: tuple[str, ...] = ()
    # Groups the blueprints name that the instance lacked, and provision's own groups no longer named.
    groups: tuple[GroupAction, ...] = ()
    # What the plan read of each object it may touch (conflicts.py): apply checks the instance
    # against it before and after writing. None: a plan built by hand, nothing to check against.
    read: Mapping[Key, Seen] | None = field(default=None, repr=False, compare=False)
    # Fields of the changes that were changed in Open WebUI since the last sync, with who and
    # when where the history says (drift.plan_drift): {"kind", "id", "history", "fields"}.
    drift: tuple[Mapping[str, Any], ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.changes and not self.group_deletes and not self.group_creates

    @property
    def group_creates(self) -> list[GroupAction]:
        return [g for g in self.groups if g.action == "create"]

    @property
    def group_deletes(self) -> list[GroupAction]:
        return [g for g in self.groups if g.action == "delete"]

    def count(self, action: Action) -> int:
        return sum(1 for c in self.changes if c.action is action)

    @property
    def summary(self) -> dict[str, int]:
        return {
            "add": self.count(Action.CREATE),
            "change": self.count(Action.UPDATE),
            "destroy": self.count(Action.DELETE),
        }

    def to_json(self) -> dict[str, Any]:
        """The versioned machine form; the text renderer reads this same dict. No secrets."""
        return {
            "format_version": FORMAT_VERSION,
            "summary": self.summary,
            "changes": [
                {
                    "kind": c.kind,
                    "id": c.id,
                    "action": c.action.value,
                    "fields": [
                        {
                            "path": f.path,
                            "before": _shown(f, f.before),
                            "after": _shown(f, f.after),
                            **({"origin": f.origin} if f.origin else {}),
                        }
                        for f in c.fields
                    ],
                    **({"upgrade": {"from": c.upgrade[0], "to": c.upgrade[1]}} if c.upgrade else {}),
                    **({"global": True} if c.is_global else {}),
                }
                for c in self.changes
            ],
            "orphans": [
                {"kind": k, "id": i, **({"note": self.orphan_notes[i]} if i in self.orphan_notes else {})}
                for k, i in self.orphans
            ],
            "wrappers": [dict(w) for w in self.wrappers],
            "notes": list(self.notes),
            "groups": [g.to_json() for g in self.groups],
            "drift": [dict(d) for d in self.drift],
        }


def _shown(change: FieldChange, value: Any) -> Any:
    if value is None:
        return None
    if change.sensitive:
        return SENSITIVE
    if change.path == "content":
        return f"sha256:{content_hash(value)[:12]}"
    return value


_KIND_ORDER: dict[Kind, int] = {"function": 0, "model": 1}


def make_plan(
    desired: InstanceState,
    observed: InstanceState,
    *,
    prune: bool = False,
    adopt: Collection[tuple[Kind, str]] = (),
    orphan_notes: Mapping[str, str] | None = None,
    wrappers: Sequence[Mapping[str, str]] = (),
    notes: Sequence[str] = (),
    commit: CommitInfo | None = None,
) -> Plan:
    """Everything that must change for `observed` to match `desired`.

    `commit` makes the message each write carries into Open WebUI's history (default: this
    provision's version and the source file, no CI reference).

    Raises OwnershipError when a desired id is taken by an object without our marker (unless
    adopted), and PruneRefusedError when pruning against an empty desired set.
    """
    if prune and not desired.models:
        raise PruneRefusedError(
            "Refusing to --prune: the blueprints define no agents, so every managed row would be "
            "deleted. Check the blueprint path."
        )
    adopt_set = set(adopt)
    commit = commit or CommitInfo(__version__)
    changes: list[Change] = []
    conflicts: list[tuple[Kind, str]] = []
    orphans: list[tuple[Kind, str]] = []
    adopted: list[tuple[Kind, str]] = []
    for kind in ("function", "model"):
        want = desired.of_kind(kind)
        have = observed.of_kind(kind)
        for ident, target in want.items():
            live = have.get(ident)
            if live is None:
                changes.append(_create(target, commit))
                continue
            if not live.managed:
                if (kind, ident) not in adopt_set:
                    conflicts.append((kind, ident))
                    continue
                adopted.append((kind, ident))
            update = _update(target, live, commit)
            if update:
                changes.append(update)
        for ident, live in have.items():
            if ident in want or not live.managed:
                continue
            if prune:
                changes.append(Change(kind, ident, Action.DELETE))
            else:
                orphans.append((kind, ident))
    if conflicts:
        raise OwnershipError(conflicts)
    changes.sort(key=lambda c: (_KIND_ORDER[c.kind], c.id))
    kept_notes = {i: n for i, n in (orphan_notes or {}).items() if ("model", i) in orphans}
    return Plan(
        tuple(changes),
        tuple(sorted(orphans)),
        tuple(sorted(adopted)),
        kept_notes,
        tuple(wrappers),
        tuple(notes),
        read=read_by_plan(observed, also=adopted),
    )


def _create(target: ObjectState, commit: CommitInfo) -> Change:
    fields = tuple(FieldChange(path, None, value, path in target.sensitive) for path, value in target.fields.items())
    body = _write_body(target, base=None, message=commit.message(target.source))
    return Change(target.kind, target.id, Action.CREATE, fields, body, is_global=_runs_everywhere(target))


def _update(target: ObjectState, live: ObjectState, commit: CommitInfo) -> Change | None:
    written = recorded(live)
    removed = _removed(target, live)
    fields = tuple(
        FieldChange(
            path,
            live.fields.get(path),
            value,
            path in target.sensitive,
            origin(path, live.fields.get(path), value, written),
        )
        for path, value in target.fields.items()
        if live.fields.get(path) != value
    ) + tuple(
        FieldChange(path, live.fields[path], None, origin=origin(path, live.fields[path], None, written))
        for path in removed
    )
    if not fields:
        return None
    upgrade = None
    if (
        target.kind == "function"
        and target.id.startswith(BUNDLE_PREFIX)
        and target.written_by
        and live.written_by != target.written_by
        and any(f.path == "content" for f in fields)
    ):
        upgrade = (live.written_by, target.written_by)
    body = _write_body(target, base=live.raw, message=commit.message(target.source), removed=removed)
    rewrite = written is not None and written != fingerprint(target)
    return Change(
        target.kind,
        target.id,
        Action.UPDATE,
        fields,
        body,
        upgrade,
        is_global=_runs_everywhere(target),
        rewrite_marker=rewrite,
    )


def _removed(target: ObjectState, live: ObjectState) -> list[str]:
    """Live paths under a map the target owns whole that the target no longer has (a dropped
    translation): each is a change to nothing, and the write removes it."""
    return [
        path
        for path in sorted(live.fields)
        if path not in target.fields
        and live.fields[path] is not None
        and any(path.startswith(prefix + ".") for prefix in target.owned_maps)
    ]


def _runs_everywhere(target: ObjectState) -> bool:
    return target.kind == "function" and target.fields.get("is_global") is True


def remerge_model_form(live: Mapping[str, Any], change: Change, *, with_access: bool = False) -> dict[str, Any]:
    """A model update rebuilt on a freshly read row: its fields, with this change's owned
    fields set again (used after a `409 version_conflict`, so the other writer's edits survive).
    `with_access`: the release takes access in the update itself, so the retry carries it."""
    body: dict[str, Any] = {k: copy.deepcopy(live[k]) for k in _MODEL_FORM_KEYS if k in live}
    body["id"] = change.id
    body["commit_message"] = (change.body or {}).get("commit_message") or CommitInfo(__version__).message(None)
    if not isinstance(body.get("meta"), dict):
        body["meta"] = {}
    for field_change in change.fields:
        if field_change.path == "access_grants":
            continue
        if (
            field_change.after is None
            and field_change.before is not None
            and field_change.path.startswith(I18N_KEY + ".")
        ):
            delete_path(body, field_change.path)  # a translation the blueprint dropped (plan._removed)
        else:
            set_path(body, field_change.path, copy.deepcopy(field_change.after))
    marker = get_path(change.body or {}, f"meta.{MARKER_KEY}")
    if isinstance(marker, dict):  # with the version of this provision
        body["meta"][MARKER_KEY] = copy.deepcopy(marker)
    if with_access and change.body and "access_grants" in change.body:
        body["access_grants"] = copy.deepcopy(change.body["access_grants"])
    return body


def _write_body(
    target: ObjectState, base: Mapping[str, Any] | None, message: str | None = None, removed: Sequence[str] = ()
) -> dict[str, Any]:
    """The form Open WebUI expects: the live record (if any) with every owned field set and the
    `removed` paths (plan._removed) taken out."""
    keys = _MODEL_FORM_KEYS if target.kind == "model" else _FUNCTION_FORM_KEYS
    body: dict[str, Any] = {k: copy.deepcopy(base[k]) for k in keys if base and k in base}
    body["id"] = target.id
    if target.kind == "model":
        body.setdefault("params", {})
        if not isinstance(body.get("meta"), dict):
            body["meta"] = {}
    else:
        found = body.get("meta")
        meta = found if isinstance(found, dict) else {}
        # Open WebUI recomputes these from the content; sending them back is noise.
        body["meta"] = {k: v for k, v in meta.items() if k not in ("manifest", "toggle")}
    # Open WebUI keeps a version history per object; this says what wrote the version (commit_message.py).
    body["commit_message"] = message or CommitInfo(__version__).message(target.source)
    for path in removed:
        delete_path(body, path)
    valves: dict[str, Any] = {}
    for path, value in target.fields.items():
        if path == "access_grants":
            body["access_grants"] = copy.deepcopy(value)
        elif path.startswith("valves."):
            valves[path.removeprefix("valves.")] = value
        elif path in ("is_active", "is_global") and target.kind == "function":
            continue  # flipped through toggle endpoints, not written
        else:
            set_path(body, path, copy.deepcopy(value))
    marker = body.get("meta", {}).get(MARKER_KEY) if isinstance(body.get("meta"), dict) else None
    if isinstance(marker, dict) and target.written_by:
        # What this write holds, so a later diff can tell who changed a field (fingerprint.py).
        body["meta"][MARKER_KEY] = {**marker, VERSION_KEY: target.written_by, FINGERPRINT_KEY: fingerprint(target)}
    if valves:
        live_valves = base.get("valves") if base else None
        # The valves endpoint replaces the stored dict: keep the ones an admin set.
        body["valves"] = {**(live_valves if isinstance(live_valves, dict) else {}), **valves}
    return body
