"""What `diff` and `sync` do, below the command line: load the inputs, then connect, observe and plan.

    load_inputs      blueprints (loader) + the bundle and the team's functions (function_files)
                     -> Inputs; every offline problem at once, as one BlueprintError
    credentials      the checked URL and the admin token (read before loading: no ${NAME} may
                     expand to the token)
    connect          -> OpenWebUIClient (the only network seam: client.make_http_client)
    prepare_plan     groups, listings -> observed, desired_state, make_plan, drift -> Plan

`cli.py` parses options, calls these, renders and maps exit codes; apply.apply_plan carries the
plan out. Tests and benchmarks call the same functions, so nothing rebuilds the chain from
private names. Nothing here prints: warnings are handed to `on_warning` as they are found, so a
caller can show them before a later error.

Layer: pipeline.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .attachments import check_attachments
from .commit_message import CommitInfo
from .contract import BUNDLE_PREFIX, FEATURE_FILTER_ID, PIPE_FUNCTION_ID
from .desired import build_desired, history_signing_key
from .doctor import every_agent_fails
from .errors import BlueprintError, ConfigError, Problem
from .features import NATIVE_FEATURES
from .function_files import FunctionFile, bundle_dir, load_function_files, skipped_function_files
from .groups import missing_group_notes, missing_groups, named_groups, placeholder_id, stale_own_groups
from .identity_keys import KeyPlan, live_identity_keys, plan_identity_keys
from .loader import Catalog, load_catalog
from .openwebui import client as client_module
from .openwebui.client import OpenWebUIClient, check_url
from .openwebui.compat import TESTED, Compat
from .openwebui.observed import observe
from .openwebui.token_file import read_token_file
from .orphans import keep_orphan_agents
from .plan import GroupAction, Plan, make_plan
from .state import InstanceState, Kind, is_managed
from .targets import TARGETS_FILE, Target, load_targets_config
from .text import visible
from .toggle_filters import rendered_toggle_functions, toggle_filter_id, toggle_translations
from .variables import TOKEN_IN_USE, Variables, variables_for
from .version import __version__
from .wrappers import find_wrappers, with_owner_names

Warn = Callable[[str], None]


# ------------------------------------------------------------------------------- inputs


class Inputs(NamedTuple):
    """What the files say: the blueprints and every function file to upload."""

    catalog: Catalog
    functions: tuple[FunctionFile, ...]


def target_variables(
    target: Target | None, strict: bool, targets_file: Path = Path(TARGETS_FILE), env: Mapping[str, str] | None = None
) -> Variables:
    """What ${NAME} resolves from: the target's variables, then the environment names the
    targets file allows. `strict` (diff, sync, validate --target): a broken targets file is an
    error here too, since it names the token variables that must stay out of the blueprints."""
    config = None
    if targets_file.is_file():
        try:
            config = load_targets_config(targets_file)
        except BlueprintError:
            if strict:
                raise
    return variables_for(config, target, os.environ if env is None else env, strict=strict)


def load_inputs(
    path: Path,
    functions_dir: Path | None = None,
    bundle: Path | None = None,
    variables: Variables | None = None,
) -> Inputs:
    """Offline checks shared by every command: blueprints, the bundle, the user's functions.

    The functions uploaded are the bundle's files (installed with provision, or `bundle`), one
    toggle filter rendered per feature an agent can show, and the files in `functions_dir` when it exists.
    `variables` resolve ${NAME} (None: only their syntax is checked).
    """
    problems: list[Problem] = []
    catalog = None
    files: list[FunctionFile] = []
    try:
        catalog = load_catalog(path, variables)
    except BlueprintError as exc:
        problems.extend(exc.problems)
    source = bundle or bundle_dir()
    try:
        files.extend(load_function_files(source))
    except BlueprintError as exc:
        problems.extend(exc.problems)
    else:
        if not any(f.id == FEATURE_FILTER_ID for f in files):
            problems.append(
                Problem(
                    str(source / f"{FEATURE_FILTER_ID}.py"),
                    None,
                    "",
                    "missing: every agent row uses the feature filter",
                )
            )
    bundle_ids = {f.id for f in files}
    if catalog is not None:
        files.extend(rendered_toggle_functions(catalog))
    own: tuple[FunctionFile, ...] = ()
    own_loaded = True
    if functions_dir is not None and functions_dir.exists():
        try:
            own = load_function_files(functions_dir)
        except BlueprintError as exc:
            problems.extend(exc.problems)
            own_loaded = False
        else:
            problems.extend(_reserved_ids(own, bundle_ids))
            files.extend(own)
            if catalog is not None:  # printed with the blueprint directory's notes
                skipped = skipped_function_files(functions_dir, own)
                catalog = dataclasses.replace(catalog, notes=(*catalog.notes, *skipped))
    if catalog is not None and own_loaded:  # else every attached id would look unknown
        problems.extend(check_attachments(catalog, own, reserved=bundle_ids, functions_dir=functions_dir))
    if problems or catalog is None:
        raise BlueprintError(problems)
    return Inputs(catalog, tuple(files))


def _reserved_ids(own: tuple[FunctionFile, ...], bundle_ids: set[str]) -> list[Problem]:
    """A user's function may not take a bundle id or the prefix the bundle's ids use."""
    return [
        Problem(
            f.path,
            None,
            "id",
            f"{f.id!r} is reserved for the bundle (ids starting with {BUNDLE_PREFIX!r}); rename the file",
        )
        for f in own
        if f.id in bundle_ids or f.id.startswith(BUNDLE_PREFIX)
    ]


def with_token_secret(variables: Variables | None, token: str | None) -> Variables | None:
    """`variables` with the token in use among the secrets: no expanded value may hold it."""
    if variables is None or token is None:
        return variables
    return dataclasses.replace(variables, secrets={TOKEN_IN_USE: token, **variables.secrets})


def token_variables(token_env: str | None, variables: Variables | None = None) -> set[str]:
    """The token variable in use and every target's (`Variables.secret_names`); OPENWEBUI_TOKEN
    and OPENWEBUI_TOKEN_FILE are refused by name in every blueprint already (TOKEN_VARIABLES)."""
    return ({token_env} if token_env else set()) | set(variables.secret_names if variables else ())


# ------------------------------------------------------------------------------- connecting


@dataclass(frozen=True)
class Connection:
    url: str | None
    token_file: Path | None
    insecure: bool
    timeout: float
    token_env: str | None = "OPENWEBUI_TOKEN"  # a target's token_env; None: only the file
    allow_http: tuple[str, ...] = ()  # a target's hosts reached over plain http without --insecure

    def for_target(self, target: Target) -> Connection:
        """Where a target says to connect; --insecure and --timeout stay."""
        return Connection(
            target.url,
            target.token_file,
            self.insecure,
            self.timeout,
            token_env=target.token_env,
            allow_http=target.allow_http,
        )


def read_token(token_file: Path | None, token_env: str | None, warn: Warn) -> str:
    env_token = os.environ.get(token_env, "").strip() if token_env else ""
    if token_file is not None:
        if env_token:
            raise ConfigError(f"both {token_env} and --token-file are set; use one")
        return read_token_file(token_file, warn=warn)
    if not env_token:
        if token_env != "OPENWEBUI_TOKEN":
            raise ConfigError(f"no token: the target's token_env {token_env} is not set (it holds an admin's API key)")
        raise ConfigError("no token: set OPENWEBUI_TOKEN or pass --token-file (an admin's API key)")
    return env_token


def credentials(conn: Connection, warn: Warn) -> tuple[str, str]:
    """The checked base URL and the admin token; `warn` hears about a token file's mode."""
    if not conn.url:
        raise ConfigError("no Open WebUI URL: pass --url or set OPENWEBUI_URL")
    url = check_url(conn.url, insecure=conn.insecure, allow_http=conn.allow_http)
    return url, read_token(conn.token_file, conn.token_env, warn)


