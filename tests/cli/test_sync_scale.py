"""bench/sync_scale.py's own scenarios and invariants, on a small workload against the in-memory
Open WebUI: the benchmark's baselines (naive, --parallelism) must keep doing what sync does, or
its ratios compare different work. The real-server run is `python bench/sync_scale.py`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

import provisioner.openwebui.client as client_module
from tests.support.builders import REPO
from tests.support.fake_owui import FakeOpenWebUI, fake_instance_for_cli
from tests.support.loading import load_file

TOKEN = "sk-bench-fake-token"


class FakeInstance:
    """What the benchmark needs of an Open WebUI instance: its URL, an admin token, a client."""

    def __init__(self, fake: FakeOpenWebUI) -> None:
        self.fake, self.url, self.token = fake, fake.base_url, TOKEN

    def client(self, timeout: float = 60) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=timeout)

    def empty(self, _owui: object) -> None:
        self.fake.models.clear()
        self.fake.functions.clear()


@contextmanager
def fake_instance(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeInstance]:
    with fake_instance_for_cli(monkeypatch, TOKEN) as fake:
        monkeypatch.setenv("CI", "true")  # the benchmark's syncs answer no prompt
        yield FakeInstance(fake)


def test_the_sync_benchmark_holds_every_invariant_on_a_small_workload(tmp_path, monkeypatch):
    bench = load_file(REPO / "bench" / "sync_scale.py", "sync_scale_bench")
    recorder = bench.Recorder()
    monkeypatch.setattr(client_module, "make_http_client", lambda timeout: recorder.client(timeout=timeout))
    with fake_instance(monkeypatch) as owui:
        # Blueprint 3 is the one edited (the last; CHANGED_BLUEPRINT caps to it): it has no web_research yet.
        run = bench.run_scenarios(owui, recorder, tmp_path, n_blueprints=4, n_agents=2, parallel=[2], empty=owui.empty)
        left = dict(owui.fake.models)
    assert run.checks.failures == []
    assert len(run.checks.passed) == 27  # as many as `--parallel 4` checks against a real server
    assert len(left) == 8
    # The baselines did the same work as sync: every naive run wrote, and read each object once.
    naive_from_empty, naive_noop, _ = run.naive
    assert naive_from_empty.count(lambda c: c.kind == "/api/v1/models/create") == 8
    assert not naive_noop.count(lambda c: c.is_write and "/models/" in c.kind)
