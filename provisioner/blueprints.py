"""The blueprint YAML schema, as pydantic models.

A blueprint directory holds three kinds of file (see docs/blueprints.md, "Blueprint format"):
- `capabilities.yaml`: the capability catalog; a capability may `serves` one ChatFeature;
- `features.yaml`: custom feature definitions (what each custom toggle shows);
- any other `*.yaml`: one blueprint, with its steps and its agents.

These models check shape and local rules only; references across files are checked by
loader.py (load_catalog), which knows the whole catalog.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StringConstraints, field_validator

from .contract import RESERVED_HEADER_PREFIX, RESERVED_HEADERS
from .locales import locale_problem
from .text import describe, first_hidden
from .urls import credential_in_url

# Blueprint and agent ids become parts of a model id `<pipe>.<blueprint>.<agent>`: no dots,
# no whitespace, short enough for Open WebUI's 256-character limit.
Identifier = Annotated[
    str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]*$", min_length=1, max_length=64)
]
# Custom feature names become function ids (`aihub_toggle_<name>`): Python identifiers.
FeatureName = Annotated[
    str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", min_length=1, max_length=48)
]
CapabilityName = Annotated[
    str, StringConstraints(pattern=r"^[a-z][a-z0-9_.-]*$", min_length=1, max_length=128)
]
# A function id in the user's functions folder (`filters:` / `actions:`): the file's stem.
FunctionId = Annotated[
    str, StringConstraints(pattern=r"^[a-z_][a-z0-9_]*$", min_length=1, max_length=128)
]
# Variables that hold the Open WebUI admin token (or say where it is), and Open WebUI's own
# signing and database secrets: a backend must never receive them, whoever reads the variable.
TOKEN_VARIABLES = frozenset({"OPENWEBUI_TOKEN", "OPENWEBUI_TOKEN_FILE"})
SERVER_SECRET_VARIABLES = frozenset({"WEBUI_SECRET_KEY", "WEBUI_JWT_SECRET_KEY", "DATABASE_URL", "REDIS_URL"})


def _not_a_token_variable(name: str) -> str:
    if name in TOKEN_VARIABLES:
        raise ValueError(
            f"{name} holds the Open WebUI admin token; a backend must never receive it: give the "
            "backend a key of its own in another variable"
        )
    if name in SERVER_SECRET_VARIABLES:
        raise ValueError(f"{name} is one of Open WebUI's own secrets; give the backend a key of its own in another variable")
    return name


EnvVarName = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Z_][A-Z0-9_]*$", max_length=128),
    AfterValidator(_not_a_token_variable),
]
Text = Annotated[str, StringConstraints(max_length=2000)]


def _no_hidden_characters(value: str) -> str:
    """Names are shown in plans, CI logs and the model picker: what a reader sees must be all there is."""
    char = first_hidden(value)
    if char is not None:
        raise ValueError(
            f"contains {describe(char)}: control characters and invisible or bidirectional "
            "formatting characters are not allowed in names; remove it"
        )
    return value


Name = Annotated[str, StringConstraints(min_length=1, max_length=255), AfterValidator(_no_hidden_characters)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


# What a capability may take from the chat: the files a user attaches (`documents`) or images.
Input = Literal["documents", "images"]


class Capability(_Strict):
    """Something a blueprint step can call; it may serve one chat feature and read the chat's
    files (`reads`), which gives every agent calling it the attach button or image input."""

    description: Text = ""
    serves: FeatureName | None = None
    reads: list[Input] = Field(default_factory=list)

    @field_validator("reads", mode="before")
    @classmethod
    def _a_list(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value  # `reads: documents` means one input

    @field_validator("reads")
    @classmethod
    def _each_once(cls, value: list[str]) -> list[str]:
        if len(set(value)) < len(value):
            raise ValueError("list each input once")
        return value

    @field_validator("serves", mode="before")
    @classmethod
    def _one_feature(cls, value: object) -> object:
        if isinstance(value, list):
            raise ValueError("a capability serves at most one feature; split it into one capability per feature")
        return value


class CapabilityCatalog(_Strict):
    capabilities: dict[CapabilityName, Capability] = Field(min_length=1)

    @field_validator("capabilities", mode="before")
    @classmethod
    def _empty_entries_are_plain(cls, value: object) -> object:
        # `search_docs:` with nothing after it is a capability with no description.
        if isinstance(value, dict):
            return {k: ({} if v is None else v) for k, v in value.items()}
        return value


def _standard_locale(tag: str) -> str:
    why = locale_problem(tag)
    if why:
        raise ValueError(why)
    return tag


# A translation's key: a BCP 47 tag in its standard form (locales.py says why).
Locale = Annotated[str, AfterValidator(_standard_locale)]


FeatureTitle = Annotated[str, StringConstraints(min_length=1, max_length=80), AfterValidator(_no_hidden_characters)]


class FeatureText(_Strict):
    """A custom feature's toggle in one language; a field left out shows the default."""

    title: FeatureTitle | None = None
    description: Text | None = None


