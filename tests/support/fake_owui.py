"""An in-memory stand-in for Open WebUI 0.12's admin API, mounted with respx for unit tests.

It mimics the quirks that matter to the provisioner (functions created inactive, toggles that
flip, 401 for a missing id, a create refused for an id that exists, update replacing meta) so
apply and the CLI can be tested without a server. The real behaviour is pinned by the e2e tests
against a real Open WebUI.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import respx

MISSING = {"detail": "We could not find what you're looking for :/"}
ID_TAKEN = "Uh-oh! This id is already registered. Please choose another id string."
MODEL_ID_TAKEN = "Uh-oh! This model id is already registered. Please choose another model id string."


class Taken(Exception):
    """A create for an id that exists; Open WebUI answers 401 (models) or 400 (functions)."""

    def __init__(self, status: int, detail: str) -> None:
        self.status, self.detail = status, detail


class Answer(Exception):
    """A ready answer other than 200 JSON (an HTML page, a 405, a 500)."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response


SPA_PAGE = "<!doctype html><html><head><title>Open WebUI</title></head><body></body></html>"


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:3])


class FakeOpenWebUI:
    def __init__(self, base_url: str = "http://127.0.0.1:9", version: str = "0.12.4") -> None:
        self.base_url = base_url
        self.version = version
        self.models: dict[str, dict[str, Any]] = {}
        self.functions: dict[str, dict[str, Any]] = {}
        self.groups: list[dict[str, Any]] = []
        self.users: dict[str, dict[str, Any]] = {}  # id -> {"id", "name", "email", ...}
        self.calls: list[tuple[str, str]] = []
        self.registry_refreshes = 0
        # What the admin settings say (`provision doctor` reads them); functions_enabled=False
        # is ENABLE_FUNCTIONS=false: every listing answers [], a function read by id still answers.
        self.functions_enabled = True
        self.default_permissions: dict[str, Any] = {"chat": {"file_upload": True}}
        self.retrieval: dict[str, Any] = {"BYPASS_EMBEDDING_AND_RETRIEVAL": False, "web": {"ENABLE_WEB_SEARCH": False}}
        # The pipe's answer to an admin's probe, per model id (`provision doctor`); default: reached.
        self.probe_answers: dict[str, dict[str, Any]] = {}
        self.probe_bodies: list[dict[str, Any]] = []
        # Each fault sees (method, path, body) and may return a Response to send instead.
        self.faults: list[Callable[[str, str, Any], httpx.Response | None]] = []
        # Each sees (method, path, body) after the request was carried out; True loses the
        # answer (a ReadTimeout), as when a server or proxy dies after committing a write.
        self.lost_answers: list[Callable[[str, str, Any], bool]] = []

    @property
    def writes(self) -> list[tuple[str, str]]:
        return [c for c in self.calls if c[0] != "GET" or c[1] == "/api/models"]

    def mount(self, router: respx.MockRouter) -> None:
        router.route(host=httpx.URL(self.base_url).host).mock(side_effect=self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        path, method = request.url.path, request.method
        self.calls.append((method, path))
        body = json.loads(request.content) if request.content else None
        for fault in self.faults:
            response = fault(method, path, body)
            if response is not None:
                return response
        try:
            answer = httpx.Response(200, json=self._route(method, path, request, body))
        except LookupError:
            answer = httpx.Response(401, json=MISSING)
        except Taken as taken:
            answer = httpx.Response(taken.status, json={"detail": taken.detail})
        except Answer as ready:
            answer = ready.response
        if any(lose(method, path, body) for lose in self.lost_answers):
            raise httpx.ReadTimeout("answer lost", request=request)
        return answer

    def _route(self, method: str, path: str, request: httpx.Request, body: Any) -> Any:
        if path == "/api/version":
            return {"version": self.version}
        if path == "/api/models":
            self.registry_refreshes += 1
            return {"data": []}
        if path == "/api/v1/groups/":
            return self.groups
        if path == "/api/chat/completions" and isinstance(body, dict) and "aihub_probe" in body:
            self.probe_bodies.append(body)
            answer = self.probe_answers.get(body["model"]) or {
                "reached": True,
                "protocol": "agui",
                "host": "127.0.0.1:9",
                "ms": 1,
                "status": 200,
            }
            answer = {
                "aihub_probe": 1,
                "agent": body["model"].partition(".")[2],
                "replica": "fake:1",
                "forward_user_info": False,
                "user_jwt": False,
                "identity_key": True,
                **answer,
            }
            return {"choices": [{"message": {"role": "assistant", "content": json.dumps(answer)}}]}
        if path == "/api/v1/users/default/permissions":
            return self.default_permissions
        if path == "/api/v1/retrieval/config":
            return self.retrieval
        if path == "/api/v1/images/config":
            return {"ENABLE_IMAGE_GENERATION": False}
        if path == "/api/v1/configs/code_execution":
            raise Answer(httpx.Response(403, json={"detail": "not allowed"}))  # unreadable: None
        if path.startswith("/api/v1/users/") and method == "GET":
            user = self.users.get(path.rsplit("/", 1)[1])
            if user is None:
                raise Taken(400, "We could not find what you're looking for :/")
            return user
        if path == "/api/v1/models/model/history" or (
            path.startswith("/api/v1/functions/id/") and path.endswith("/history")
        ):
            return []  # a fake keeps no versions: drift is reported without a name
        if path == "/api/v1/groups/create":
            group = {"id": f"g{len(self.groups) + 1}", "member_count": 0, **body}
            # 0.12.4 adds its share config beside what the form's data holds (_ensure_default_share_config)
            group["data"] = {**(body.get("data") or {}), "config": {"share": True}}
            self.groups.append(group)
            return group
        if path.startswith("/api/v1/groups/id/") and path.endswith("/delete"):
            self.groups = [g for g in self.groups if g["id"] != path.split("/")[5]]
            return True
        if path == "/api/v1/models/model" and method == "GET":
            return copy.deepcopy(self.models[request.url.params["id"]])
        release = _release(self.version)
        # What older releases do differently, as observed on real servers (issue 10).
        if path == "/api/v1/models/all":
            if release < (0, 11, 4):  # unknown GETs fall through to the web app's page
                raise Answer(httpx.Response(200, text=SPA_PAGE, headers={"content-type": "text/html"}))
            return list(copy.deepcopy(self.models).values())
        if path == "/api/v1/models/base":
            return [copy.deepcopy(m) for m in self.models.values() if m.get("base_model_id") is None]
        if path == "/api/v1/models/export":
            return [copy.deepcopy(m) for m in self.models.values() if m.get("base_model_id") is not None]
        if path == "/api/v1/models/create":
            if body["id"] in self.models:
                raise Taken(401, MODEL_ID_TAKEN)
            row = {"base_model_id": None, "params": {}, "is_active": True, **body}
            if release < (0, 8, 0):
                row["access_control"] = body.get("access_control")  # missing: null, public
                row.pop("access_grants", None)
            else:
                row["access_grants"] = body.get("access_grants") or []
            self.models[body["id"]] = row
            return row
        if path == "/api/v1/models/model/update":
            row = self.models[body["id"]]
            if release < (0, 8, 0):
                row.update({k: v for k, v in body.items() if k != "access_grants"})
                row["access_control"] = body.get("access_control")  # missing: public
            elif release < (0, 12, 0):
                if "access_grants" not in body and (0, 9, 0) <= release < (0, 11, 0):
                    raise Answer(httpx.Response(500, text="Internal Server Error"))
                row.update(body)
            else:
                row.update({k: v for k, v in body.items() if k != "access_grants"})
            return row
        if path == "/api/v1/models/model/access/update":
            if release < (0, 8, 0):
                raise Answer(httpx.Response(405, json={"detail": "Method Not Allowed"}))
            self.models[body["id"]]["access_grants"] = body["access_grants"]
            return self.models[body["id"]]
        if path == "/api/v1/models/model/delete":
            self.models.pop(body["id"])
            return True
        if path == "/api/v1/functions/export":
            return list(copy.deepcopy(self.functions).values()) if self.functions_enabled else []
        if path == "/api/v1/functions/create":
            if body["id"] in self.functions:
                raise Taken(400, ID_TAKEN)
            fn = {**body, "is_active": False, "is_global": False, "valves": {}}
            self.functions[body["id"]] = fn
            return {k: v for k, v in fn.items() if k != "content"}
        parts = path.split("/")  # /api/v1/functions/id/{id}/...
        if path.startswith("/api/v1/functions/id/"):
            fn = self.functions[parts[5]]
            action = "/".join(parts[6:])
            if method == "GET" and not action:
                return fn
            if action == "update":
                fn.update({k: body[k] for k in ("name", "content", "meta")})
                return fn
            if action == "toggle":
                fn["is_active"] = not fn["is_active"]
                return fn
            if action == "toggle/global":
                fn["is_global"] = not fn["is_global"]
                return fn
            if action == "valves/update":
                fn["valves"] = body
                return body
            if action == "delete":
                del self.functions[parts[5]]
                return True
        raise AssertionError(f"fake Open WebUI has no route {method} {path}")


@contextmanager
def mounted_fake() -> Iterator[FakeOpenWebUI]:
    """A fake instance that every request to its host reaches (respx), for the library's tests."""
    with respx.mock(assert_all_called=False) as router:
        server = FakeOpenWebUI()
        server.mount(router)
        yield server


@contextmanager
def fake_instance_for_cli(monkeypatch: pytest.MonkeyPatch, token: str) -> Iterator[FakeOpenWebUI]:
    """A fake instance the CLI reaches through OPENWEBUI_URL/OPENWEBUI_TOKEN (outside CI)."""
    server = FakeOpenWebUI(base_url="http://127.0.0.1:9")
    monkeypatch.setenv("OPENWEBUI_URL", server.base_url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", token)
    monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    with respx.mock(assert_all_called=False) as router:
        server.mount(router)
        yield server
