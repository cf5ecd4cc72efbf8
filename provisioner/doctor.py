"""`provision doctor`'s checks: what on an instance makes agents fail, each with the fix. Pure.

The caller reads the instance once (`Facts`: listings, the admin settings an API key may read)
and, when a blueprint directory is at hand, says what it expects (`Expected`, from
desired.build_desired). Every check yields `Check` lines, pass/warn/fail; `ordered` puts what
breaks every agent first, as an operator on call wants to read them.

Open WebUI tells an API key nothing about ENABLE_FUNCTIONS: `/api/config` reports
`features.enable_functions` only to a signed-in session (0.12.4 `main.py:get_app_config`
decodes only JWTs), and every function listing answers `[]` while functions are off. So
`functions_off` infers it the one way an admin key can: the listing is empty while
`GET /api/v1/functions/id/<pipe>` answers with the pipe.

Layer: core.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from .contract import (
    AGENTS_VALVE,
    API_KEYS_VALVE,
    FEATURE_FILTER_ID,
    IDENTITY_VALVE,
    PIPE_FUNCTION_ID,
    SIGNING_VALVE,
    split_agent_key,
)
from .contract import model_id as agent_model_id
from .groups import file_upload, group_has_members, groups_below_that_may_upload, members_may_upload
from .orphans import agent_entries

Status = Literal["fail", "warn", "pass", "skip"]
STATUS_ORDER: Mapping[str, int] = {"fail": 0, "warn": 1, "pass": 2, "skip": 3}
FORMAT_VERSION = "1"


@dataclass(frozen=True)
class Check:
    """One line of the report: what was checked, what was found, and what to do about it."""

    id: str
    status: Status
    message: str
    fix: str = ""
    subject: str = ""  # the agent or function it is about, when it is about one

    def to_json(self) -> dict[str, str]:
        return {k: v for k, v in asdict(self).items() if v or k in ("id", "status", "message")}


@dataclass(frozen=True)
class Facts:
    """What the instance said. None: not read (an older release, or a read that failed)."""

    version: str
    release_problem: str | None  # compat.select's refusal of an unsupported release
    tested: bool
    functions: Sequence[Mapping[str, Any]]  # /functions/export?include_valves=true
    pipe_by_id: Mapping[str, Any] | None  # /functions/id/<pipe>, read only when the listing is empty
    models: Sequence[Mapping[str, Any]]
    groups: Sequence[Mapping[str, Any]] = ()
    default_permissions: Mapping[str, Any] | None = None
    retrieval: Mapping[str, Any] | None = None  # /retrieval/config
    # Open WebUI's own switch per native feature (explain reads them; None: not read)
    native_switches: Mapping[str, bool | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Expected:
    """What the blueprints say the instance should hold (desired.build_desired, offline)."""

    functions: Mapping[str, bool]  # function id -> is_global wanted
    agents: Mapping[str, Mapping[str, Any]]  # agent key -> its AGENTS valve entry
    key_names: frozenset[str] = frozenset()  # API_KEYS names sync writes (key_from sync)
    groups: Mapping[str, Sequence[str]] = field(default_factory=dict)  # agent key -> group names (access)
    public: frozenset[str] = frozenset()  # agent keys readable by every user


@dataclass(frozen=True)
class Probe:
    """One agent's backend as one Open WebUI process reached it (the pipe's probe answer)."""

    agent: str
    via: str  # the Open WebUI URL that was asked: the target's, or one replica's
    answer: Mapping[str, Any] | None  # None: no answer came, `error` says why
    error: str = ""


def functions_off(functions: Sequence[Mapping[str, Any]], pipe_by_id: Mapping[str, Any] | None) -> bool:
    """Every listing is empty while functions are off, but the pipe still answers by id."""
    return not functions and bool(pipe_by_id)


def every_agent_fails(functions: Sequence[Mapping[str, Any]], pipe_by_id: Mapping[str, Any] | None) -> list[str]:
    """The findings that stop every agent (functions off, the pipe inactive), as warnings for
    diff and sync: they never block a sync, but a sync that succeeds changes nothing about them."""
    if functions_off(functions, pipe_by_id):
        return [
            "Warning: functions are switched off on this Open WebUI (ENABLE_FUNCTIONS=false or ENABLE_PLUGINS=false): "
            "every agent fails, whatever sync writes. Set ENABLE_FUNCTIONS=true in the server's environment and restart it "
            "(`provision doctor` checks it)."
        ]
    pipe = next((f for f in functions if f.get("id") == PIPE_FUNCTION_ID), None)
    if pipe is not None and not pipe.get("is_active"):
        return [
            f"Warning: the agent pipe {PIPE_FUNCTION_ID} is inactive on this Open WebUI: every agent's chat fails "
            "until it is active (a sync of the bundle switches it on; `provision doctor` checks it)."
        ]
    return []


def run_checks(
    facts: Facts, expected: Expected | None, probes: Sequence[Probe] = (), not_probed: str = ""
) -> list[Check]:
    """Every check, in order of importance; `ordered` sorts the result for reading. `probes`:
    the backends as the pipe reached them; `not_probed` says why there are none."""
    checks = [_release(facts)]
    if functions_off(facts.functions, facts.pipe_by_id):
        checks.append(
            Check(
                "functions-enabled",
                "fail",
                "functions are switched off (ENABLE_FUNCTIONS=false or ENABLE_PLUGINS=false): no agent row is served and "
                "no toggle shows; every chat with an agent fails",
                "set ENABLE_FUNCTIONS=true (and ENABLE_PLUGINS, if set) in Open WebUI's environment and restart it",
            )
        )
        return checks  # every other check would read an empty listing
    checks.append(Check("functions-enabled", "pass", "functions are enabled"))
    by_id = {str(f.get("id")): f for f in facts.functions}
    checks += _pipe(by_id)
    checks += _bundle(by_id, expected)
    pipe = by_id.get(PIPE_FUNCTION_ID)
    valves = (pipe or {}).get("valves") or {}
    served = agent_entries(valves.get(AGENTS_VALVE))
    checks += _pipe_valves(valves, served, expected)
    agents = dict(expected.agents) if expected is not None else served
    checks += _rows(facts.models, agents)
    checks += _backends(probes, not_probed, agents)
    checks += _probed_identity(probes, agents) if probes else _identity(valves, agents)
    checks += _oauth_headers(probes)
    checks += _access(facts.groups, expected)
    checks += _uploads(facts, agents, expected)
    checks += _wrappers(facts.models, agents)
    return checks


def ordered(checks: Iterable[Check]) -> list[Check]:
    """Failures first, then warnings, then what passed; each group in the order checked, except
    that findings of one check with one fix stand together (six agents on one stopped backend
    read as one run, under one fix), where the first of them was."""
    checks = list(checks)
    first: dict[tuple[str, str, str], int] = {}
    for index, check in enumerate(checks):
        first.setdefault((check.status, check.id, check.fix), index)
    return sorted(checks, key=lambda c: (STATUS_ORDER[c.status], first[(c.status, c.id, c.fix)]))


def summary(checks: Iterable[Check]) -> dict[str, int]:
    counts = {"fail": 0, "warn": 0, "pass": 0, "skip": 0}
    for check in checks:
        counts[check.status] += 1
    return counts


def report_json(checks: Sequence[Check], target: str | None = None) -> dict[str, Any]:
    """The `-o json` form, versioned like the plan's."""
    checks = ordered(checks)
    return {
        "format_version": FORMAT_VERSION,
        "target": target,
        "summary": summary(checks),
        "checks": [c.to_json() for c in checks],
    }


