"""Carry out a Plan against Open WebUI. Consumes only the plan: it never re-reads blueprints.

Groups the plan shows as to create (missing_groups: create) are created first, once the plan is
confirmed, and their real ids replace the plan's placeholders in the rows' grants.

Phases run in dependency order (models reference filters, so functions come first; deletes
last), and the first failure stops the run: nothing after it is started, and the report
says what was applied and what was not, so the next `sync` can finish the job.

Layer: adapter.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Literal

from ..conflicts import ANOTHER_WRITER, Conflict, Key, changed_since_read, changed_since_write
from ..desired import PIPE_IDENTITY_VALVE
from ..errors import ApplyError, ProvisionError
from ..fingerprint import digest
from ..grants import normalize_grants
from ..groups import group_form, placeholder_id, with_group_ids
from ..identity_keys import private_key_lines
from ..plan import Action, Change, Plan, remerge_model_form
from ..state import FINGERPRINT_KEY, MARKER_KEY, InstanceState
from .client import OpenWebUIClient
from .observed import observe

Outcome = Literal["applied", "failed", "not attempted"]

# (kind, action) in the order they run.
PHASES: tuple[tuple[str, Action], ...] = (
    ("function", Action.CREATE),
    ("function", Action.UPDATE),
    ("model", Action.CREATE),
    ("model", Action.UPDATE),
    ("model", Action.DELETE),
    ("function", Action.DELETE),
)


@dataclass
class ChangeResult:
    change: Change
    outcome: Outcome
    error: str = ""


@dataclass
class ApplyReport:
    results: list[ChangeResult] = field(default_factory=list)
    registry_refreshed: bool = False
    refresh_error: str = ""
    stopped_by: str = ""  # the signal (SIGINT, SIGTERM) that stopped the sync before every change was tried
    # Objects another writer changed since the plan read them or after this sync wrote them.
    conflicts: list[Conflict] = field(default_factory=list)
    groups_created: list[str] = field(default_factory=list)  # names of the groups apply created
    groups_deleted: list[str] = field(default_factory=list)  # names of provision's own empty groups it deleted
    group_error: str = ""  # creating a missing group failed: no row was written

    @property
    def failed(self) -> list[ChangeResult]:
        return [r for r in self.results if r.outcome == "failed"]

    def count(self, outcome: Outcome, action: Action | None = None) -> int:
        return sum(1 for r in self.results if r.outcome == outcome and (action is None or r.change.action is action))

    def to_json(self) -> dict[str, Any]:
        return {
            "applied_changes": [
                {"kind": r.change.kind, "id": r.change.id, "action": r.change.action.value}
                for r in self.results
                if r.outcome == "applied"
            ],
            "applied": {
                "add": self.count("applied", Action.CREATE),
                "change": self.count("applied", Action.UPDATE),
                "destroy": self.count("applied", Action.DELETE),
            },
            "failed": [
                {"kind": r.change.kind, "id": r.change.id, "action": r.change.action.value, "error": r.error}
                for r in self.failed
            ],
            "not_attempted": [
                {"kind": r.change.kind, "id": r.change.id, "action": r.change.action.value}
                for r in self.results
                if r.outcome == "not attempted"
            ],
            "registry_refreshed": self.registry_refreshed,
            **({"stopped_by": self.stopped_by} if self.stopped_by else {}),
            "conflicts": [c.to_json() for c in self.conflicts],
            "groups_created": list(self.groups_created),
            "groups_deleted": list(self.groups_deleted),
        }

    def failure_message(self) -> str:
        if self.refresh_error and not self.failed:
            return (
                "Every change was applied, but refreshing Open WebUI's model registry failed: "
                f"{self.refresh_error}\nNew or changed agents serve once Open WebUI next reloads "
                "its model list (opening the UI does; so does GET /api/models?refresh=true)."
            )
        if self.group_error:
            made = f" (created before it: {', '.join(self.groups_created)})" if self.groups_created else ""
            return f"Sync stopped before its first row write: creating a missing group failed{made}: {self.group_error}"
        by = f" by {self.stopped_by} (the write in flight finished)" if self.stopped_by else ""
        lines = _conflict_lines(self) or [
            f"Sync stopped part-way{by}; the instance is partly updated. Run `provision sync` again to finish."
        ]
        for r in self.results:
            if r.outcome == "applied":
                lines.append(f"  applied        {r.change.action.value:6} {r.change.kind} {r.change.id}")
        for r in self.failed:
            lines.append(f"  FAILED         {r.change.action.value:6} {r.change.kind} {r.change.id}: {r.error}")
        for r in self.results:
            if r.outcome == "not attempted":
                lines.append(f"  not attempted  {r.change.action.value:6} {r.change.kind} {r.change.id}")
        return "\n".join(lines)


def apply_plan(
    plan: Plan,
    client: OpenWebUIClient,
    *,
    parallelism: int = 1,
    on_progress: Callable[[ChangeResult], None] | None = None,
    stopping: Callable[[], str] = lambda: "",
) -> ApplyReport:
    """Apply every change in phase order; raise ApplyError (with the report) on the first failure.

    Model writes within a phase go `parallelism` at a time (the rows are independent; it pays
    off against a remote instance). Functions stay sequential: there are few, and their
    toggles must be read and flipped one writer at a time. After a failure nothing new starts;
    writes already under way finish and are reported. The same holds once `stopping()` names
    a signal (stopping.stop_requests): the report then says which one.
    """
    check = plan.read is not None and bool(plan.changes)
    if check:
        _refuse_a_stale_plan(plan, client)
    report = ApplyReport()
    plan = _create_missing_groups(plan, client, report)
    failed = False
    for kind, action in PHASES:
        changes = [c for c in plan.changes if c.kind == kind and c.action is action]
        if failed:
            report.results.extend(ChangeResult(c, "not attempted") for c in changes)
            continue
        workers = parallelism if kind == "model" else 1
        for result in _run_phase(changes, client, workers, stopping):
            report.results.append(result)
            failed = failed or result.outcome != "applied"
            if on_progress and result.outcome != "not attempted":
                on_progress(result)
    if failed:
        if not report.failed:  # nothing failed: a signal stopped it
            report.stopped_by = stopping()
        raise ApplyError(report)
    for group in plan.group_deletes:  # provision's own groups, empty and named by no blueprint
        client.delete_group(str(group.id))
        report.groups_deleted.append(group.name)
    if check:
        report.conflicts = changed_since_write(plan.read or {}, _observe(client), _written(plan))
        if report.conflicts:
            raise ApplyError(report)
    if plan.changes:
        try:
            client.refresh_models()
        except ProvisionError as exc:  # every change landed: say so, not only what broke
            report.refresh_error = str(exc)
            raise ApplyError(report) from None
        report.registry_refreshed = True
    return report


def _create_missing_groups(plan: Plan, client: OpenWebUIClient, report: ApplyReport) -> Plan:
    """Create the groups the plan shows as to create (missing_groups: create), before any row is
    written, and return the plan with their real ids in place of the placeholders it showed."""
    if not plan.group_creates:
        return plan
    ids: dict[str, str] = {}
    for group in plan.group_creates:
        name = group.name
        try:
            created = client.create_group(group_form(name)) or {}
        except ProvisionError as exc:
            report.group_error = str(exc)
            report.results.extend(ChangeResult(c, "not attempted") for c in plan.changes)
            raise ApplyError(report) from None
        report.groups_created.append(name)
        ids[placeholder_id(name)] = str(created.get("id") or "")
    if not all(ids.values()):  # an answer without the id: the listing has it
        by_name = {str(g.get("name")): str(g.get("id") or "") for g in client.list_groups()}
        ids = {placeholder_id(name): by_name.get(name, "") for name in report.groups_created}
    if missing := [name for name in report.groups_created if not ids[placeholder_id(name)]]:
        # A grant must never name "" (nobody): stop before the first row.
        report.group_error = f"Open WebUI gave no id for the group(s) {', '.join(map(repr, missing))}"
        report.results.extend(ChangeResult(c, "not attempted") for c in plan.changes)
        raise ApplyError(report)
    changes = tuple(
        dataclasses.replace(
            c,
            body=_body_with_group_ids(c.body, ids),
            fields=tuple(dataclasses.replace(f, after=_value_with_group_ids(f.path, f.after, ids)) for f in c.fields),
        )
        for c in plan.changes
    )
    return dataclasses.replace(plan, changes=changes)


def _value_with_group_ids(path: str, value: Any, ids: Mapping[str, str]) -> Any:
    """A field's value with the real group ids; grants sorted again, as the plan sorts them (by
    principal id), or the check after the last write would see them as changed by another writer."""
    new = with_group_ids(value, ids)
    return normalize_grants(new) if path == "access_grants" else new


def _body_with_group_ids(body: Mapping[str, Any] | None, ids: Mapping[str, str]) -> Mapping[str, Any] | None:
    """A row body with the real group ids; its marker's fingerprint of the grants follows them,
    or the next plan would see the grants as changed since this sync."""
    if body is None or "access_grants" not in body:
        return body
    new = with_group_ids(body, ids)
    new["access_grants"] = normalize_grants(new["access_grants"])
    marker = (new.get("meta") or {}).get(MARKER_KEY)
    written = marker.get(FINGERPRINT_KEY) if isinstance(marker, dict) else None
    if isinstance(written, dict) and "access_grants" in written:
        written["access_grants"] = digest(new["access_grants"])
    return new


def _observe(client: OpenWebUIClient) -> InstanceState:
    return observe(client.list_models(), client.list_functions(), client.compat)


def _refuse_a_stale_plan(plan: Plan, client: OpenWebUIClient) -> None:
    """Before the first write: when anything changed since the plan read it, write nothing.

    One listing per kind (not a read per row) keeps the cost flat; conflicts.py says why this
    and the check after the writes are what works on every release."""
    creates = {(c.kind, c.id) for c in plan.changes if c.action is Action.CREATE}
    conflicts = changed_since_read(plan.read or {}, _observe(client), creates)
    if not conflicts:
        return
    by_key = {(c.kind, c.id): c for c in conflicts}
    report = ApplyReport(conflicts=conflicts)
    for change in plan.changes:
        conflict = by_key.get((change.kind, change.id))
        report.results.append(
            ChangeResult(change, "failed", conflict.message) if conflict else ChangeResult(change, "not attempted")
        )
    raise ApplyError(report)


def _written(plan: Plan) -> dict[Key, Mapping[str, Any] | None]:
    """Each object's owned fields as this plan leaves them (None: deleted)."""
    read = plan.read or {}
    written: dict[Key, Mapping[str, Any] | None] = {}
    for change in plan.changes:
        key = (change.kind, change.id)
        if change.action is Action.DELETE:
            written[key] = None
            continue
        base = read[key].fields if change.action is Action.UPDATE and key in read else {}
        written[key] = {**base, **{f.path: f.after for f in change.fields}}
    return written


