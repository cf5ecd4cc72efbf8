"""What the pipe and the agents agree on, the limits and timings, and the errors the pipe raises.

What provision and the pipe agree on (METADATA_KEY) is provisioner.contract's: the modules import
it from there, and scripts/build-pipe writes its definition into the built file.
"""


# === constants ====================================================================================

# The event types only the pipe itself makes.
CALLS_RAN = "AIHUB_TOOL_CALLS_RAN"  # the pipe's own event: the calls waiting for a result ran (OpenAI)
USAGE = "AIHUB_USAGE"  # the pipe's own event: an OpenAI stream's usage chunk (the run's total)

# The AG-UI version the pipe speaks, sent as RunAgentInput.protocolVersion: Pydantic AI sends 1.0's
# outcomes (cancelled, pendingToolCallIds) only to a client that declares 1.0.
AGUI_PROTOCOL_VERSION = "1.0"

# What the agent sends beside its answer (the recorder's Outbound).
SOURCE_EVENT = "aihub.source"
IMAGE_EVENT = "aihub.image"
MAX_SOURCES = 50  # per turn: every source is a write of the chat's row
# The MAX_IMAGES and MAX_TURN_IMAGES_MB valves' defaults: what one answer may store and attach.
MAX_IMAGES = 10
MAX_TURN_IMAGES_MB = 30
# A token count above this is not a count (no run of one answer reads a billion tokens): dropped,
# and sums stop here, so a broken agent cannot write 10**30 into Open WebUI's usage records.
MAX_USAGE_COUNT = 10**9
MAX_STATUS_CHARS = 120  # a status line from the agent's words (a step, a workflow state, a tool's name)
# The MAX_EVENT_MB valve's default: an SSE line or event past it ends the run. Above an image of
# MAX_IMAGE_MB (10) as base64 (13.4 MB): an agent's image arrives in one event.
MAX_EVENT_MB = 16

# Who asks (the request).
IDENTITY_HEADER = "X-AIHub-Identity"
IDENTITY_ISSUER = "aihub-agent-pipe"
IDENTITY_KEY_ENV = "AIHUB_IDENTITY_PRIVATE_KEY"
IDENTITY_KID_ENV = "AIHUB_IDENTITY_KEY_ID"

# Masking (secrets).
REDACTED = "[redacted]"
WITHHELD = "The agent's message was withheld because it repeats part of a secret."
# A server may echo a key shortened (an excerpt, a truncated header): a piece this long of a key
# in an error text withholds the whole text.
SECRET_FRAGMENT = 8

# Attached files (history).
FILE_REFERENCE_TYPES = ("file", "image", "doc")  # references that name one stored file
# The MAX_FILE_REFERENCES valve's default: references looked up per request (each is a store read;
# an API client can send thousands of made-up ids).
MAX_FILE_REFERENCES = 30
RASTER_IMAGES = ("image/png", "image/jpeg", "image/gif", "image/webp")
MB = 1024 * 1024
BASE64_BLOCK = 3 * 128 * 1024  # bytes read and encoded at a time: a multiple of 3, so the pieces join

# Questions to the user (transport: the run).
MAX_RESUMES = 5  # questions in one answer; a run that keeps pausing ends after that many
ASKED = "Waiting for your answer…"
APPROVED = "[approved by the user] "  # an approved call's result starts with it: its block shows it

# Timings and connections (transport).
ASKING_DELAY_SECONDS = 0.5  # an agent that answers sooner never shows "Asking <agent>…"
STEP_DELAY_SECONDS = 0.5  # a step that something else follows sooner is never shown
MAX_CONNECTIONS = 1000  # a streaming chat holds one connection for its whole run
# A user's groups (the tokens' groups claim) are read from Open WebUI's database at most this often
# per user: the read costs Open WebUI ~4-5 ms of CPU a chat (0.12, SQLite), which at ten chats at
# a time is +35 ms on every first token. A group change reaches the claim within this time; a
# token lives 300 s by default, so an agent already accepts claims older than that.
GROUPS_TTL_SECONDS = 30.0
GROUPS_CACHE_USERS = 4096  # past this many users the cache starts again
KEEPALIVE_SECONDS = 4.0  # under the idle timeout of common servers (uvicorn's and Node's are 5 s)
FINISH_GRACE_SECONDS = 0.1  # how long the body's end may lag the run's end and keep the connection


# The errors the pipe raises; failure_text (failures) says each one to the user.
class PipeConfigError(Exception):
    """The valves do not allow the request (e.g. a key name missing from API_KEYS)."""


class IdentityRequired(PipeConfigError):
    """The agent's backend asks for ``identity: signed`` and no key can sign."""


class AgentHTTPError(Exception):
    """The agent answered with an HTTP error status; ``detail`` is raw (the pipe scrubs it)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.detail = detail


class StreamEndedEarly(Exception):
    """The agent's stream ended before RUN_FINISHED or RUN_ERROR."""


class EventTooLarge(Exception):
    """An SSE line or event of the agent's stream is larger than the MAX_EVENT_MB valve allows."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"over {limit} bytes")
        self.limit = limit


class FileTooLarge(Exception):
    """The file's bytes are more than the limit allows (the record may have said less)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size
