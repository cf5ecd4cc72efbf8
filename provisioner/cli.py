"""The `provision` command line: thin commands over the library; exit codes mapped once, in main().

Exit codes: 0 success (no changes, or applied), 1 any error (usage included), 2 changes present
(only with --detailed-exitcode). stdout carries the answer (plan, JSON); everything else goes to
stderr. The token is read from the environment or a file, never from argv, and never printed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import sys
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import httpx
import typer
from rich.console import Console

from . import __version__
from .apply import ApplyReport, apply_plan
from .client import TESTED_VERSIONS, OpenWebUIClient, check_url
from .desired import FEATURE_FILTER_ID, build_desired, history_signing_key
from .errors import ApplyError, BlueprintError, ConfigError, Problem, ProvisionError
from .function_files import (
    FunctionFile,
    bundle_dir,
    load_function_files,
    rendered_toggle_functions,
    write_toggle_files,
)
from .kept import keep_orphan_agents
from .loader import Catalog, load_catalog
from .observed import observe
from .plan import Plan, make_plan
from .render import render_orphans, render_plan
from .state import Kind
from .wrappers import find_wrappers, render_wrappers, with_owner_names

EXIT_OK, EXIT_ERROR, EXIT_CHANGES = 0, 1, 2

app = typer.Typer(
    name="provision",
    help="Keep AI agents behind Open WebUI as blueprint YAML: validate, diff, sync.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals could hold the token
    rich_markup_mode=None,
)


class Output(str, Enum):
    text = "text"
    json = "json"


PathOpt = Annotated[Path, typer.Option("-p", "--path", help="Blueprint directory.")]
FunctionsOpt = Annotated[
    Path, typer.Option("--functions", help="Your own Open WebUI functions (used only if the folder exists).")
]
BundleOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--bundle",
        hidden=True,  # for developing the bundle itself; users get the one inside the package
        help="Use this directory's function bundle instead of the installed one.",
    ),
]
OutputOpt = Annotated[Output, typer.Option("-o", "--output", help="text or json (JSON on stdout).")]
UrlOpt = Annotated[
    Optional[str],
    typer.Option("--url", envvar="OPENWEBUI_URL", help="Open WebUI base URL [env OPENWEBUI_URL]."),
]
TokenFileOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--token-file",
        envvar="OPENWEBUI_TOKEN_FILE",
        help="File holding the admin API key [env OPENWEBUI_TOKEN_FILE]; otherwise OPENWEBUI_TOKEN is used.",
    ),
]
InsecureOpt = Annotated[
    bool, typer.Option("--insecure", help="Allow plain HTTP to a host that is not loopback.")
]
PruneOpt = Annotated[
    bool, typer.Option("--prune", help="Delete managed objects the blueprints no longer define.")
]
AdoptOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--adopt",
        help="Take over an existing object without the ownership marker: KIND/ID, e.g. model/aihub_agent_pipe.x.y (repeatable).",
    ),
]
DetailedOpt = Annotated[
    bool, typer.Option("--detailed-exitcode", help="Exit 2 when there are changes, 0 when none.")
]
TimeoutOpt = Annotated[float, typer.Option("--timeout", help="Seconds per HTTP request.")]
ParallelismOpt = Annotated[
    int,
    typer.Option(
        "--parallelism",
        min=1,
        max=16,
        help="Model rows written at a time (functions stay sequential). 4 helps against a remote instance.",
    ),
]
NoColorOpt = Annotated[bool, typer.Option("--no-color", help="No colours (also NO_COLOR).")]


@dataclass(frozen=True)
class Connection:
    url: Optional[str]
    token_file: Optional[Path]
    insecure: bool
    timeout: float


def make_http_client(timeout: float) -> httpx.Client:
    """The httpx client every command uses; tests replace this to count or fault requests.

    Plain http:// is only allowed to loopback (or with --insecure), so it never goes through an
    environment proxy: the token would cross the network in clear text. https:// may.
    """
    return httpx.Client(
        timeout=timeout, follow_redirects=False, mounts={"http://": httpx.HTTPTransport()}
    )


def _consoles(no_color: bool) -> tuple[Console, Console]:
    color = not (no_color or os.environ.get("NO_COLOR"))
    out = Console(no_color=not color, highlight=False, emoji=False)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out.width = max(out.width, 120)  # CI logs and pipes: tables need not fold at 80 columns
    return (
        out,
        Console(stderr=True, no_color=not color, highlight=False, emoji=False),
    )


def _read_token(token_file: Optional[Path]) -> str:
    env_token = os.environ.get("OPENWEBUI_TOKEN", "").strip()
    if token_file is not None:
        if env_token:
            raise ConfigError("both OPENWEBUI_TOKEN and --token-file are set; use one")
        try:
            raw = token_file.read_bytes()
        except OSError as exc:
            raise ConfigError(f"cannot read token file {token_file}: {exc.strerror or exc}") from None
        token = raw.decode("utf-8", errors="replace").strip()
        if "\ufffd" in token:  # decoded outside an except: no exception may carry the bytes
            raise ConfigError(f"token file {token_file} is not UTF-8 text")
        if not token:
            raise ConfigError(f"token file {token_file} is empty")
        return token
    if not env_token:
        raise ConfigError("no token: set OPENWEBUI_TOKEN or pass --token-file (an admin's API key)")
    return env_token


def _connect(conn: Connection) -> OpenWebUIClient:
    if not conn.url:
        raise ConfigError("no Open WebUI URL: pass --url or set OPENWEBUI_URL")
    url = check_url(conn.url, insecure=conn.insecure)
    token = _read_token(conn.token_file)
    return OpenWebUIClient(base_url=url, token=token, http=make_http_client(conn.timeout))


def _parse_adopt(values: Optional[list[str]]) -> set[tuple[Kind, str]]:
    adopted: set[tuple[Kind, str]] = set()
    for value in values or []:
        kind, _, ident = value.partition("/")
        if kind not in ("model", "function") or not ident:
            raise ConfigError(f"--adopt takes KIND/ID with KIND model or function, got {value!r}")
        adopted.add((kind, ident))  # type: ignore[arg-type]
    return adopted


def load_bundle(
    path: Path, functions_dir: Optional[Path] = None, bundle: Optional[Path] = None
) -> tuple[Catalog, tuple[FunctionFile, ...]]:
    """Offline checks shared by every command: blueprints, the bundle, the user's functions.

    The functions uploaded are the bundle's files (installed with provision, or `bundle`), one
    toggle filter rendered per custom feature, and the files in `functions_dir` when it exists.
    """
    problems: list[Problem] = []
    catalog = None
    files: list[FunctionFile] = []
    try:
        catalog = load_catalog(path)
    except BlueprintError as exc:
        problems.extend(exc.problems)
    source = bundle or bundle_dir()
    try:
        files.extend(load_function_files(source))
    except BlueprintError as exc:
        problems.extend(exc.problems)
    else:
        if not any(f.id == FEATURE_FILTER_ID for f in files):
            problems.append(
                Problem(str(source / f"{FEATURE_FILTER_ID}.py"), None, "", "missing: every agent row uses the feature filter")
            )
    bundle_ids = {f.id for f in files}
    if catalog is not None:
        files.extend(rendered_toggle_functions(catalog))
    if functions_dir is not None and functions_dir.exists():
        try:
            own = load_function_files(functions_dir)
        except BlueprintError as exc:
            problems.extend(exc.problems)
        else:
            problems.extend(_reserved_ids(own, bundle_ids))
            files.extend(own)
    if problems or catalog is None:
        raise BlueprintError(problems)
    return catalog, tuple(files)


def _reserved_ids(own: tuple[FunctionFile, ...], bundle_ids: set[str]) -> list[Problem]:
    """A user's function may not take a bundle id or the prefix the bundle's ids use."""
    return [
        Problem(f.path, None, "id", f"{f.id!r} is reserved for the bundle (ids starting with 'aihub_'); rename the file")
        for f in own
        if f.id in bundle_ids or f.id.startswith("aihub_")
    ]


def _build_plan(opts: "RunOptions", conn: Connection, err: Console) -> tuple[Plan, OpenWebUIClient]:
    adopted = _parse_adopt(opts.adopt)
    prune = opts.prune
    catalog, functions = load_bundle(opts.path, opts.functions, opts.bundle)
    client = _connect(conn)
    try:
        version = client.version()
        if not version.startswith(TESTED_VERSIONS):
            err.print(
                f"Warning: Open WebUI {version or '(unknown version)'} is outside the tested range "
                f"({', '.join(v + 'x' for v in TESTED_VERSIONS)}); continuing.",
                soft_wrap=True,
            )
        uses_groups = any(
            not isinstance(agent.access, str) for lb in catalog.blueprints for agent in lb.blueprint.agents
        )
        groups = {str(g.get("name")): str(g.get("id")) for g in client.list_groups()} if uses_groups else {}
        rows = client.list_models()
        observed = observe(rows, client.list_functions())
        signing_key = history_signing_key(observed, fresh=secrets.token_urlsafe(32))
        desired = build_desired(catalog, functions, groups, env=os.environ, signing_key=signing_key)
        desired, kept_notes = keep_orphan_agents(desired, observed, prune=prune)
        agent_ids = set(desired.models) | {i for i, m in observed.models.items() if m.managed}
        wrappers = _named_wrappers(client, find_wrappers(rows, agent_ids))
        plan = make_plan(desired, observed, prune=prune, adopt=adopted, orphan_notes=kept_notes, wrappers=wrappers)
        return plan, client
    except BaseException:
        client.close()
        raise


def _named_wrappers(client: OpenWebUIClient, wrappers: list[dict[str, str]]) -> list[dict[str, str]]:
    """Wrappers with their owners' names (one read per owner; wrappers are rare)."""
    owners = {w["owner"] for w in wrappers if w["owner"]}
    users = {owner: client.get_user(owner) or {} for owner in sorted(owners)}
    return with_owner_names(wrappers, users)