class FeatureDef(_Strict):
    """A custom chat feature: what its toggle shows in the chat input."""

    title: FeatureTitle
    description: Text = ""
    icon: str | None = None  # data:image/...;base64 URI, http(s) URL, or a file next to the YAML
    # The toggle's name and description per language (Open WebUI 0.12's meta.i18n).
    i18n: dict[Locale, FeatureText] = Field(default_factory=dict)


class FeatureCatalog(_Strict):
    features: dict[FeatureName, FeatureDef] = Field(default_factory=dict)


class GroupAccess(_Strict):
    """Readable by the members of these Open WebUI groups (by name, resolved on the instance)."""

    groups: list[Name]

    @field_validator("groups")
    @classmethod
    def _not_empty(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("name at least one group, or write `access: private`")
        return value


Access = Literal["public", "private"] | GroupAccess


def _no_credentials(url: str | None) -> str | None:
    """A URL is written into the pipe's valves and shown in every diff: no secrets in it."""
    why = credential_in_url(url) if url else None
    if why:
        raise ValueError(f"{why}; a URL is shown in every plan, so use api_key_env for the backend's key")
    return url


BackendUrl = Annotated[
    str, StringConstraints(pattern=r"^https?://\S+$", max_length=2000), AfterValidator(_no_credentials)
]


ModelName = Annotated[str, StringConstraints(min_length=1, max_length=256), AfterValidator(_no_hidden_characters)]

def _own_header(name: str) -> str:
    """Not a header the pipe or HTTP sets itself (contract.RESERVED_HEADERS; the pipe checks the same)."""
    lowered = name.lower()
    if lowered in RESERVED_HEADERS or lowered.startswith(RESERVED_HEADER_PREFIX):
        raise ValueError(
            f"{name} is a header the pipe or HTTP sets itself; give the OAuth token a header of its own, "
            "e.g. X-User-Access-Token"
        )
    return name


# An HTTP field name (RFC 9110 token): what `oauth_token_header` names.
HeaderName = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$", min_length=1, max_length=128),
    AfterValidator(_own_header),
]
# What the pipe tells the backend about the user: `auto` what the server's settings allow,
# `signed` a signed identity or no chat at all, `none` nothing.
Identity = Literal["auto", "signed", "none"]
# Who reads the backend's key: `sync` (from its environment, into the pipe's API_KEYS valve) or
# the Open WebUI `server` (from its own environment at chat time; sync writes only the name).
KeyFrom = Literal["sync", "server"]


class Backend(_Strict):
    """Where an agent runs, for the agent pipe."""

    transport: Literal["agui", "openai"] = "agui"
    url: BackendUrl
    model: ModelName | None = None
    api_key_env: EnvVarName | None = None
    api_key_from: KeyFrom = "sync"
    # Plain http to a host that is not loopback: the key and the chats cross the network in clear.
    insecure: StrictBool = False
    identity: Identity = "auto"
    # Opt-in delegated access: the user's OAuth access token goes to the backend in this header.
    oauth_token_header: HeaderName | None = None


class BackendOverride(_Strict):
    """Per-agent changes to the blueprint's backend."""

    transport: Literal["agui", "openai"] | None = None
    url: BackendUrl | None = None
    model: ModelName | None = None
    api_key_env: EnvVarName | None = None
    api_key_from: KeyFrom | None = None
    insecure: StrictBool | None = None
    identity: Identity | None = None
    oauth_token_header: HeaderName | None = None


