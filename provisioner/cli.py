"""The `provision` command line: thin commands over the library; exit codes mapped once, in main().

The exit codes are the EXIT_* constants below and stopping.exit_code (a sync stopped by a
signal); docs/commands.md ("Exit codes") says what each means, and a test holds the two together.
stdout carries the answer (plan, JSON); everything else goes to stderr. The token is read from
the environment or a file, never from argv, and never printed.

Layer: cli.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from .contract import PIPE_FUNCTION_ID
from .desired import build_desired, insecure_backends
from .errors import ApplyError, BlueprintError, ConfigError, ProvisionError, Report
from .identity_keys import SERVER_KEY_ID
from .loader import Catalog, load_catalog
from .openwebui import client as client_module
from .openwebui.apply import ApplyReport, apply_plan
from .openwebui.client import OpenWebUIClient, check_url, http_log
from .openwebui.observed import observe
from .pipeline import (
    Connection,
    PlanOptions,
    connect,
    credentials,
    load_inputs,
    named_wrappers,
    prepare_plan,
    target_variables,
    token_variables,
    with_token_secret,
)
from .plan import Plan
from .render import applied_line, render_notes, render_orphans, render_plan, render_wrappers, shown
from .state import Kind
from .stopping import exit_code as signal_exit_code
from .stopping import stop_requests
from .targets import TARGETS_FILE, Target, select_target, targets_problems
from .text import counted, visible
from .toggle_filters import write_toggle_files
from .variables import Variables
from .version import __version__
from .wrappers import find_wrappers

EXIT_OK = 0  # success: no changes, or changes applied
EXIT_ERROR = 1  # any error, usage errors included
EXIT_CHANGES = 2  # changes present (--detailed-exitcode on diff and sync --dry-run), or drift found

app = typer.Typer(
    name="provision",
    help="Keep AI agents behind Open WebUI as blueprint YAML: validate, diff, sync.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals could hold the token
    rich_markup_mode=None,
)


class Output(StrEnum):
    text = "text"
    json = "json"


class PlanOutput(StrEnum):
    """diff and sync also speak Markdown: for a pull-request comment or a CI job summary."""

    text = "text"
    json = "json"
    markdown = "markdown"


PathOpt = Annotated[Path, typer.Option("-p", "--path", metavar="DIR", help="Blueprint directory.")]
FunctionsOpt = Annotated[
    Path,
    typer.Option("--functions", metavar="DIR", help="Your own Open WebUI functions (used only if the folder exists)."),
]
BundleOpt = Annotated[
    Path | None,
    typer.Option(
        "--bundle",
        metavar="DIR",
        hidden=True,  # for developing the bundle itself; users get the one inside the package
        help="Use this directory's function bundle instead of the installed one.",
    ),
]
OutputOpt = Annotated[Output, typer.Option("-o", "--output", metavar="text|json", help="JSON goes to stdout.")]
PlanOutputOpt = Annotated[
    PlanOutput,
    typer.Option(
        "-o", "--output", metavar="text|json|markdown", help="markdown: for a pull request or $GITHUB_STEP_SUMMARY."
    ),
]
UrlOpt = Annotated[
    str | None,
    typer.Option("--url", envvar="OPENWEBUI_URL", metavar="URL", help="Open WebUI base URL."),
]
TokenFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--token-file",
        envvar="OPENWEBUI_TOKEN_FILE",
        metavar="FILE",
        help="File holding the admin API key; otherwise OPENWEBUI_TOKEN is used.",
    ),
]
InsecureOpt = Annotated[bool, typer.Option("--insecure", help="Allow plain HTTP to a host that is not loopback.")]
PruneOpt = Annotated[bool, typer.Option("--prune", help="Delete managed objects the blueprints no longer define.")]
AdoptOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--adopt",
        metavar="KIND/ID",
        help="Take over an existing object without the ownership marker: KIND/ID, e.g. model/aihub_agent_pipe.x.y (repeatable).",
    ),
]
DetailedOpt = Annotated[
    bool,
    typer.Option(
        "--detailed-exitcode", help="Exit 2 when the plan has changes, 0 when none (sync: only with --dry-run)."
    ),
]
TimeoutOpt = Annotated[float, typer.Option("--timeout", metavar="SECONDS", help="Seconds per HTTP request.")]
ParallelismOpt = Annotated[
    int,
    typer.Option(
        "--parallelism",
        metavar="N",
        min=1,
        max=16,
        help="Model rows written at a time (functions stay sequential). 4 helps against a remote instance.",
    ),
]
NoColorOpt = Annotated[bool, typer.Option("--no-color", help="No colours (also NO_COLOR).")]
TargetOpt = Annotated[
    str | None,
    typer.Option(
        "--target",
        envvar="PROVISION_TARGET",
        metavar="NAME",
        help="A target of the targets file: where to connect (instead of --url), its token and its ${NAME} variables.",
    ),
]
TargetsFileOpt = Annotated[
    Path, typer.Option("--targets-file", metavar="FILE", help="The targets file, relative to the current directory.")
]


def _consoles(no_color: bool) -> tuple[Console, Console]:
    color = not (no_color or os.environ.get("NO_COLOR"))
    out = Console(no_color=not color, highlight=False, emoji=False)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out.width = max(out.width, 120)  # CI logs and pipes: tables need not fold at 80 columns
    return (
        out,
        Console(stderr=True, no_color=not color, highlight=False, emoji=False),
    )


def _warn(message: str) -> None:
    print(message, file=sys.stderr)


def _connect(conn: Connection) -> OpenWebUIClient:
    return connect(conn, credentials(conn, _warn))


def _select_target(
    ctx: typer.Context, name: str | None, targets_file: Path, conn: Connection
) -> tuple[Connection, Target | None]:
    """With --target (or PROVISION_TARGET), the target's URL and token replace the defaults.

    An explicit --url or --token-file as well is a usage error: two answers to where to connect.
    OPENWEBUI_URL, OPENWEBUI_TOKEN and OPENWEBUI_TOKEN_FILE in the environment are ignored.
    """
    if not name:
        return conn, None
    for param, flag in (("url", "--url"), ("token_file", "--token-file")):
        source = ctx.get_parameter_source(param) if param in ctx.params else None
        if source is not None and source.name == "COMMANDLINE":
            raise typer.BadParameter(
                "--target says where to connect already; use one of the two", param_hint=f"'{flag}'"
            )
    target = select_target(name, targets_file)
    return conn.for_target(target), target


def _parse_adopt(values: list[str] | None) -> set[tuple[Kind, str]]:
    adopted: set[tuple[Kind, str]] = set()
    for value in values or []:
        kind, _, ident = value.partition("/")
        if kind not in ("model", "function") or not ident:
            raise ConfigError(f"--adopt takes KIND/ID with KIND model or function, got {value!r}")
        adopted.add(("model" if kind == "model" else "function", ident))
    return adopted


def _build_plan(opts: RunOptions, conn: Connection, err: Console) -> tuple[Plan, OpenWebUIClient]:
    """The pipeline's steps in the order a user sees their effects: the blueprints' own problems
    and notes before a missing token, the release warning before any planning error."""
    adopted = _parse_adopt(opts.adopt)
    missing: ConfigError | None = None
    try:
        creds: tuple[str, str] | None = credentials(conn, _warn)
    except ConfigError as exc:  # reported after the blueprints' own problems
        creds, missing = None, exc
    inputs = load_inputs(opts.path, opts.functions, opts.bundle, with_token_secret(opts.variables, creds and creds[1]))
    print_notes(inputs.catalog, err)
    if creds is None:
        assert missing is not None
        raise missing
    client = connect(conn, creds)
    try:
        options = PlanOptions(
            prune=opts.prune,
            adopt=adopted,
            missing_groups=opts.missing_groups,
            rotate_identity_key=opts.rotate_identity_key,
            revoke_identity_key=opts.revoke_identity_key,
            message=opts.message,
            token_variables=token_variables(conn.token_env, opts.variables),
        )
        warn = lambda message: err.print(message, soft_wrap=True, markup=False)  # noqa: E731 (a one-line callback)
        return prepare_plan(inputs, client, token=creds[1], options=options, on_warning=warn), client
    except BaseException:
        client.close()
        raise


def print_notes(catalog: Catalog, err: Console) -> None:
    """Files in the blueprint directory that were not read, each with why, and every backend
    allowed plain http off loopback, on stderr."""
    for note in catalog.notes:
        err.print(f"Note: {visible(str(note))}", soft_wrap=True, markup=False)
    for agent, host in insecure_backends(catalog):
        err.print(
            f"Warning: {agent}: plain http to {visible(host)} (insecure: true): its key and its chats cross "
            "the network in clear text.",
            soft_wrap=True,
            markup=False,
        )


def _print_plan(plan: Plan, opts: RunOptions, out: Console, err: Console) -> None:
    data = plan.to_json()
    if opts.output is PlanOutput.json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    elif opts.output is PlanOutput.markdown:
        from .render_drift import drift_markdown
        from .render_markdown import render_markdown

        sys.stdout.write(render_markdown(data, target=opts.target) + drift_markdown(data["drift"]))
    else:
        from .render_drift import render_drift_text

        render_plan(data, out)
        render_drift_text(
            data["drift"],
            out,
            heading="Changed in Open WebUI since the last sync (sync puts the blueprints' values back):",
        )
    render_notes(data, err)
    if opts.output is not PlanOutput.markdown:  # the Markdown carries them itself
        render_orphans(data, err)
    render_wrappers(data["wrappers"], err)


@app.command(short_help="Check blueprints and functions offline.")
def validate(
    ctx: typer.Context,
    path: PathOpt = Path("blueprints"),
    functions: FunctionsOpt = Path("functions"),
    output: OutputOpt = Output.text,
    target: TargetOpt = None,
    targets_file: TargetsFileOpt = Path(TARGETS_FILE),
    no_color: NoColorOpt = False,
    bundle: BundleOpt = None,
) -> int:
    """Check blueprints and function files offline: schema, references, function files.

    With --target, every ${NAME} must also resolve from that target's variables or the
    environment; without, only the references' syntax is checked.
    """
    out, err = _consoles(no_color)
    try:
        selected = select_target(target, targets_file) if target else None
        extra = targets_problems(targets_file) if selected is None and targets_file.is_file() else []
        try:
            variables = target_variables(selected, strict=selected is not None, targets_file=targets_file)
            catalog, files = load_inputs(path, functions, bundle, variables)
        except BlueprintError as exc:
            raise BlueprintError([*exc.problems, *extra]) from None
        if extra:
            raise BlueprintError(extra)
        desired = build_desired(
            catalog,
            files,
            groups=None,
            token_variables=token_variables(selected.token_env if selected else None, variables),
        )
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
    print_notes(catalog, err)
    if output is Output.json:
        notes = [{"file": n.file, "message": n.message} for n in catalog.notes]
        sys.stdout.write(json.dumps({"valid": True, **counts, "notes": notes}) + "\n")
    else:
        out.print(
            f"Valid: {counted(counts['blueprints'], 'blueprint')}, {counted(counts['agents'], 'agent')}, "
            f"{counted(counts['functions'], 'function')}.",
            soft_wrap=True,
        )
    return EXIT_OK


@app.command(short_help="Show what sync would change; writes nothing.")
def diff(
    ctx: typer.Context,
    path: PathOpt = Path("blueprints"),
    functions: FunctionsOpt = Path("functions"),
    output: PlanOutputOpt = PlanOutput.text,
    detailed_exitcode: DetailedOpt = False,
    prune: PruneOpt = False,
    adopt: AdoptOpt = None,
    target: TargetOpt = None,
    targets_file: TargetsFileOpt = Path(TARGETS_FILE),
    url: UrlOpt = None,
    token_file: TokenFileOpt = None,
    insecure: InsecureOpt = False,
    timeout: TimeoutOpt = 30.0,
    no_color: NoColorOpt = False,
    bundle: BundleOpt = None,
) -> int:
    """Show what sync would change on the instance, field by field. Writes nothing."""
    conn, selected = _select_target(ctx, target, targets_file, Connection(url, token_file, insecure, timeout))
    return _run(
        RunOptions(
            path=path,
            functions=functions,
            output=output,
            detailed_exitcode=detailed_exitcode,
            prune=prune,
            adopt=adopt,
            no_color=no_color,
            dry_run=True,
            yes=True,
            bundle=bundle,
            variables=target_variables(selected, strict=True, targets_file=targets_file),
            target=target,
            missing_groups=selected.missing_groups if selected else "fail",
        ),
        conn,
    )


@app.command(short_help="Make the instance match the blueprints.")
def sync(
    ctx: typer.Context,
    path: PathOpt = Path("blueprints"),
    functions: FunctionsOpt = Path("functions"),
    output: PlanOutputOpt = PlanOutput.text,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show the plan (same as diff).")] = False,
    detailed_exitcode: DetailedOpt = False,
    prune: PruneOpt = False,
    adopt: AdoptOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    parallelism: ParallelismOpt = 1,
    target: TargetOpt = None,
    targets_file: TargetsFileOpt = Path(TARGETS_FILE),
    url: UrlOpt = None,
    token_file: TokenFileOpt = None,
    insecure: InsecureOpt = False,
    timeout: TimeoutOpt = 30.0,
    no_color: NoColorOpt = False,
    bundle: BundleOpt = None,
    message: Annotated[
        str | None,
        typer.Option(
            "--message",
            "-m",
            metavar="TEXT",
            help=(
                "Commit message for Open WebUI's version history "
                "(default: provision version, blueprint file, CI commit and run)."
            ),
        ),
    ] = None,
    rotate_identity_key: Annotated[
        bool,
        typer.Option(
            "--rotate-identity-key",
            help="Stage a new identity signing key: `provision jwks` publishes it now, and the first sync 10 minutes "
            "or more later makes it sign (the old public key stays in the JWKS 24 hours after that).",
        ),
    ] = False,
    revoke_identity_key: Annotated[
        str | None,
        typer.Option(
            "--revoke-identity-key",
            metavar="KID",
            help="Drop the identity key KID from the JWKS at once (after a compromise); if it signs now, the staged "
            "key, else a new one, signs from the next chat. Agents must refresh their JWKS.",
        ),
    ] = None,
) -> int:
    """Make the instance match the blueprints: functions, then models, then deletes."""
    conn, selected = _select_target(ctx, target, targets_file, Connection(url, token_file, insecure, timeout))
    return _run(
        RunOptions(
            path=path,
            functions=functions,
            output=output,
            detailed_exitcode=detailed_exitcode,
            prune=prune,
            adopt=adopt,
            no_color=no_color,
            dry_run=dry_run,
            yes=yes,
            parallelism=parallelism,
            bundle=bundle,
            variables=target_variables(selected, strict=True, targets_file=targets_file),
            target=target,
            message=message,
            missing_groups=selected.missing_groups if selected else "fail",
            rotate_identity_key=rotate_identity_key,
            revoke_identity_key=revoke_identity_key,
        ),
        conn,
    )


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """What `diff` and `sync` were asked to do (besides where to connect).

    Keyword-only: four booleans in a row, where a swap passed positionally would go unnoticed."""

    path: Path
    functions: Path
    output: PlanOutput
    detailed_exitcode: bool
    prune: bool
    adopt: list[str] | None
    no_color: bool
    dry_run: bool
    yes: bool
    parallelism: int = 1
    bundle: Path | None = None  # None: the bundle installed with provision
    variables: Variables | None = None  # None: ${NAME} syntax checked, nothing resolved
    target: str | None = None  # its name, for the Markdown title
    message: str | None = None  # sync --message: the history's commit message
    missing_groups: str = "fail"  # the target's missing_groups (groups.py)
    rotate_identity_key: bool = False  # stage a new IDENTITY_KEYS signing key (sync --rotate-identity-key)
    revoke_identity_key: str | None = None  # the kid to drop at once (sync --revoke-identity-key)


def _run(opts: RunOptions, conn: Connection) -> int:
    """diff and sync are one pipeline; only `dry_run` decides whether anything is written."""
    out, err = _consoles(opts.no_color)
    plan, client = _build_plan(opts, conn, err)
    with client:
        if opts.dry_run:
            _print_plan(plan, opts, out, err)
            return EXIT_CHANGES if opts.detailed_exitcode and not plan.is_empty else EXIT_OK
        if plan.is_empty:
            if opts.output is PlanOutput.json:  # sync -o json always answers {"plan", "result"}
                _print_result(plan, ApplyReport(), opts)
            else:
                _print_plan(plan, opts, out, err)
            return EXIT_OK
        if opts.output is not PlanOutput.json:
            _print_plan(plan, opts, out, err)
        if not opts.yes and sys.stdin.isatty() and not os.environ.get("CI"):
            if not typer.confirm("Apply these changes?", default=False, err=True):
                err.print("Nothing applied.")
                return EXIT_ERROR
        report = _apply(plan, client, opts, err)
        if opts.output is PlanOutput.text:
            out.print(applied_line(report.to_json()), soft_wrap=True)
        else:
            _print_result(plan, report, opts)
        return EXIT_OK


def _print_result(plan: Plan, report: Report, opts: RunOptions) -> None:
    """What sync did, for -o json ({"plan", "result"}) and -o markdown (the result section)."""
    if opts.output is PlanOutput.json:
        sys.stdout.write(json.dumps({"plan": plan.to_json(), "result": report.to_json()}, indent=2) + "\n")
    elif opts.output is PlanOutput.markdown:
        from .render_markdown import result_markdown

        sys.stdout.write(result_markdown(report.to_json()))


def _apply(plan: Plan, client: OpenWebUIClient, opts: RunOptions, err: Console) -> ApplyReport:
    from .progress import progress_reporter  # rich progress only when it will be seen

    def notice(signal_name: str) -> None:
        err.print(
            f"{signal_name}: stopping after the write in flight; nothing new starts (send it again to stop at once).",
            soft_wrap=True,
            markup=False,
        )

    with (
        progress_reporter(err, total=len(plan.changes), enabled=opts.output is PlanOutput.text) as tick,
        stop_requests(notice) as stopping,
    ):
        try:
            return apply_plan(plan, client, parallelism=opts.parallelism, on_progress=tick, stopping=stopping)
        except ApplyError as exc:
            _print_result(plan, exc.report, opts)  # nothing for text: the error says it
            raise


@app.command("list", short_help="Show what provision manages on the instance.")
def list_managed(
    ctx: typer.Context,
    output: OutputOpt = Output.text,
    target: TargetOpt = None,
    targets_file: TargetsFileOpt = Path(TARGETS_FILE),
    url: UrlOpt = None,
    token_file: TokenFileOpt = None,
    insecure: InsecureOpt = False,
    timeout: TimeoutOpt = 30.0,
    no_color: NoColorOpt = False,
) -> int:
    """Show the agents and functions provision manages on the instance."""
    from rich.table import Table

    from .inventory import managed_agents, managed_functions, served_agent_ids

    out, err = _consoles(no_color)
    conn, _target = _select_target(ctx, target, targets_file, Connection(url, token_file, insecure, timeout))
    with _connect(conn) as client:
        groups = {str(g.get("id")): str(g.get("name")) for g in client.list_groups()}
        rows = client.list_models()
        all_functions = client.list_functions()
        agents = managed_agents(rows, groups, served_agent_ids(all_functions, PIPE_FUNCTION_ID))
        functions = managed_functions(all_functions)
        wrappers = named_wrappers(client, find_wrappers(rows, {str(a["id"]) for a in agents}))
    render_wrappers(wrappers, err)
    if output is Output.json:
        sys.stdout.write(json.dumps({"agents": agents, "functions": functions, "wrappers": wrappers}, indent=2) + "\n")
        return EXIT_OK
    table = Table(title=f"Agents ({len(agents)}), model id {PIPE_FUNCTION_ID}.<agent>", title_justify="left")
    table.add_column("agent", no_wrap=True)
    for column in ("name", "toggles", "on by default", "access", "served"):
        table.add_column(column, overflow="fold")
    for a in agents:  # rows come from the instance: show what a reader cannot see
        served = {True: "yes", False: "NO: chats fail", None: "no pipe"}[a["served"]]
        cells = (
            a["agent"],
            a["name"],
            ", ".join(a["features"]) or "-",
            ", ".join(a["defaults"]) or "-",
            a["access"],
            served,
        )
        table.add_row(*(shown(str(c)) for c in cells))
    out.print(table)
    table = Table(title=f"Functions ({len(functions)})", title_justify="left")
    for column in ("id", "type", "active", "global"):
        table.add_column(column, overflow="fold")
    for f in functions:
        active, is_global = ("yes" if f["active"] else "no"), ("yes" if f["global"] else "no")
        table.add_row(shown(str(f["id"])), shown(str(f["type"] or "")), active, is_global)
    out.print(table)
    return EXIT_OK


@app.command("dump", short_help="Write the instance's agent rows as blueprint YAML.")
def dump_command(
    ctx: typer.Context,
    out_dir: Annotated[
        Path, typer.Option("--out", metavar="DIR", help="Folder for the blueprints (created if needed).")
    ],
    rows: Annotated[list[str] | None, typer.Argument(metavar="ID_OR_PATTERN", show_default=False, hidden=True)] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace files that already exist in DIR.")] = False,
    output: OutputOpt = Output.text,
    target: TargetOpt = None,
    targets_file: TargetsFileOpt = Path(TARGETS_FILE),
    url: UrlOpt = None,
    token_file: TokenFileOpt = None,
    insecure: InsecureOpt = False,
    timeout: TimeoutOpt = 30.0,
    no_color: NoColorOpt = False,
) -> int:
    """Write blueprint YAML (and the capabilities.yaml / features.yaml entries they need) for the
    rows named (model ids or shell patterns), or for every row provision owns and every hand-made agent row. Says per row what
    the format could not hold. Hand-made rows need `--adopt model/<id>` in diff and sync."""
    from .dump import dump_rows, select_rows, write_dump

    _, err = _consoles(no_color)
    conn, _target = _select_target(ctx, target, targets_file, Connection(url, token_file, insecure, timeout))
    with _connect(conn) as client:
        models = client.list_models()
        functions = client.list_functions()
        groups = {str(g.get("id")): str(g.get("name")) for g in client.list_groups()}
    dumped = dump_rows(select_rows(models, rows or []), functions, groups)
    written = write_dump(out_dir, dumped, force=force)
    for report in dumped.rows:
        where = f"{out_dir / report.file}" if report.file else "not written"
        err.print(
            f"{shown(report.id)}: {shown(where)}{'' if report.owned else ' (hand-made: --adopt model/' + shown(report.id) + ')'}",
            soft_wrap=True,
            markup=False,
        )
        for note in report.not_expressed:
            err.print(f"  not expressed: {shown(note)}", soft_wrap=True, markup=False)
    if output is Output.json:
        body = {
            "out": str(out_dir),
            "files": [str(p) for p in written],
            "rows": [dataclasses.asdict(r) for r in dumped.rows],
            "adopt": [f"model/{ident}" for ident in dumped.adopting],
        }
        sys.stdout.write(json.dumps(body, indent=2) + "\n")
    else:
        err.print(
            f"Wrote {len(written)} file(s) for {len(dumped.rows)} row(s) into {shown(str(out_dir))}.",
            soft_wrap=True,
            markup=False,
        )
    return EXIT_OK


@app.command(short_help="Print the public keys that verify the pipe's signed identity.")
def jwks(
    ctx: typer.Context,
    output: OutputOpt = Output.text,
    key_file: Annotated[
        Path | None,
        typer.Option(
            "--key-file",
            metavar="PEM",
            help="Print the JWKS of this Ed25519 private key instead (the server's AIHUB_IDENTITY_PRIVATE_KEY).",
        ),
    ] = None,
    key_id: Annotated[
        str,
        typer.Option(
            "--key-id",
            envvar="AIHUB_IDENTITY_KEY_ID",
            metavar="KID",
            help="With --key-file: the key's id, as the server's AIHUB_IDENTITY_KEY_ID says it (the pipe's default: server).",
        ),
    ] = SERVER_KEY_ID,
    target: TargetOpt = None,
    targets_file: TargetsFileOpt = Path(TARGETS_FILE),
    url: UrlOpt = None,
    token_file: TokenFileOpt = None,
    insecure: InsecureOpt = False,
    timeout: TimeoutOpt = 30.0,
    no_color: NoColorOpt = False,
) -> int:
    """Print the JWKS of the pipe's identity keys, read from the instance: the signing key and
    every key rotated out within the last 24 hours. stdout is the JWKS alone (serve it to your
    agents); -o text also says on stderr which key is which. With --key-file no instance is read."""
    from .identity_keys import describe_jwks, instance_identity_keys, instance_jwks, key_file_jwks

    _, err = _consoles(no_color)
    valve = None
    if key_file is not None:  # no instance is read
        keys = key_file_jwks(key_file, key_id)
    else:
        conn, _target = _select_target(ctx, target, targets_file, Connection(url, token_file, insecure, timeout))
        with _connect(conn) as client:
            functions = client.list_functions()
        keys = instance_jwks(functions, now=time.time())
        valve = instance_identity_keys(functions)
    sys.stdout.write(json.dumps(keys, indent=2) + "\n")
    if output is Output.text:
        for line in describe_jwks(keys, key_file is not None, valve):
            err.print(line, soft_wrap=True, markup=False)
    return EXIT_OK


@app.command("drift", short_help="Report edits made in Open WebUI since the last sync.")
def drift_command(
    ctx: typer.Context,
    output: PlanOutputOpt = PlanOutput.text,
    target: TargetOpt = None,
    targets_file: TargetsFileOpt = Path(TARGETS_FILE),
    url: UrlOpt = None,
    token_file: TokenFileOpt = None,
    insecure: InsecureOpt = False,
    timeout: TimeoutOpt = 30.0,
    no_color: NoColorOpt = False,
) -> int:
    """Report the owned fields changed in Open WebUI since the last sync, with who and when where
    Open WebUI's history says (0.12+). Needs no blueprints. Exits 0 with no drift, 2 with drift."""
    from .openwebui.drift import instance_drift
    from .render_drift import render_drift_report

    out, err = _consoles(no_color)
    conn, _target = _select_target(ctx, target, targets_file, Connection(url, token_file, insecure, timeout))
    with _connect(conn) as client:
        report = instance_drift(observe(client.list_models(), client.list_functions(), client.compat), client)
    if output is PlanOutput.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        render_drift_report(report, out, err, markdown=output is PlanOutput.markdown, target=target)
    return EXIT_CHANGES if report["drift"] else EXIT_OK


