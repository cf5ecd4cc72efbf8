"""Through a real Open WebUI 0.12.4: every agent shows exactly its supported features as toggles,
on a stock instance and on one where an admin switched web search, image generation and the code
interpreter on, and Open WebUI itself runs none of them for an agent (issue 8 point 1).

What the chat input shows is computed from what the browser gets (`/api/models` entries and the
`/api/config` features) by the rules of 0.12.4's MessageInput.svelte / IntegrationsMenu.svelte:
a toggle filter of the model shows as a switch with its name, description and icon; a native
toggle shows when the model's capability is true (missing counts as true) and the instance's
switch is on (admin). The browser tests (real Chromium) check the same on the page itself.

"Switched on" points each feature's engine at a loopback recorder: any search, image request or
Jupyter call Open WebUI made itself would land there, and the tests assert none does.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from provisioner.features import NATIVE_FEATURES, NATIVE_TOGGLES
from tests.support.builders import REPO
from tests.support.chat_support import SAMPLE_MODELS, ChatRig, chat, get, provision

SWITCHES = {
    "web_search": "enable_web_search",
    "image_generation": "enable_image_generation",
    "code_interpreter": "enable_code_interpreter",
}
CUSTOM = yaml.safe_load((REPO / "blueprints" / "features.yaml").read_text(encoding="utf-8"))["features"]
EVERYTHING = {"web_search": True, "image_generation": True, "code_interpreter": True, "memory": True}
LEGACY = {"params": {"function_calling": "legacy"}}  # Open WebUI acts on `features` itself in this mode
RESEARCH = "aihub_agent_pipe.research-assistant.default"
DESK = "aihub_agent_pipe.support-desk.tier2"
POLICY = "aihub_agent_pipe.policy-faq.default"


class Recorder(http.server.ThreadingHTTPServer):
    """A loopback HTTP server that answers 500 to everything and remembers every request."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _any(self) -> None:
                recorder.hits.append(f"{self.command} {self.path}")
                self.send_response(500)
                self.end_headers()

            do_GET = do_POST = do_PUT = _any

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def instance_features(owui) -> dict[str, bool]:
    """`/api/config` features as the browser of the admin gets them (needs the admin's JWT)."""
    with owui.client(token=owui.admin_jwt) as http:
        features = http.get("/api/config").raise_for_status().json()["features"]
    return {feature: bool(features.get(switch)) for feature, switch in SWITCHES.items()}


def switch_everything_on(owui, engine_url: str) -> dict[str, Any]:
    """Turn web search, image generation and the code interpreter on as an admin would, each engine
    pointed at `engine_url`; return the previous config for `restore`."""
    with owui.client() as http:
        saved = {
            "web": http.get("/api/v1/retrieval/config").raise_for_status().json()["web"],
            "images": http.get("/api/v1/images/config").raise_for_status().json(),
            "code": http.get("/api/v1/configs/code_execution").raise_for_status().json(),
        }
        web = {
            **saved["web"],
            "ENABLE_WEB_SEARCH": True,
            "WEB_SEARCH_ENGINE": "searxng",
            "SEARXNG_QUERY_URL": f"{engine_url}/search?q=<query>",
        }
        http.post("/api/v1/retrieval/config/update", json={"web": web}).raise_for_status()
        images = {
            **saved["images"],
            "ENABLE_IMAGE_GENERATION": True,
            "IMAGE_GENERATION_ENGINE": "openai",
            "IMAGES_OPENAI_API_BASE_URL": f"{engine_url}/v1",
            "IMAGES_OPENAI_API_KEY": "not-a-key",
            "IMAGE_GENERATION_MODEL": "dall-e-2",
        }
        http.post("/api/v1/images/config/update", json=images).raise_for_status()
        code = {
            **saved["code"],
            "ENABLE_CODE_INTERPRETER": True,
            "CODE_INTERPRETER_ENGINE": "jupyter",
            "CODE_INTERPRETER_JUPYTER_URL": engine_url,
        }
        http.post("/api/v1/configs/code_execution", json=code).raise_for_status()
    return saved


def restore(owui, saved: dict[str, Any]) -> None:
    with owui.client() as http:
        http.post("/api/v1/retrieval/config/update", json={"web": saved["web"]}).raise_for_status()
        http.post("/api/v1/images/config/update", json=saved["images"]).raise_for_status()
        http.post("/api/v1/configs/code_execution", json=saved["code"]).raise_for_status()


@pytest.fixture
def engines() -> Iterator[Recorder]:
    server = Recorder()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(params=["stock", "switched-on"])
def instance(request, chat_rig: ChatRig, engines: Recorder) -> Iterator[ChatRig]:
    """The synced samples on a stock instance, or with every native switch turned on afterwards."""
    if request.param == "stock":
        yield chat_rig
        return
    saved = switch_everything_on(chat_rig.owui, engines.url)
    try:
        assert instance_features(chat_rig.owui) == dict.fromkeys(SWITCHES, True)
        yield chat_rig
    finally:
        restore(chat_rig.owui, saved)


def chat_input(entry: dict[str, Any], switches: dict[str, bool]) -> dict[str, dict[str, Any]]:
    """Title -> what the admin's chat input shows for this model (MessageInput.svelte, 0.12.4)."""
    shown = {
        f["name"]: {"kind": "filter", "id": f["id"], "description": f.get("description"), "icon": f.get("icon")}
        for f in entry.get("filters") or []
    }
    capabilities = ((entry.get("info") or {}).get("meta") or {}).get("capabilities") or {}
    for feature in NATIVE_FEATURES:
        if capabilities.get(feature, True) and switches[feature]:
            shown[f"native {feature}"] = {"kind": "native"}
    return shown