def _print_plan(plan: Plan, output: Output, out: Console, err: Console) -> None:
    data = plan.to_json()
    if output is Output.json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        render_plan(data, out)
    render_orphans(data, err)
    render_wrappers(data["wrappers"], err)


@app.command()
def validate(
    path: PathOpt = Path("blueprints"),
    functions: FunctionsOpt = Path("functions"),
    output: OutputOpt = Output.text,
    no_color: NoColorOpt = False,
    bundle: BundleOpt = None,
) -> int:
    """Check blueprints and function files offline: schema, references, function files."""
    out, _ = _consoles(no_color)
    try:
        catalog, files = load_bundle(path, functions, bundle)
        desired = build_desired(catalog, files, groups=None)
    except BlueprintError as exc:
        if output is Output.json:  # the machine form of the problems; the text still goes to stderr
            problems = [dataclasses.asdict(p) for p in exc.problems]
            sys.stdout.write(json.dumps({"valid": False, "problems": problems}) + "\n")
        raise
    counts = {
        "blueprints": len(catalog.blueprints),
        "agents": len(desired.models),
        "functions": len(files),
    }
    if output is Output.json:
        sys.stdout.write(json.dumps({"valid": True, **counts}) + "\n")
    else:
        out.print(
            f"Valid: {counts['blueprints']} blueprints, {counts['agents']} agents, "
            f"{counts['functions']} functions.",
            soft_wrap=True,
        )
    return EXIT_OK