@app.command("token", short_help="Get an admin API key by signing in (in-cluster jobs).")
def token_command(
    ctx: typer.Context,
    out_file: Annotated[
        Path | None, typer.Option("--out", metavar="FILE", help="Write the key to FILE (mode 0600) instead of stdout.")
    ] = None,
    target: TargetOpt = None,
    targets_file: TargetsFileOpt = Path(TARGETS_FILE),
    url: UrlOpt = None,
    insecure: InsecureOpt = False,
    timeout: TimeoutOpt = 30.0,
) -> int:
    """Sign in with OPENWEBUI_ADMIN_EMAIL and OPENWEBUI_ADMIN_PASSWORD (or OPENWEBUI_ADMIN_PASSWORD_FILE),
    reuse that admin's API key or create one, and print it or write it to --out FILE (0600).
    The password is never an argument."""
    from .openwebui.client import sign_in
    from .openwebui.token import admin_login, api_key_for, write_secret_file

    conn, _target = _select_target(ctx, target, targets_file, Connection(url, None, insecure, timeout))
    if not conn.url:
        raise ConfigError("no Open WebUI URL: pass --url, set OPENWEBUI_URL or use --target")
    base = check_url(conn.url, insecure=conn.insecure, allow_http=conn.allow_http)
    login = admin_login(os.environ)
    with client_module.make_http_client(timeout) as http:
        session = sign_in(base, login.email, login.password, http=http)
        if session.get("role") != "admin":
            raise ConfigError(f"{login.email} is not an admin of {base} (role {session.get('role')!r})")
        with OpenWebUIClient(base_url=base, token=str(session["token"]), http=http) as client:
            key, created = api_key_for(client)
    if out_file is not None:
        write_secret_file(out_file, key)
        _consoles(True)[1].print(
            f"{'Created' if created else 'Reused'} the API key of {login.email}; written to {out_file} (mode 0600).",
            soft_wrap=True,
            markup=False,
        )
    else:
        sys.stdout.write(key + "\n")
    return EXIT_OK


