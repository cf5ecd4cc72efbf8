#!/usr/bin/env python3
"""Benchmark: what `aihub_feature_filter`'s inlet costs per request, against an empty filter.

Usage (from the repository root)::

    .venv/bin/python bench/filter_cost.py                 # in-process only, a few seconds
    .venv/bin/python bench/filter_cost.py --e2e 150       # plus 150 chat completions per model
                                                          # through a throwaway Open WebUI

In-process (timeit, best of --repeat interleaved runs of --batch calls): the real filter file loaded as Open
WebUI loads it (a standalone module), on realistic bodies (a 12-message conversation, the
`features` dict shared with `metadata` as Open WebUI shares it, a registry entry as `__model__`),
against an inlet that returns the body. Every call gets a fresh `features` dict, built outside
the timed loop, because the filter mutates it. Three cases: an agent with native toggles on, a
model that is not ours (early return), an odd body. Each is timed called directly and through the
per-call dispatch Open WebUI does (`inspect.signature` + keyword filtering, utils/filter.py).

End to end (--e2e N): the same filter, an empty filter and no filter, each attached to its own
agent row served by a stub pipe (bench/fixtures/stub_pipe.py, no agent backend); N non-streaming chat completions per row,
interleaved; median latency and ratios.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# The imports below come after the repo is put on sys.path (E402 below, each one).
from tests.support.loading import load_source  # noqa: E402

FEATURE_FILTER = REPO / "owui_functions" / "aihub_feature_filter.py"
STUB_PIPE = REPO / "bench" / "fixtures" / "stub_pipe.py"
MARKER = {
    "managed_by": "aihub-provision",
    "blueprint": "bench",
    "agent": "a",
    "features": ["code_interpreter", "web_search"],
}

EMPTY_FILTER_SOURCE = '''"""
title: Empty filter (benchmark baseline)
author: aihub-provision
version: 0.1.0
description: Returns the body untouched.
"""

from pydantic import BaseModel, Field

METADATA_KEY = "aihub_requested_features"


class Filter:
    class Valves(BaseModel):
        priority: int = Field(default=0, description="Run order.")

    def __init__(self) -> None:
        self.valves = self.Valves()

    def inlet(self, body: dict, __metadata__: dict | None = None, __model__: dict | None = None) -> dict:
        return body
'''


def load_module(name: str, source: str) -> ModuleType:
    """A function file as Open WebUI loads it: a fresh module executed from its source."""
    return load_source(source, name, keep=False)


# ------------------------------------------------------------------------------- inputs


def registry_entry(model_id: str, *, managed: bool) -> dict[str, Any]:
    """`__model__` as Open WebUI's registry holds an agent row (trimmed to realistic size)."""
    meta: dict[str, Any] = {
        "description": "Answers questions about the handbook.",
        "profile_image_url": "/static/favicon.png",
        "capabilities": {
            k: k in ("usage", "citations", "status_updates")
            for k in (
                "vision",
                "file_upload",
                "file_context",
                "web_search",
                "image_generation",
                "code_interpreter",
                "citations",
                "status_updates",
                "usage",
                "builtin_tools",
                "memory",
                "terminal",
            )
        },
        "filterIds": ["aihub_feature_filter"],
        "defaultFeatureIds": [],
        "defaultFilterIds": [],
        "tags": [],
    }
    if managed:
        meta["aihub"] = dict(MARKER)
    return {
        "id": model_id,
        "name": "Agent",
        "object": "model",
        "created": 1700000000,
        "owned_by": "openai",
        "pipe": {"type": "pipe"},
        "info": {
            "id": model_id,
            "base_model_id": None,
            "name": "Agent",
            "params": {},
            "meta": meta,
            "access_grants": [],
            "is_active": True,
            "updated_at": 1700000000,
            "created_at": 1700000000,
        },
        "actions": [],
        "filters": [],
        "tags": [],
    }


MESSAGES = [
    {
        "role": "user" if i % 2 == 0 else "assistant",
        "content": ("Could you compare the refund policy for annual plans with the monthly one? " * 4)[: 200 + 40 * i],
    }
    for i in range(12)
]


