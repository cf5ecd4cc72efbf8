"""The local Open WebUI the quick start and the suite rely on: started, authorised, isolated, resettable."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.owui_instance import SCRIPT, OpenWebUIInstance, OpenWebUIUnavailable, parse_env_lines

pytestmark = pytest.mark.e2e

PROBE_FILTER = '''"""
title: Probe filter
"""


class Filter:
    def inlet(self, body: dict) -> dict:
        return body
'''


def create_probe_objects(instance: OpenWebUIInstance) -> None:
    """One function, one model row and one parent/child group pair."""
    with instance.client() as http:
        http.post(
            "/api/v1/functions/create",
            json={
                "id": "probe_filter",
                "name": "Probe filter",
                "content": PROBE_FILTER,
                "meta": {"description": "made by a test"},
            },
        ).raise_for_status()
        http.post(
            "/api/v1/models/create",
            json={
                "id": "probe-row",
                "name": "Probe row",
                "base_model_id": None,
                "meta": {"description": "made by a test"},
                "params": {},
            },
        ).raise_for_status()
        parent = http.post("/api/v1/groups/create", json={"name": "probe-parent", "description": ""})
        parent.raise_for_status()
        http.post(
            "/api/v1/groups/create",
            json={"name": "probe-child", "description": "", "parent_group_id": parent.json()["id"]},
        ).raise_for_status()


def ids(http: httpx.Client, path: str) -> set[str]:
    response = http.get(path)
    response.raise_for_status()
    return {item["id"] for item in response.json()}


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a TCP socket in LISTEN on `port`, read from /proc/net/tcp{,6}."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, port_hex = local.rsplit(":", 1)
            if state == "0A" and int(port_hex, 16) == port:
                if len(address) == 8:  # IPv4, little-endian hex
                    found.add(".".join(str(b) for b in reversed(bytes.fromhex(address))))
                else:
                    found.add(f"ipv6:{address}")
    return found


def process_gone(pid: int) -> bool:
    """No such process, or only a zombie nobody has reaped yet."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return True
    return fields[0] == "Z"


def test_health_answers(openwebui: OpenWebUIInstance) -> None:
    response = httpx.get(f"{openwebui.url}/health", trust_env=False)
    assert response.json() == {"status": True}


def test_version_is_the_pinned_release(openwebui: OpenWebUIInstance) -> None:
    response = httpx.get(f"{openwebui.url}/api/version", trust_env=False)
    assert response.json()["version"] == "0.12.4"


def test_token_is_an_admin_api_key(openwebui: OpenWebUIInstance) -> None:
    assert openwebui.token.startswith("sk-")
    with openwebui.client() as http:
        assert http.get("/api/v1/functions/export").status_code == 200
    with openwebui.client(token="") as anonymous:
        assert anonymous.get("/api/v1/functions/export").status_code in (401, 403)


def test_admin_jwt_signs_in_as_admin(openwebui: OpenWebUIInstance) -> None:
    assert openwebui.admin_jwt
    with openwebui.client(token=openwebui.admin_jwt) as http:
        me = http.get("/api/v1/auths/")
    assert me.status_code == 200 and me.json()["role"] == "admin"


def test_server_listens_on_loopback_only(openwebui: OpenWebUIInstance) -> None:
    if not Path("/proc/net/tcp").exists():
        pytest.skip("needs Linux /proc/net/tcp")
    port = httpx.URL(openwebui.url).port
    assert port is not None and httpx.URL(openwebui.url).host == "127.0.0.1"
    assert listening_addresses(port) == {"127.0.0.1"}


def test_secrets_are_owner_only_files(openwebui: OpenWebUIInstance) -> None:
    for name in ("state.json", "admin.json", "secret_key"):
        mode = stat.S_IMODE((openwebui.instance_dir / name).stat().st_mode)
        assert mode == 0o600, f"{name} has mode {oct(mode)}"


def test_start_on_a_running_instance_prints_the_same_env_and_keeps_data(
    clean_openwebui: OpenWebUIInstance,
) -> None:
    create_probe_objects(clean_openwebui)
    again = parse_env_lines(clean_openwebui.run_script("start").stdout)  # no --reuse-data
    env = parse_env_lines(clean_openwebui.run_script("env").stdout)
    expected = {"OPENWEBUI_URL": clean_openwebui.url, "OPENWEBUI_TOKEN": clean_openwebui.token}
    assert again == expected
    assert env == expected
    with clean_openwebui.client() as http:
        assert "probe_filter" in ids(http, "/api/v1/functions/list")


def test_restart_with_reused_data_keeps_rows_and_token(clean_openwebui: OpenWebUIInstance) -> None:
    create_probe_objects(clean_openwebui)
    old_token = clean_openwebui.token

    clean_openwebui.stop(keep_data=True)
    assert not clean_openwebui.healthy()
    assert clean_openwebui.status()["running"] is False
    assert (clean_openwebui.data_dir / "webui.db").is_file()

    clean_openwebui.start()
    assert clean_openwebui.token == old_token
    with clean_openwebui.client() as http:
        assert "probe_filter" in ids(http, "/api/v1/functions/list")
        assert "probe-row" in ids(http, "/api/v1/models/all")
    with clean_openwebui.client(token=clean_openwebui.admin_jwt) as http:
        assert http.get("/api/v1/auths/").json()["role"] == "admin"


def test_reset_empties_models_functions_and_groups(clean_openwebui: OpenWebUIInstance) -> None:
    create_probe_objects(clean_openwebui)
    with clean_openwebui.client() as http:
        assert ids(http, "/api/v1/groups/")  # the probe really created something

    clean_openwebui.reset()

    with clean_openwebui.client() as http:
        assert ids(http, "/api/v1/models/all") == set()
        assert ids(http, "/api/v1/functions/list") == set()
        assert ids(http, "/api/v1/groups/") == set()


def test_stop_without_keep_data_removes_the_data_dir() -> None:
    instance = OpenWebUIInstance(f"pytest-{os.getpid()}-stop")
    try:
        try:
            instance.start(reuse_data=False)
        except OpenWebUIUnavailable as exc:
            pytest.fail(f"second instance did not start:\n{exc}", pytrace=False)
        data_dir = instance.data_dir
        pid = instance.status()["pid"]
        assert (data_dir / "webui.db").is_file()

        instance.stop(keep_data=False)

        assert not data_dir.exists()
        assert not instance.healthy()
        assert process_gone(pid)
        assert instance.run_script("stop").returncode == 0  # stopping a stopped instance is fine
    finally:
        instance.purge()


def test_env_of_a_stopped_instance_fails_without_traceback() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "env", "--name", f"pytest-{os.getpid()}-absent"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert "is not running" in result.stderr
    assert "Traceback" not in result.stderr