def connect(conn: Connection, creds: tuple[str, str]) -> OpenWebUIClient:
    url, token = creds
    return OpenWebUIClient(base_url=url, token=token, http=client_module.make_http_client(conn.timeout))


# ------------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class PlanOptions:
    """What diff and sync were asked to plan (the CLI's flags and the target's settings)."""

    prune: bool = False
    adopt: Collection[tuple[Kind, str]] = ()
    missing_groups: str = "fail"  # the target's missing_groups (groups.py)
    rotate_identity_key: bool = False  # stage a new IDENTITY_KEYS signing key (sync --rotate-identity-key)
    revoke_identity_key: str | None = None  # the kid to drop at once (sync --revoke-identity-key)
    message: str | None = None  # sync --message: the history's commit message
    token_variables: Collection[str] = ()  # variables that hold an admin token (token_variables())


def prepare_plan(
    inputs: Inputs,
    client: OpenWebUIClient,
    *,
    token: str,
    options: PlanOptions = PlanOptions(),
    env: Mapping[str, str] | None = None,
    on_warning: Warn | None = None,
) -> Plan:
    """Read the instance and plan what must change for it to match `inputs`. Writes nothing.

    Reads, in order: the version (compat), the groups the blueprints name, every model row and
    function (one listing each), the owners of wrapper models, and the history of drifted rows.
    `token` is the admin token in use: no backend key may hold it. `env` holds the backends'
    API keys (default: the environment).
    """
    env = os.environ if env is None else env
    compat = client.compat
    for message in release_warnings(compat):
        if on_warning:
            on_warning(message)
    groups, group_actions = resolve_groups(inputs.catalog, client, prune=options.prune, mode=options.missing_groups)
    rows = client.list_models()
    functions = client.list_functions()
    # Functions off answer every listing with []; on an instance synced before (it has managed
    # rows), the pipe read by id tells that from functions deleted. A new instance costs no read.
    synced_before = any(is_managed(row.get("meta")) for row in rows)
    pipe_by_id = client.find_function(PIPE_FUNCTION_ID) if not functions and synced_before else None
    for message in every_agent_fails(functions, pipe_by_id):  # never blocks: sync cannot fix these
        if on_warning:
            on_warning(message)
    observed = observe(rows, functions, compat)
    keys = plan_identity_keys(
        live_identity_keys(observed),
        now=time.time(),
        rotate=options.rotate_identity_key,
        revoke=options.revoke_identity_key,
    )
    if keys.waiting and on_warning:
        on_warning(keys.waiting)
    desired, kept_notes = desired_state(
        inputs, observed, groups, token=token, options=options, compat=compat, env=env, identity_keys=keys
    )
    agent_ids = set(desired.models) | {i for i, m in observed.models.items() if m.managed}
    wrappers = named_wrappers(client, find_wrappers(rows, agent_ids))
    plan = make_plan(
        desired,
        observed,
        prune=options.prune,
        adopt=set(options.adopt),
        orphan_notes=kept_notes,
        wrappers=wrappers,
        notes=[
            *native_toggle_notes(inputs.catalog),
            *translation_notes(inputs.catalog, compat),
            *group_notes(group_actions),
            *keys.notes,
        ],
        commit=CommitInfo.from_env(__version__, env, options.message),
    )
    from .openwebui.drift import plan_drift

    return dataclasses.replace(plan, groups=tuple(group_actions), drift=tuple(plan_drift(plan, client, observed)))