def exit_code(checks: Iterable[Check], strict: bool) -> int:
    """0 nothing fails, 1 something fails, 2 warnings under --strict."""
    counts = summary(checks)
    if counts["fail"]:
        return 1
    return 2 if strict and counts["warn"] else 0


# ------------------------------------------------------------------------------- checks


def _release(facts: Facts) -> Check:
    if facts.release_problem:
        return Check("release", "fail", facts.release_problem, "upgrade Open WebUI")
    if not facts.tested:
        return Check(
            "release",
            "warn",
            f"Open WebUI {facts.version or '(unknown version)'} is outside the tested range",
            "run a tested release (see `provision diff`'s warning for the list), or watch the first chats closely",
        )
    return Check("release", "pass", f"Open WebUI {facts.version} is a tested release")


def _pipe(by_id: Mapping[str, Mapping[str, Any]]) -> list[Check]:
    pipe = by_id.get(PIPE_FUNCTION_ID)
    if pipe is None:
        return [
            Check(
                "pipe-active",
                "fail",
                f"the agent pipe {PIPE_FUNCTION_ID} is not on the instance: every agent fails",
                "run `provision sync`",
                PIPE_FUNCTION_ID,
            )
        ]
    if not pipe.get("is_active"):
        return [
            Check(
                "pipe-active",
                "fail",
                f"the agent pipe {PIPE_FUNCTION_ID} is inactive: every agent's chat fails",
                "run `provision sync` (it switches the pipe on), or switch it on in Admin Panel > Functions",
                PIPE_FUNCTION_ID,
            )
        ]
    if pipe.get("is_global"):
        return [
            Check(
                "pipe-active",
                "warn",
                f"the agent pipe {PIPE_FUNCTION_ID} is global",
                "run `provision sync`",
                PIPE_FUNCTION_ID,
            )
        ]
    return [Check("pipe-active", "pass", f"the agent pipe {PIPE_FUNCTION_ID} is active", subject=PIPE_FUNCTION_ID)]


