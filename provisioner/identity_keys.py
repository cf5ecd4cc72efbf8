"""The pipe's identity signing key (its IDENTITY_KEYS valve) and the JWKS agents verify with.

The pipe signs who is asking (an EdDSA JWT, `aud` the agent) with the private key in the valve;
agents verify with the public keys `provision jwks` prints. sync makes the key once and keeps
it, like HISTORY_SIGNING_KEY: a new key at every sync would fail every agent holding the JWKS.
A rotation keeps the old public key for RETIRED_KEY_SECONDS (far longer than a token lives), so
tokens signed just before it still verify; then the next sync drops it. The valve's value holds
the private key: it is sensitive, and nothing here returns it in anything meant for output.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from .contract import IDENTITY_VALVE, PIPE_FUNCTION_ID
from .desired import PIPE_IDENTITY_VALVE
from .errors import ConfigError
from .state import InstanceState

RETIRED_KEY_SECONDS = 86400
# The kid the pipe signs with when the server's AIHUB_IDENTITY_PRIVATE_KEY comes without an
# AIHUB_IDENTITY_KEY_ID.
SERVER_KEY_ID = "server"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def public_jwk(key: Ed25519PrivateKey, kid: str | None = None) -> dict[str, str]:
    """The key's public half as a JWK agents verify EdDSA tokens with; `kid` defaults to the
    RFC 7638 thumbprint, so the same key always gets the same id."""
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    x = _b64url(raw)
    members = json.dumps({"crv": "Ed25519", "kty": "OKP", "x": x}, separators=(",", ":"))  # RFC 7638's order
    thumbprint = _b64url(hashlib.sha256(members.encode("ascii")).digest())
    return {"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": kid or thumbprint, "x": x}


def _private_pem(key: Ed25519PrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")


def load_private_key(pem: bytes | str) -> Ed25519PrivateKey:
    """An Ed25519 private key from PEM; the ValueError never carries the key's text."""
    data = pem.encode("utf-8") if isinstance(pem, str) else pem
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise ValueError("not an unencrypted PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError("not an Ed25519 key (the pipe signs with EdDSA)")
    return key


def _signing(value: Any) -> tuple[str, Ed25519PrivateKey] | None:
    """The kid and key of the valve's `signing` entry, or None when it holds no usable key."""
    if not isinstance(value, Mapping):
        return None
    kid, pem = value.get("kid"), value.get("private_key_pem")
    if not (isinstance(kid, str) and kid and isinstance(pem, str)):
        return None
    try:
        return kid, load_private_key(pem)
    except ValueError:
        return None


def _retired(value: Any, now: float) -> list[dict[str, Any]]:
    """The well-formed retired entries still inside their RETIRED_KEY_SECONDS."""
    kept = []
    for entry in value if isinstance(value, list) else []:
        if not isinstance(entry, Mapping):
            continue
        jwk, when = entry.get("public_jwk"), entry.get("retired_at")
        if not (isinstance(entry.get("kid"), str) and isinstance(jwk, Mapping) and isinstance(jwk.get("x"), str)):
            continue
        if isinstance(when, (int, float)) and not isinstance(when, bool) and now - when < RETIRED_KEY_SECONDS:
            kept.append(dict(entry))
    return kept


def _parsed(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, str):
        return None
    try:
        data = json.loads(value)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _valve(kid: str, key: Ed25519PrivateKey, retired: list[dict[str, Any]]) -> str:
    return json.dumps(
        {"signing": {"kid": kid, "private_key_pem": _private_pem(key)}, "retired": retired},
        sort_keys=True,
        separators=(",", ":"),
    )


def next_identity_keys(live: Any, *, now: float, rotate: bool = False) -> str:
    """The IDENTITY_KEYS value sync writes, given the live one (None: there is none).

    A usable live value comes back unchanged (byte for byte: the plan stays empty) unless a
    retired key has outlived RETIRED_KEY_SECONDS (it is dropped) or `rotate` asks for a new
    signing key (the current one's public JWK moves to `retired`, stamped `now`). A missing or
    unusable value is replaced by a fresh key.
    """
    data = _parsed(live)
    current = _signing(data.get("signing")) if data else None
    if current is None:
        fresh = Ed25519PrivateKey.generate()
        return _valve(public_jwk(fresh)["kid"], fresh, [])
    kid, key = current
    retired = _retired(data.get("retired"), now) if data else []
    if rotate:
        retired.append({"kid": kid, "public_jwk": public_jwk(key, kid), "retired_at": int(now)})
        fresh = Ed25519PrivateKey.generate()
        return _valve(public_jwk(fresh)["kid"], fresh, retired)
    if data is not None and retired == data.get("retired"):
        return live
    return _valve(kid, key, retired)


def live_identity_keys(observed: InstanceState) -> Any:
    """The pipe's IDENTITY_KEYS valve as the instance holds it (None: no pipe, or no valve)."""
    pipe = observed.functions.get(PIPE_FUNCTION_ID)
    return pipe.fields.get(PIPE_IDENTITY_VALVE) if pipe is not None else None


def jwks(value: Any, *, now: float) -> dict[str, list[dict[str, str]]] | None:
    """The public keys of an IDENTITY_KEYS value: the signing key first, then each retired key
    still inside its RETIRED_KEY_SECONDS. None when the value holds no usable signing key."""
    data = _parsed(value)
    current = _signing(data.get("signing")) if data else None
    if data is None or current is None:
        return None
    kid, key = current
    keys = [public_jwk(key, kid)]
    for entry in _retired(data.get("retired"), now):
        keys.append({**keys[0], "kid": entry["kid"], "x": entry["public_jwk"]["x"]})
    return {"keys": keys}


def jwks_of_private_key(pem: bytes, kid: str | None = None) -> dict[str, list[dict[str, str]]]:
    """The JWKS of one private key (a server's AIHUB_IDENTITY_PRIVATE_KEY); ValueError when the
    PEM is not an Ed25519 private key."""
    return {"keys": [public_jwk(load_private_key(pem), kid)]}


def instance_jwks(functions: list[dict[str, Any]], *, now: float) -> dict[str, list[dict[str, str]]]:
    """The JWKS of the pipe in an instance's function listing (with valves)."""
    pipe = next((f for f in functions if f.get("id") == PIPE_FUNCTION_ID), None)
    if pipe is None:
        raise ConfigError(f"no {PIPE_FUNCTION_ID} function on the instance: run `provision sync` first")
    valves = pipe.get("valves") if isinstance(pipe.get("valves"), Mapping) else {}
    keys = jwks(valves.get(IDENTITY_VALVE), now=now)
    if keys is None:
        raise ConfigError(
            f"the {PIPE_FUNCTION_ID} function holds no identity key (its IDENTITY_KEYS valve is empty or unusable): "
            "run `provision sync`, which makes one"
        )
    return keys


def key_file_jwks(path: Path, kid: str) -> dict[str, list[dict[str, str]]]:
    """The JWKS of the private key in `path`; errors name the file, never its contents."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read key file {path}: {exc.strerror or exc}") from None
    try:
        return jwks_of_private_key(data, kid)
    except ValueError as exc:
        raise ConfigError(f"key file {path}: {exc}") from None


def describe_jwks(keys: Mapping[str, list[dict[str, str]]], from_file: bool) -> list[str]:
    """Which key is which, for a reader (the JWKS itself does not say)."""
    entries = keys["keys"]
    if from_file:
        return [
            f"kid {entries[0]['kid']}: the key in the file; the server's AIHUB_IDENTITY_KEY_ID must say the same "
            f"(unset, the pipe uses {SERVER_KEY_ID!r})"
        ]
    lines = [f"kid {entries[0]['kid']}: signs the identity tokens now"]
    lines += [f"kid {e['kid']}: retired, still verifies tokens it signed (kept {RETIRED_KEY_SECONDS // 3600} hours)" for e in entries[1:]]
    return lines


def private_key_lines(value: Any) -> list[str]:
    """The secret part of an IDENTITY_KEYS value, as error redaction looks for it: the private
    key's base64 lines (they survive any escaping a server's echo applies; the PEM's armour
    lines, the kids and the public keys are not secret)."""
    data = _parsed(value)
    signing = data.get("signing") if data else None
    pem = signing.get("private_key_pem") if isinstance(signing, Mapping) else None
    if not isinstance(pem, str):
        return [value] if isinstance(value, str) and value else []
    return [line.strip() for line in pem.splitlines() if line.strip() and not line.startswith("-----")]
