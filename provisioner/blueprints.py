"""The blueprint YAML schema, as pydantic models.

A blueprint directory holds three kinds of file (see docs/blueprints.md, "Blueprint format"):
- `capabilities.yaml`: the capability catalog; a capability may `serves` one ChatFeature;
- `features.yaml`: custom feature definitions (what each custom toggle shows);
- any other `*.yaml`: one blueprint, with its steps and its agents.

These models check shape and local rules only; references across files are checked by
loader.py (load_catalog), which knows the whole catalog.

Layer: source.
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
Identifier = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]*$", min_length=1, max_length=64)]
# Custom feature names become function ids (`aihub_toggle_<name>`): Python identifiers.
FeatureName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", min_length=1, max_length=48)]
CapabilityName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_.-]*$", min_length=1, max_length=128)]
# A function id in the user's functions folder (`filters:` / `actions:`): the file's stem.
FunctionId = Annotated[str, StringConstraints(pattern=r"^[a-z_][a-z0-9_]*$", min_length=1, max_length=128)]
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
        raise ValueError(
            f"{name} is one of Open WebUI's own secrets; give the backend a key of its own in another variable"
        )
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
    # use_attribute_docstrings: the string under each field is its description, which
    # scripts/blueprint-reference writes into docs/blueprints.md ("Field reference").
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, use_attribute_docstrings=True)


# What a capability may take from the chat: the files a user attaches (`documents`) or images.
Input = Literal["documents", "images"]


class Capability(_Strict):
    """Something a blueprint step can call; it may serve one chat feature and read the chat's
    files (`reads`), which gives every agent calling it the attach button or image input."""

    description: Text = ""
    """What it does, for readers of the catalog (not shown in Open WebUI)."""
    serves: FeatureName | None = None
    """The chat feature it serves, native (`web_search`, ...) or custom (features.yaml): every
    agent whose steps call it shows that feature's toggle."""
    reads: list[Input] = Field(default_factory=list)
    """What it takes from the chat: `documents` gives the agents that call it the attach button,
    `images` image input (a single value is a list of one)."""

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
    """capabilities.yaml: everything a step can call."""

    capabilities: dict[CapabilityName, Capability] = Field(min_length=1)
    """Capability name -> capability; `name:` with nothing after it is a capability with no
    description."""

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
    """The toggle's name in this language."""
    description: Text | None = None
    """Its description in this language."""


class FeatureDef(_Strict):
    """A custom chat feature: what its toggle shows in the chat input."""

    title: FeatureTitle
    """What the toggle shows in the chat input."""
    description: Text = ""
    """The toggle's description."""
    icon: str | None = None
    """The toggle's icon: a file next to the YAML, a `data:image/...;base64` URI or an https URL."""
    i18n: dict[Locale, FeatureText] = Field(default_factory=dict)
    """The toggle's name and description per language (a BCP 47 tag: Open WebUI 0.12's meta.i18n)."""


class FeatureCatalog(_Strict):
    """features.yaml: the custom features (Open WebUI has no toggle of its own for them)."""

    features: dict[FeatureName, FeatureDef] = Field(default_factory=dict)
    """Feature name -> what its toggle shows; the name becomes the toggle filter's id
    (`aihub_toggle_<name>`)."""


class GroupAccess(_Strict):
    """Readable by the members of these Open WebUI groups (by name, resolved on the instance)."""

    groups: list[Name]
    """The groups' names: a group that does not exist is an error, unless the target's
    `missing_groups` says skip or create."""

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
    """How the pipe talks to the agent: AG-UI, or OpenAI chat completions."""
    url: BackendUrl
    """Where the agent answers (http or https, no credentials in it)."""
    model: ModelName | None = None
    """The model name sent to an OpenAI backend (default: the agent's `<blueprint>.<agent>`)."""
    api_key_env: EnvVarName | None = None
    """The environment variable that holds the backend's key (never the key itself)."""
    api_key_from: KeyFrom = "sync"
    """Who reads that variable: `sync` (into the pipe's API_KEYS valve) or the Open WebUI `server`
    (from its own environment at chat time; sync writes only the name)."""
    insecure: StrictBool = False
    """Allow plain http to a host that is not loopback: the key and the chats cross the network in clear."""
    identity: Identity = "auto"
    """What the pipe tells the agent about the user: `auto` what the server's settings allow,
    `signed` a signed identity or no chat at all, `none` nothing (docs/agent-pipe.md)."""
    oauth_token_header: HeaderName | None = None
    """Opt-in delegated access: the user's OAuth access token goes to the backend in this header."""


class BackendOverride(_Strict):
    """Per-agent changes to the blueprint's backend."""

    transport: Literal["agui", "openai"] | None = None
    """Replaces the blueprint's `transport`."""
    url: BackendUrl | None = None
    """Replaces the blueprint's `url`."""
    model: ModelName | None = None
    """Replaces the blueprint's `model`."""
    api_key_env: EnvVarName | None = None
    """Replaces the blueprint's `api_key_env`."""
    api_key_from: KeyFrom | None = None
    """Replaces the blueprint's `api_key_from`."""
    insecure: StrictBool | None = None
    """Replaces the blueprint's `insecure`."""
    identity: Identity | None = None
    """Replaces the blueprint's `identity`."""
    oauth_token_header: HeaderName | None = None
    """Replaces the blueprint's `oauth_token_header`."""


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
    """The card's first line."""
    subtitle: Annotated[str, StringConstraints(max_length=120), AfterValidator(_no_hidden_characters)] = ""
    """Its second line."""
    prompt: Annotated[str, StringConstraints(min_length=1, max_length=2000)]
    """What a click puts into the chat input."""


