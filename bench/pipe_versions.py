"""Compare the first token of two versions of the agent pipe, side by side in one process.

Not a test. Run from the project root:

    .venv/bin/python bench/pipe_versions.py [--base HEAD] [--file owui_functions/aihub_agent_pipe.py] [--rounds 2000]

A change to the pipe's per-chat path is worth tens of microseconds, and on this machine the
first token moves by more than that from run to run. So both versions run in the same process
against the same canned server (bench/pipe_stream.py's), with a direct aiohttp reader for
reference and the base loaded a second time as a control: in every round the four readers run
once each, in a random order (a fixed order gives each reader the same predecessor, whose cache
footprint shows up as a bias of its own). The control's distance from the base is the noise of
the comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
from bench import pipe_stream  # noqa: E402  (the canned server, the readers, the canned events)
from tests.support.loading import load_file  # noqa: E402  (registered in sys.modules: pydantic resolves the Valves through it)

PIPE = "owui_functions/aihub_agent_pipe.py"


def load(name: str, path: Path) -> ModuleType:
    return load_file(path, name)


def at_revision(revision: str, directory: Path) -> Path:
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:{PIPE}"], capture_output=True, text=True)
    if text.returncode != 0:
        raise SystemExit(f"git show {revision}:{PIPE} failed: {text.stderr.strip()}")
    path = directory / f"pipe_{revision.replace('/', '_')}.py"
    path.write_text(text.stdout)
    return path


async def compare(base: ModuleType, other: ModuleType, control: ModuleType, rounds: int) -> dict[str, float]:
    server = pipe_stream.CannedServer(pipe_stream.first_token_body())
    client = aiohttp.ClientSession()
    try:
        readers: dict[str, Callable[[], Awaitable[float]]] = {
            "direct": lambda: pipe_stream.first_token_direct(client, server.url),
        }
        for label, module in (("base", base), ("other", other), ("control", control)):
            instance: Any = pipe_stream.make_pipe(module, server.url)
            readers[label] = functools.partial(pipe_stream.first_token_pipe, instance)
        times: dict[str, list[float]] = {label: [] for label in readers}
        shuffle = random.Random(0).shuffle
        for round_ in range(rounds + 10):  # the first ten warm up imports, connections and caches
            order = list(readers)
            shuffle(order)
            for label in order:
                seconds = await readers[label]()
                if round_ >= 10:
                    times[label].append(seconds)
    finally:
        await client.close()
        for _, shared in list(base._pool().clients.values()):  # one pool for every copy (see main)
            await shared.close()
        server.close()
    return {label: statistics.median(values) * 1e6 for label, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD", help="git revision of the base version (default HEAD)")
    parser.add_argument(
        "--file", type=Path, default=ROOT / PIPE, help="the other version (default: the working tree's)"
    )
    parser.add_argument("--rounds", type=int, default=2000, help="rounds; each runs every reader once")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        base_file = at_revision(args.base, Path(directory))
        base, other, control = (
            load("pipe_base", base_file),
            load("pipe_other", args.file),
            load("pipe_control", base_file),
        )
    if base._POOL_VERSION != other._POOL_VERSION:
        # the pool lives in sys.modules, shared by every copy of the file; each would drop the
        # other's client as outdated and open a new connection on every chat
        raise SystemExit("the two versions have different _POOL_VERSIONs: their first tokens are not comparable here")
    us = asyncio.run(compare(base, other, control, args.rounds))
    direct = us["direct"]
    print(f"first token, medians of {args.rounds} rounds (random order in each):")
    print(f"  aiohttp reading the stream itself  {direct:7.0f} us")
    other_name = "working tree" if args.file.resolve() == (ROOT / PIPE).resolve() else args.file.name
    for label, name in (("base", args.base), ("other", other_name), ("control", f"{args.base} again")):
        print(f"  pipe, {name:<28} {us[label]:7.0f} us  {us[label] / direct:.3f}x  (+{us[label] - direct:.0f} us)")
    print(
        f"other - base: {us['other'] - us['base']:+.0f} us; the control's distance from the base (noise): "
        f"{us['control'] - us['base']:+.0f} us"
    )


if __name__ == "__main__":
    main()