def _bundle(by_id: Mapping[str, Mapping[str, Any]], expected: Expected | None) -> list[Check]:
    """The filters every agent row lists: present, active, and global only when their file says."""
    wanted: Mapping[str, bool | None] = (
        {k: v for k, v in expected.functions.items() if k != PIPE_FUNCTION_ID}
        if expected is not None
        else {fid: None for fid in by_id if fid.startswith("aihub_") and fid != PIPE_FUNCTION_ID}
    )
    checks: list[Check] = []
    for fid, is_global in sorted(wanted.items()):
        fn = by_id.get(fid)
        effect = (
            "no requested feature reaches any agent, and Open WebUI's own toggles are not stripped"
            if fid == FEATURE_FILTER_ID
            else "its toggle shows on no agent"
        )
        if fn is None:
            checks.append(
                Check(
                    "bundle-functions", "fail", f"{fid} is not on the instance: {effect}", "run `provision sync`", fid
                )
            )
        elif not fn.get("is_active"):
            status: Status = "fail" if fid == FEATURE_FILTER_ID else "warn"
            checks.append(
                Check(
                    "bundle-functions",
                    status,
                    f"{fid} is inactive: {effect}",
                    "run `provision sync`, or switch it on in Admin Panel > Functions",
                    fid,
                )
            )
        elif is_global is not None and bool(fn.get("is_global")) != is_global:
            checks.append(
                Check(
                    "bundle-functions",
                    "warn",
                    f"{fid} is "
                    + (
                        "global: it runs on every model of the instance"
                        if fn.get("is_global")
                        else "not global, but its file says global: true"
                    ),
                    "run `provision sync` (it sets the flag from the file's frontmatter)",
                    fid,
                )
            )
    if not checks:
        checks.append(Check("bundle-functions", "pass", f"the bundle's {len(wanted)} filter(s) are present and active"))
    return checks


