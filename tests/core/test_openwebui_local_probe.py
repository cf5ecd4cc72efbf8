"""scripts/openwebui-local's import probe: what a release imports at start is installed, bounded.

A stand-in venv: its `bin/python` fails `import open_webui.main` with ModuleNotFoundError for
each module of MISSING whose distribution `-m pip install` has not recorded yet.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.builders import REPO
from tests.support.loading import load_file

FAKE_PYTHON = """#!{python}
import json, pathlib, sys
venv = pathlib.Path(sys.argv[0]).resolve().parent.parent
installed = venv / "installed.json"
done = json.loads(installed.read_text()) if installed.exists() else []
if sys.argv[1] == "-m":  # -m pip --disable-pip-version-check install REQUIREMENT
    installed.write_text(json.dumps(done + [sys.argv[-1]]))
    sys.exit(0)
for module, distribution in json.loads((venv / "missing.json").read_text()):
    if not any(r.split("=")[0] == distribution for r in done):
        print("Traceback ...", file=sys.stderr)
        print(f"ModuleNotFoundError: No module named '{{module}}'", file=sys.stderr)
        sys.exit(1)
"""
METADATA = """Metadata-Version: 2.1
Name: open-webui
Version: 0.6.5
Requires-Dist: fastapi==0.115.7
Requires-Dist: opencv-python-headless==4.11.0.86
Requires-Dist: pytest~=8.3.2; extra == 'dev'
"""


@pytest.fixture(scope="module")
def script() -> Iterator[ModuleType]:
    module = load_file(REPO / "scripts" / "openwebui-local")  # kept in sys.modules: its dataclasses look it up
    yield module
    del sys.modules["openwebui_local"]


def fake_venv(root: Path, missing: list[tuple[str, str]]) -> Path:
    venv = root / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(FAKE_PYTHON.format(python=sys.executable))
    python.chmod(0o755)
    dist = venv / "lib" / "python3.11" / "site-packages" / "open_webui-0.6.5.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(METADATA)
    (venv / "missing.json").write_text(json.dumps(missing))
    return venv


def test_each_module_missing_at_import_is_installed_with_the_releases_own_pin(script, tmp_path: Path) -> None:
    venv = fake_venv(tmp_path, [("itsdangerous", "itsdangerous"), ("cv2.dnn", "opencv-python-headless")])
    added = script.add_missing_modules(venv, tmp_path / "install.log")
    # itsdangerous came only through a left-out requirement: unpinned; cv2 is the release's own pin
    assert added == ["itsdangerous", "opencv-python-headless==4.11.0.86"]
    assert json.loads((venv / "installed.json").read_text()) == added
    assert "No module named 'itsdangerous'" in (tmp_path / "install.log").read_text()


def test_a_release_that_imports_fine_gets_nothing_added(script, tmp_path: Path) -> None:
    venv = fake_venv(tmp_path, [])
    assert script.add_missing_modules(venv, tmp_path / "install.log") == []
    assert not (venv / "installed.json").exists()


def test_a_module_still_missing_after_its_install_is_an_error_not_a_loop(script, tmp_path: Path) -> None:
    venv = fake_venv(tmp_path, [("magic", "libmagic-that-pip-cannot-give")])
    with pytest.raises(script.LocalError, match="still misses 'magic' after installing 'python-magic'"):
        script.add_missing_modules(venv, tmp_path / "install.log")


def test_the_probe_gives_up_after_max_added_modules(script, tmp_path: Path) -> None:
    missing = [(f"mod{i}", f"mod{i}") for i in range(script.MAX_ADDED_MODULES + 1)]
    venv = fake_venv(tmp_path, missing)
    with pytest.raises(script.LocalError, match=f"misses more than {script.MAX_ADDED_MODULES} modules"):
        script.add_missing_modules(venv, tmp_path / "install.log")


def test_an_import_failing_for_another_reason_is_reported_with_the_log(script, tmp_path: Path) -> None:
    venv = fake_venv(tmp_path, [])
    (venv / "bin" / "python").write_text(
        f"#!{sys.executable}\nimport sys\nprint('SyntaxError: boom', file=sys.stderr)\nsys.exit(1)\n"
    )
    with pytest.raises(script.LocalError, match="(?s)importing open_webui.main failed .exit 1.*SyntaxError: boom"):
        script.add_missing_modules(venv, tmp_path / "install.log")


def test_releases_up_to_0_8_get_the_api_key_permission_their_admin_needs(script) -> None:
    assert script.version_env("0.8.0") == {"USER_PERMISSIONS_FEATURES_API_KEYS": "true"}  # 403 without it
    assert script.version_env("0.6.5") == {"USER_PERMISSIONS_FEATURES_API_KEYS": "true"}
    assert script.version_env("0.9.0") == {} and script.version_env("0.12.4") == {}