@app.command()
def diff(
    path: PathOpt = Path("blueprints"),
    functions: FunctionsOpt = Path("functions"),
    output: OutputOpt = Output.text,
    detailed_exitcode: DetailedOpt = False,
    prune: PruneOpt = False,
    adopt: AdoptOpt = None,
    url: UrlOpt = None,
    token_file: TokenFileOpt = None,
    insecure: InsecureOpt = False,
    timeout: TimeoutOpt = 30.0,
    no_color: NoColorOpt = False,
    bundle: BundleOpt = None,
) -> int:
    """Show what sync would change on the instance, field by field. Writes nothing."""
    return _run(
        RunOptions(path, functions, output, detailed_exitcode, prune, adopt, no_color, dry_run=True, yes=True, bundle=bundle),
        Connection(url, token_file, insecure, timeout),
    )


@app.command()
def sync(
    path: PathOpt = Path("blueprints"),
    functions: FunctionsOpt = Path("functions"),
    output: OutputOpt = Output.text,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show the plan (same as diff).")] = False,
    detailed_exitcode: DetailedOpt = False,
    prune: PruneOpt = False,
    adopt: AdoptOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    parallelism: ParallelismOpt = 1,
    url: UrlOpt = None,
    token_file: TokenFileOpt = None,
    insecure: InsecureOpt = False,
    timeout: TimeoutOpt = 30.0,
    no_color: NoColorOpt = False,
    bundle: BundleOpt = None,
) -> int:
    """Make the instance match the blueprints: functions, then models, then deletes."""
    return _run(
        RunOptions(path, functions, output, detailed_exitcode, prune, adopt, no_color, dry_run, yes, parallelism, bundle),
        Connection(url, token_file, insecure, timeout),
    )


@dataclass(frozen=True)
class RunOptions:
    """What `diff` and `sync` were asked to do (besides where to connect)."""

    path: Path
    functions: Path
    output: Output
    detailed_exitcode: bool
    prune: bool
    adopt: Optional[list[str]]
    no_color: bool
    dry_run: bool
    yes: bool
    parallelism: int = 1
    bundle: Optional[Path] = None  # None: the bundle installed with provision


def _run(opts: RunOptions, conn: Connection) -> int:
    """diff and sync are one pipeline; only `dry_run` decides whether anything is written."""
    out, err = _consoles(opts.no_color)
    plan, client = _build_plan(opts, conn, err)
    with client:
        if opts.dry_run or plan.is_empty:
            _print_plan(plan, opts.output, out, err)
            return EXIT_CHANGES if opts.detailed_exitcode and not plan.is_empty else EXIT_OK
        if opts.output is Output.text:
            render_plan(plan.to_json(), out)
            render_orphans(plan.to_json(), err)
            render_wrappers(plan.to_json()["wrappers"], err)
        if not opts.yes and sys.stdin.isatty() and not os.environ.get("CI"):
            if not typer.confirm("Apply these changes?", default=False, err=True):
                err.print("Nothing applied.")
                return EXIT_ERROR
        report = _apply(plan, client, opts, err)
        if opts.output is Output.json:
            sys.stdout.write(json.dumps({"plan": plan.to_json(), "result": report.to_json()}, indent=2) + "\n")
        else:
            applied = report.to_json()["applied"]
            out.print(
                f"Applied: {applied['add']} added, {applied['change']} changed, "
                f"{applied['destroy']} destroyed.",
                soft_wrap=True,
            )
        return EXIT_OK


