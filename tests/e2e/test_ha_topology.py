"""Production topologies, for real: PostgreSQL + Redis + two replicas, and two workers without Redis.

`scripts/openwebui-local start --topology ha` runs Open WebUI on a throwaway PostgreSQL cluster
and Redis on loopback (Debian's `postgresql` and `redis-server`, installed by `.ci/run`), with two
replicas sharing both. A sync goes through one replica; what users of the other see is checked
through the other's own API and a chat through the pipe on it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.builders import REPO, samples_on, set_backend
from tests.support.chat_support import AGENT_ANSWER, provision
from tests.support.owui_instance import OpenWebUIInstance, started

DOCUMENTS = "aihub_agent_pipe.document-analyst.default"
POLICY = "aihub_agent_pipe.policy-faq.default"
TIER1 = "aihub_agent_pipe.support-desk.tier1"
TOGGLE = "aihub_toggle_user_files"
UNREACHABLE = "http://127.0.0.1:9/agent"  # discard port: nothing listens


def start_or_skip(instance: OpenWebUIInstance) -> OpenWebUIInstance:
    return started(instance, f"{instance.topology or 'workers'} topology")


@pytest.fixture(scope="module")
def ha() -> Iterator[OpenWebUIInstance]:
    instance = start_or_skip(OpenWebUIInstance(f"ha-{os.getpid()}", topology="ha"))
    assert len(instance.replica_urls) == 2 and instance.replica_urls[0] == instance.url
    yield instance
    instance.purge()


def blueprints(tmp: Path, agent_url: str) -> tuple[list[str], Path]:
    root = samples_on(tmp / "blueprints", agent_url)
    return ["-p", str(root), "--bundle", str(REPO / "owui_functions")], root


def sync(capsys, monkeypatch, instance: OpenWebUIInstance, url: str, *args: str) -> str:
    monkeypatch.setenv("OPENWEBUI_URL", url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", instance.token)
    monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
    code, out, err = provision(capsys, "sync", "--yes", *args)
    assert code == 0, out + err
    return out


def served(instance: OpenWebUIInstance, url: str) -> set[str]:
    """The model selector's list on one replica (Open WebUI's in-memory registry there)."""
    with instance.client(url=url) as http:
        return {m["id"] for m in http.get("/api/models").raise_for_status().json()["data"]}


def chat(instance: OpenWebUIInstance, url: str, model: str, **extra: Any) -> str:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": False, **extra}
    with instance.client(url=url, timeout=120) as http:
        response = http.post("/api/chat/completions", json=body)
    assert response.status_code == 200, response.text[:300]
    return response.json()["choices"][0]["message"]["content"]


def reset(instance: OpenWebUIInstance) -> None:
    instance.reset()
    for url in instance.replica_urls:
        served(instance, url)


def test_a_sync_through_replica_1_is_served_by_replica_2_at_once(
    ha, agui_server, tmp_path, capsys, monkeypatch
) -> None:
    reset(ha)
    args, _ = blueprints(tmp_path, agui_server.agent_url)
    first, second = ha.replica_urls
    sync(capsys, monkeypatch, ha, first, *args)
    assert {DOCUMENTS, POLICY, TIER1} <= served(ha, second)
    with ha.client(url=second) as http:
        functions = {f["id"]: f for f in http.get("/api/v1/functions/list").raise_for_status().json()}
    assert functions[TOGGLE]["is_active"] and functions[TOGGLE]["type"] == "filter"
    agui_server.clear()
    assert chat(ha, second, DOCUMENTS, filter_ids=[TOGGLE]) == AGENT_ANSWER
    [run] = agui_server.recorded()
    assert run["forwardedProps"]["features"] == ["user_files"]


def test_a_changed_backend_url_takes_effect_on_replica_2s_next_chat(
    ha, agui_server, tmp_path, capsys, monkeypatch
) -> None:
    reset(ha)
    args, root = blueprints(tmp_path, agui_server.agent_url)
    first, second = ha.replica_urls
    sync(capsys, monkeypatch, ha, first, *args)
    assert chat(ha, second, POLICY) == AGENT_ANSWER  # replica 2 has loaded the pipe now
    set_backend(root, UNREACHABLE, only="policy-faq")
    sync(capsys, monkeypatch, ha, first, *args)
    agui_server.clear()
    assert chat(ha, second, POLICY) != AGENT_ANSWER
    assert agui_server.recorded() == []
    set_backend(root, agui_server.agent_url, only="policy-faq")
    sync(capsys, monkeypatch, ha, first, *args)
    assert chat(ha, second, POLICY) == AGENT_ANSWER


def test_two_syncs_at_once_through_different_replicas_converge(ha, agui_server, tmp_path) -> None:
    reset(ha)
    args, _ = blueprints(tmp_path, agui_server.agent_url)
    env = {**os.environ, "OPENWEBUI_TOKEN": ha.token}
    env.pop("OPENWEBUI_TOKEN_FILE", None)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "provisioner", "sync", "--yes", *args],
            env={**env, "OPENWEBUI_URL": url},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for url in ha.replica_urls
    ]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    # Both may create the same objects: the loser of a create race must say so and change nothing
    # wrongly; a plain re-run then finishes. Either way, the instance ends as the blueprints say.
    for code, out, err in results:
        assert code == 0 or "another sync running at the same time" in err, out + err
    for url in ha.replica_urls:
        final = subprocess.run(
            [sys.executable, "-m", "provisioner", "sync", "--yes", *args],
            env={**env, "OPENWEBUI_URL": url},
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        assert final.returncode == 0, final.stdout + final.stderr
        check = subprocess.run(
            [sys.executable, "-m", "provisioner", "diff", "--detailed-exitcode", *args],
            env={**env, "OPENWEBUI_URL": url},
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        assert check.returncode == 0, check.stdout + check.stderr
    for url in ha.replica_urls:
        assert {DOCUMENTS, POLICY, TIER1} <= served(ha, url)


def test_prune_reaches_both_replicas(ha, agui_server, tmp_path, capsys, monkeypatch) -> None:
    reset(ha)
    args, root = blueprints(tmp_path, agui_server.agent_url)
    first, second = ha.replica_urls
    sync(capsys, monkeypatch, ha, first, *args)
    assert TIER1 in served(ha, first) and TIER1 in served(ha, second)
    (root / "support_desk.yaml").unlink()
    sync(capsys, monkeypatch, ha, second, "--prune", *args)
    for url in ha.replica_urls:
        ids = served(ha, url)
        assert TIER1 not in ids and DOCUMENTS in ids


# --- one server, two workers, no Redis ------------------------------------------------------------

ROUNDS = 20  # fresh connections: the kernel spreads them over both workers


@pytest.fixture(scope="module")
def two_workers() -> Iterator[OpenWebUIInstance]:
    instance = start_or_skip(OpenWebUIInstance(f"workers-{os.getpid()}", extra_env={"UVICORN_WORKERS": "2"}))
    yield instance
    instance.purge()


def worker_pids(instance: OpenWebUIInstance) -> list[int]:
    """The server's worker processes: uvicorn's supervisor spawns each with multiprocessing."""
    pid = int(instance.status()["pid"])
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(c) for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]


def listings(instance: OpenWebUIInstance) -> list[dict[str, str]]:
    """`/api/models` ROUNDS times, each on a new connection: {id: name} per answer."""
    seen = []
    for _ in range(ROUNDS):
        with instance.client() as http:
            seen.append({m["id"]: m["name"] for m in http.get("/api/models").raise_for_status().json()["data"]})
    return seen


def test_two_workers_without_redis_serve_every_sync_change_on_every_request(
    two_workers, agui_server, tmp_path, capsys, monkeypatch
) -> None:
    """What docs/openwebui-versions.md promises users of UVICORN_WORKERS>1 without Redis (0.12.4):
    new rows, renames and prunes show on every request whichever worker answers, and chats work.
    """
    assert len(worker_pids(two_workers)) == 2, "UVICORN_WORKERS=2 did not start two workers"
    args, root = blueprints(tmp_path, agui_server.agent_url)
    sync(capsys, monkeypatch, two_workers, two_workers.url, *args)
    assert all(TIER1 in seen and POLICY in seen for seen in listings(two_workers))
    for _ in range(6):
        assert chat(two_workers, two_workers.url, POLICY) == AGENT_ANSWER
    path = root / "policy_faq.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["agents"][0]["name"] = "Policy FAQ (renamed)"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    (root / "support_desk.yaml").unlink()
    sync(capsys, monkeypatch, two_workers, two_workers.url, "--prune", *args)
    for seen in listings(two_workers):
        assert TIER1 not in seen and seen[POLICY] == "Policy FAQ (renamed)"