def release_warnings(compat: Compat) -> list[str]:
    if compat.tested:
        return []
    return [
        f"Warning: Open WebUI {visible(compat.version) or '(unknown version)'} is outside the tested range "
        f"({', '.join(TESTED)}); continuing."
    ]


def desired_state(
    inputs: Inputs,
    observed: InstanceState,
    groups: Mapping[str, str],
    *,
    token: str,
    options: PlanOptions = PlanOptions(),
    compat: Compat | None = None,
    env: Mapping[str, str] | None = None,
    identity_keys: KeyPlan | None = None,
) -> tuple[InstanceState, dict[str, str]]:
    """The state the instance should have, with what the instance must keep from itself: the
    pipe's signing key, its identity keys (`identity_keys`, default: plan_identity_keys of the
    live valve with `options`), and the entries of agents kept without --prune.
    Returns it with one note per kept orphan row (orphans.py)."""
    signing_key = history_signing_key(observed, fresh=secrets.token_urlsafe(32))
    if identity_keys is None:
        identity_keys = plan_identity_keys(
            live_identity_keys(observed),
            now=time.time(),
            rotate=options.rotate_identity_key,
            revoke=options.revoke_identity_key,
        )
    desired = build_desired(
        inputs.catalog,
        inputs.functions,
        groups,
        env=os.environ if env is None else env,
        token=token,
        token_variables=options.token_variables,
        signing_key=signing_key,
        priority_in_valves=compat is not None and compat.filter_priority_in_valves,
        skip_missing_groups=options.missing_groups == "skip",
        identity_keys=identity_keys.value,
        translations=toggle_translations(inputs.catalog),
        i18n=compat is None or compat.i18n,
    )
    return keep_orphan_agents(desired, observed, prune=options.prune)


