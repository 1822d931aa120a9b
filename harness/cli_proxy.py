"""`harness proxy`: stand between an existing agent and its model server, and record or replay."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import Annotated

import typer

from harness.cli_io import MaxChars, MaxSeconds, MaxTokens

MODES_HELP = "once: replay the cassette if there is one, else record it; new_episodes: replay, record what is new; all: record again; none: replay only."


def proxy(
    cassette: Annotated[Path, typer.Argument(help="The folder the runs are saved in, one transcript each (run-001.txt, ...).", show_default=False)],
    base_url: Annotated[str | None, typer.Option("--base-url", help="The upstream server the calls are forwarded to when recording (default: $HARNESS_BASE_URL).")] = None,
    mode: Annotated[str, typer.Option("--mode", help=MODES_HELP)] = "once",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="The port on 127.0.0.1 (default: a free one).")] = 0,
    max_tokens: MaxTokens = None,
    max_chars: MaxChars = None,
    max_seconds: MaxSeconds = None,
) -> None:
    """Serve an OpenAI-compatible endpoint that records the agent's calls as transcripts, or replays them.

    Prints its base URL (http://127.0.0.1:PORT/v1) as one line; point the agent's base URL at
    it. Ctrl-C stops it and saves what was recorded: `harness show`, `step` and `export` read
    the files. In replay, a request that was not recorded is answered HTTP 400, with a diff of
    the agent's buffer against the recording (on stderr too)."""
    from harness.model import DEFAULTS, Bounds
    from harness.proxy import Proxy, serve

    bounds = Bounds(max_tokens or DEFAULTS.max_tokens, max_chars or DEFAULTS.max_chars, max_seconds or DEFAULTS.max_seconds)
    recorder = Proxy(cassette, mode, base_url, bounds)
    server = serve(recorder, port)
    done = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):  # Ctrl-C, or a kill: stop and save
        signal.signal(signum, lambda *_: done.set())
    print(recorder.url, flush=True)
    done.wait()
    server.shutdown()
    written = recorder.close()
    print(f"harness proxy: wrote {len(written)} run{'s' if len(written) != 1 else ''} to {cassette}", file=sys.stderr)
