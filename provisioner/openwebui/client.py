"""OpenWebUIClient: the only module that talks HTTP (httpx). Thin, typed, retrying.

It returns plain dicts and lists, never a Response, and translates every failure into the
errors of errors.py. Messages name the method, path and status, never the token: a server may
echo what it was sent, so every error text is redacted (`redaction.redact`: every encoding of
every secret) before it is shortened.

Layer: adapter.
"""

from __future__ import annotations

import fnmatch
import json as jsonlib
import logging
import re
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..errors import ApiError, ConfigError, UnreachableError
from ..redaction import SENSITIVE, WITHHELD, redact  # noqa: F401  (re-exported: callers import them from here)
from ..urls import is_loopback
from . import compat
from .compat import Compat

# `provision -v` shows this logger on stderr: one line per HTTP call, method, path (no query),
# status and time. Never headers, bodies, query strings or the token.
http_log = logging.getLogger("provisioner.http")

RETRY_STATUSES = frozenset({409, 500, 502, 503, 504})
_MISSING_DETAIL = "We could not find what you're looking for"
_TAKEN_DETAILS = ("already registered", "ID_TAKEN", "id is already", "already taken")
TAKEN_HINT = (
    "it exists now although the listing did not show it: another sync running at the same time, "
    "or an incomplete listing (with functions switched off every function listing is empty: "
    "`provision doctor` checks it); nothing was overwritten or deleted, run `provision sync` again"
)
# What an Authorization header can carry: visible ASCII, no whitespace. Anything else would make
# httpx/h11 fail with the header value (the token) in the exception text.
_HEADER_VALUE = re.compile(r"[\x21-\x7e]+")


def make_http_client(timeout: float) -> httpx.Client:
    """The httpx client every command uses; tests replace this to count or fault requests.

    Plain http:// is only allowed to loopback (or with --insecure), so it never goes through an
    environment proxy: the token would cross the network in clear text. https:// may.
    """
    return httpx.Client(timeout=timeout, follow_redirects=False, mounts={"http://": httpx.HTTPTransport()})