@app.command(short_help="Write the rendered toggle filters to a folder.")
def generate(
    out_dir: Annotated[Path, typer.Option("--out", metavar="DIR", help="Directory to write the toggle filters into.")],
    path: PathOpt = Path("blueprints"),
    no_color: NoColorOpt = False,
) -> int:
    """Write the toggle filters sync renders (one per feature an agent can show) into a directory, to read them."""
    out, err = _consoles(no_color)
    catalog = load_catalog(path, target_variables(None, strict=False))
    print_notes(catalog, err)
    done = write_toggle_files(catalog, out_dir)
    for action, file in done:
        out.print(f"{action:8} {file}", soft_wrap=True)
    if not done:
        out.print("Toggle filters are up to date.")
    return EXIT_OK


@app.command(short_help="Start a blueprint repo (here or in DIR).")
def init(
    directory: Annotated[Path, typer.Argument(metavar="DIR", show_default=False, hidden=True)] = Path("."),
    no_color: NoColorOpt = False,
) -> int:
    """Start a blueprint repo in DIR (default: here): blueprints, features, your functions, targets,
    CI for GitHub and GitLab. Never overwrites a file."""
    from .scaffold import init_repo

    out, _ = _consoles(no_color)
    for path in init_repo(directory):
        out.print(f"created  {path}", soft_wrap=True, markup=False)
    where = "" if directory == Path(".") else f"cd {directory} && "
    out.print(
        f"\nNext: {where}provision validate; then set the tokens named in targets.yaml and run "
        "provision diff --target staging. See README.md.",
        soft_wrap=True,
        markup=False,
    )
    return EXIT_OK