def _pipe_valves(
    valves: Mapping[str, Any], served: Mapping[str, Mapping[str, Any]], expected: Expected | None
) -> list[Check]:
    if expected is None:
        return [
            Check(
                "pipe-valves",
                "skip",
                "no blueprints read: the pipe's valves were not compared",
                "run `provision doctor -p DIR` with your blueprint directory",
            )
        ]
    checks: list[Check] = []
    for key, entry in sorted(expected.agents.items()):
        live = served.get(key)
        if live is None:
            checks.append(
                Check(
                    "pipe-valves",
                    "fail",
                    f"the pipe's AGENTS valve has no entry for {key}: its chats fail",
                    "run `provision sync`",
                    key,
                )
            )
        elif _comparable(live) != _comparable(entry):
            fields = sorted(k for k in set(entry) | set(live) if entry.get(k) != live.get(k))
            checks.append(
                Check(
                    "pipe-valves",
                    "fail",
                    f"the pipe's entry for {key} differs from the blueprints ({', '.join(fields)})",
                    "run `provision diff` to see it, then `provision sync`",
                    key,
                )
            )
    keys = _names(valves.get(API_KEYS_VALVE))
    for name in sorted(expected.key_names - keys):
        checks.append(
            Check(
                "pipe-valves",
                "fail",
                f"the pipe's API_KEYS valve holds no {name}: its agents get no key",
                f"set {name} where sync runs and run `provision sync`",
                name,
            )
        )
    if not valves.get(SIGNING_VALVE):
        checks.append(
            Check(
                "pipe-valves",
                "warn",
                "the pipe has no HISTORY_SIGNING_KEY: tool rounds are not replayed to agents",
                "run `provision sync` (it makes one)",
            )
        )
    if not checks:
        checks.append(
            Check(
                "pipe-valves",
                "pass",
                f"the pipe's valves hold what the blueprints say ({len(expected.agents)} agent(s))",
            )
        )
    return checks


def _comparable(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if v not in (None, [], False)}


def _names(raw: Any) -> frozenset[str]:
    try:
        data = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return frozenset()
    return frozenset(str(k) for k in data) if isinstance(data, dict) else frozenset()


def _rows(models: Sequence[Mapping[str, Any]], agents: Mapping[str, Mapping[str, Any]]) -> list[Check]:
    rows = {str(m.get("id")): m for m in models}
    checks = []
    for key in sorted(agents):
        row = rows.get(agent_model_id(*split_agent_key(key)))
        if row is None:
            checks.append(
                Check(
                    "agent-rows", "fail", f"{key} has no model row: nobody sees the agent", "run `provision sync`", key
                )
            )
        elif row.get("is_active") is False:
            checks.append(
                Check(
                    "agent-rows",
                    "fail",
                    f"{key}'s model row is switched off: nobody sees the agent",
                    "run `provision sync`, or switch it on in Admin Panel > Models",
                    key,
                )
            )
    if not checks:
        checks.append(Check("agent-rows", "pass", f"every agent has an active model row ({len(agents)})"))
    return checks


def _identity(valves: Mapping[str, Any], agents: Mapping[str, Mapping[str, Any]]) -> list[Check]:
    signed = sorted(k for k, e in agents.items() if e.get("identity") == "signed")
    if not signed:
        return []
    if valves.get(IDENTITY_VALVE):
        return [Check("identity", "pass", f"the pipe holds an identity signing key for {', '.join(signed)}")]
    return [
        Check(
            "identity",
            "fail",
            f"{', '.join(signed)} ask for a signed identity, and the pipe holds no signing key: their chats fail "
            "unless the server sets AIHUB_IDENTITY_PRIVATE_KEY",
            "run `provision sync` (it makes the key), or set AIHUB_IDENTITY_PRIVATE_KEY on the Open WebUI server",
        )
    ]


def _access(groups: Sequence[Mapping[str, Any]], expected: Expected | None) -> list[Check]:
    """The groups the blueprints give agents to: one missing or without members gives its
    agents to nobody but admins."""
    if expected is None or not expected.groups:
        return []
    by_name = {str(g.get("name")): g for g in groups}
    checks = []
    for key, names in sorted(expected.groups.items()):
        missing = [n for n in names if n not in by_name]
        empty = [n for n in names if n in by_name and not group_has_members(by_name[n], groups)]
        if missing:
            checks.append(
                Check(
                    "access",
                    "fail" if len(missing) == len(names) else "warn",
                    f"{key} is for group(s) {', '.join(missing)}, which do not exist on the instance: "
                    "their members never see the agent",
                    "create the group(s) (or set the target's missing_groups: create) and run `provision sync`",
                    key,
                )
            )
        if empty:
            checks.append(
                Check(
                    "access",
                    "warn",
                    f"{key} is for group(s) {', '.join(empty)}, which have no members",
                    "add the agent's users to the group(s) (Admin Panel > Users > Groups)",
                    key,
                )
            )
    if not checks:
        checks.append(Check("access", "pass", "every group the agents are for exists and has members"))
    return checks


