"""scripts/demo-agents' start/stop (demo_agents/control.py): a second start reuses a healthy server,
a start on a port another program holds fails clearly, a stop leaves nothing listening."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from demo_agents import control
from tests.support.builders import closed_port


def test_start_reuses_a_healthy_server_and_stop_leaves_nothing_listening(tmp_path: Path) -> None:
    ports = closed_port(), closed_port()
    try:
        assert "started" in control.start(tmp_path, *ports)
        pid = (control.read_state(tmp_path) or {})["pid"]
        assert all(map(control.healthy, ports))
        assert "reused" in control.start(tmp_path, *ports) and (control.read_state(tmp_path) or {})["pid"] == pid
        moved = closed_port(), closed_port()
        assert "started" in control.start(tmp_path, *moved)  # other ports: the old one is stopped first
        assert not any(map(control.listening, ports)) and not control.is_demo_agents(pid)
    finally:
        assert "stopped" in control.stop(tmp_path)
    assert not any(map(control.listening, moved)) and control.read_state(tmp_path) is None
    assert control.stop(tmp_path) == "demo agents are not running"


def test_start_refuses_a_port_another_program_listens_on(tmp_path: Path) -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        with pytest.raises(SystemExit, match=rf"port {other.getsockname()[1]} on 127.0.0.1 is in use"):
            control.start(tmp_path, other.getsockname()[1], closed_port())
    assert control.read_state(tmp_path) is None
