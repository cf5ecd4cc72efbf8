"""What provision and the function bundle agree on: ids, the model-id format, valve names, the
ownership marker and the metadata key. Imports nothing.

The function files under owui_functions/ (and the toggle filters toggle_filters.py renders) are
uploaded to Open WebUI one by one and cannot import this module. The agent pipe's modules
(agent_pipe/) import it, and scripts/build-pipe writes the definitions of the constants they
import into the built pipe (so only plain constants can be shared with it). The other function
files spell the constants they need themselves; tests/functions/test_contract.py reads every one
of them from each file and compares it with this module. Change a value here, run
scripts/build-pipe, and that test names each other file to follow.

Layer: vocabulary.
"""

from __future__ import annotations

# Who wrote an object: meta[MARKER_KEY] = {"managed_by": MANAGED_BY, ...} on every model row and
# function provision owns (the feature filter and the toggle filters read it on the model).
MARKER_KEY = "aihub"
MANAGED_BY = "aihub-provision"

# The request metadata key the feature filter and the toggle filters write the requested
# features into, and the pipe reads them from.
METADATA_KEY = "aihub_requested_features"

# Ids of the functions shipped with provision start with this (a user's function may not).
BUNDLE_PREFIX = "aihub_"
PIPE_FUNCTION_ID = "aihub_agent_pipe"
FEATURE_FILTER_ID = "aihub_feature_filter"
TOGGLE_FILTER_PREFIX = "aihub_toggle_"

# The agent pipe's valves that sync writes (names of fields of the pipe's Valves class).
AGENTS_VALVE = "AGENTS"  # JSON list of agent entries, each with id "<blueprint>.<agent>"
API_KEYS_VALVE = "API_KEYS"  # JSON object: key variable name -> secret
SIGNING_VALVE = "HISTORY_SIGNING_KEY"  # signs the tool blocks the pipe renders
IDENTITY_VALVE = "IDENTITY_KEYS"  # the Ed25519 keys the pipe signs who is asking with


# The headers a delegated OAuth token may not go in (`oauth_token_header`): those the pipe sets
# itself (the backend's key, the identity, the ids, the trace) or HTTP owns, where the token would
# replace one or be replaced. Checked by provision at validate and by the pipe at chat time (a
# valve can be edited by hand). Lower case; every name starting with the prefix is Open WebUI's.
RESERVED_HEADERS = (
    "authorization",
    "proxy-authorization",
    "cookie",
    "host",
    "content-type",
    "content-length",
    "transfer-encoding",
    "connection",
    "accept",
    "traceparent",
    "tracestate",
    "x-aihub-identity",
)
RESERVED_HEADER_PREFIX = "x-openwebui-"


def valve_path(valve: str) -> str:
    """A valve as a field path of the desired and observed state (`valves.NAME`)."""
    return f"valves.{valve}"


def agent_key(blueprint_id: str, agent_id: str) -> str:
    """The id of an agent's entry in the AGENTS valve: what the pipe lists in `pipes()`."""
    return f"{blueprint_id}.{agent_id}"


def model_id(blueprint_id: str, agent_id: str) -> str:
    """The model row id that serves an agent: Open WebUI prefixes a manifold's sub-model ids
    with the function id, so `<pipe id>.<blueprint>.<agent>`."""
    return f"{PIPE_FUNCTION_ID}.{agent_key(blueprint_id, agent_id)}"


def agent_of_model(model: str) -> str | None:
    """The inverse of `model_id`, up to the agent key: `<blueprint>.<agent>` for a model row the
    pipe serves, None for any other id. The pipe reads its part the same way: everything after
    the first dot (a function id never has one)."""
    head, dot, key = model.partition(".")
    return key if dot and head == PIPE_FUNCTION_ID and key else None


def split_agent_key(key: str) -> tuple[str, str]:
    """`<blueprint>.<agent>` -> (blueprint id, agent id); ids never hold a dot."""
    blueprint_id, _, agent_id = key.partition(".")
    return blueprint_id, agent_id