def _reads(entry: Mapping[str, Any]) -> set[str]:
    return set(entry.get("reads") or [])


def _uploads(facts: Facts, agents: Mapping[str, Mapping[str, Any]], expected: Expected | None) -> list[Check]:
    """A document agent needs users who may upload, and (where documents must reach the agent
    unembedded) the instance's embedding bypass."""
    readers = sorted(k for k, e in agents.items() if _reads(e) & {"documents", "images"})
    if not readers:
        return []
    checks: list[Check] = []
    default = file_upload(facts.default_permissions)
    groups = {str(g.get("name")): g for g in facts.groups}
    for key in readers:
        if default is not False:
            continue
        names = list(expected.groups.get(key, ())) if expected is not None else []
        if expected is None or key in expected.public:
            checks.append(
                Check(
                    "file-upload",
                    "fail" if expected is not None else "warn",
                    f"{key} reads attached files, but users may not upload files (default permission chat.file_upload is off)",
                    "Admin Panel > Users > Groups > Default permissions: allow File Upload (or grant it to the agent's groups)",
                    key,
                )
            )
            continue
        lacking = [
            n for n in names if n not in groups or members_may_upload(groups[n], facts.groups, default) is not True
        ]
        below = sorted(
            {b for n in lacking if n in groups for b in groups_below_that_may_upload(groups[n], facts.groups)}
        )
        if names and len(lacking) == len(names) and below:
            checks.append(
                Check(
                    "file-upload",
                    "warn",
                    f"{key} reads attached files, but of its groups ({', '.join(lacking)}) only the members "
                    f"of {', '.join(below)}, below them, may upload files",
                    "allow File Upload in the permissions of its groups, or of a group above them (Admin Panel > Users > Groups)",
                    key,
                )
            )
        elif names and len(lacking) == len(names):
            checks.append(
                Check(
                    "file-upload",
                    "fail",
                    f"{key} reads attached files, but none of its groups ({', '.join(lacking)}) may upload files",
                    "allow File Upload in the permissions of its groups, or of a group above them (Admin Panel > Users > Groups)",
                    key,
                )
            )
    if not checks:
        checks.append(
            Check(
                "file-upload",
                "pass" if default is not None else "skip",
                "users of the document agents may upload files"
                if default is not None
                else "the default permissions could not be read",
            )
        )
    docs = sorted(k for k in readers if "documents" in _reads(agents[k]))
    bypass = (facts.retrieval or {}).get("BYPASS_EMBEDDING_AND_RETRIEVAL")
    if docs and bypass is False:
        checks.append(
            Check(
                "embedding-bypass",
                "warn",
                f"files attached for {', '.join(docs)} are also embedded into Open WebUI's vector store at upload",
                "set Bypass Embedding and Retrieval (Admin Panel > Settings > Documents, BYPASS_EMBEDDING_AND_RETRIEVAL=true) "
                "if documents must reach the agents unembedded",
            )
        )
    elif docs and bypass is True:
        checks.append(Check("embedding-bypass", "pass", "attached documents are not embedded by Open WebUI"))
    return checks


def _wrappers(models: Sequence[Mapping[str, Any]], agents: Mapping[str, Mapping[str, Any]]) -> list[Check]:
    ids = {agent_model_id(*split_agent_key(k)) for k in agents}
    return [
        Check(
            "wrappers",
            "warn",
            f"workspace model {row.get('id')} wraps {row.get('base_model_id')}: its chats skip the feature filter, "
            "so toggles never reach the agent",
            "point its users at the agent itself, or delete the wrapper",
            str(row.get("id")),
        )
        for row in models
        if row.get("base_model_id") in ids and row.get("id") not in ids
    ]


