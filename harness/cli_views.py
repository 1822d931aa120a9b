"""How the command shows one run on stdout: the formats, the live view, the event lines.

Shared by `run`, `show` and `replay` (harness.cli); the renderers do the work
(harness.render), this picks one and keeps a closed pipe from ending a run.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from harness.run_record import RunRecord


class Format(StrEnum):
    rich = "rich"
    tagged = "tagged"
    json = "json"
    events = "events"


FormatOption = Annotated[
    Format,
    typer.Option("--format", "-f", help="rich: coloured by author; tagged: the save format; json; events: JSON Lines."),
]


def new_console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def show_record(fmt: Format, record: RunRecord) -> None:
    """Print a finished run in the chosen format."""
    if fmt is Format.tagged:
        from harness.escape import for_terminal

        # The bytes as saved for a pipe or a file; a terminal is shown them, never obeys them.
        sys.stdout.write(for_terminal(record.saved) if sys.stdout.isatty() else record.saved)
    elif fmt is Format.json:
        from harness.render.json import to_json

        typer.echo(to_json(record))
    else:
        from harness.render.live import saved_events

        draw = live_view(0.0) if fmt is Format.rich else print_event
        for event in saved_events(record):
            draw(event)


def live_view(delay: float):
    from harness.render.live import LiveView

    return LiveView(new_console(), delay)


def print_event(event: Any) -> None:
    from harness.render.events import event_line

    sys.stdout.write(event_line(event) + "\n")  # buffered: a flush per line costs more than the event


def despite_a_closed_pipe(draw):
    """`harness run x --save f | head`: once the reader has gone, stop drawing, but let the
    run go on to its end, so that it is still saved."""

    def emit(event: Any) -> None:
        try:
            draw(event)
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the rest goes nowhere

    return emit
