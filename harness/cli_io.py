"""What the commands share: their options, the model a run talks to, arguments that name
files, output files, and how one run is shown (harness.render does the work)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

from harness.errors import HarnessError

if TYPE_CHECKING:
    from rich.console import Console

    from harness.run_record import RunRecord
    from harness.scenario import Scenario

MODEL_FAILED = 3  # the exit code of a run that ended in model_error: a live model or server failed
KEPT = "a saved run is never replaced by one that failed"  # (a real Ctrl-C, a live model's error)


Format = StrEnum("Format", ["rich", "tagged", "json", "events"])  # --format's choices, each its own name


def seconds(value: float | None) -> float | None:
    """A number of seconds: NaN passes every range check (it compares false), so say so."""
    if value is not None and value != value:
        raise typer.BadParameter("nan is not a number of seconds")
    return value


def output_path(value: str) -> Path:
    """The value of an option that names an output (--save, --html, ...), refused if empty."""
    if not value.strip():
        raise typer.BadParameter("the argument is empty; give a path")
    if value == "-":  # a user may mean stdout, which no option here writes
        raise typer.BadParameter("'-' is not stdout here; give a file's path (./- for a file named '-')")
    return Path(value)


FormatOption = Annotated[
    Format,
    typer.Option("--format", "-f", help="rich: coloured by author; tagged: the save format; json; events: JSON Lines."),
]
NoStop = Annotated[bool, typer.Option("--no-stop", help="Turn the stop sequences off: see what the model writes when nothing cuts it.")]
Jobs = Annotated[int, typer.Option("--jobs", "-j", min=1, max=256, help="Several scenarios or files: how many run at once (a local model's calls take turns).")]
ModelOption = Annotated[
    str | None,
    typer.Option("--model", "-m", help="scripted (default), local[:PATH.gguf], openai:NAME (a completions server) or chat:NAME (a chat endpoint)."),
]
BaseUrlOption = Annotated[
    str | None,
    typer.Option("--base-url", help="The server's URL for openai:NAME or chat:NAME (default: $HARNESS_BASE_URL, else http://127.0.0.1:8080/v1)."),
]
MaxTokens = Annotated[int | None, typer.Option("--max-tokens", min=1, help="Tokens the model may write per call (default 512).")]
MaxChars = Annotated[int | None, typer.Option("--max-chars", min=1, help="Characters read from one call before it is stopped (default 100,000).")]
MaxSeconds = Annotated[float | None, typer.Option("--max-seconds", min=0.1, max=86400, callback=seconds, help="Seconds one whole call may take before it is stopped (default 300).")]
Strict = Annotated[bool | None, typer.Option("--strict/--no-strict", help="A strict server (OpenAI's own): no llama.cpp knobs, at most 4 stops (default: strict for api.openai.com).", show_default=False)]
WaitForServer = Annotated[float | None, typer.Option("--wait-for-server", min=0, max=3600, callback=seconds, help="Wait up to SECONDS for the server to answer before the first call (one still starting).")]


class ModelOptions(NamedTuple):
    """--model, --base-url and the bounds of each call, as given (None: not given)."""

    model: str | None = None
    base_url: str | None = None
    max_tokens: int | None = None
    max_chars: int | None = None
    max_seconds: float | None = None
    strict: bool | None = None
    wait_for_server: float | None = None

    @property
    def live(self) -> bool:
        return self.model not in (None, "scripted")

    def open(self, connections: int | None = None) -> Any:
        """The model a run talks to: None for the scenario's own script."""
        bounds = {k: v for k, v in self._asdict().items() if v is not None and k not in ("model", "base_url")}
        if self.live:
            from harness.backends.spec import model_from_spec

            return model_from_spec(self.model, self.base_url, connections=connections, **bounds)
        if self.base_url is not None:
            raise HarnessError("--base-url", "goes with --model openai:NAME or chat:NAME")
        if bounds:
            raise HarnessError("--" + next(iter(bounds)).replace("_", "-"), "goes with a live --model")
        return None


def tell_stderr(record: RunRecord, model: Any) -> None:
    """Whatever --format writes on stdout, why a live run failed, and what was dropped on
    arrival, are said on stderr: a CI log shows them even when stdout is the transcript."""
    from harness.escape import for_terminal

    for note in model.notes if model is not None else ():
        typer.echo(f"note: {for_terminal(note)}", err=True)
    if record.stop_reason == "model_error" and model is not None:
        typer.echo(f"error: model_error: {for_terminal(record.detail)}", err=True)


def failure(record: RunRecord, live: Any, planned_cancel: bool = True) -> int:
    """The exit code a run that failed ends with (0: it did not), which also keeps it from replacing a saved run:
    130 if it was canceled and no script or recording planned it (a real Ctrl-C); 3 if a `live` model (or True) failed."""
    if record.stop_reason == "canceled" and not planned_cancel:
        return 130
    return MODEL_FAILED if record.stop_reason == "model_error" and live not in (None, False) else 0


