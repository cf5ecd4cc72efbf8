#!/usr/bin/env python3
"""Benchmark: what keeping orphaned agents in the pipe costs a `diff` (issue 8 point 2).

Usage (from the repository root)::

    .venv/bin/python bench/kept_agents.py [--blueprints 50] [--agents 10] [--repeat 5]

In-process, no server: a fleet of blueprints × agents is loaded and turned into the desired
state; the observed state is that fleet as a sync left it (rows, pipe valves with one backend
key per blueprint). Then half the blueprints are deleted, so half the rows are kept orphans.
Timed (best of --repeat): `keep_orphan_agents` + `make_plan`, against `make_plan` alone on the
same input, and the sizes of the AGENTS valve. It checks the plan is empty (keeping agents
writes nothing) and that every kept agent is still in the valve.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# The imports below come after the repo is put on sys.path (E402 below, each one).
from provisioner.desired import PIPE_AGENTS_VALVE, build_desired  # noqa: E402
from provisioner.orphans import keep_orphan_agents  # noqa: E402
from provisioner.pipeline import load_inputs  # noqa: E402
from provisioner.plan import make_plan  # noqa: E402
from provisioner.state import InstanceState, ObjectState  # noqa: E402
from tests.support.builders import REPO, blueprint, write_blueprint_dir  # noqa: E402


def as_observed(state: InstanceState) -> InstanceState:
    """The desired state as the instance holds it after a sync: managed, with raw records."""
    return InstanceState(
        functions={i: ObjectState(o.kind, i, dict(o.fields), True, {"id": i}) for i, o in state.functions.items()},
        models={i: ObjectState(o.kind, i, dict(o.fields), True, {"id": i}) for i, o in state.models.items()},
    )


def best(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blueprints", type=int, default=50)
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    env = {f"KEY_{i:03d}": f"secret-value-{i:03d}-0123456789" for i in range(args.blueprints)}
    with tempfile.TemporaryDirectory(prefix="bench-kept-") as tmp:
        bps = [
            blueprint(
                f"bp-{i:03d}",
                agents=[{"id": f"agent-{j:02d}", "name": f"Agent {j}"} for j in range(args.agents)],
                backend={"url": f"http://127.0.0.1:8700/bp-{i:03d}", "api_key_env": f"KEY_{i:03d}"},
            )
            for i in range(args.blueprints)
        ]
        root = write_blueprint_dir(Path(tmp) / "bp", bps)
        bundle = ["--bundle", str(REPO / "owui_functions")]
        catalog, functions = load_inputs(root, None, Path(bundle[1]))
        observed = as_observed(build_desired(catalog, functions, groups={}, env=env))
        for i in range(0, args.blueprints, 2):
            (root / f"bp-{i:03d}.yaml").unlink()
        catalog, functions = load_inputs(root, None, Path(bundle[1]))
        desired = build_desired(catalog, functions, groups={}, env=env)

        kept_desired, notes = keep_orphan_agents(desired, observed, prune=False)
        plan = make_plan(kept_desired, observed, orphan_notes=notes)
        valve = json.loads(kept_desired.functions["aihub_agent_pipe"].fields[PIPE_AGENTS_VALVE])
        kept = len(notes)
        ok = (
            plan.is_empty
            and len(valve) == args.blueprints * args.agents
            and kept == (args.blueprints + 1) // 2 * args.agents
        )
        with_keep = best(args.repeat, lambda: _plan_with_keep(desired, observed))
        plain = best(args.repeat, lambda: make_plan(desired, observed))
    print(
        f"{args.blueprints} blueprints x {args.agents} agents, {kept} kept orphans, AGENTS valve "
        f"{len(json.dumps(valve))} bytes"
    )
    print(f"keep_orphan_agents + make_plan: {with_keep * 1000:.1f} ms   make_plan alone: {plain * 1000:.1f} ms")
    print(
        f"plan empty (keeping writes nothing): {plan.is_empty}; "
        f"every agent still served: {len(valve) == args.blueprints * args.agents}"
    )
    return 0 if ok else 1


def _plan_with_keep(desired: InstanceState, observed: InstanceState):
    kept_desired, notes = keep_orphan_agents(desired, observed, prune=False)
    return make_plan(kept_desired, observed, orphan_notes=notes)


if __name__ == "__main__":
    sys.exit(main())
