"""`provision doctor` behind two replicas (PostgreSQL + Redis, scripts/openwebui-local --topology
ha): every replica is probed through its own URL and names itself, and an agent only one replica
can reach shows as such (issue 31). Replica 2 gets a dead egress proxy (`--replica-env`), with
NO_PROXY exempting `localhost`: the backend named by address is out of its reach."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from demo_agents.sse_handler import serve_loopback, stop_loopback
from tests.support.builders import REPO, closed_port, samples_on, set_backend
from tests.support.chat_support import provision
from tests.support.doctor_support import Agent, doctor
from tests.support.owui_instance import OpenWebUIInstance, started


@pytest.fixture(scope="module")
def answering() -> Iterator[str]:
    server, url = serve_loopback(Agent)
    yield url + "/agent"
    stop_loopback(server)


@pytest.fixture(scope="module")
def ha_with_a_dead_proxy_on_replica_2() -> Iterator[OpenWebUIInstance]:
    """PostgreSQL + Redis + two replicas; replica 2 sends plain http through an egress proxy that
    is down, except to `localhost` (NO_PROXY): from there, a backend named 127.0.0.1 is out of reach."""
    proxy = f"http://127.0.0.1:{closed_port()}"
    instance = OpenWebUIInstance(
        f"doctor-ha-{os.getpid()}", topology="ha", replica_env={2: {"HTTP_PROXY": proxy, "NO_PROXY": "localhost"}}
    )
    yield started(instance, "ha topology")
    instance.purge()


def test_behind_two_replicas_every_replica_answers_and_one_cannot_reach_an_agent(
    ha_with_a_dead_proxy_on_replica_2, answering, tmp_path, capsys, monkeypatch
) -> None:
    ha = ha_with_a_dead_proxy_on_replica_2
    root = samples_on(tmp_path / "blueprints", answering.replace("127.0.0.1", "localhost"))
    set_backend(root, answering, only="policy-faq")  # by address: replica 2's proxy is in the way
    args = ["-p", str(root), "--bundle", str(REPO / "owui_functions")]
    monkeypatch.setenv("OPENWEBUI_URL", ha.url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", ha.token)
    monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
    code, out, err = provision(capsys, "sync", "--yes", *args)
    assert code == 0, out + err
    first, second = ha.replica_urls
    code, report = doctor(capsys, [*args, "--replica", first, "--replica", second])
    backend = [c for c in report["checks"] if c["id"] == "backend"]
    assert code == 1 and len(backend) == 12  # six agents, each through both replicas
    failed = [c for c in backend if c["status"] == "fail"]
    assert [(c["subject"], f"through {second}" in c["message"]) for c in failed] == [("policy-faq.default", True)]
    assert "connection refused" in failed[0]["message"]
    replicas = {c["message"].rsplit(", ", 1)[1].rstrip(")") for c in backend}
    assert len(replicas) == 2  # two processes answered, each naming itself
