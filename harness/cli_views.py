"""How `run`, `show` and `replay` show one run on stdout: the formats, the live view, the
event lines (harness.render does the work), and a live run's line per call on stderr."""

from __future__ import annotations

import os
import sys
import time
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
    """A rich console on stdout, sized by stdout's own terminal: in the command its fd is a
    copy (fd 1 is /dev/null, harness.__main__), which rich's own look-up (fds 0, 1, 2) misses."""
    from rich.console import Console

    size = None
    for name in ("COLUMNS", "LINES"):  # rich sizes the console by them: 0 would wrap nothing, forever
        if (value := os.environ.get(name, "").strip()) and not (value.isdigit() and 1 <= int(value) <= 100_000):
            from harness.errors import HarnessError
            from harness.escape import one_line

            raise HarnessError(name, f"{one_line(repr(value)[:40])} is not a whole number from 1 to 100,000 (unset it, or give the terminal's size)")
    if "COLUMNS" not in os.environ and "LINES" not in os.environ:
        try:
            size = os.get_terminal_size(sys.stdout.fileno()) if sys.stdout.isatty() else None
        except (OSError, ValueError, AttributeError):  # no file descriptor under it (a test runner)
            size = None
    return Console(highlight=False, soft_wrap=True, width=size and size.columns, height=size and size.lines)


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

        from harness.render.frames import stop_was_off

        draw = live_view(0.0, stop_was_off(record)) if fmt is Format.rich else print_event
        for event in saved_events(record):
            draw(event)


def live_view(delay: float, stop_off: bool = False):
    """The run drawn as it streams: by rich on a terminal, as plain text anywhere else.
    `stop_off`: the run has no stop sequence (--no-stop), which the view says first."""
    from harness.render.live import LiveView

    return LiveView(new_console() if watched(sys.stdout) else sys.stdout, delay, stop_off)


def watched(stream: Any) -> bool:
    """Whether rich would treat `stream` as a terminal: it is one, or the environment says
    to act as if it were (rich reads these); only then is rich loaded to draw the view."""
    return stream.isatty() or any(name in os.environ for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"))


def print_event(event: Any) -> None:
    from harness.render.events import event_line

    sys.stdout.write(event_line(event) + "\n")  # buffered: a flush per line costs more than the event


def call_lines(draw):
    """`draw`, and for a live run off a terminal (a CI log) one line on stderr as each model
    call ends, so the log is never silent for the length of a run: `call 2: 418 characters,
    1.93 s`. On a terminal the rich view is the progress; a script takes no time to read."""
    from harness.events import CompletionEnded, RoundStarted

    started = time.perf_counter()

    def emit(event: Any) -> None:
        nonlocal started
        if type(event) is RoundStarted:
            started = time.perf_counter()
        elif type(event) is CompletionEnded:
            chars = len(event.text) + len(event.cut)  # read from the model, kept or cut
            typer.echo(f"call {event.step}: {chars} characters, {time.perf_counter() - started:.2f} s", err=True)
        draw(event)

    return emit