SHOWN_CONFLICTS = 10  # a sync racing a whole other version conflicts on every row: name the first few


def _conflict_lines(report: ApplyReport) -> list[str]:
    if not report.conflicts:
        return []
    after = any(c.after_write for c in report.conflicts)
    head = (
        "Sync finished its writes, but another writer changed the instance meanwhile: it does not match these blueprints."
        if after
        else "Sync stopped before its first write: the instance changed since the plan read it. Nothing was written."
    )
    failed = {(r.change.kind, r.change.id) for r in report.failed}  # listed below with their change
    shown = [c for c in report.conflicts if (c.kind, c.id) not in failed]
    more = len(shown) - SHOWN_CONFLICTS
    return [
        f"{head} ({ANOTHER_WRITER}.) Let the other writer finish, then run `provision diff` to review "
        "and `provision sync` again.",
        *(f"  CONFLICT       {c.message}" for c in shown[:SHOWN_CONFLICTS]),
        *([f"  CONFLICT       … and {more} more (`-o json` lists every one)"] if more > 0 else []),
    ]


def _attempt(change: Change, client: OpenWebUIClient) -> ChangeResult:
    try:
        apply_change(change, client)
    except ProvisionError as exc:
        return ChangeResult(change, "failed", str(exc))
    return ChangeResult(change, "applied")