@app.command("explain", short_help="Say why an agent shows the toggles it shows.")
def explain_command(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(metavar="AGENT", show_default=False, hidden=True)],
    path: PathOpt = Path("blueprints"),
    output: OutputOpt = Output.text,
    target: TargetOpt = None,
    targets_file: TargetsFileOpt = Path(TARGETS_FILE),
    url: UrlOpt = None,
    token_file: TokenFileOpt = None,
    insecure: InsecureOpt = False,
    timeout: TimeoutOpt = 30.0,
    no_color: NoColorOpt = False,
) -> int:
    """AGENT is <blueprint>.<agent>, its model id, or an agent id only one blueprint has.
    For each toggle AGENT shows: the feature, the capability that serves it and every step
    that calls it (file and line); for each feature it does not show, why; and what its model
    row will say. Offline; with --target (or --url) also what the instance adds on top."""
    from .explain import explain_agent
    from .loader import load_catalog
    from .render_explain import render_explain

    out, err = _consoles(no_color)
    conn, selected = _select_target(ctx, target, targets_file, Connection(url, token_file, insecure, timeout))
    catalog = load_catalog(path, target_variables(selected, strict=selected is not None, targets_file=targets_file))
    print_notes(catalog, err)
    explained = explain_agent(catalog, agent)
    if selected is not None or url:
        from .diagnose import instance_explanation

        with _connect(conn) as client:
            explained["instance"] = instance_explanation(client, explained)
        explained["target"] = target
    if output is Output.json:
        sys.stdout.write(json.dumps(explained, indent=2) + "\n")
    else:
        render_explain(explained, out)
    return EXIT_OK