def _apply(plan: Plan, client: OpenWebUIClient, opts: RunOptions, err: Console) -> ApplyReport:
    from .progress import progress_reporter  # rich progress only when it will be seen

    with progress_reporter(err, total=len(plan.changes), enabled=opts.output is Output.text) as tick:
        try:
            return apply_plan(plan, client, parallelism=opts.parallelism, on_progress=tick)
        except ApplyError as exc:
            if opts.output is Output.json:
                sys.stdout.write(json.dumps({"plan": plan.to_json(), "result": exc.report.to_json()}, indent=2) + "\n")
            raise


@app.command("list")
def list_managed(
    output: OutputOpt = Output.text,
    url: UrlOpt = None,
    token_file: TokenFileOpt = None,
    insecure: InsecureOpt = False,
    timeout: TimeoutOpt = 30.0,
    no_color: NoColorOpt = False,
) -> int:
    """Show the agents and functions provision manages on the instance."""
    from rich.table import Table

    from .listing import managed_agents, managed_functions

    out, err = _consoles(no_color)
    with _connect(Connection(url, token_file, insecure, timeout)) as client:
        groups = {str(g.get("id")): str(g.get("name")) for g in client.list_groups()}
        rows = client.list_models()
        agents = managed_agents(rows, groups)
        functions = managed_functions(client.list_functions())
        wrappers = _named_wrappers(client, find_wrappers(rows, {str(a["id"]) for a in agents}))
    render_wrappers(wrappers, err)
    if output is Output.json:
        sys.stdout.write(json.dumps({"agents": agents, "functions": functions, "wrappers": wrappers}, indent=2) + "\n")
        return EXIT_OK
    table = Table(title=f"Agents ({len(agents)}), model id aihub_agent_pipe.<agent>", title_justify="left")
    table.add_column("agent", no_wrap=True)
    for column in ("name", "toggles", "on by default", "access"):
        table.add_column(column, overflow="fold")
    for a in agents:
        table.add_row(a["agent"], a["name"], ", ".join(a["features"]) or "-", ", ".join(a["defaults"]) or "-", a["access"])
    out.print(table)
    table = Table(title=f"Functions ({len(functions)})", title_justify="left")
    for column in ("id", "type", "active", "global"):
        table.add_column(column, overflow="fold")
    for f in functions:
        table.add_row(f["id"], f["type"] or "", "yes" if f["active"] else "no", "yes" if f["global"] else "no")
    out.print(table)
    return EXIT_OK


@app.command()
def generate(
    out_dir: Annotated[Path, typer.Option("--out", help="Directory to write the toggle filters into.")],
    path: PathOpt = Path("blueprints"),
    no_color: NoColorOpt = False,
) -> int:
    """Write the toggle filters sync renders (one per custom feature) into a directory, to read them."""
    out, _ = _consoles(no_color)
    catalog = load_catalog(path)
    done = write_toggle_files(catalog, out_dir)
    for action, file in done:
        out.print(f"{action:8} {file}", soft_wrap=True)
    if not done:
        out.print("Toggle filters are up to date.")
    return EXIT_OK


@app.callback(invoke_without_command=False)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Show the version and exit.")] = False,
) -> None:
    if version:
        typer.echo(f"provision {__version__}")
        raise typer.Exit(0)


def main(argv: Optional[list[str]] = None) -> int:
    """Entry point: run the app and map every outcome to 0, 1 or 2 in this one place."""
    err = Console(stderr=True, highlight=False, emoji=False, no_color=bool(os.environ.get("NO_COLOR")))
    try:
        result: Any = app(args=argv, prog_name="provision", standalone_mode=False)
    except typer.Exit as exc:  # --help, --version
        return int(exc.exit_code or 0)
    except typer.Abort:
        err.print("Aborted.")
        return EXIT_ERROR
    except typer.TyperException as exc:  # usage errors: 1, not click's 2
        err.print(f"Error: {exc.format_message()}", soft_wrap=True, markup=False)
        return EXIT_ERROR
    except ProvisionError as exc:
        err.print(f"Error: {exc}", soft_wrap=True, markup=False)
        return EXIT_ERROR
    return int(result) if isinstance(result, int) else EXIT_OK