def _run_phase(
    changes: list[Change], client: OpenWebUIClient, workers: int, stopping: Callable[[], str]
) -> Iterator[ChangeResult]:
    """Results of one phase as they complete; after a failure or a stop, the rest are not attempted."""
    if workers <= 1:
        for index, change in enumerate(changes):
            if stopping():
                yield from (ChangeResult(c, "not attempted") for c in changes[index:])
                return
            result = _attempt(change, client)
            yield result
            if result.outcome == "failed":
                yield from (ChangeResult(c, "not attempted") for c in changes[index + 1 :])
                return
        return
    pending = iter(changes)
    failed = False
    with ThreadPoolExecutor(max_workers=workers) as pool:
        running = {pool.submit(_attempt, c, client) for c in islice(pending, 0 if stopping() else workers)}
        while running:
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                result = future.result()
                failed = failed or result.outcome == "failed"
                yield result
            if not failed and not stopping():
                running |= {pool.submit(_attempt, c, client) for c in islice(pending, len(done))}
    yield from (ChangeResult(c, "not attempted") for c in pending)


# A valve whose name says it holds a secret (API_KEYS, HISTORY_SIGNING_KEY, a token, a password).
_SECRET_VALVE_NAME = re.compile(r"KEY|SECRET|TOKEN|PASSW|CREDENTIAL|SIGN|PRIVATE|AUTH|COOKIE|JWK", re.IGNORECASE)


