"""`harness replay FILE`: run the loop again from a saved transcript, its model turns as
the script (or a live --model); with --check, exit 1 and a diff if a byte differs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli_files import scenario_hint
from harness.cli_models import (
    BaseUrlOption,
    CallOptions,
    MaxChars,
    MaxSeconds,
    MaxTokens,
    ModelOption,
    Strict,
    WaitForServer,
    live_model_from,
    tell_stderr,
)
from harness.cli_views import Format, FormatOption, show_record


def replay(
    saved: Annotated[Path, typer.Argument(help="A saved transcript (from run --save).")],
    check: Annotated[bool, typer.Option("--check", help="Exit 1 with a diff if the replay differs from the file.")] = False,
    format: FormatOption = Format.rich,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    max_tokens: MaxTokens = None,
    max_chars: MaxChars = None,
    max_seconds: MaxSeconds = None,
    strict: Strict = None,
    wait_for_server: WaitForServer = None,
) -> None:
    """Run the loop again from a saved transcript: its model turns are the script (or a live --model)."""
    from harness.diff import transcript_diff
    from harness.record import read_text
    from harness.record import replay as replay_text

    live_model = live_model_from(model, base_url, CallOptions(max_tokens, max_chars, max_seconds, strict, wait_for_server))
    with scenario_hint(saved):
        result = replay_text(read_text(saved), str(saved), model=live_model, root=Path.cwd())
    tell_stderr(result.record, live_model)
    if not check:
        show_record(format, result.record)
        return
    if result.matches:
        typer.echo(f"ok: replaying {saved} gives the same transcript, byte for byte")
        return
    diff = transcript_diff(result.saved, result.fresh, str(saved))
    typer.echo(diff if diff.endswith("\n") else diff + "\n", nl=False)
    typer.echo("(under pytest, `pytest --harness-update` rewrites a saved transcript whose replay changed)", err=True)
    raise typer.Exit(1)