# Tags group models in Open WebUI's model selector (`meta.tags`).
Tag = Annotated[str, StringConstraints(min_length=1, max_length=48), AfterValidator(_no_hidden_characters)]
# None: the blueprint says nothing, and what an admin set on the row stays; [] means "none".
Suggestions = Annotated[list[Suggestion] | None, Field(max_length=20)]
Tags = Annotated[list[Tag] | None, Field(max_length=20)]


class AgentText(_Strict):
    """An agent in one language: what Open WebUI 0.12 shows a user whose interface is in it.
    A field left out shows the default; a suggestion list is the default's, in the same order."""

    name: Name | None = None
    """The agent's name in this language."""
    description: Text | None = None
    """Its description in this language."""
    suggestions: Annotated[list[Suggestion] | None, Field(max_length=20)] = None
    """Its suggestions in this language, as many as the default's and in the same order."""


class BlueprintText(_Strict):
    """What a blueprint gives all its agents, in one language: the description and suggestions
    of agents that have none of their own (a blueprint's name is shown nowhere)."""

    description: Text | None = None
    """The description, in this language, of the agents that take the blueprint's."""
    suggestions: Annotated[list[Suggestion] | None, Field(max_length=20)] = None
    """The suggestions, in this language, of the agents that take the blueprint's."""
    name: None = None
    """Refused: a blueprint's name is shown nowhere in Open WebUI (translate each agent's name)."""

    @field_validator("name", mode="before")
    @classmethod
    def _no_name(cls, value: object) -> object:
        raise ValueError(
            "a blueprint's name is shown nowhere in Open WebUI: translate each agent's name in the agent's own i18n"
        )


AgentI18n = dict[Locale, AgentText]
BlueprintI18n = dict[Locale, BlueprintText]


class Step(_Strict):
    """One step of the blueprint's work; the capabilities its steps call decide which toggles and
    which inputs (attach button, images) every agent of the blueprint has."""

    id: Identifier
    """The step's id, unique in the blueprint."""
    description: Text = ""
    """What the step does, for readers of the blueprint."""
    calls: list[CapabilityName] = Field(min_length=1)
    """The capabilities (capabilities.yaml) it calls, each once."""


class Agent(_Strict):
    """One instance of a blueprint; it becomes one Open WebUI model row."""

    id: Identifier
    """The agent's id, unique in the blueprint: its model row is `aihub_agent_pipe.<blueprint>.<agent>`."""
    name: Name
    """The model's name in Open WebUI's model picker."""
    description: Text = ""
    """The model's description (default: the blueprint's)."""
    icon: str | None = None
    """The model's picture (default: the blueprint's): a PNG, JPEG, GIF or WebP file next to the
    YAML, a `data:image/...` URI or an https URL."""
    access: Access = "private"
    """Who may chat with it: `public`, `private` (admins only) or `{groups: [names]}`."""
    defaults: list[FeatureName] = Field(default_factory=list)
    """Toggles that start on in a new chat; each must be a feature the blueprint supports."""
    backend: BackendOverride | None = None
    """Changes to the blueprint's backend for this agent."""
    filters: list[FunctionId] = Field(default_factory=list)
    """Your own filter functions (functions/) for this agent, after the blueprint's."""
    actions: list[FunctionId] = Field(default_factory=list)
    """Your own action functions (functions/) for this agent, after the blueprint's."""
    suggestions: Suggestions = None
    """Replaces the blueprint's suggestions for this agent (at most 20; `[]`: none)."""
    tags: Tags = None
    """Added to the blueprint's tags (at most 20)."""
    i18n: AgentI18n | None = None
    """Name, description and suggestions per language (BCP 47 tag); unset: the row's translations
    stay as they are."""


class Blueprint(_Strict):
    """One blueprint file: what its agents do (the steps) and the agents themselves."""

    id: Identifier
    """The blueprint's id: lower-case letters, digits, `-` and `_`, no dots."""
    name: Name
    """Its name, in plans and in `provision list` (Open WebUI shows each agent's own)."""
    description: Text = ""
    """The description of its agents that have none of their own."""
    icon: str | None = None
    """The picture of its agents that have none of their own (as an agent's `icon`)."""
    backend: Backend | None = None
    """Where its agents run; each agent may change it (`agents[].backend`)."""
    openwebui_capabilities: dict[str, StrictBool] = Field(default_factory=dict)
    """Overrides of the documented defaults of Open WebUI's model capabilities (see "What lands in
    Open WebUI")."""
    filters: list[FunctionId] = Field(default_factory=list)
    """Your own filter functions (functions/) on every agent, after the feature filter and the
    toggles (meta.filterIds)."""
    actions: list[FunctionId] = Field(default_factory=list)
    """Your own action functions (functions/) on every agent: buttons under answers (meta.actionIds)."""
    steps: list[Step] = Field(min_length=1)
    """What its agents do, step by step."""
    agents: list[Agent] = Field(min_length=1)
    """Its agents: each becomes one Open WebUI model row."""
    suggestions: Suggestions = None
    """Prompt cards on a new chat with its agents (at most 20; `[]`: none; unset: each row keeps
    what an admin set)."""
    tags: Tags = None
    """Tags that group its agents in the model selector (at most 20)."""
    i18n: BlueprintI18n | None = None
    """Description and suggestions per language (BCP 47 tag), for agents that take the blueprint's."""
    # Which keys openwebui_capabilities may hold is checked by the loader, which knows each key's line.
