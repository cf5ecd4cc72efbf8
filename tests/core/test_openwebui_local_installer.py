"""scripts/openwebui-local's installer: uv where there is one (seconds a release), else pip."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.builders import REPO
from tests.support.loading import load_file


@pytest.fixture()
def script() -> Iterator[ModuleType]:
    module = load_file(REPO / "scripts" / "openwebui-local")  # kept in sys.modules: its dataclasses look it up
    yield module
    del sys.modules["openwebui_local"]


def test_the_test_extras_uv_beside_the_venvs_python_is_used(script, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIHUB_OPENWEBUI_INSTALLER", raising=False)
    beside = Path(sys.executable).parent / "uv"
    assert beside.is_file(), "uv is one of the test extras: `pip install -e '.[test]'`"
    assert script.find_uv() == str(beside)


def test_pip_when_asked_for(script, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIHUB_OPENWEBUI_INSTALLER", "pip")
    assert script.find_uv() is None


def test_an_unknown_installer_is_named(script, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIHUB_OPENWEBUI_INSTALLER", "poetry")
    with pytest.raises(script.LocalError, match="AIHUB_OPENWEBUI_INSTALLER must be uv or pip, not 'poetry'"):
        script.find_uv()


def test_uv_asked_for_and_missing_says_so(script, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AIHUB_OPENWEBUI_INSTALLER", "uv")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(script.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setattr(script, "__file__", str(tmp_path / "scripts" / "openwebui-local"))
    with pytest.raises(script.LocalError, match="no uv is found"):
        script.find_uv()
