"""`provision token` offline parts and a target's allow_http (token.py, client.check_url)."""

from __future__ import annotations

import os

import pytest

from provisioner.client import check_url
from provisioner.errors import ConfigError
from provisioner.targets import load_targets
from provisioner.token import admin_login, write_secret_file


def test_the_password_comes_from_the_environment_or_a_file_never_both(tmp_path) -> None:
    assert admin_login({"OPENWEBUI_ADMIN_EMAIL": "a@x", "OPENWEBUI_ADMIN_PASSWORD": "p w"}).password == "p w"
    secret = tmp_path / "pw"
    secret.write_text("from-file\n")
    login = admin_login({"OPENWEBUI_ADMIN_EMAIL": "a@x", "OPENWEBUI_ADMIN_PASSWORD_FILE": str(secret)})
    assert login.password == "from-file" and "from-file" not in repr(login)
    with pytest.raises(ConfigError, match="use one"):
        admin_login({"OPENWEBUI_ADMIN_EMAIL": "a@x", "OPENWEBUI_ADMIN_PASSWORD": "p", "OPENWEBUI_ADMIN_PASSWORD_FILE": str(secret)})
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
    path.write_text("targets:\n  c:\n    url: http://o.ns.svc.cluster.local\n    token_file: t\n"
                    "    allow_http: ['*.svc.cluster.local']\n")
    assert load_targets(path)["c"].allow_http == ("*.svc.cluster.local",)