def check_url(url: str, *, insecure: bool, allow_http: Collection[str] = ()) -> str:
    """Normalise the base URL; refuse plain HTTP to anything but loopback unless `insecure` or
    the host matches one of a target's `allow_http` patterns (`*.svc.cluster.local`)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"Open WebUI URL must look like https://host[:port], got {url!r}")
    if parts.username or parts.password:
        raise ConfigError("put credentials in OPENWEBUI_TOKEN or --token-file, not in the URL")
    if (
        parts.scheme == "http"
        and not insecure
        and not is_loopback(parts.hostname)
        and not any(fnmatch.fnmatchcase(parts.hostname.lower(), p.lower()) for p in allow_http)
    ):
        raise ConfigError(
            f"refusing plain HTTP to {parts.hostname}: the token would travel in clear text. "
            "Use https, name the host in the target's allow_http (a cluster-internal name), "
            "or pass --insecure if you really mean it."
        )
    return url.strip().rstrip("/")


class OpenWebUIClient:
    """Admin API of Open WebUI 0.12 for the objects provision manages.

    Usage::

        with OpenWebUIClient(base_url="http://127.0.0.1:8080", token=token) as client:
            rows = client.list_models()

    Parameters: `http` lets tests pass an httpx.Client (respx, MockTransport, event hooks);
    `retries` bounds the extra attempts for 5xx, 409 and timeouts; `backoff` is the first
    delay in seconds, doubled per attempt; `sleep` is injectable so tests do not wait;
    `release` is the instance's Compat when already known (else read from `/api/version`).
    """

    def __init__(
        self,
        *,
        base_url: str,
        token: str,
        http: httpx.Client | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        release: Compat | None = None,
    ) -> None:
        if not _HEADER_VALUE.fullmatch(token):
            raise ConfigError(
                "the token holds whitespace, control or non-ASCII characters: OPENWEBUI_TOKEN or "
                "the token file must hold the API key alone, on one line"
            )
        self.base_url = base_url.rstrip("/")
        self._token = token
        self._http = http or httpx.Client(timeout=timeout, follow_redirects=False)
        self._owns_http = http is None
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self._retries = retries
        self._backoff = backoff
        self._sleep = sleep
        self._compat: Compat | None = release

    def __enter__(self) -> OpenWebUIClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    # -- reads ---------------------------------------------------------------------------

    def version(self) -> str:
        data = self._request("GET", "/api/version")
        return str(data.get("version", "")) if isinstance(data, dict) else ""

    @property
    def compat(self) -> Compat:
        """What this instance's release needs; `/api/version` is read once, on first use."""
        if self._compat is None:
            self._compat = compat.select(self.version())
        return self._compat

    def list_models(self) -> list[dict[str, Any]]:
        """Every model row (presets and overrides): one call from 0.11.4, two before."""
        rows: dict[str, dict[str, Any]] = {}
        for path in self.compat.model_listing:
            for row in self._list(path):
                rows.setdefault(str(row.get("id")), row)
        return list(rows.values())

    def list_functions(self) -> list[dict[str, Any]]:
        """Every function with its content and valves in one call."""
        return self._list("/api/v1/functions/export", params={"include_valves": "true"})

    def list_groups(self) -> list[dict[str, Any]]:
        return self._list("/api/v1/groups/")

    def create_group(self, form: Mapping[str, Any]) -> dict[str, Any]:
        """Create a group. Open WebUI (0.12.4 too) does not refuse a second group of one name, so
        before a retry the listing is read: a group of that name holding the form's `data` (the
        marker; Open WebUI adds its own keys beside it) means the earlier attempt was made and its
        answer lost, and that group is the answer."""
        name, data = form.get("name"), form.get("data") or {}

        def holds(group: Mapping[str, Any]) -> bool:
            theirs = group.get("data")
            return isinstance(theirs, Mapping) and all(theirs.get(k) == v for k, v in data.items())

        def made() -> dict[str, Any] | None:
            return next((g for g in self.list_groups() if g.get("name") == name and holds(g)), None)

        return self._request("POST", "/api/v1/groups/create", json=form, made=made)

    def delete_group(self, group_id: str) -> None:
        self._request("DELETE", f"/api/v1/groups/id/{group_id}/delete", missing_ok=True)

    def get_user(self, user_id: str) -> dict[str, Any] | None:
        """One user (name, email), or None when Open WebUI does not know the id."""
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,128}", user_id):
            return None
        try:
            data = self._request("GET", f"/api/v1/users/{user_id}")
        except ApiError as exc:
            if exc.status in (400, 404):
                return None
            raise
        return data if isinstance(data, dict) else None

    def get_function(self, function_id: str) -> dict[str, Any]:
        return self._request("GET", f"/api/v1/functions/id/{function_id}")

    def find_function(self, function_id: str) -> dict[str, Any] | None:
        """One function by id, or None when there is none. Unlike every listing, this answers
        while functions are switched off (ENABLE_FUNCTIONS=false): `provision doctor` tells the two apart."""
        data = self._request("GET", f"/api/v1/functions/id/{function_id}", missing_ok=True)
        return data if isinstance(data, dict) else None

    def default_permissions(self) -> dict[str, Any]:
        """What users may do unless a group grants more (`chat.file_upload`, ...)."""
        data = self._request("GET", "/api/v1/users/default/permissions")
        return data if isinstance(data, dict) else {}

    def probe_agent(self, model: str) -> dict[str, Any]:
        """Ask the pipe, from this admin's key, to reach one agent's backend (agent_pipe/probe.py):
        a chat completion without a chat (nothing is stored) whose body carries `aihub_probe`.
        Returns the pipe's answer; ApiError when Open WebUI refuses, ValueError when the answer is
        not a probe's (a pipe that predates probes would have run the agent)."""
        body = {
            "model": model,
            "messages": [{"role": "user", "content": "aihub probe"}],
            "stream": False,
            "aihub_probe": {"version": 1},
        }
        response = self._request("POST", "/api/chat/completions", json=body)
        try:
            answer = jsonlib.loads(response["choices"][0]["message"]["content"])
        except (TypeError, KeyError, IndexError, ValueError):
            raise ValueError("the answer is not a probe's") from None
        if not isinstance(answer, dict) or "aihub_probe" not in answer:
            raise ValueError("the answer is not a probe's")
        return answer

    def native_switches(self) -> dict[str, bool | None]:
        """Open WebUI's own instance-wide switches for the native features (None: not readable)."""
        reads = {
            "web_search": ("/api/v1/retrieval/config", lambda d: (d.get("web") or {}).get("ENABLE_WEB_SEARCH")),
            "image_generation": ("/api/v1/images/config", lambda d: d.get("ENABLE_IMAGE_GENERATION")),
            "code_interpreter": ("/api/v1/configs/code_execution", lambda d: d.get("ENABLE_CODE_INTERPRETER")),
        }
        found: dict[str, bool | None] = {}
        for feature, (path, pick) in reads.items():
            try:
                data = self._request("GET", path)
            except ApiError:
                data = None
            value = pick(data) if isinstance(data, dict) else None
            found[feature] = value if isinstance(value, bool) else None
        return found

    def retrieval_config(self) -> dict[str, Any]:
        """The document settings (`BYPASS_EMBEDDING_AND_RETRIEVAL`, ...)."""
        data = self._request("GET", "/api/v1/retrieval/config")
        return data if isinstance(data, dict) else {}

    def history(self, kind: str, object_id: str) -> list[dict[str, Any]]:
        """Open WebUI's version history of a model row or function (0.12+), newest first: id,
        user_id, user {name}, commit_message, created_at; the first page (20 entries)."""
        if kind == "model":
            return self._list("/api/v1/models/model/history", params={"id": object_id, "page": "1"})
        return self._list(f"/api/v1/functions/id/{object_id}/history", params={"page": "1"})

    def history_entry(self, kind: str, object_id: str, entry_id: str) -> dict[str, Any]:
        """One version with its `snapshot` (name, meta, params or content)."""
        if kind == "model":
            return self._request("GET", f"/api/v1/models/model/history/{entry_id}", params={"id": object_id})
        return self._request("GET", f"/api/v1/functions/id/{object_id}/history/{entry_id}")

    # -- API keys (provision token) ------------------------------------------------------

    def own_api_key(self) -> str | None:
        """The signed-in user's API key, or None when it has none (Open WebUI answers 404)."""
        try:
            data = self._request("GET", "/api/v1/auths/api_key")
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        key = data.get("api_key") if isinstance(data, dict) else None
        return key if isinstance(key, str) and key else None

    def create_api_key(self) -> str:
        data = self._request("POST", "/api/v1/auths/api_key")
        key = data.get("api_key") if isinstance(data, dict) else None
        if not isinstance(key, str) or not key:
            raise ApiError("POST", "/api/v1/auths/api_key", 200, "answer has no api_key", "")
        return key

    # -- model writes --------------------------------------------------------------------

    def create_model(self, body: Mapping[str, Any]) -> dict[str, Any]:
        form = self.compat.model_form(body)
        return self._request("POST", "/api/v1/models/create", json=form, create=True)

    def get_model(self, model_id: str) -> dict[str, Any]:
        return self._request("GET", "/api/v1/models/model", params={"id": model_id})

    def update_model(
        self, body: Mapping[str, Any], *, rebuild: Callable[[], Mapping[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Write a full ModelForm. On `409 version_conflict` someone wrote the row meanwhile:
        `rebuild` (read again, merge again) makes the body the retry sends, so the other
        writer's fields survive."""
        # The id travels in the body (0.12); the query is harmless there and needed by <=0.6.5.
        form = self.compat.model_form
        return self._request(
            "POST",
            "/api/v1/models/model/update",
            json=form(body),
            params={"id": body["id"]},
            rebuild=(lambda: form(rebuild())) if rebuild is not None else None,
        )

    def update_model_access(self, model_id: str, grants: list[dict[str, str]]) -> dict[str, Any]:
        """From 0.12; before, access travels in update_model (`compat.access_in_update`)."""
        return self._request(
            "POST",
            "/api/v1/models/model/access/update",
            json={"id": model_id, "access_grants": grants},
        )

    def delete_model(self, model_id: str) -> None:
        self._request("POST", "/api/v1/models/model/delete", json={"id": model_id}, missing_ok=True)

    # -- function writes -----------------------------------------------------------------

    def create_function(self, body: Mapping[str, Any]) -> dict[str, Any]:
        try:
            return self._request("POST", "/api/v1/functions/create", json=body, create=True)
        except ApiError as exc:
            # Two creates racing both pass Open WebUI's id check; the loser's insert then fails
            # with a bare "Error creating function". Name the real cause when the id exists now.
            if exc.status == 400 and not _is_taken(exc.detail) and self._function_exists(str(body["id"])):
                raise ApiError(exc.method, exc.path, exc.status, exc.detail, TAKEN_HINT) from None
            raise

    def _function_exists(self, function_id: str) -> bool:
        return self._request("GET", f"/api/v1/functions/id/{function_id}", missing_ok=True) is not None

    def update_function(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._request("POST", f"/api/v1/functions/id/{body['id']}/update", json=body)

    def toggle_function_active(self, function_id: str) -> dict[str, Any]:
        """Flip is_active (Open WebUI has no setter): call only after reading the state."""
        return self._request("POST", f"/api/v1/functions/id/{function_id}/toggle")

    def toggle_function_global(self, function_id: str) -> dict[str, Any]:
        """Flip is_global (Open WebUI has no setter): call only after reading the state."""
        return self._request("POST", f"/api/v1/functions/id/{function_id}/toggle/global")

    def update_function_valves(
        self, function_id: str, valves: Mapping[str, Any], *, secrets: Collection[str] = ()
    ) -> dict[str, Any]:
        """Replace the stored valves; `secrets` are values in them that no error may repeat."""
        return self._request("POST", f"/api/v1/functions/id/{function_id}/valves/update", json=valves, secrets=secrets)

    def delete_function(self, function_id: str) -> None:
        self._request("DELETE", f"/api/v1/functions/id/{function_id}/delete", missing_ok=True)

    # -- runtime -------------------------------------------------------------------------

    def refresh_models(self) -> None:
        """Rebuild Open WebUI's in-memory model registry so new rows and pipes serve at once."""
        self._request("GET", "/api/models", params={"refresh": "true"})

    # -- plumbing ------------------------------------------------------------------------

    def _list(self, path: str, params: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        data = self._request("GET", path, params=params)
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            # A listing we cannot trust must never drive a prune.
            raise ApiError("GET", path, 200, "expected a JSON list of objects", "refusing to continue")
        return data

    def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, str] | None = None,
        create: bool = False,
        missing_ok: bool = False,
        secrets: Collection[str] = (),
        rebuild: Callable[[], Any] | None = None,
        made: Callable[[], Any] | None = None,
    ) -> Any:
        """One call, retried as the module says; `made`, for a create the server cannot refuse
        twice, is asked before each retry and its answer (not None: the earlier attempt landed)
        returned instead."""
        url = self.base_url + path
        hidden = (self._token, *secrets)
        attempt = 0
        while True:
            if attempt and made is not None and (found := made()) is not None:
                return found
            try:
                response = self._send(method, url, path, attempt, json=json, params=params)
            except httpx.TimeoutException as exc:
                if attempt < self._retries:
                    attempt = self._wait(attempt)
                    continue
                raise UnreachableError(
                    f"{method} {path} timed out {attempt + 1} times ({type(exc).__name__}); is Open WebUI overloaded?"
                ) from None
            except httpx.TransportError as exc:
                if attempt < self._retries and not isinstance(exc, httpx.UnsupportedProtocol):
                    attempt = self._wait(attempt)
                    continue
                raise UnreachableError(
                    redact(f"cannot reach Open WebUI at {self.base_url} ({type(exc).__name__}: {exc})", hidden)
                ) from None
            status = response.status_code
            if status < 300:
                return _json(response, method, path, self._missing_hint(method, path))
            detail = _detail(response, hidden)
            if create and attempt > 0 and _is_taken(detail):
                # An earlier attempt of this create succeeded but its answer was lost.
                return {}
            if missing_ok and status in (401, 404) and _MISSING_DETAIL in detail:
                return None
            if status in RETRY_STATUSES and attempt < self._retries:
                attempt = self._wait(attempt)
                if status == 409 and rebuild is not None:
                    json = rebuild()
                continue
            hint = self._missing_hint(method, path) if status in (404, 405) and self._compat else ""
            raise ApiError(method, path, status, detail, hint or _hint(status, detail, attempt))

    def _missing_hint(self, method: str, path: str) -> str:
        """Once the version is known, an unknown endpoint is named with it: older releases
        answer an unknown GET with their web page (200, HTML), others with 404 or 405."""
        if self._compat is None:
            return "is this an Open WebUI URL?"
        return f"Open WebUI {self._compat.version} has no endpoint {method} {path}"

    def _send(self, method: str, url: str, path: str, attempt: int, **kwargs: Any) -> httpx.Response:
        """One HTTP call, logged for `-v` with its outcome and time (the path only: no query)."""
        started = time.monotonic()
        try:
            response = self._http.request(method, url, headers=self._headers, **kwargs)
        except httpx.TransportError as exc:
            _log_call(method, path, type(exc).__name__, started, attempt)
            raise
        _log_call(method, path, str(response.status_code), started, attempt)
        return response

    def _wait(self, attempt: int) -> int:
        self._sleep(self._backoff * (2**attempt))
        return attempt + 1


def _log_call(method: str, path: str, outcome: str, started: float, attempt: int) -> None:
    if http_log.isEnabledFor(logging.INFO):
        elapsed = (time.monotonic() - started) * 1000
        retry = f" (retry {attempt})" if attempt else ""
        http_log.info("%s %s -> %s in %.0f ms%s", method, path, outcome, elapsed, retry)


def _json(response: httpx.Response, method: str, path: str, hint: str) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        raise ApiError(method, path, response.status_code, "answer is not JSON", hint) from None


def _detail(response: httpx.Response, secrets: Iterable[str]) -> str:
    """A short excerpt of an error answer, redacted before it is cut (a cut could split a secret)."""
    try:
        data = response.json()
    except ValueError:
        text = redact(response.text.strip().replace("\n", " "), secrets)
        return (text[:200] + "…") if len(text) > 200 else (text or response.reason_phrase)
    if isinstance(data, dict) and "detail" in data:
        return redact(str(data["detail"]), secrets)[:300]
    return redact(str(data), secrets)[:300]


def _is_taken(detail: str) -> bool:
    return any(t in detail for t in _TAKEN_DETAILS)


def _hint(status: int, detail: str, attempt: int) -> str:
    retried = f"after {attempt + 1} attempts" if attempt else ""
    if status in (400, 401) and _is_taken(detail):  # models answer 401 for a taken id
        return TAKEN_HINT
    if status == 400 and "Error creating function" in detail:
        return (
            "Open WebUI could not load the function (its log says why); with functions switched off "
            "(ENABLE_FUNCTIONS=false or ENABLE_PLUGINS=false) every function create fails like this"
        )
    if status == 401:
        if _MISSING_DETAIL in detail:
            return "the object does not exist (Open WebUI answers 401 for a missing id)"
        return "the token was rejected: check OPENWEBUI_TOKEN"
    if status == 403:
        if "API key" in detail:
            return "API keys are disabled on this instance: set ENABLE_API_KEYS=true or use a JWT"
        return "the token's user is not an admin"
    if status == 404:
        return "endpoint not found: is this an Open WebUI URL?"
    if status == 409:
        return f"a concurrent write changed the object {retried}".strip()
    if status >= 500:
        return f"server error {retried}".strip()
    return retried


def sign_in(base_url: str, email: str, password: str, *, http: httpx.Client) -> dict[str, Any]:
    """POST /api/v1/auths/signin: the session (`token`, `role`, ...) of that user. The password
    is hidden from every error text, as a token is."""
    path = "/api/v1/auths/signin"
    hidden = (password,)
    try:
        response = http.post(
            base_url.rstrip("/") + path,
            json={"email": email, "password": password},
            headers={"Accept": "application/json"},
        )
    except httpx.TransportError as exc:
        raise UnreachableError(
            redact(f"cannot reach Open WebUI at {base_url} ({type(exc).__name__}: {exc})", hidden)
        ) from None
    _log_call("POST", path, str(response.status_code), time.monotonic(), 0)
    if response.status_code >= 300:
        detail = _detail(response, hidden)
        hint = "check OPENWEBUI_ADMIN_EMAIL and the password" if response.status_code in (400, 401, 403) else ""
        if response.status_code == 429:
            hint = "too many sign-ins for this email: Open WebUI allows a few per minutes; wait and retry"
        raise ApiError("POST", path, response.status_code, detail, hint)
    data = _json(response, "POST", path, "is this an Open WebUI URL?")
    if not isinstance(data, dict) or not isinstance(data.get("token"), str):
        raise ApiError("POST", path, response.status_code, "answer has no token", "is this an Open WebUI URL?")
    return data
