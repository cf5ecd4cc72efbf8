"""`provision token` offline parts and a target's allow_http (token.py, client.check_url)."""

from __future__ import annotations

import os

import pytest

from provisioner.errors import ConfigError
from provisioner.openwebui.client import check_url
from provisioner.openwebui.token import admin_login, write_secret_file
from provisioner.targets import load_targets


def test_the_password_comes_from_the_environment_or_a_file_never_both(tmp_path) -> None:
    assert admin_login({"OPENWEBUI_ADMIN_EMAIL": "a@x", "OPENWEBUI_ADMIN_PASSWORD": "p w"}).password == "p w"
    secret = tmp_path / "pw"
    secret.write_text("from-file\n")
    login = admin_login({"OPENWEBUI_ADMIN_EMAIL": "a@x", "OPENWEBUI_ADMIN_PASSWORD_FILE": str(secret)})
    assert login.password == "from-file" and "from-file" not in repr(login)
    with pytest.raises(ConfigError, match="use one"):
        admin_login(
            {
                "OPENWEBUI_ADMIN_EMAIL": "a@x",
                "OPENWEBUI_ADMIN_PASSWORD": "p",
                "OPENWEBUI_ADMIN_PASSWORD_FILE": str(secret),
            }
        )
    with pytest.raises(ConfigError, match="OPENWEBUI_ADMIN_EMAIL"):
        admin_login({"OPENWEBUI_ADMIN_PASSWORD": "p"})
    with pytest.raises(ConfigError, match="no admin password"):
        admin_login({"OPENWEBUI_ADMIN_EMAIL": "a@x"})


def test_the_key_file_is_owner_only_even_when_it_existed(tmp_path) -> None:
    path = tmp_path / "token"
    path.write_text("old")
    os.chmod(path, 0o644)
    write_secret_file(path, "sk-new")
    assert path.read_text() == "sk-new\n" and (path.stat().st_mode & 0o777) == 0o600


def test_plain_http_to_a_named_internal_host_needs_no_insecure() -> None:
    url = "http://open-webui.ai.svc.cluster.local:8080"
    with pytest.raises(ConfigError, match="allow_http"):
        check_url(url, insecure=False)
    assert check_url(url, insecure=False, allow_http=["*.svc.cluster.local"]) == url
    with pytest.raises(ConfigError):
        check_url("http://evil.example.com", insecure=False, allow_http=["*.svc.cluster.local"])


def test_targets_take_allow_http_patterns(tmp_path) -> None:
    path = tmp_path / "targets.yaml"
    path.write_text(
        "targets:\n  c:\n    url: http://o.ns.svc.cluster.local\n    token_file: t\n"
        "    allow_http: ['*.svc.cluster.local']\n"
    )
    assert load_targets(path)["c"].allow_http == ("*.svc.cluster.local",)


# --- OPENWEBUI_ADMIN_PASSWORD_FILE is read as a token file is (issue 29, finding 10) ----------------


def _login_within(path, seconds: float = 5.0):
    """admin_login on `path` in a thread, so a read that blocks fails the test instead of hanging it."""
    import threading

    outcome: list = []

    def target() -> None:
        try:
            outcome.append(admin_login({"OPENWEBUI_ADMIN_EMAIL": "a@x", "OPENWEBUI_ADMIN_PASSWORD_FILE": str(path)}))
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"reading {path} blocked"
    return outcome[0]


def test_a_password_file_keeps_the_spaces_at_its_ends_only_the_line_end_is_stripped(tmp_path) -> None:
    for content, password in [
        ("  p w  \n", "  p w  "),
        (" \tsecret \r\n", " \tsecret "),
        ("pw", "pw"),
        ("pw \n\n", "pw \n"),
    ]:
        (tmp_path / "pw").write_text(content, newline="")
        assert _login_within(tmp_path / "pw").password == password, repr(content)


def test_a_password_file_that_is_a_fifo_is_refused_at_once(tmp_path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    outcome = _login_within(fifo)
    assert isinstance(outcome, ConfigError) and f"OPENWEBUI_ADMIN_PASSWORD_FILE {fifo} is a named pipe (FIFO)" in str(
        outcome
    )


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_password_file_that_is_a_device_is_refused_without_reading_it(device: str) -> None:
    outcome = _login_within(device)
    assert isinstance(outcome, ConfigError) and "is a character device" in str(outcome)


def test_a_password_file_past_the_cap_is_refused_without_its_content(tmp_path) -> None:
    from provisioner.openwebui.token_file import MAX_TOKEN_FILE_BYTES

    path = tmp_path / "pw"
    path.write_text("hunter2-" + "x" * MAX_TOKEN_FILE_BYTES)
    outcome = _login_within(path)
    assert isinstance(outcome, ConfigError) and f"larger than {MAX_TOKEN_FILE_BYTES} bytes" in str(outcome)
    assert "hunter2" not in str(outcome)


def test_a_password_file_of_a_line_end_alone_is_no_password(tmp_path) -> None:
    (tmp_path / "pw").write_text("\n")
    outcome = _login_within(tmp_path / "pw")
    assert isinstance(outcome, ConfigError) and "no admin password" in str(outcome)


def test_provision_token_with_a_fifo_password_file_exits_1_with_the_error_and_no_traceback(
    capsys, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.run_cli import run_cli

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv("OPENWEBUI_ADMIN_EMAIL", "a@x")
    monkeypatch.setenv("OPENWEBUI_ADMIN_PASSWORD_FILE", str(fifo))
    monkeypatch.delenv("OPENWEBUI_ADMIN_PASSWORD", raising=False)
    code, out, err = run_cli(capsys, "token", "--url", "http://127.0.0.1:9")
    assert code == 1 and out == "" and "is a named pipe (FIFO)" in err and "Traceback" not in err