def resolve_groups(
    catalog: Catalog, client: OpenWebUIClient, *, prune: bool, mode: str
) -> tuple[dict[str, str], list[GroupAction]]:
    """Group name -> id for the grants, and what happens to groups (groups.py): a missing group
    fails the plan (later, naming file and line), is skipped, or is to be created. Planning writes
    nothing: a group to create gets a placeholder id, and apply creates it (after the plan was
    shown and confirmed) before any row is written, putting its real id into the grants. `mode`:
    the target's missing_groups."""
    wanted = named_groups(catalog)
    if not wanted and not (prune and mode == "create"):
        return {}, []
    live = client.list_groups()
    groups = {str(g.get("name")): str(g.get("id")) for g in live}
    actions: list[GroupAction] = []
    missing = missing_groups(catalog, groups)
    if missing and mode == "skip":
        actions = [GroupAction(name, "skip") for name in missing]
    elif missing and mode == "create":
        for name in missing:
            groups[name] = placeholder_id(name)
            actions.append(GroupAction(name, "create"))
    if prune and mode == "create":
        empty, kept = stale_own_groups(live, wanted)
        actions += [GroupAction(str(g.get("name")), "delete", str(g.get("id"))) for g in empty]
        actions += [GroupAction(str(g.get("name")), "keep", str(g.get("id"))) for g in kept]
    return groups, actions


def group_notes(actions: list[GroupAction]) -> list[str]:
    """One line per group action, for the plan's notes."""
    notes: list[str] = []
    for a in actions:
        if a.action in ("skip", "create"):
            notes += missing_group_notes([a.name], a.action)
        elif a.action == "delete":
            notes.append(
                f"group {a.name!r} was created by provision, is empty and no blueprint names it: --prune deletes it"
            )
        else:
            notes.append(
                f"group {a.name!r} was created by provision and no blueprint names it, but it has members "
                "(of its own, or in a group below it): kept"
            )
    return notes


def native_toggle_notes(catalog: Catalog) -> list[str]:
    """How the native features the blueprints use reach agents (docs/features.md, "How features work")."""
    native = sorted({f for lb in catalog.blueprints for f in lb.supported_features} & NATIVE_FEATURES)
    if not native:
        return []
    return [
        f"{', '.join(native)} {'reaches' if len(native) == 1 else 'reach'} agents as the bundle's own toggles "
        f"({', '.join(toggle_filter_id(f) for f in native)}), on any instance configuration; "
        "Open WebUI's own toggles for them stay off on agent rows, so it never runs them for an agent."
    ]


def translation_notes(catalog: Catalog, compat: Compat) -> list[str]:
    """One note for the whole plan when the blueprints translate and the release cannot show it."""
    if compat.i18n:
        return []
    agents = sum(1 for lb in catalog.blueprints for a in lb.blueprint.agents if lb.blueprint.i18n or a.i18n)
    features = sum(1 for f in catalog.features.values() if f.i18n)
    if not agents and not features:
        return []
    what = ", ".join(
        part
        for part in (
            f"{agents} agent{'s' if agents != 1 else ''}" if agents else "",
            f"{features} custom feature{'s' if features != 1 else ''}" if features else "",
        )
        if part
    )
    return [
        f"translations (i18n) of {what} are not written: Open WebUI {visible(compat.version)} shows the default "
        "language only; translated names, descriptions, suggestions and toggles need Open WebUI 0.12 or later."
    ]


def named_wrappers(client: OpenWebUIClient, wrappers: list[dict[str, str]]) -> list[dict[str, str]]:
    """Wrappers with their owners' names (one read per owner; wrappers are rare)."""
    owners = {w["owner"] for w in wrappers if w["owner"]}
    users = {owner: client.get_user(owner) or {} for owner in sorted(owners)}
    return with_owner_names(wrappers, users)