def secret_values(change: Change) -> list[str]:
    """Every secret string the change's request carries, changed or not: a valves update sends
    every valve, so an unchanged key is in the request as much as a changed one.

    Secrets are the fields the plan marks sensitive (both sides: a rotated key was secret too)
    and every valve whose name says it holds one; a value that is a JSON object contributes
    each value inside it (API_KEYS maps variable names, which are not secret, to keys)."""
    found: list[str] = []
    for field_change in change.fields:
        if field_change.sensitive:
            found.extend(_secret_strings(field_change.path, field_change.before))
            found.extend(_secret_strings(field_change.path, field_change.after))
    valves = (change.body or {}).get("valves")
    if isinstance(valves, Mapping):
        for name, value in valves.items():
            if _SECRET_VALVE_NAME.search(str(name)):
                found.extend(_secret_strings(f"valves.{name}", value))
    return list(dict.fromkeys(found))


def _secret_strings(path: str, value: Any) -> list[str]:
    if not isinstance(value, str) or not value:
        return []
    if path == PIPE_IDENTITY_VALVE:  # only its private key is secret
        return private_key_lines(value)
    try:
        inner = json.loads(value)
    except ValueError:
        inner = None
    if isinstance(inner, dict):
        return [str(v) for v in inner.values() if v]
    return [value]


def apply_change(change: Change, client: OpenWebUIClient) -> None:
    """Carry out one change: its writes, in the order the release needs (no checks, no refresh:
    apply_plan does those around the phases)."""
    body: Mapping[str, Any] = change.body or {}
    if change.kind == "model":
        if change.action is Action.CREATE:
            client.create_model(body)
        elif change.action is Action.UPDATE and client.compat.access_in_update:
            # Releases without the access endpoint take access in the update (and need it there).
            client.update_model(
                body, rebuild=lambda: remerge_model_form(client.get_model(change.id), change, with_access=True)
            )
        elif change.action is Action.UPDATE:
            if any(f.path != "access_grants" for f in change.fields) or change.rewrite_marker:
                client.update_model(
                    {k: v for k, v in body.items() if k != "access_grants"},
                    rebuild=lambda: remerge_model_form(client.get_model(change.id), change),
                )
            if change.changed("access_grants"):
                client.update_model_access(change.id, list(body.get("access_grants", [])))
        else:
            client.delete_model(change.id)
        return
    if change.action is Action.DELETE:
        client.delete_function(change.id)
        return
    form = {k: v for k, v in body.items() if k != "valves"}
    if change.action is Action.CREATE:
        state = client.create_function(form)
        if not state:  # a retried create whose first attempt had succeeded: read the truth
            state = client.get_function(change.id)
    else:
        state = {}
        if change.changed("name", "content", "meta") or change.rewrite_marker:
            state = client.update_function(form)
    if "valves" in body and (change.action is Action.CREATE or change.changed("valves")):
        client.update_function_valves(change.id, body["valves"], secrets=secret_values(change))
    _converge_flags(change, client, state)


MAX_FLIPS = 3


def _converge_flags(change: Change, client: OpenWebUIClient, state: Mapping[str, Any]) -> None:
    """Toggles flip, so read the live value and flip only when it differs from the wanted one.

    The value is read fresh (or taken from the write that just answered), never from the plan:
    another sync may have flipped it since. Each flip answers with the value it left, so a flip
    that raced another writer's (or was retried after a lost answer) shows up and is flipped
    again; a value still wrong after MAX_FLIPS is an error, never reported as applied.
    """
    wanted = {f.path: bool(f.after) for f in change.fields if f.path in ("is_active", "is_global")}
    toggles = {"is_active": client.toggle_function_active, "is_global": client.toggle_function_global}
    for flag, toggle in toggles.items():
        if flag not in wanted:
            continue
        flips = 0
        while True:
            if flag not in state:
                state = client.get_function(change.id) or {}
            if bool(state.get(flag)) == wanted[flag]:
                break
            if flips == MAX_FLIPS:
                raise ProvisionError(
                    f"{flag} of function {change.id} is still {state.get(flag)!r} after {flips} flips: "
                    "another writer keeps flipping it. Run `provision sync` again."
                )
            state = toggle(change.id) or {}
            flips += 1
