"""The admin API client: retries, error translation, and the token never in messages."""

from __future__ import annotations

import httpx
import pytest
import respx

from provisioner.errors import ApiError, ConfigError, UnreachableError
from provisioner.openwebui import compat
from provisioner.openwebui.client import OpenWebUIClient, check_url

BASE = "http://owui.test"
TOKEN = "sk-supersecret-token-value"


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def client(sleeps: list[float]) -> OpenWebUIClient:
    return OpenWebUIClient(
        base_url=BASE, token=TOKEN, retries=3, backoff=0.5, sleep=sleeps.append, release=compat.select("0.12.4")
    )


@respx.mock
def test_lists_every_model_in_one_call_with_the_bearer_token(client: OpenWebUIClient) -> None:
    route = respx.get(f"{BASE}/api/v1/models/all").respond(json=[{"id": "a"}])
    assert client.list_models() == [{"id": "a"}]
    assert route.call_count == 1
    assert route.calls[0].request.headers["Authorization"] == f"Bearer {TOKEN}"


@respx.mock
def test_5xx_is_retried_with_backoff_then_succeeds(client: OpenWebUIClient, sleeps: list[float]) -> None:
    route = respx.post(f"{BASE}/api/v1/models/create").mock(
        side_effect=[httpx.Response(502), httpx.Response(503), httpx.Response(200, json={"id": "m"})]
    )
    assert client.create_model({"id": "m"}) == {"id": "m"}
    assert route.call_count == 3
    assert sleeps == [0.5, 1.0]


@respx.mock
def test_409_version_conflict_is_retried(client: OpenWebUIClient) -> None:
    route = respx.post(f"{BASE}/api/v1/models/model/update").mock(
        side_effect=[httpx.Response(409, json={"code": "version_conflict"}), httpx.Response(200, json={"id": "m"})]
    )
    client.update_model({"id": "m", "name": "x"})
    assert route.call_count == 2


@respx.mock
def test_retries_are_bounded_then_a_clear_error(client: OpenWebUIClient, sleeps: list[float]) -> None:
    route = respx.post(f"{BASE}/api/v1/models/create").respond(500, json={"detail": "boom"})
    with pytest.raises(ApiError) as info:
        client.create_model({"id": "m"})
    assert route.call_count == 4  # one try + three retries
    assert sleeps == [0.5, 1.0, 2.0]
    assert info.value.status == 500
    assert "POST /api/v1/models/create" in str(info.value) and "boom" in str(info.value)
    assert "after 4 attempts" in str(info.value)


@respx.mock
def test_timeouts_are_retried_then_reported_as_unreachable(client: OpenWebUIClient) -> None:
    route = respx.get(f"{BASE}/api/v1/models/all").mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(UnreachableError, match="timed out 4 times"):
        client.list_models()
    assert route.call_count == 4


@respx.mock
def test_connection_refused_is_a_clear_error(client: OpenWebUIClient) -> None:
    respx.get(f"{BASE}/api/version").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(UnreachableError, match=f"cannot reach Open WebUI at {BASE}"):
        client.version()


@respx.mock
@pytest.mark.parametrize(
    ("status", "detail", "hint"),
    [
        (401, "Not authenticated", "token was rejected"),
        (403, "Use of API key is not enabled in the environment.", "ENABLE_API_KEYS"),
        (403, "Access prohibited", "not an admin"),
        (404, "Not Found", "Open WebUI 0.12.4 has no endpoint GET /api/v1/models/all"),
    ],
)
def test_auth_and_missing_endpoint_errors_say_what_to_do(
    client: OpenWebUIClient, status: int, detail: str, hint: str
) -> None:
    respx.get(f"{BASE}/api/v1/models/all").respond(status, json={"detail": detail})
    with pytest.raises(ApiError) as info:
        client.list_models()
    assert hint in str(info.value)
    assert TOKEN not in str(info.value)


@respx.mock
def test_a_listing_that_is_not_a_list_is_refused(client: OpenWebUIClient) -> None:
    respx.get(f"{BASE}/api/v1/functions/export").respond(json={"items": []})
    with pytest.raises(ApiError, match="expected a JSON list"):
        client.list_functions()


@respx.mock
def test_truncated_json_listing_is_an_error(client: OpenWebUIClient) -> None:
    respx.get(f"{BASE}/api/v1/models/all").respond(
        200, content=b'[{"id": "a"}, {"id"', headers={"content-type": "application/json"}
    )
    with pytest.raises(ApiError, match="not JSON"):
        client.list_models()


@respx.mock
def test_a_retried_create_whose_first_attempt_landed_counts_as_done(client: OpenWebUIClient) -> None:
    respx.post(f"{BASE}/api/v1/functions/create").mock(
        side_effect=[
            httpx.ReadTimeout("lost answer"),
            httpx.Response(400, json={"detail": "Uh-oh! This id is already registered."}),
        ]
    )
    assert client.create_function({"id": "f"}) == {}


@respx.mock
def test_a_first_attempt_create_conflict_is_an_error(client: OpenWebUIClient) -> None:
    respx.post(f"{BASE}/api/v1/models/create").respond(
        401, json={"detail": "Uh-oh! This model id is already registered."}
    )
    with pytest.raises(ApiError):
        client.create_model({"id": "m"})


@respx.mock
def test_deleting_something_already_gone_is_fine(client: OpenWebUIClient, sleeps: list[float]) -> None:
    route = respx.post(f"{BASE}/api/v1/models/model/delete").respond(
        401, json={"detail": "We could not find what you're looking for :/"}
    )
    client.delete_model("gone")  # no error: the row is gone, as wanted
    assert route.call_count == 1 and sleeps == []  # asked once, not retried
    assert route.calls[0].request.content.replace(b" ", b"") == b'{"id":"gone"}'
    # Any other 401 is still an error: only "not found" means already deleted.
    route.respond(401, json={"detail": "Invalid token"})
    with pytest.raises(ApiError) as info:
        client.delete_model("gone")
    assert info.value.status == 401 and "token was rejected" in str(info.value)


@respx.mock
def test_model_update_sends_the_id_in_body_and_query(client: OpenWebUIClient) -> None:
    route = respx.post(f"{BASE}/api/v1/models/model/update").respond(json={})
    client.update_model({"id": "a.b.c", "name": "n"})
    request = route.calls[0].request
    assert request.url.params["id"] == "a.b.c" and b'"id":"a.b.c"' in request.content.replace(b" ", b"")


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8080", "http://localhost:3000/", "http://[::1]:8080", "https://chat.example.com"]
)
def test_loopback_http_and_any_https_are_accepted(url: str) -> None:
    assert check_url(url, insecure=False) == url.rstrip("/")


def test_plain_http_to_a_remote_host_is_refused_unless_insecure() -> None:
    with pytest.raises(ConfigError, match="refusing plain HTTP"):
        check_url("http://chat.example.com", insecure=False)
    assert check_url("http://chat.example.com", insecure=True) == "http://chat.example.com"


@pytest.mark.parametrize("url", ["chat.example.com", "ftp://x", "https://user:pw@chat.example.com"])
def test_malformed_urls_are_refused(url: str) -> None:
    with pytest.raises(ConfigError):
        check_url(url, insecure=False)
