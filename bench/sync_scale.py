#!/usr/bin/env python3
"""Benchmark: `provision sync` of 500 agents against a real Open WebUI, with every HTTP call counted.

Usage (from the repository root, one to two minutes on 2 cores)::

    .venv/bin/python bench/sync_scale.py [--blueprints 50] [--agents 10] [--json out.json]
    .venv/bin/python bench/sync_scale.py --latency-ms 20 --parallel 4   # a remote instance, N at a time
    .venv/bin/python bench/sync_scale.py --topology ha   # PostgreSQL + Redis + two replicas

It starts its own throwaway Open WebUI through `scripts/openwebui-local` (a unique instance name,
purged at the end unless --keep), writes a blueprint set of blueprints × agents into a temp dir
next to a copy of the real `owui_functions/` bundle, and runs the CLI in-process with its HTTP
client wrapped so every request is recorded: method, path kind, target id, time.

Scenarios, in order: `diff` of the 500-create plan (text: size and render cost), sync from empty,
no-op re-sync, re-sync after one blueprint changed; then the same three workloads the naive way
(for every object: GET that one object, then write it; no listing, no diff) on the same instance,
and the ratios. Optional `--parallel N [N ...]`: the from-empty `sync --parallelism N` (model
writes N at a time), against the sequential sync from empty.

The naive runs do the same work as sync: what they write is decided by the same pipeline
functions (provisioner.pipeline.load_inputs and desired_state; make_plan on the one object read;
apply.apply_change), so only the way of reading and writing differs. A fast test
(tests/cli/test_sync_scale.py) runs these scenarios and their checks on a small workload against the
in-memory Open WebUI, so the benchmark cannot rot silently.

Exits 1 when a call-count invariant breaks: the no-op re-sync makes only the listing calls; no
scenario reads single rows; the one-change sync writes exactly the objects its plan changes, once
each; every run leaves the instance matching the blueprints.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# The imports below come after the repo is put on sys.path (E402 below, each one).
import provisioner.cli as cli  # noqa: E402
import provisioner.openwebui.client as client_module  # noqa: E402
from provisioner.openwebui.apply import apply_change  # noqa: E402
from provisioner.openwebui.client import OpenWebUIClient  # noqa: E402
from provisioner.openwebui.observed import observe, observed_function, observed_model  # noqa: E402
from provisioner.pipeline import Inputs, desired_state, load_inputs, resolve_groups, target_variables, with_token_secret  # noqa: E402
from provisioner.plan import make_plan  # noqa: E402
from provisioner.state import InstanceState, ObjectState  # noqa: E402
from tests.support.owui_instance import OpenWebUIInstance, throwaway_instance  # noqa: E402

LISTING_KINDS = frozenset(
    {
        ("GET", "/api/version"),
        ("GET", "/api/v1/models/all"),
        ("GET", "/api/v1/functions/export"),
        ("GET", "/api/v1/groups/"),
    }
)
REFRESH = ("GET", "/api/models")
GROUPS = ("Support", "Legal")
CHANGED_BLUEPRINT = 17  # index of the blueprint the one-change scenario edits (capped to the last)
# Capabilities of blueprints/capabilities.yaml, switched on by blueprint index (i % n == 0).
CAPABILITY_PATTERN = (
    ("web_research", 2),
    ("python_sandbox", 3),
    ("read_user_files", 4),
    ("deep_research_loop", 5),
    ("diagram_drawing", 7),
)


# ------------------------------------------------------------------------------- recording


@dataclass(frozen=True)
class Call:
    method: str
    kind: str  # the path with ids replaced by {id}
    target: str  # the object id the call is about ("" for listings)
    status: int
    seconds: float

    @property
    def is_write(self) -> bool:
        return self.method != "GET"

    @property
    def is_listing(self) -> bool:
        return (self.method, self.kind) in LISTING_KINDS

    @property
    def is_refresh(self) -> bool:
        return (self.method, self.kind) == REFRESH

    @property
    def is_row_read(self) -> bool:
        return self.method == "GET" and not (self.is_listing or self.is_refresh)


@dataclass
class Recorder:
    """httpx event hooks that record every request; `calls` is read and cleared per scenario."""

    calls: list[Call] = field(default_factory=list)
    latency: float = 0.0  # seconds added before each request, to model a remote Open WebUI

    def on_request(self, request: httpx.Request) -> None:
        request.extensions["bench_start"] = time.perf_counter()
        if self.latency:
            time.sleep(self.latency)

    def on_response(self, response: httpx.Response) -> None:
        response.read()  # so the time covers the whole answer
        request = response.request
        seconds = time.perf_counter() - request.extensions["bench_start"]
        kind, target = classify(request)
        self.calls.append(Call(request.method, kind, target, response.status_code, seconds))

    def client(self, **kwargs: Any) -> httpx.Client:
        hooks: dict[str, list[Callable[..., Any]]] = {"request": [self.on_request], "response": [self.on_response]}
        return httpx.Client(event_hooks=hooks, trust_env=False, **kwargs)

    def take(self) -> list[Call]:
        calls, self.calls = self.calls, []
        return calls


def classify(request: httpx.Request) -> tuple[str, str]:
    """(path kind, target id): function ids live in the path, model ids in the query or body."""
    path = request.url.path
    parts = path.split("/")
    if path.startswith("/api/v1/functions/id/") and len(parts) > 5:
        return "/".join([*parts[:5], "{id}", *parts[6:]]), parts[5]
    target = request.url.params.get("id", "")
    if not target and request.content:
        try:
            body = json.loads(request.content)
        except ValueError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("id"), str):
            target = body["id"]
    return path, target


# ------------------------------------------------------------------------------- workload


def write_workload(root: Path, n_blueprints: int, n_agents: int) -> tuple[Path, Path]:
    """A blueprint dir of n_blueprints × n_agents (sample catalog and features) and the real bundle."""
    bp_dir, fn_dir = root / "blueprints", root / "owui_functions"
    bp_dir.mkdir(parents=True)
    for name in ("capabilities.yaml", "features.yaml"):
        shutil.copy(REPO / "blueprints" / name, bp_dir / name)
    shutil.copytree(REPO / "blueprints" / "icons", bp_dir / "icons")
    shutil.copytree(REPO / "owui_functions", fn_dir, ignore=shutil.ignore_patterns("__pycache__"))
    for i in range(n_blueprints):
        write_blueprint(bp_dir, i, n_agents, extra_calls=())
    return bp_dir, fn_dir


def blueprint_id(i: int) -> str:
    return f"fleet-{i:02d}"


def write_blueprint(bp_dir: Path, i: int, n_agents: int, *, extra_calls: tuple[str, ...]) -> None:
    calls = [name for name, every in CAPABILITY_PATTERN if i % every == 0] + list(extra_calls)
    native = {"web_research": "web_search", "python_sandbox": "code_interpreter"}
    supported = [native[c] for c in calls if c in native]
    agents = []
    for j in range(n_agents):
        access: Any = ("public", "private", {"groups": list(GROUPS[: 1 + j % 2])})[j % 3]
        agent: dict[str, Any] = {
            "id": f"agent-{j:02d}",
            "name": f"Fleet {i:02d} agent {j:02d}",
            "description": f"Agent {j} of blueprint {i}: answers questions for team {i}.",
            "access": access,
        }
        if supported and j % 2 == 0:
            agent["defaults"] = supported[:1]
        if j == n_agents - 1:
            agent["backend"] = {"url": f"http://127.0.0.1:8700/{blueprint_id(i)}/{agent['id']}"}
        agents.append(agent)
    data = {
        "id": blueprint_id(i),
        "name": f"Fleet {i:02d}",
        "description": f"Benchmark blueprint {i}.",
        "backend": {"transport": "agui", "url": f"http://127.0.0.1:8700/{blueprint_id(i)}"},
        "steps": [{"id": "answer", "calls": ["summarise", "draft_reply", *calls]}],
        "agents": agents,
    }
    (bp_dir / f"{blueprint_id(i)}.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


# ------------------------------------------------------------------------------- runs


@dataclass
class Result:
    name: str
    seconds: float
    calls: list[Call]
    plan: dict[str, Any] | None = None
    output_lines: int = 0
    output_bytes: int = 0
    longest_line: int = 0

    @property
    def http_seconds(self) -> float:
        return sum(c.seconds for c in self.calls)

    def count(self, predicate: Callable[[Call], bool]) -> int:
        return sum(1 for c in self.calls if predicate(c))

    def by_kind(self) -> dict[str, int]:
        counts = Counter(f"{c.method} {c.kind}" for c in self.calls)
        return dict(sorted(counts.items()))

    def seconds_by_kind(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for c in self.calls:
            key = f"{c.method} {c.kind}"
            totals[key] = totals.get(key, 0.0) + c.seconds
        return {k: round(v, 3) for k, v in sorted(totals.items())}

    def to_json(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 3),
            "http_seconds": round(self.http_seconds, 3),
            "calls": len(self.calls),
            "writes": self.count(lambda c: c.is_write),
            "row_reads": self.count(lambda c: c.is_row_read),
            "listing_calls": self.count(lambda c: c.is_listing),
            "refreshes": self.count(lambda c: c.is_refresh),
            "by_kind": self.by_kind(),
            "seconds_by_kind": self.seconds_by_kind(),
            **(
                {
                    "output_lines": self.output_lines,
                    "output_bytes": self.output_bytes,
                    "longest_line": self.longest_line,
                }
                if self.output_lines
                else {}
            ),
        }


def run_cli(recorder: Recorder, name: str, *args: str) -> Result:
    """`provision <args>` in-process; stdout captured (JSON parsed when -o json)."""
    out, err = io.StringIO(), io.StringIO()
    recorder.take()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    seconds = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"{name}: provision {' '.join(args[:1])} exited {code}\n{err.getvalue()[-2000:]}")
    text = out.getvalue()
    result = Result(name, seconds, recorder.take())
    if "json" in args:
        data = json.loads(text)
        result.plan = data.get("plan", data)
    else:
        lines = text.splitlines()
        result.output_lines, result.output_bytes = len(lines), len(text.encode())
        result.longest_line = max((len(line) for line in lines), default=0)
    return result


def inputs_as_sync(bp_dir: Path, fn_dir: Path, token: str) -> Inputs:
    """The blueprints and functions exactly as `provision sync -p bp_dir --bundle fn_dir` loads them."""
    return load_inputs(bp_dir, None, fn_dir, with_token_secret(target_variables(None, strict=True), token))


class Naive:
    """The same workload done the naive way: per object, GET that one object, then write it.

    What to write is what sync would write: the desired state comes from the pipeline
    (desired_state, from a listing read before the clock starts, so the naive run is not charged
    for it), and each object, read alone, is planned by make_plan and written by
    apply.apply_change, as sync does. One registry refresh at the end, as provision does.
    """

    def __init__(self, client: OpenWebUIClient, http: httpx.Client) -> None:
        self.client = client  # the writes
        self.http = http  # the single-object reads (a missing object answers 401 or 404)

    def desired(self, inputs: Inputs, token: str) -> InstanceState:
        groups, _ = resolve_groups(inputs.catalog, self.client, prune=False, mode="fail")
        compat = self.client.compat
        observed = observe(self.client.list_models(), self.client.list_functions(), compat)
        return desired_state(inputs, observed, groups, token=token, compat=compat)[0]

    def sync(self, desired: InstanceState) -> None:
        for target in desired.functions.values():
            live = self.read(f"/api/v1/functions/id/{target.id}")
            self.write(target, observed_function(live) if live else None)
        compat = self.client.compat
        for target in desired.models.values():
            live = self.read("/api/v1/models/model", params={"id": target.id})
            self.write(target, observed_model(live, compat) if live else None)
        self.client.refresh_models()

    def read(self, path: str, **kwargs: Any) -> dict[str, Any] | None:
        response = self.http.get(path, **kwargs)
        if response.status_code in (401, 404):
            return None
        response.raise_for_status()
        return response.json()

    def write(self, target: ObjectState, live: ObjectState | None) -> None:
        key = "functions" if target.kind == "function" else "models"
        observed = InstanceState(**{key: {target.id: live}}) if live else InstanceState()
        for change in make_plan(InstanceState(**{key: {target.id: target}}), observed).changes:
            apply_change(change, self.client)


def empty_instance(instance: OpenWebUIInstance) -> None:
    """Delete every model row and function (groups stay), uncounted."""
    with instance.client(timeout=120) as http:
        http.delete("/api/v1/models/delete/all").raise_for_status()
        for function in http.get("/api/v1/functions/list").raise_for_status().json():
            http.delete(f"/api/v1/functions/id/{function['id']}/delete").raise_for_status()
        http.get("/api/models", params={"refresh": "true"}).raise_for_status()


# ------------------------------------------------------------------------------- checks


class Checks:
    def __init__(self) -> None:
        self.failures: list[str] = []
        self.passed: list[str] = []

    def expect(self, ok: bool, what: str) -> None:
        (self.passed if ok else self.failures).append(what)
        if not ok:
            print(f"INVARIANT BROKEN: {what}", file=sys.stderr)


def check_provision_runs(
    checks: Checks, empty: Result, noop: Result, change: Result, n_models: int, changed_models: set[str]
) -> None:
    for r in (empty, noop, change):
        checks.expect(r.count(lambda c: c.is_row_read) == 0, f"{r.name}: no per-row reads")
        checks.expect(all(c.status < 300 for c in r.calls), f"{r.name}: every call answered 2xx")
        # A sync that writes lists models and functions twice more: the conflict checks before
        # its first write and after its last (apply.py, conflicts.py).
        checked = (
            {("GET", "/api/v1/models/all"), ("GET", "/api/v1/functions/export")}
            if r.plan and r.plan["changes"]
            else set()
        )
        listings = Counter((c.method, c.kind) for c in r.calls if c.is_listing)
        checks.expect(
            all(n == (3 if key in checked else 1) for key, n in listings.items()),
            f"{r.name}: each listing read once (models and functions 3 times when it writes)",
        )
    creates = [c for c in empty.calls if c.kind == "/api/v1/models/create"]
    checks.expect(
        len(creates) == n_models and len({c.target for c in creates}) == n_models,
        f"{empty.name}: one create per model ({n_models})",
    )
    checks.expect(empty.count(lambda c: c.is_refresh) == 1, f"{empty.name}: one registry refresh")
    checks.expect(
        all(c.is_listing for c in noop.calls) and noop.plan is not None and not noop.plan["changes"],
        f"{noop.name}: only the listing calls ({len(noop.calls)}), no writes, no refresh",
    )
    assert change.plan is not None
    planned = {c["id"] for c in change.plan["changes"]}
    planned_models = {c["id"] for c in change.plan["changes"] if c["kind"] == "model"}
    written = [c for c in change.calls if c.is_write]
    checks.expect(
        planned_models == changed_models,
        f"{change.name}: the plan changes exactly the {len(changed_models)} rows of the edited blueprint",
    )
    checks.expect({c.target for c in written} == planned, f"{change.name}: writes touch only the planned objects")
    model_writes = Counter(c.target for c in written if "/models/" in c.kind)
    checks.expect(
        sorted(model_writes.values()) == [1] * len(changed_models), f"{change.name}: one write per changed row"
    )
    checks.expect(change.count(lambda c: c.is_refresh) == 1, f"{change.name}: one registry refresh")


# ------------------------------------------------------------------------------- report


def fmt_row(name: str, r: Result, base: Result | None = None) -> str:
    ratio = (
        f"  {r.seconds / base.seconds:5.2f}x time  {len(r.calls) / max(len(base.calls), 1):5.2f}x calls" if base else ""
    )
    return (
        f"  {name:<34} {len(r.calls):5d} calls {r.count(lambda c: c.is_write):5d} writes "
        f"{r.count(lambda c: c.is_row_read):4d} row reads {r.seconds:7.2f} s  "
        f"(HTTP {r.http_seconds:6.2f} s){ratio}"
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


@dataclass
class Scenarios:
    """What one bench run measured, and the invariants it checked."""

    n_models: int
    n_functions: int
    text_plan: Result
    empty: Result
    noop: Result
    change: Result
    naive: list[Result]
    probes: list[tuple[int, Result]]
    checks: Checks


def run_scenarios(
    owui: Any,
    recorder: Recorder,
    root: Path,
    *,
    n_blueprints: int,
    n_agents: int,
    parallel: list[int],
    empty: Callable[[Any], None] = lambda owui: empty_instance(owui),
) -> Scenarios:
    """Every scenario against `owui` (url, token, client()), with the CLI's HTTP client recording.

    `empty` wipes the instance between the provision and the naive runs (a fake passes its own)."""
    n_models = n_blueprints * n_agents
    checks = Checks()
    bp_dir, fn_dir = write_workload(root, n_blueprints, n_agents)
    with owui.client() as http:
        for group in GROUPS:
            http.post("/api/v1/groups/create", json={"name": group, "description": ""}).raise_for_status()
    bundle = ["-p", str(bp_dir), "--bundle", str(fn_dir)]
    n_functions = len(inputs_as_sync(bp_dir, fn_dir, owui.token).functions)  # files + toggles rendered at plan time
    edited = min(CHANGED_BLUEPRINT, n_blueprints - 1)
    changed = {f"aihub_agent_pipe.{blueprint_id(edited)}.agent-{j:02d}" for j in range(n_agents)}

    def edit_one_blueprint() -> None:
        write_blueprint(bp_dir, edited, n_agents, extra_calls=("web_research",))

    def restore_blueprint() -> None:
        write_blueprint(bp_dir, edited, n_agents, extra_calls=())

    def verify_matches(label: str) -> None:
        check = run_cli(recorder, "verify", "diff", *bundle, "-o", "json")
        checks.expect(check.plan is not None and not check.plan["changes"], f"{label}: instance matches afterwards")

    print(
        f"Open WebUI {owui.url}; {n_blueprints} blueprints x {n_agents} agents = {n_models} "
        f"model rows + {n_functions} functions",
        file=sys.stderr,
    )
    text_plan = run_cli(recorder, f"diff (text) of the {n_models}-create plan", "diff", *bundle)
    from_empty = run_cli(recorder, "sync from empty", "sync", *bundle, "--yes", "-o", "json")
    verify_matches(from_empty.name)
    noop = run_cli(recorder, "no-op re-sync", "sync", *bundle, "--yes", "-o", "json")
    edit_one_blueprint()
    change = run_cli(recorder, "re-sync after one blueprint changed", "sync", *bundle, "--yes", "-o", "json")
    verify_matches(change.name)
    check_provision_runs(checks, from_empty, noop, change, n_models, changed)
    checks.expect(not any(c.is_write for c in text_plan.calls), "diff writes nothing")
    checks.expect(
        text_plan.output_lines == n_models + n_functions + 4,
        f"text plan: one line per object plus two summary lines ({text_plan.output_lines} lines)",
    )

    # The naive way, same instance, same three workloads.
    restore_blueprint()
    empty(owui)
    naive_runs: list[Result] = []
    with (
        recorder.client(timeout=60) as writes,
        recorder.client(base_url=owui.url, headers={"Authorization": f"Bearer {owui.token}"}, timeout=60) as reads,
        OpenWebUIClient(base_url=owui.url, token=owui.token, http=writes) as client,
    ):
        naive = Naive(client, reads)
        for name, before in (
            ("naive from empty", None),
            ("naive no-op", None),
            ("naive one change", edit_one_blueprint),
        ):
            if before:
                before()
            desired = naive.desired(inputs_as_sync(bp_dir, fn_dir, owui.token), owui.token)  # not timed
            recorder.take()
            started = time.perf_counter()
            naive.sync(desired)
            naive_runs.append(Result(name, time.perf_counter() - started, recorder.take()))
            verify_matches(name)
    for r in naive_runs:
        checks.expect(r.count(lambda c: c.is_row_read) == n_models + n_functions, f"{r.name}: one GET per object")

    probes: list[tuple[int, Result]] = []
    restore_blueprint()
    for workers in parallel:
        empty(owui)
        probe = run_cli(
            recorder,
            f"sync from empty, model writes {workers} at a time",
            "sync",
            *bundle,
            "--yes",
            "-o",
            "json",
            "--parallelism",
            str(workers),
        )
        probes.append((workers, probe))
        verify_matches(probe.name)
    return Scenarios(n_models, n_functions, text_plan, from_empty, noop, change, naive_runs, probes, checks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blueprints", type=int, default=50)
    parser.add_argument("--agents", type=int, default=10, help="agents per blueprint")
    parser.add_argument(
        "--parallel",
        type=int,
        nargs="*",
        default=[],
        metavar="N",
        help="also run the from-empty sync with --parallelism N (one run per N)",
    )
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="add this round-trip time to every request (models a remote instance)",
    )
    parser.add_argument("--name", default=f"bench-sync-{os.getpid()}", help="openwebui-local instance name")
    parser.add_argument("--keep", action="store_true", help="leave the instance running")
    parser.add_argument(
        "--topology",
        choices=("single", "ha"),
        default="single",
        help="ha: PostgreSQL + Redis + two replicas (the CLI talks to replica 1)",
    )
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    recorder = Recorder(latency=args.latency_ms / 1000)
    client_module.make_http_client = lambda timeout: recorder.client(timeout=timeout)
    figures: dict[str, Any] = {
        "workload": {
            "blueprints": args.blueprints,
            "agents_per_blueprint": args.agents,
            "models": args.blueprints * args.agents,
            "added_latency_ms": args.latency_ms,
            "topology": args.topology,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_at_start": round(os.getloadavg()[0], 2),
        },
    }
    total_started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp,
        throwaway_instance(
            args.name, keep=args.keep, topology=None if args.topology == "single" else args.topology
        ) as owui,
    ):
        os.environ.update({"OPENWEBUI_URL": owui.url, "OPENWEBUI_TOKEN": owui.token, "CI": "true"})
        os.environ.pop("OPENWEBUI_TOKEN_FILE", None)
        run = run_scenarios(
            owui, recorder, Path(tmp), n_blueprints=args.blueprints, n_agents=args.agents, parallel=args.parallel
        )
    n_models, n_functions, text_plan, empty, noop, change = (
        run.n_models,
        run.n_functions,
        run.text_plan,
        run.empty,
        run.noop,
        run.change,
    )
    naive_runs, probes, checks = run.naive, run.probes, run.checks

    scenarios = [
        ("sync from empty", empty, naive_runs[0]),
        ("no-op re-sync", noop, naive_runs[1]),
        ("re-sync, one blueprint changed", change, naive_runs[2]),
    ]
    writes = [c.seconds for c in empty.calls if c.kind == "/api/v1/models/create"]
    latency = f", {args.latency_ms:g} ms added per request" if args.latency_ms else ""
    print(
        f"\nSync at scale: {n_models} model rows + {n_functions} functions "
        f"({os.cpu_count()} CPUs, Open WebUI and the CLI on the same machine{latency})"
    )
    label = f"diff (text), {n_models}-create plan"
    print(
        f"  {label:<34} {len(text_plan.calls):5d} calls {text_plan.seconds:38.2f} s; "
        f"{text_plan.output_lines} lines, {text_plan.output_bytes} bytes, longest {text_plan.longest_line} chars"
    )
    for name, mine, theirs in scenarios:
        print(fmt_row(name, mine))
        print(fmt_row("  naive: GET + write per object", theirs, base=mine))
    for workers, probe in probes:
        print(fmt_row(f"from empty, --parallelism {workers}", probe, base=empty))
    print(
        f"  model create latency: median {statistics.median(writes) * 1000:.1f} ms, "
        f"p95 {percentile(writes, 0.95) * 1000:.1f} ms; registry refresh "
        f"{sum(c.seconds for c in empty.calls if c.is_refresh):.2f} s"
    )
    print(f"  no-op re-sync calls: {', '.join(f'{k} x{v}' for k, v in noop.by_kind().items())}")
    print(
        f"  invariants: {len(checks.passed)} held, {len(checks.failures)} broken; "
        f"total bench time {time.perf_counter() - total_started:.0f} s"
    )

    figures.update(
        {
            "diff_text_plan": text_plan.to_json(),
            "provision": {name: r.to_json() for name, r, _ in scenarios},
            "naive": {name: r.to_json() for name, _, r in scenarios},
            "ratios_naive_over_provision": {
                name: {
                    "seconds": round(n.seconds / p.seconds, 2),
                    "calls": round(len(n.calls) / max(len(p.calls), 1), 2),
                }
                for name, p, n in scenarios
            },
            "model_create_ms": {
                "median": round(statistics.median(writes) * 1000, 1),
                "p95": round(percentile(writes, 0.95) * 1000, 1),
            },
            "invariants": {"held": checks.passed, "broken": checks.failures},
        }
    )
    if probes:
        figures["parallel_probe"] = {
            str(workers): {**probe.to_json(), "speedup_vs_sequential": round(empty.seconds / probe.seconds, 2)}
            for workers, probe in probes
        }
    figures["machine"]["load_average_at_end"] = round(os.getloadavg()[0], 2)
    print(
        f"  load average (1 min): {figures['machine']['load_average_at_start']} at start, "
        f"{figures['machine']['load_average_at_end']} at end"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