# What to do about a backend the pipe could not reach, by the words of its reason. An HTTP
# error comes first: its reason ends with the server's own detail, whose words ("connection
# refused" from the backend's own upstream) must not pick another fix.
_BACKEND_FIXES: tuple[tuple[str, str], ...] = (
    (
        "refused the key",
        "the backend refused the key: check the variable api_key_env names (sync copies it into the "
        "pipe's API_KEYS) or, with api_key_from: server, the variable on the Open WebUI server",
    ),
    (
        "answered HTTP 404",
        "nothing is served at backend.url's path: point it at the agent's AG-UI endpoint (transport: agui) "
        "or at the OpenAI-compatible base URL, …/v1 (transport: openai)",
    ),
    ("answered HTTP", "the backend answered with an error: its log says why (the finding ends with its short detail)"),
    ("is not allowed", "name the key's variable with api_key_env, never one of Open WebUI's own settings, and sync"),
    ("API_KEYS", "set the key's variable where sync runs and run `provision sync`"),
    ("environment variable", "set the variable on every Open WebUI replica and restart them"),
    (
        "refused",
        "start the agent's backend, or correct backend.url: it must work from where Open WebUI runs, "
        "not only from where provision runs",
    ),
    ("does not resolve", "the host name does not resolve from Open WebUI's side: use a name its DNS knows"),
    (
        "TLS",
        "Open WebUI does not trust the backend's certificate: give the Open WebUI server the CA (SSL_CERT_FILE, "
        "or its system store) or use a certificate of a CA it trusts",
    ),
    ("timed out", "nothing answers on the way from Open WebUI to the backend: a firewall, a proxy or a stopped host"),
    ("no answer within", "the backend accepted the connection but did not answer: check that it is healthy"),
    ("not as an AG-UI", "point backend.url at the agent's AG-UI endpoint (or set transport: openai)"),
    ("not as an OpenAI", "point backend.url at the OpenAI-compatible base URL (…/v1), or set transport: agui"),
    ("no network route", "no route from Open WebUI to the backend's network"),
)


def _backends(probes: Sequence[Probe], not_probed: str, agents: Mapping[str, Mapping[str, Any]]) -> list[Check]:
    if not probes:
        return (
            [
                Check(
                    "backend",
                    "skip",
                    f"the agents' backends were not probed: {not_probed}",
                    _NOT_PROBED_FIX.get(not_probed, ""),
                )
            ]
            if not_probed
            else []
        )
    several = len({p.via for p in probes}) > 1
    checks = []
    for probe in sorted(probes, key=lambda p: (p.agent, p.via)):
        where = (
            f" (through {probe.via}"
            f"{', ' + str(probe.answer.get('replica')) if probe.answer and probe.answer.get('replica') else ''})"
            if several
            else ""
        )
        answer = probe.answer
        if answer is None:
            checks.append(
                Check(
                    "backend",
                    "fail",
                    f"{probe.agent}: the probe got no answer{where}: {probe.error}",
                    _no_answer_fix(probe.error),
                    probe.agent,
                )
            )
        elif answer.get("reached"):
            protocol = {"agui": "AG-UI", "openai": "OpenAI-compatible"}.get(str(answer.get("protocol")), "?")
            version = f" {answer['agui_version']}" if answer.get("agui_version") else ""
            checks.append(
                Check(
                    "backend",
                    "pass",
                    f"{probe.agent}: reached from Open WebUI at {answer.get('host')} "
                    f"({protocol}{version}, {answer.get('ms')} ms){where}",
                    subject=probe.agent,
                )
            )
        else:
            reason = str(answer.get("reason") or "unknown")
            fix = next((f for needle, f in _BACKEND_FIXES if needle in reason), "see the backend's log")
            key = _whose_key(agents.get(probe.agent) or {}) if "refused the key" in reason else ""
            checks.append(
                Check(
                    "backend",
                    "fail",
                    f"{probe.agent}: not reached from Open WebUI at {answer.get('host')}: {reason}{key}{where}",
                    fix,
                    probe.agent,
                )
            )
    return checks


