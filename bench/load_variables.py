"""What ${NAME} variables cost when loading blueprints: load_catalog on 500 agents, with and without.

Writes the sync_scale workload (50 blueprints × 10 agents) twice: once with literal backend URLs,
once with every URL written as `${AGENTS_BASE_URL}/...` and every agent description carrying a
`${TEAM:-...}` default, resolved as `--target` resolves them. Offline; prints median times.

    .venv/bin/python bench/load_variables.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# The imports below come after the repo is put on sys.path (E402 below, each one).
from bench.sync_scale import write_workload  # noqa: E402
from provisioner.loader import load_catalog  # noqa: E402
from provisioner.variables import Variables  # noqa: E402


def with_variables(bp_dir: Path) -> int:
    """Rewrite the blueprints to use variables; returns how many references were written."""
    count = 0
    for path in bp_dir.glob("fleet-*.yaml"):
        text = path.read_text()
        count += text.count("http://127.0.0.1:8700") + text.count("answers questions")
        text = text.replace("http://127.0.0.1:8700", "${AGENTS_BASE_URL}")
        text = text.replace("answers questions", "answers ${TEAM:-questions}")
        path.write_text(text)
    return count


def once(bp_dir: Path, variables: Variables | None) -> float:
    start = time.perf_counter()
    catalog = load_catalog(bp_dir, variables)
    elapsed = time.perf_counter() - start
    assert len(catalog.blueprints) == 50
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    variables = Variables(values={"AGENTS_BASE_URL": "https://agents-staging.internal"}, strict=True, target="staging")
    with tempfile.TemporaryDirectory() as tmp:
        plain, _ = write_workload(Path(tmp) / "plain", 50, 10)
        templated, _ = write_workload(Path(tmp) / "templated", 50, 10)
        refs = with_variables(templated)
        runs = [
            ("literal values, no variables given", plain, None),
            ("literal values, a target's variables", plain, variables),
            (f"{refs} references, resolved from the target", templated, variables),
        ]
        times: dict[str, list[float]] = {name: [] for name, _, _ in runs}
        for _ in range(args.rounds):  # interleaved, so a busy moment hits every variant alike
            for name, bp_dir, given in runs:
                times[name].append(once(bp_dir, given))
        rows = list(times.items())
    base = statistics.median(rows[0][1])
    for name, seconds in rows:
        median = statistics.median(seconds)
        print(f"{name:45} median {median * 1000:7.1f} ms  ({median / base:.2f}x)  min {min(seconds) * 1000:7.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