def make_request(case: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(body, metadata) as the inlet sees them; the features dict is shared, as in Open WebUI."""
    features: Any = {
        "web_search": True,
        "image_generation": True,
        "code_interpreter": False,
        "memory": True,
        "voice": False,
    }
    if case == "odd body":
        features = None
    metadata = {
        "user_id": "u-1",
        "chat_id": "c-1",
        "message_id": "m-1",
        "session_id": "s-1",
        "filter_ids": [],
        "tool_ids": None,
        "tool_servers": None,
        "files": None,
        "features": features,
        "variables": {},
        "model": None,
        "direct": False,
        "params": {"function_calling": "native"},
    }
    body = {
        "model": "aihub_agent_pipe.bench.a",
        "messages": MESSAGES,
        "stream": True,
        "features": features,
        "metadata": metadata,
        "params": {},
        "filter_ids": [],
    }
    return body, metadata


CASES = {
    "agent, native toggles on": True,
    "model not ours": False,
    "odd body": True,
}


# ------------------------------------------------------------------------------- in-process


def dispatch(handler: Callable[..., Any], extra: dict[str, Any], body: dict[str, Any], filter_id: str) -> Any:
    """What Open WebUI 0.12.4 does per filter call (utils/filter.py get_filter_params)."""
    sig = inspect.signature(handler)
    params = {"body": body} | {k: v for k, v in {**extra, "__id__": filter_id}.items() if k in sig.parameters}
    return handler(**params)


def inlet_timer(
    inlet: Callable[..., Any], case: str, model: dict[str, Any], *, via_dispatch: bool, batch: int
) -> timeit.Timer:
    """A timer of `batch` calls, each on a fresh request built in setup (outside the timing)."""
    namespace = {
        "inlet": inlet,
        "make_request": make_request,
        "case": case,
        "model": model,
        "dispatch": dispatch,
        "n": batch,
    }
    setup = "requests = [make_request(case) for _ in range(n)]"
    if via_dispatch:
        stmt = (
            "for body, metadata in requests:\n"
            "    dispatch(inlet, {'__metadata__': metadata, '__model__': model, '__user__': {}, "
            "'__chat_id__': 'c-1', '__message_id__': 'm-1'}, body, 'f')"
        )
    else:
        stmt = "for body, metadata in requests:\n    inlet(body, __metadata__=metadata, __model__=model)"
    return timeit.Timer(stmt, setup=setup, globals=namespace)


def best_per_call(timers: list[timeit.Timer], *, batch: int, repeat: int) -> list[float]:
    """Best per-call seconds of each timer, runs interleaved so machine load hits all alike."""
    best = [float("inf")] * len(timers)
    for _ in range(repeat):
        for i, timer in enumerate(timers):
            best[i] = min(best[i], timer.timeit(number=1) / batch)
    return best


def check_filter_works(feature: ModuleType) -> None:
    """Refuse to time a filter that does not do its job (the figures would be meaningless)."""
    body, metadata = make_request("agent, native toggles on")
    feature.Filter().inlet(body, __metadata__=metadata, __model__=registry_entry("m", managed=True))
    assert metadata[feature.METADATA_KEY] == ["web_search"], metadata
    assert body["features"]["web_search"] is False and body["features"]["memory"] is False


def in_process(batch: int, repeat: int) -> dict[str, Any]:
    feature = load_module("aihub_feature_filter", FEATURE_FILTER.read_text(encoding="utf-8"))
    empty = load_module("bench_empty_filter", EMPTY_FILTER_SOURCE)
    check_filter_works(feature)
    feature_inlet, empty_inlet = feature.Filter().inlet, empty.Filter().inlet
    results: dict[str, Any] = {}
    for case, managed in CASES.items():
        model = registry_entry("aihub_agent_pipe.bench.a", managed=managed)
        row: dict[str, Any] = {}
        for via, label in ((False, "direct"), (True, "dispatch")):
            timers = [
                inlet_timer(inlet, case, model, via_dispatch=via, batch=batch) for inlet in (feature_inlet, empty_inlet)
            ]
            f, e = best_per_call(timers, batch=batch, repeat=repeat)
            row[label] = {
                "feature_filter_us": round(f * 1e6, 3),
                "empty_filter_us": round(e * 1e6, 3),
                "ratio": round(f / e, 2),
                "extra_us": round((f - e) * 1e6, 3),
            }
        results[case] = row
    return results


# ------------------------------------------------------------------------------- end to end


def end_to_end(requests_per_model: int, name: str) -> dict[str, Any]:
    from tests.support.owui_instance import throwaway_instance  # only the --e2e mode needs a server

    rows = {"feature filter": ["aihub_feature_filter"], "empty filter": ["bench_empty_filter"], "no filter": []}
    functions = {
        "aihub_feature_filter": FEATURE_FILTER.read_text(encoding="utf-8"),
        "bench_empty_filter": EMPTY_FILTER_SOURCE,
        "aihub_agent_pipe": STUB_PIPE.read_text(encoding="utf-8"),
    }
    with throwaway_instance(name) as owui, owui.client(timeout=60) as http:
        for fid, content in functions.items():
            http.post(
                "/api/v1/functions/create",
                json={"id": fid, "name": fid, "content": content, "meta": {"description": ""}},
            ).raise_for_status()
            http.post(f"/api/v1/functions/id/{fid}/toggle").raise_for_status()
        ids = {}
        for label, filter_ids in rows.items():
            model_id = f"aihub_agent_pipe.bench.{label.split()[0]}"
            ids[label] = model_id
            meta = registry_entry(model_id, managed=True)["info"]["meta"] | {"filterIds": filter_ids}
            http.post(
                "/api/v1/models/create",
                json={
                    "id": model_id,
                    "base_model_id": None,
                    "name": label,
                    "meta": meta,
                    "params": {},
                    "access_grants": [{"principal_type": "user", "principal_id": "*", "permission": "read"}],
                },
            ).raise_for_status()
        http.get("/api/models", params={"refresh": "true"}).raise_for_status()

        def chat(model_id: str) -> tuple[float, dict[str, Any]]:
            # Toggles off: with an empty filter (or none) Open WebUI would otherwise run its own web
            # search and memory, and the rows would no longer do the same work.
            body = {
                "model": model_id,
                "messages": MESSAGES,
                "stream": False,
                "features": {"web_search": False, "image_generation": False, "memory": False},
            }
            started = time.perf_counter()
            response = http.post("/api/chat/completions", json=body)
            seconds = time.perf_counter() - started
            response.raise_for_status()
            return seconds, json.loads(response.json()["choices"][0]["message"]["content"])

        seen = {label: chat(model_id)[1] for label, model_id in ids.items()}  # warm-up, and proof
        if seen["feature filter"]["requested"] != [] or seen["empty filter"]["requested"] is not None:
            raise SystemExit(f"the filters did not run as expected: {seen}")
        latencies: dict[str, list[float]] = {label: [] for label in rows}
        for _ in range(requests_per_model):
            for label, model_id in ids.items():
                latencies[label].append(chat(model_id)[0])
    medians = {label: statistics.median(values) for label, values in latencies.items()}
    return {
        "requests_per_model": requests_per_model,
        "median_ms": {k: round(v * 1000, 2) for k, v in medians.items()},
        "p90_ms": {k: round(sorted(v)[int(0.9 * len(v))] * 1000, 2) for k, v in latencies.items()},
        "ratio_feature_over_empty": round(medians["feature filter"] / medians["empty filter"], 3),
        "ratio_empty_over_none": round(medians["empty filter"] / medians["no filter"], 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=10000, help="calls per timed run")
    parser.add_argument("--repeat", type=int, default=15, help="timed runs, interleaved; the best counts")
    parser.add_argument("--e2e", type=int, default=0, metavar="N", help="also N chat completions per model")
    parser.add_argument("--name", default=f"bench-filter-{os.getpid()}", help="openwebui-local instance name")
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)

    figures: dict[str, Any] = {"python": sys.version.split()[0], "cpus": os.cpu_count()}
    figures["in_process"] = results = in_process(args.batch, args.repeat)
    print(f"Feature filter inlet vs an empty inlet, per call (best of {args.repeat} x {args.batch}):")
    for case, row in results.items():
        for how, r in row.items():
            print(
                f"  {case:<26} {how:<9} {r['feature_filter_us']:7.2f} us vs {r['empty_filter_us']:6.2f} us"
                f"  = {r['ratio']:5.2f}x  (+{r['extra_us']:.2f} us)"
            )
    if args.e2e:
        figures["end_to_end"] = e2e = end_to_end(args.e2e, args.name)
        print(f"Chat completions through Open WebUI ({args.e2e} per model, non-streaming, stub pipe):")
        for label, ms in e2e["median_ms"].items():
            print(f"  {label:<15} median {ms:7.2f} ms  p90 {e2e['p90_ms'][label]:7.2f} ms")
        print(
            f"  feature / empty filter = {e2e['ratio_feature_over_empty']:.3f}x; "
            f"empty filter / no filter = {e2e['ratio_empty_over_none']:.3f}x"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
