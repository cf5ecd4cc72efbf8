"""Helpers the e2e tests share: run the CLI in-process, read the instance, chat through the
real bundle and see each chat from both ends (the AG-UI server's record and the observer's).

The fixtures built on them live in conftest.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

import provisioner.cli as cli
from tests.builders import REPO, SAMPLE_MODEL_IDS

AGENT_PIPE = REPO / "owui_functions" / "aihub_agent_pipe.py"
OBSERVER = Path(__file__).parent / "fixtures" / "observer_filter.py"
OBSERVER_ID = "zz_test_observer"
AGENT_ANSWER = "Hello from the scripted agent."  # the scripted agent's reply to a plain message
SAMPLE_MODELS = frozenset(SAMPLE_MODEL_IDS)


def provision(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def get(owui, path: str, **params: Any) -> Any:
    with owui.client() as http:
        return http.get(path, params=params).raise_for_status().json()


@dataclass
class Seen:
    """One chat request from both ends: what reached the agent and what Open WebUI kept."""

    run: dict[str, Any]  # the RunAgentInput the AG-UI server received
    observed: dict[str, Any]  # the observer's record, taken after every filter of the bundle ran

    @property
    def forwarded(self) -> list[str]:
        """The features the agent was asked for (`forwardedProps.features`)."""
        return self.run["forwardedProps"]["features"]

    @property
    def requested(self) -> Any:
        """`__metadata__["aihub_requested_features"]` after the filters: what the pipe reads."""
        return self.observed["requested"]

    @property
    def features(self) -> dict[str, Any]:
        """Open WebUI's own `features` dict after the filters: what it acts on afterwards."""
        return self.observed["features"]

    @property
    def model(self) -> str:
        return self.observed["model"]


@dataclass
class ChatRig:
    """A synced Open WebUI whose agents run on the scripted AG-UI server, the observer on."""

    owui: Any
    server: Any  # tests/agui_server/harness.py AguiServer
    log: Path  # the observer's JSON lines

    def client(self, **kwargs: Any) -> httpx.Client:
        return self.owui.client(**kwargs)

    def clear(self) -> None:
        self.server.clear()
        self.log.write_text("", encoding="utf-8")

    def observed(self) -> list[dict[str, Any]]:
        """The observer's records since `clear()`, Open WebUI's housekeeping tasks left out."""
        lines = self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []
        return [record for record in map(json.loads, filter(None, lines)) if not record.get("task")]

    def one_request(self) -> Seen:
        """The single agent run and the single observed request since `clear()`."""
        runs, observed = self.server.recorded(), self.observed()
        assert len(runs) == 1 and len(observed) == 1, (runs, observed)
        return Seen(runs[0], observed[0])


def install_observer(owui, log: Path) -> None:
    """Upload the observer filter: active, global (it runs for every model), writing to `log`."""
    form = {"id": OBSERVER_ID, "name": "Test observer", "content": OBSERVER.read_text(encoding="utf-8"),
            "meta": {"description": "e2e only"}}
    with owui.client() as http:
        http.post("/api/v1/functions/create", json=form).raise_for_status()
        assert http.post(f"/api/v1/functions/id/{OBSERVER_ID}/toggle").raise_for_status().json()["is_active"]
        assert http.post(f"/api/v1/functions/id/{OBSERVER_ID}/toggle/global").raise_for_status().json()["is_global"]
        http.post(f"/api/v1/functions/id/{OBSERVER_ID}/valves/update", json={"path": str(log)}).raise_for_status()


def chat(rig: ChatRig, model: str, *, features: dict | None = None, filter_ids: list[str] | None = None,
         extra: dict | None = None) -> Seen:
    """One API chat completion through the real pipe to the agent, seen from both ends."""
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": False}
    if features is not None:
        body["features"] = features
    if filter_ids is not None:
        body["filter_ids"] = filter_ids
    body.update(extra or {})
    rig.clear()
    with rig.client(timeout=60) as http:
        response = http.post("/api/chat/completions", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == AGENT_ANSWER, response.text
    seen = rig.one_request()
    assert seen.model == model
    return seen