@app.command("doctor", short_help="Check what on the instance makes agents fail, with the fix.")
def doctor_command(
    ctx: typer.Context,
    path: PathOpt = Path("blueprints"),
    functions: FunctionsOpt = Path("functions"),
    output: PlanOutputOpt = PlanOutput.text,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 2 when a check warns (and none fails).")] = False,
    target: TargetOpt = None,
    targets_file: TargetsFileOpt = Path(TARGETS_FILE),
    url: UrlOpt = None,
    token_file: TokenFileOpt = None,
    insecure: InsecureOpt = False,
    timeout: TimeoutOpt = 30.0,
    no_color: NoColorOpt = False,
    bundle: BundleOpt = None,
    replica: Annotated[
        list[str] | None,
        typer.Option(
            "--replica",
            metavar="URL",
            help="Probe the backends through this replica's own URL (repeatable; default: the target's replicas).",
        ),
    ] = None,
) -> int:
    """One line per check, failures first, each with its fix: the release, functions enabled,
    the bundle's functions, the pipe's valves against the blueprints (when -p DIR exists), the
    agents' rows, identity keys, file uploads for document agents, the embedding bypass,
    wrappers, and each agent's backend as the pipe reaches it (through every --replica URL given).
    Exit 0 when nothing fails, 1 when something does, 2 on warnings with --strict."""
    from .diagnose import diagnose, expected_from, replica_clients
    from .doctor import exit_code, report_json
    from .render_doctor import doctor_markdown, render_doctor

    out, err = _consoles(no_color)
    conn, selected = _select_target(ctx, target, targets_file, Connection(url, token_file, insecure, timeout))
    expected = None
    source = ctx.get_parameter_source("path")
    if path.exists() or (source is not None and source.name == "COMMANDLINE"):  # else: the instance alone
        inputs = load_inputs(
            path, functions, bundle, target_variables(selected, strict=selected is not None, targets_file=targets_file)
        )
        print_notes(inputs.catalog, err)
        expected = expected_from(inputs.catalog, inputs.functions)
    creds = credentials(conn, _warn)
    replicas = replica_clients(conn, creds[1], replica or (list(selected.replicas) if selected else []))
    try:
        with connect(conn, creds) as client:
            checks = diagnose(client, expected, replicas)
    finally:
        for other in replicas:
            other.close()
    report = report_json(checks, target)
    if output is PlanOutput.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    elif output is PlanOutput.markdown:
        sys.stdout.write(doctor_markdown(report))
    else:
        render_doctor(report, out)
    return exit_code(checks, strict)