def agent_backend(base: Backend | None, override: BackendOverride | None) -> dict[str, Any]:
    """An agent's backend: the blueprint's, with what the agent's override sets laid over it.

    Every field is present; ``url`` is None when neither names one (the caller reports that).
    """
    defaults = {name: None if field.is_required() else field.default for name, field in Backend.model_fields.items()}
    laid = override.model_dump(exclude_none=True) if override else {}
    return {**defaults, **(base.model_dump() if base else {}), **laid}


class Suggestion(_Strict):
    """A prompt card on a new chat (Open WebUI's `meta.suggestion_prompts`): a title, an optional
    second line, and the prompt a click puts into the input."""

    title: Annotated[str, StringConstraints(min_length=1, max_length=80), AfterValidator(_no_hidden_characters)]
    subtitle: Annotated[str, StringConstraints(max_length=120), AfterValidator(_no_hidden_characters)] = ""
    prompt: Annotated[str, StringConstraints(min_length=1, max_length=2000)]


# Tags group models in Open WebUI's model selector (`meta.tags`).
Tag = Annotated[str, StringConstraints(min_length=1, max_length=48), AfterValidator(_no_hidden_characters)]
# None: the blueprint says nothing, and what an admin set on the row stays; [] means "none".
Suggestions = Annotated[list[Suggestion] | None, Field(max_length=20)]
Tags = Annotated[list[Tag] | None, Field(max_length=20)]


class AgentText(_Strict):
    """An agent in one language: what Open WebUI 0.12 shows a user whose interface is in it.
    A field left out shows the default; a suggestion list is the default's, in the same order."""

    name: Name | None = None
    description: Text | None = None
    suggestions: Annotated[list[Suggestion] | None, Field(max_length=20)] = None


class BlueprintText(_Strict):
    """What a blueprint gives all its agents, in one language: the description and suggestions
    of agents that have none of their own (a blueprint's name is shown nowhere)."""

    description: Text | None = None
    suggestions: Annotated[list[Suggestion] | None, Field(max_length=20)] = None
    name: None = None  # refused with a reason: see _no_name

    @field_validator("name", mode="before")
    @classmethod
    def _no_name(cls, value: object) -> object:
        raise ValueError("a blueprint's name is shown nowhere in Open WebUI: translate each agent's name in the agent's own i18n")


AgentI18n = dict[Locale, AgentText]
BlueprintI18n = dict[Locale, BlueprintText]


class Step(_Strict):
    id: Identifier
    description: Text = ""
    calls: list[CapabilityName] = Field(min_length=1)


class Agent(_Strict):
    """One instance of a blueprint; it becomes one Open WebUI model row."""

    id: Identifier
    name: Name
    description: Text = ""
    icon: str | None = None
    access: Access = "private"
    # Toggles that start on in a new chat; each must be a feature the blueprint supports.
    defaults: list[FeatureName] = Field(default_factory=list)
    backend: BackendOverride | None = None
    # The user's own functions (functions/), attached after the blueprint's own.
    filters: list[FunctionId] = Field(default_factory=list)
    actions: list[FunctionId] = Field(default_factory=list)
    # Replace the blueprint's suggestions for this agent; tags add to the blueprint's.
    suggestions: Suggestions = None
    tags: Tags = None
    # Name, description and suggestions per language; None: the row's translations stay as they are.
    i18n: AgentI18n | None = None


class Blueprint(_Strict):
    id: Identifier
    name: Name
    description: Text = ""
    icon: str | None = None
    backend: Backend | None = None
    # Overrides of the documented defaults in capabilities.OVERRIDABLE_DEFAULTS.
    openwebui_capabilities: dict[str, StrictBool] = Field(default_factory=dict)
    # The user's own functions (functions/) on every agent: filters run after the feature
    # filter and the toggles (meta.filterIds), actions are buttons under answers (meta.actionIds).
    filters: list[FunctionId] = Field(default_factory=list)
    actions: list[FunctionId] = Field(default_factory=list)
    steps: list[Step] = Field(min_length=1)
    agents: list[Agent] = Field(min_length=1)
    suggestions: Suggestions = None
    tags: Tags = None
    # Description and suggestions per language, for agents that take the blueprint's own.
    i18n: BlueprintI18n | None = None
    # Which keys openwebui_capabilities may hold is checked by the loader, which knows each key's line.