def expected_toggles(features: list[str]) -> dict[str, tuple[str, str, str | None]]:
    """Title -> (filter id, description, icon prefix) of the toggles an agent with `features` shows."""
    out: dict[str, tuple[str, str, str | None]] = {}
    for feature in features:
        if feature in NATIVE_TOGGLES:
            native = NATIVE_TOGGLES[feature]
            out[native.title] = (f"aihub_toggle_{feature}", native.description, native.icon)
        else:
            out[CUSTOM[feature]["title"]] = (
                f"aihub_toggle_{feature}",
                CUSTOM[feature]["description"],
                "data:image/svg+xml",
            )
    return out


def test_each_agent_shows_exactly_its_supported_features_as_toggles(instance: ChatRig) -> None:
    switches = instance_features(instance.owui)
    entries = {m["id"]: m for m in get(instance.owui, "/api/models")["data"]}
    assert SAMPLE_MODELS <= set(entries)
    for model_id in sorted(SAMPLE_MODELS):
        entry = entries[model_id]
        supported = entry["info"]["meta"]["aihub"]["features"]
        shown = chat_input(entry, switches)
        want = expected_toggles(supported)
        assert set(shown) == set(want), (model_id, switches, sorted(shown))
        for title, (filter_id, description, icon) in want.items():
            assert shown[title]["id"] == filter_id and shown[title]["description"] == description
            assert icon is not None and str(shown[title]["icon"]).startswith(icon), (model_id, title)
        assert "memory" not in str(sorted(shown)).lower()


def test_sample_expectations_cover_native_custom_and_none(chat_rig: ChatRig) -> None:
    # Pins what the test above ranges over, so it cannot pass on agents that show nothing.
    entries = {m["id"]: m for m in get(chat_rig.owui, "/api/models")["data"]}
    assert set(expected_toggles(entries[RESEARCH]["info"]["meta"]["aihub"]["features"])) == {
        "Web Search",
        "Code Interpreter",
        "Image",
    }
    assert set(expected_toggles(entries[DESK]["info"]["meta"]["aihub"]["features"])) == {"Web Search", "Deep research"}
    assert expected_toggles(entries[POLICY]["info"]["meta"]["aihub"]["features"]) == {}


def test_default_toggles_start_on_through_their_filters(chat_rig: ChatRig) -> None:
    entries = {m["id"]: m for m in get(chat_rig.owui, "/api/models")["data"]}
    meta = entries[DESK]["info"]["meta"]
    # New chats preselect defaultFilterIds ∩ the model's filters (Chat.svelte:setDefaults).
    assert meta["defaultFilterIds"] == ["aihub_toggle_web_search", "aihub_toggle_deep_research"]
    assert set(meta["defaultFilterIds"]) <= {f["id"] for f in entries[DESK]["filters"]}
    assert meta["defaultFeatureIds"] == []


def test_a_switched_on_toggle_reaches_the_agent_and_open_webui_runs_nothing_itself(
    instance: ChatRig, engines: Recorder
) -> None:
    toggles = [
        "aihub_toggle_web_search",
        "aihub_toggle_code_interpreter",
        "aihub_toggle_image_generation",
        "aihub_toggle_deep_research",
        "aihub_toggle_user_files",
    ]
    assert chat(instance, RESEARCH, features={}).forwarded == []
    assert chat(instance, RESEARCH, features={}, filter_ids=["aihub_toggle_web_search"]).forwarded == ["web_search"]
    assert chat(instance, RESEARCH, features={}, filter_ids=["aihub_toggle_code_interpreter"]).forwarded == [
        "code_interpreter"
    ]
    assert chat(instance, RESEARCH, features={}, filter_ids=["aihub_toggle_image_generation"]).forwarded == [
        "image_generation"
    ]
    for extra in ({}, LEGACY):
        seen = chat(instance, RESEARCH, features=dict(EVERYTHING), filter_ids=toggles, extra=extra)
        assert sorted(seen.forwarded) == ["code_interpreter", "image_generation", "web_search"]
        assert {k: seen.features.get(k) for k in EVERYTHING} == dict.fromkeys(EVERYTHING, False)
        seen = chat(instance, DESK, features=dict(EVERYTHING), filter_ids=toggles, extra=extra)
        assert sorted(seen.forwarded) == ["deep_research", "web_search"]
        assert chat(instance, POLICY, features=dict(EVERYTHING), filter_ids=toggles, extra=extra).forwarded == []
    assert engines.hits == []  # no search, no image request, no Jupyter call by Open WebUI


def test_the_plan_does_not_depend_on_the_instance_switches(instance: ChatRig, chat_bundle: list[str], capsys) -> None:
    code, out, err = provision(capsys, "diff", *chat_bundle, "--detailed-exitcode")
    assert code == 0 and "No changes." in out, out + err


def test_the_samples_toggle_filters_are_on_the_instance_looking_native(chat_rig: ChatRig) -> None:
    functions = {f["id"]: f for f in get(chat_rig.owui, "/api/v1/functions/")}
    for feature in ("web_search", "code_interpreter", "image_generation"):
        fn = functions[f"aihub_toggle_{feature}"]
        assert fn["name"] == NATIVE_TOGGLES[feature].title and fn["is_active"] and not fn["is_global"]
        assert fn["meta"]["toggle"] is True
