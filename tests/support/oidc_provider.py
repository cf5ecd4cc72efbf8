"""A minimal OpenID Connect provider on loopback, for the delegated-access test (issue 19, point 7).

Discovery, authorize (auto-approves its one user), token (authorization code, client secret
checked), userinfo and JWKS; ID tokens signed RS256 with a key made at start. Stdlib HTTP and
PyJWT only (the test extra has both), so Open WebUI's own Authlib client is the part under test.
Every access token it issues is kept in `issued`, so a test can look for exactly those.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from demo_agents.sse_handler import SSEHandler, serve_loopback, stop_loopback

KID = "test-oidc-key"


@dataclass
class OIDCProvider:
    """One client, one user; `start()` serves it on 127.0.0.1 and returns itself."""

    client_id: str
    client_secret: str
    email: str
    name: str = "Olga OAuth"
    sub: str = "oidc-user-1"
    issued: list[str] = field(default_factory=list)  # every access token, in order
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def start(self) -> OIDCProvider:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        provider = self

        class Handler(SSEHandler):
            def log_message(self, *args: Any) -> None:  # quiet: the suite's output stays readable
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                path, _, query = self.path.partition("?")
                params = dict(urllib.parse.parse_qsl(query))
                if path == "/.well-known/openid-configuration":
                    self.send_json(provider.metadata())
                elif path == "/jwks":
                    self.send_json({"keys": [provider.jwk()]})
                elif path == "/authorize":
                    self._authorize(params)
                elif path == "/userinfo":
                    self._userinfo()
                else:
                    self.send_json({"error": "not_found"}, 404)

            def do_POST(self) -> None:  # noqa: N802 (http.server's method name)
                size = int(self.headers.get("Content-Length") or 0)
                form = dict(urllib.parse.parse_qsl(self.rfile.read(size).decode()))
                if self.path.partition("?")[0] == "/token":
                    self.send_json(*provider.token(form, self.headers.get("Authorization", "")))
                else:
                    self.send_json({"error": "not_found"}, 404)

            def _authorize(self, params: dict[str, str]) -> None:
                if params.get("client_id") != provider.client_id or params.get("response_type") != "code":
                    self.send_json({"error": "invalid_request"}, 400)
                    return
                code = secrets.token_urlsafe(16)
                provider.codes[code] = {"nonce": params.get("nonce"), "redirect_uri": params.get("redirect_uri")}
                target = {"code": code, **({"state": params["state"]} if "state" in params else {})}
                self.send_response(302)
                self.send_header("Location", f"{params['redirect_uri']}?{urllib.parse.urlencode(target)}")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _userinfo(self) -> None:
                token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                if token not in provider.issued:
                    self.send_json({"error": "invalid_token"}, 401)
                    return
                self.send_json(provider.claims())

        self.server, self.url = serve_loopback(Handler)
        return self

    def stop(self) -> None:
        stop_loopback(self.server)

    @property
    def discovery_url(self) -> str:
        return f"{self.url}/.well-known/openid-configuration"

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "userinfo_endpoint": f"{self.url}/userinfo",
            "jwks_uri": f"{self.url}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "scopes_supported": ["openid", "email", "profile"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        }

    def jwk(self) -> dict[str, Any]:
        return {**json.loads(RSAAlgorithm.to_jwk(self.key.public_key())), "kid": KID, "use": "sig", "alg": "RS256"}

    def claims(self) -> dict[str, Any]:
        return {"sub": self.sub, "email": self.email, "email_verified": True, "name": self.name}

    def token(self, form: dict[str, str], authorization: str) -> tuple[dict[str, Any], int]:
        """The code grant: the client authenticates (basic or post), the code is used once."""
        client = (form.get("client_id"), form.get("client_secret"))
        if authorization.startswith("Basic "):
            user, _, password = base64.b64decode(authorization[6:]).decode().partition(":")
            client = (urllib.parse.unquote(user), urllib.parse.unquote(password))
        if client != (self.client_id, self.client_secret):
            return {"error": "invalid_client"}, 401
        grant = self.codes.pop(form.get("code", ""), None)
        if form.get("grant_type") != "authorization_code" or grant is None:
            return {"error": "invalid_grant"}, 400
        access = "oidc-access-" + secrets.token_urlsafe(24)
        self.issued.append(access)
        now = int(time.time())
        id_claims = {
            **self.claims(),
            "iss": self.url,
            "aud": self.client_id,
            "iat": now,
            "exp": now + 3600,
            **({"nonce": grant["nonce"]} if grant["nonce"] else {}),
        }
        id_token = jwt.encode(id_claims, self.key, algorithm="RS256", headers={"kid": KID})
        return {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": 3600,
            "id_token": id_token,
            "scope": "openid email profile",
        }, 200