def _whose_key(agent: Mapping[str, Any]) -> str:
    """Which variable the refused key came from: the fix is shared by every agent, the name is not."""
    name = agent.get("api_key")
    if not name:
        return "; the agent sends no key (its blueprint's backend has no api_key_env)"
    if agent.get("key_from") == "server":
        return f"; its key is ${name} in the Open WebUI server's environment (api_key_from: server)"
    return f"; its key is ${name} where provision sync ran (api_key_env)"


def _no_answer_fix(error: str) -> str:
    """Open WebUI did not hand the probe to the pipe, or the pipe did not answer as a probe."""
    if "answered 403" in error or "answered 401" in error or "Model not found" in error:
        return (
            "Open WebUI does not let this admin use the agent's model: with BYPASS_ADMIN_ACCESS_CONTROL=false, give "
            "the admin read access to it (or run doctor with a key of an admin who has it)"
        )
    if "as a chat" in error:
        return "run `provision sync`: the pipe on the instance is not this provision's"
    return "look at Open WebUI's log for the request to /api/chat/completions"


_NOT_PROBED_FIX = {
    "the pipe on the instance predates probes": "run `provision sync` to install this provision's pipe",
}


def _probed_identity(probes: Sequence[Probe], agents: Mapping[str, Mapping[str, Any]]) -> list[Check]:
    """A signed identity needs, on every replica, Open WebUI's JWT secret or the pipe's key."""
    checks = []
    for probe in probes:
        answer = probe.answer or {}
        if not answer or agents.get(probe.agent, {}).get("identity") != "signed":
            continue
        if not (answer.get("user_jwt") or answer.get("identity_key")):
            checks.append(
                Check(
                    "identity",
                    "fail",
                    f"{probe.agent} asks for a signed identity, and {answer.get('replica') or probe.via} can sign none: "
                    "its chats fail there",
                    "run `provision sync` (it gives the pipe a signing key), or set ENABLE_FORWARD_USER_INFO_HEADERS=true and "
                    "FORWARD_USER_INFO_HEADER_JWT_SECRET on every Open WebUI replica",
                    probe.agent,
                )
            )
        else:
            signed = [
                name
                for name, on in (
                    ("X-AIHub-Identity", answer.get("identity_key")),
                    ("X-OpenWebUI-User-Jwt", answer.get("user_jwt")),
                )
                if on
            ]
            plain = "" if answer.get("forward_user_info") else "; Open WebUI's own forwarded-user headers are off there"
            checks.append(
                Check(
                    "identity",
                    "pass",
                    f"{probe.agent} gets a signed identity ({', '.join(signed)}) from {answer.get('replica') or probe.via}"
                    + plain,
                    subject=probe.agent,
                )
            )
    return checks


def _oauth_headers(probes: Sequence[Probe]) -> list[Check]:
    """An agent's OAuth token header that a replica's forwarding settings already name: the pipe
    refuses every chat with it there (the names live in each server's environment)."""
    asked = [(p, p.answer) for p in probes if p.answer and "oauth_header_taken" in p.answer]
    checks = [
        Check(
            "oauth-header",
            "fail",
            f"{p.agent} asks for the user's OAuth token in a header Open WebUI's forwarding settings on "
            f"{answer.get('replica') or p.via} already name: its chats fail there",
            "give the agent's backend.oauth_token_header a name of its own, or rename the server's "
            "FORWARD_USER_INFO_HEADER_* / FORWARD_SESSION_INFO_HEADER_* header",
            p.agent,
        )
        for p, answer in asked
        if answer["oauth_header_taken"]
    ]
    if asked and not checks:
        checks.append(Check("oauth-header", "pass", "each OAuth token header is one no forwarding setting names"))
    return checks
