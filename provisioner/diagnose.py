"""What `provision doctor` and `provision explain --target` read from an instance, and what the
blueprints expect of it. The reads are the client's; the checks are doctor.py's (pure).

Reads, in order: the version, every function with its valves (and the pipe by id when that
listing is empty: functions may be off), every model row, the groups with their permissions, the
default user permissions and the document settings. The last two are optional: an error there
becomes a skipped check, never a failed doctor run.

Layer: pipeline.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .blueprints import GroupAccess
from .contract import AGENTS_VALVE, PIPE_FUNCTION_ID, agent_key, model_id, split_agent_key, valve_path
from .desired import build_desired
from .doctor import Check, Expected, Facts, Probe, run_checks
from .errors import ApiError, ConfigError, ProvisionError
from .explain import instance_notes
from .function_files import FunctionFile
from .loader import Catalog
from .openwebui.client import OpenWebUIClient, check_url
from .orphans import agent_entries
from .pipeline import Connection, connect

# The pipe's source holds this once it can answer probes (agent_pipe/probe.py's PROBE_KEY).
PROBE_MARKER = "aihub_probe"
PROBES_AT_ONCE = 4


def expected_from(catalog: Catalog, functions: Sequence[FunctionFile]) -> Expected:
    """What the blueprints say, offline (no groups, no secrets resolved)."""
    desired = build_desired(catalog, functions, groups=None)
    pipe = desired.functions.get(PIPE_FUNCTION_ID)
    entries = json.loads(pipe.fields[valve_path(AGENTS_VALVE)]) if pipe is not None else []
    groups: dict[str, list[str]] = {}
    public: set[str] = set()
    for lb in catalog.blueprints:
        for agent in lb.blueprint.agents:
            key = agent_key(lb.blueprint.id, agent.id)
            if agent.access == "public":
                public.add(key)
            elif isinstance(agent.access, GroupAccess):
                groups[key] = list(agent.access.groups)
    return Expected(
        functions={fid: bool(state.fields.get("is_global")) for fid, state in desired.functions.items()},
        agents={str(e["id"]): e for e in entries},
        key_names=frozenset(e["api_key"] for e in entries if e.get("api_key") and e.get("key_from") == "sync"),
        groups=groups,
        public=frozenset(public),
    )


def read_facts(client: OpenWebUIClient) -> Facts | Check:
    """The instance as doctor sees it, or the one failed check that stops the rest (the
    instance cannot be reached or read, or its release is not supported)."""
    try:
        version = client.version()
    except ProvisionError as exc:
        return Check(
            "connection",
            "fail",
            f"cannot read Open WebUI at {client.base_url}: {exc}",
            "check the URL (--url, OPENWEBUI_URL or the target) and that an admin's API key is in OPENWEBUI_TOKEN",
        )
    try:
        compat = client.compat
    except ConfigError as exc:
        return Facts(version, str(exc), False, (), None, ())
    try:
        functions = client.list_functions()
        pipe_by_id = client.find_function(PIPE_FUNCTION_ID) if not functions else None
        models = client.list_models()
        groups = client.list_groups()
    except ApiError as exc:
        return Check(
            "connection",
            "fail",
            f"cannot read the instance: {exc}",
            "the token must be an admin's API key (Open WebUI answers 401/403 to anyone else)",
        )
    return Facts(
        version=version,
        release_problem=None,
        tested=compat.tested,
        functions=functions,
        pipe_by_id=pipe_by_id,
        models=models,
        groups=groups,
        default_permissions=_optional(client.default_permissions),
        retrieval=_optional(client.retrieval_config),
    )


def _optional(read: Any) -> dict[str, Any] | None:
    try:
        return read()
    except ApiError:
        return None


def instance_explanation(client: OpenWebUIClient, explained: dict[str, Any]) -> list[dict[str, str]]:
    """What the instance adds to `provision explain`'s answer (explain.instance_notes)."""
    facts = read_facts(client)
    if isinstance(facts, Check):
        raise ConfigError(facts.message)
    if facts.release_problem:
        raise ConfigError(facts.release_problem)
    if any(t["native"] for t in explained["toggles"]):
        facts = dataclasses.replace(facts, native_switches=client.native_switches())
    return instance_notes(explained, facts)


def diagnose(
    client: OpenWebUIClient, expected: Expected | None, replicas: Sequence[OpenWebUIClient] = ()
) -> list[Check]:
    """Every check of the instance (doctor.run_checks), in the order they were made; each
    agent's backend probed through the pipe of every replica given (else through `client`)."""
    facts = read_facts(client)
    if isinstance(facts, Check):
        return [facts]
    if facts.release_problem:
        return run_checks(facts, None)[:1]
    probes, not_probed = probe_backends(facts, expected, list(replicas) or [client])
    return run_checks(facts, expected, probes, not_probed)


def probe_backends(
    facts: Facts, expected: Expected | None, through: Sequence[OpenWebUIClient]
) -> tuple[list[Probe], str]:
    """Each agent the pipe serves, probed by the pipe of each Open WebUI in `through` (a few at
    a time: an unreachable backend costs the pipe's probe timeout). Returns the probes, or none
    and why not."""
    pipe = next((f for f in facts.functions if f.get("id") == PIPE_FUNCTION_ID), None)
    if pipe is None or not pipe.get("is_active"):
        return [], "the pipe is not active"
    if PROBE_MARKER not in str(pipe.get("content") or ""):
        return [], "the pipe on the instance predates probes"
    served = agent_entries((pipe.get("valves") or {}).get(AGENTS_VALVE))
    keys = sorted(served if expected is None else set(served) & set(expected.agents))
    jobs = [(key, other) for key in keys for other in through]
    with ThreadPoolExecutor(max_workers=PROBES_AT_ONCE) as pool:
        return list(pool.map(lambda job: _probe(*job), jobs)), ""


def _probe(key: str, client: OpenWebUIClient) -> Probe:
    try:
        return Probe(key, client.base_url, client.probe_agent(model_id(*split_agent_key(key))))
    except ProvisionError as exc:
        return Probe(key, client.base_url, None, str(exc))
    except ValueError:
        return Probe(key, client.base_url, None, "the pipe answered as a chat, not as a probe")


def replica_clients(conn: Connection, token: str, urls: Sequence[str]) -> list[OpenWebUIClient]:
    """A client per replica URL (`doctor --replica`), with the target's token and settings."""
    return [connect(conn, (check_url(url, insecure=conn.insecure, allow_http=conn.allow_http), token)) for url in urls]
