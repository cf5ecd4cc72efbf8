"""The plan's note on how native features reach agents, shown by `provision diff` only while it
changes something (the toggles themselves: tests/core/test_native_toggles.py)."""

from __future__ import annotations

from tests.support.builders import REPO
from tests.support.fake_owui import fake_instance_for_cli
from tests.support.run_cli import run_cli as run


def test_the_plan_says_how_native_features_reach_agents_only_when_it_changes_something(capsys, monkeypatch) -> None:
    samples = ["-p", str(REPO / "blueprints"), "--bundle", str(REPO / "owui_functions")]
    with fake_instance_for_cli(monkeypatch, "sk-native-note-0123456789"):
        code, _, err = run(capsys, "diff", *samples)
        assert code == 0
        assert "Note: code_interpreter, image_generation, web_search reach agents as the bundle's own toggles " in err
        assert (
            "(aihub_toggle_code_interpreter, aihub_toggle_image_generation, aihub_toggle_web_search), "
            "on any instance configuration"
        ) in err
        assert run(capsys, "sync", *samples)[0] == 0
        code, _, err = run(capsys, "diff", *samples)
        assert code == 0 and "Note:" not in err
