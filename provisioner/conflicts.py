"""Other writers racing a sync: what the plan read, and what changed on the instance since. Pure.

Open WebUI has no lock a client could take and no compare-and-set write on any release from
0.6 to 0.12 (0.12's `version_id` check guards only the server's own read-modify-write inside
one request; the form cannot carry the version the client read). What every release does have
is `updated_at` (epoch seconds) on each model row and function, set by every write: update,
valves, toggles, access. So apply checks optimistically, with two listings instead of one read
per write:

- before the first write, every object the plan read must be as it was read (same owned fields,
  valves included, and same `updated_at`), and nothing managed may have appeared;
- after the last write, every object this sync wrote must still hold what it wrote, and every
  other one must still be as the plan read it.

Two syncs of different blueprints that interleave cannot both pass the second check, and an
admin's edit between plan and apply fails the first. `updated_at` has a one-second grain, so
the owned fields are compared as well: an edit of a field provision owns is seen even within
the second of the previous write.

Layer: core.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .state import InstanceState, Kind, ObjectState

Key = tuple[Kind, str]
What = Literal["changed", "created", "deleted"]
ANOTHER_WRITER = "another sync running at the same time, or an admin editing"
SHOWN_PATHS = 4  # changed field paths named per conflict (paths only: values may be secrets)


@dataclass(frozen=True)
class Seen:
    """One object as a listing showed it: its owned fields (flat) and Open WebUI's updated_at."""

    fields: Mapping[str, Any] = field(repr=False)  # valves included, so possibly secrets
    updated_at: int | None = None


@dataclass(frozen=True)
class Conflict:
    """An object another writer changed: since the plan read it, or after this sync wrote it."""

    kind: Kind
    id: str
    what: What
    after_write: bool  # found by the check after the writes (else: before the first write)
    read_at: int | None = None  # its updated_at when the plan read it
    changed_at: int | None = None  # its updated_at now
    paths: tuple[str, ...] = ()

    @property
    def message(self) -> str:
        since = "after this sync wrote it" if self.after_write else "after this sync's plan read it"
        if self.what == "created":
            return f"{self.kind} {self.id} was created{_at(self.changed_at)} {since.replace(' it', ' the instance')}"
        if self.what == "deleted":
            return f"{self.kind} {self.id} was deleted {since}"
        shown = ", ".join(self.paths[:SHOWN_PATHS]) + (", …" if len(self.paths) > SHOWN_PATHS else "")
        fields = f" ({shown})" if shown else ""
        before = (
            f"; the plan read it as last changed{_at(self.read_at)}" if self.read_at and not self.after_write else ""
        )
        return f"{self.kind} {self.id} was changed{fields}{_at(self.changed_at)} {since}{before}"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "what": self.what,
            "after_write": self.after_write,
            "read_updated_at": self.read_at,
            "updated_at": self.changed_at,
            "fields": list(self.paths),
            "message": self.message,
        }


def _at(epoch: int | None) -> str:
    if not epoch:
        return ""
    return " at " + time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))


def seen(obj: ObjectState) -> Seen:
    stamp = (obj.raw or {}).get("updated_at")
    return Seen(dict(obj.fields), stamp if isinstance(stamp, int) and not isinstance(stamp, bool) else None)


def read_by_plan(observed: InstanceState, also: Collection[Key] = ()) -> dict[Key, Seen]:
    """What a plan must remember of its read: every managed object, and `also` (adopted rows)."""
    return {(obj.kind, obj.id): seen(obj) for obj in _objects(observed) if obj.managed or (obj.kind, obj.id) in also}


def changed_since_read(read: Mapping[Key, Seen], now: InstanceState, creates: Collection[Key]) -> list[Conflict]:
    """Before the first write: every object the plan read, and every id it will create, as read."""
    expected: dict[Key, Seen | None] = {**dict(read), **{key: None for key in creates if key not in read}}
    return _compare(expected, now, written=frozenset(), after_write=False)


def changed_since_write(
    read: Mapping[Key, Seen], now: InstanceState, written: Mapping[Key, Mapping[str, Any] | None]
) -> list[Conflict]:
    """After the last write: `written` maps each object this sync wrote to its owned fields as
    written (None: deleted); every other object the plan read must still be as read."""
    expected: dict[Key, Seen | None] = dict(read)
    for key, fields in written.items():
        expected[key] = None if fields is None else Seen(fields, None)
    return _compare(expected, now, written=frozenset(k for k, f in written.items() if f is not None), after_write=True)


def _compare(
    expected: Mapping[Key, Seen | None], now: InstanceState, *, written: frozenset[Key], after_write: bool
) -> list[Conflict]:
    live = {(o.kind, o.id): o for o in _objects(now) if o.managed or (o.kind, o.id) in expected}
    conflicts: list[Conflict] = []
    for key in sorted(set(expected) | set(live)):
        want, obj = expected.get(key), live.get(key)
        kind, ident = key
        if obj is None:
            if want is not None:
                conflicts.append(Conflict(kind, ident, "deleted", after_write, read_at=want.updated_at))
            continue
        have = seen(obj)
        if want is None:
            conflicts.append(Conflict(kind, ident, "created", after_write, changed_at=have.updated_at))
            continue
        # What this sync wrote is compared path by path; what it only read, in full.
        paths = _differing(want.fields, have.fields, only_wanted=key in written)
        # A written object's new updated_at is unknown (several writes may set it): its fields say enough.
        stamp_moved = key not in written and want.updated_at != have.updated_at
        if paths or stamp_moved:
            conflicts.append(
                Conflict(kind, ident, "changed", after_write, want.updated_at, have.updated_at, tuple(paths))
            )
    return conflicts


def _differing(want: Mapping[str, Any], have: Mapping[str, Any], *, only_wanted: bool) -> list[str]:
    paths = set(want) if only_wanted else set(want) | set(have)
    return sorted(p for p in paths if want.get(p) != have.get(p))


def _objects(state: InstanceState) -> Iterable[ObjectState]:
    yield from state.functions.values()
    yield from state.models.values()