@app.command("version", short_help="Show the provision version.")
def version_command() -> int:
    """Show the provision version (the one recorded in the marker of what it writes)."""
    typer.echo(_version_line())
    return EXIT_OK


def _version_line() -> str:
    return f"provision {__version__}"


def _print_version(value: bool) -> None:
    if value:  # eager: runs before click asks for a command
        typer.echo(_version_line())
        raise typer.Exit(0)


_verbose_handler: logging.Handler | None = None


def _log_http_calls() -> None:
    """Show client.http_log on stderr: method, path, status and time; never headers or bodies."""
    global _verbose_handler
    _stop_logging_http_calls()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("http: %(message)s"))
    http_log.addHandler(handler)
    http_log.setLevel(logging.INFO)
    _verbose_handler = handler


def _stop_logging_http_calls() -> None:
    global _verbose_handler
    if _verbose_handler is not None:
        http_log.removeHandler(_verbose_handler)
        http_log.setLevel(logging.NOTSET)
        _verbose_handler = None


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_print_version, help="Show the version and exit."),
    ] = False,
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Log each HTTP call (method, path, status, time) to stderr.")
    ] = False,
) -> None:
    """Keep AI agents behind Open WebUI as blueprint YAML: validate, diff, sync."""
    if verbose:
        _log_http_calls()


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app and map every outcome to 0, 1 or 2 in this one place (and a sync
    stopped by a signal to the shell's code for it: 130 for SIGINT, 143 for SIGTERM)."""
    err = Console(stderr=True, highlight=False, emoji=False, no_color=bool(os.environ.get("NO_COLOR")))
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        # Bare `provision` shows the help once, as --help does: not a usage error.
        result: Any = app(args=args or ["--help"], prog_name="provision", standalone_mode=False)
    except typer.Exit as exc:  # --help, --version
        return int(exc.exit_code or 0)
    except typer.Abort:
        err.print("Aborted.")
        return EXIT_ERROR
    except typer.TyperException as exc:  # usage errors: 1, not click's 2
        err.print(f"Error: {visible(exc.format_message(), keep=chr(10))}", soft_wrap=True, markup=False)
        return EXIT_ERROR
    except ProvisionError as exc:
        # Messages carry file names and server answers: escape what a reader could not see.
        err.print(f"Error: {visible(str(exc), keep=chr(10))}", soft_wrap=True, markup=False)
        stopped_by = exc.report.stopped_by if isinstance(exc, ApplyError) else ""
        return signal_exit_code(stopped_by) if stopped_by else EXIT_ERROR
    finally:
        _stop_logging_http_calls()
    return int(result) if isinstance(result, int) else EXIT_OK