def as_asked(spec: Scenario, max_steps: int | None, no_stop: bool) -> Scenario:
    """The scenario with --max-steps and --no-stop applied."""
    spec = spec if max_steps is None else spec.but(max_steps=max_steps)
    return spec.but(use_stop=False) if no_stop else spec


def named(argument: str, what: str, names: str) -> str:
    """An argument that names something: an empty one would be Path("."), the folder here."""
    if not argument.strip():
        raise HarnessError(what, f"an empty argument names no {names}")
    return argument


def scenario_file(argument: str) -> Path:
    """find_scenario's file; a name too long to look up is one line naming it."""
    from harness.errors import ScenarioError
    from harness.scenario import find_scenario

    try:
        return find_scenario(argument)
    except OSError as e:
        raise ScenarioError(argument, f"cannot be looked up ({e.strerror or e})") from None


@contextmanager
def saved_text(path: Path, shown: str = "") -> Iterator[str]:
    """A saved transcript's text, read to be loaded in the `with` block: a scenario given
    instead (its first line is not a transcript's header) is told to `run` it."""
    from harness.errors import TranscriptFormatError
    from harness.files import read_input

    try:
        yield read_input(path, shown=shown or None)
    except TranscriptFormatError as e:
        if path.suffix != ".toml" or "header line" not in e.message:
            raise
        shown = shown or str(path)
        raise HarnessError(e.where, f"{e.message}; {shown} is a scenario: run it with `harness run {shown}`") from None


def checked(*outputs: tuple[str, Path | None, str]) -> list[Path | None]:
    """Outputs (option, path or None, header) refused before the run unless each is harness's to
    write (none, or a file that begins with its header) and no two are one; made absolute (a tool's chdir cannot move them)."""
    from harness.files import check_target, same_file

    given = [(option, path, header) for option, path, header in outputs if path is not None]
    for option, path, header in given:
        check_target(path, header, option)
    if len(given) == 2 and same_file(given[0][1]) == same_file(given[1][1]):  # one would replace the other
        raise HarnessError(f"{given[1][0]} {given[1][1]}", f"is the file {given[0][0]} writes too; give each its own")
    return [None if path is None else path.absolute() for _, path, _ in outputs]


def write(path: Path, text: str, header: str, option: str, target: Path | None = None, failed: int = 0) -> None:
    """Write `target` (`checked` before the run), named as the user gave it: a `failed` run only where nothing is (KEPT)."""
    from harness.escape import one_line
    from harness.files import write_file

    kept = failed and (target or path).exists()
    if not kept:
        write_file(target or path, text, header, option)
    typer.echo(f"kept {one_line(str(path))} as it was: {KEPT}" if kept else f"wrote {one_line(str(path))}", err=True)


def new_console() -> Console:
    """A rich console on stdout, sized by stdout's own terminal: in the command its fd is a
    copy (fd 1 is /dev/null, harness.__main__), which rich's own look-up (fds 0, 1, 2) misses."""
    from rich.console import Console

    for name in ("COLUMNS", "LINES"):  # rich sizes the console by them: 0 would wrap nothing, forever
        if (value := os.environ.get(name, "").strip()) and not (value.isdigit() and 1 <= int(value) <= 100_000):
            from harness.escape import one_line

            raise HarnessError(name, f"{one_line(repr(value)[:40])} is not a whole number from 1 to 100,000 (unset it, or give the terminal's size)")
    try:
        sized = "COLUMNS" not in os.environ and "LINES" not in os.environ and sys.stdout.isatty()
        size = os.get_terminal_size(sys.stdout.fileno()) if sized else None
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
        from harness.render.frames import stop_was_off
        from harness.render.live import saved_events

        draw = listener(fmt, 0.0, False, stop_was_off(record))
        for event in saved_events(record):
            draw(event)


def listener(fmt: Format, delay: float, live: bool, stop_off: bool):
    """What draws a run as it happens (rich, events; tagged and json are written at the end), with
    call_lines. The rich view is drawn by rich where the terminal or rich's variables say so."""
    from harness.loop import nobody

    if fmt is Format.rich:
        from harness.render.live import LiveView

        watched = sys.stdout.isatty() or any(name in os.environ for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"))
        return call_lines(LiveView(new_console() if watched else sys.stdout, delay, stop_off), live)
    if fmt is Format.events:
        from harness.render.json import event_line

        return call_lines(lambda event: sys.stdout.write(event_line(event) + "\n"), live)  # buffered: a flush per line costs more than the event
    return call_lines(nobody, live)


def call_lines(draw, live: bool):
    """`draw`, and for a `live` run off a terminal (a CI log) one line on stderr as each model
    call ends, so the log is never silent for a run's length: `call 2: 418 characters, 1.93 s`."""
    from harness.events import CompletionEnded, RoundStarted

    if not live or sys.stderr.isatty():
        return draw
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
