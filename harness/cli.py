"""The `harness` command. Thin: parse arguments, call the library, print.

Exit codes: 0 done, 1 a replay check found a difference, 2 bad input (one line on
stderr naming the file, field or argument; never a traceback), 130 interrupted.
"""

from __future__ import annotations

import os
import sys
import tempfile
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from typer.core import TyperGroup

from harness.agent import BadRequest, answer, parse_request, scenario_for
from harness.errors import HarnessError
from harness.events import Event
from harness.frames import cost_table, costs, frames
from harness.record import open_run, run_scenario
from harness.record import replay as replay_text
from harness.render.events import event_line
from harness.render.html import GENERATOR, page
from harness.render.json import to_json
from harness.render.markdown import notes
from harness.render.live import LiveView, saved_events
from harness.render.stepper import frame_view, step_through
from harness.scenario import find_scenario, load_scenario, shipped_scenarios
from harness.transcript import HEADER, loads


class OneLineErrors(TyperGroup):
    """Every user error, click's or ours, becomes one line on stderr and exit code 2."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except typer.TyperException as e:  # click's usage errors: a bad option or argument
            typer.echo(f"error: {e.format_message()}", err=True)
            code = 2
        except HarnessError as e:
            typer.echo(f"error: {e}", err=True)
            code = 2
        except typer.Abort:
            typer.echo("interrupted", err=True)
            code = 130
        code = code if isinstance(code, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code


app = typer.Typer(
    cls=OneLineErrors,
    name="harness",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="A ReAct harness you can see through: one text buffer, every byte tagged with its author.",
)


@app.callback(invoke_without_command=True)
def _root(ctx: typer.Context) -> None:
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())


class Format(StrEnum):
    rich = "rich"
    tagged = "tagged"
    json = "json"
    events = "events"


FormatOption = Annotated[
    Format,
    typer.Option("--format", "-f", help="rich: coloured by author; tagged: the save format; json; events: JSON Lines."),
]


def _console() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _emit(fmt: Format, saved: str, source: str) -> None:
    """Print a saved-format text in the chosen format (a bad record is reported before anything)."""
    transcript, info = loads(saved, source)
    if fmt is Format.tagged:
        sys.stdout.write(saved)
        return
    if fmt is Format.json:
        typer.echo(to_json(transcript, info))
        return
    draw = LiveView(_console()) if fmt is Format.rich else (lambda event: typer.echo(event_line(event)))
    for event in saved_events(transcript, info):
        draw(event)


def _print_event(event: Event) -> None:
    typer.echo(event_line(event))


def _read(path: Path) -> str:
    try:
        with open(path, encoding="utf-8", newline="") as f:  # keep "\r" as it is
            return f.read()
    except OSError as e:
        raise HarnessError(str(path), f"cannot read the file ({e.strerror})") from None
    except UnicodeDecodeError:
        raise HarnessError(str(path), "the file is not UTF-8 text") from None


def _check_target(option: str, path: Path, ours: str) -> None:
    """Refuse before running: a missing folder, or an existing file that harness did not write."""
    if path.is_dir() or not path.parent.is_dir():
        raise HarnessError(f"{option} {path}", "needs a file path in an existing folder")
    if path.exists():
        with open(path, encoding="utf-8", errors="replace") as f:
            if ours not in f.read(4096):
                raise HarnessError(f"{option} {path}", "the file exists and harness did not write it; not overwriting it")


def _write(path: Path, text: str, option: str = "--save") -> None:
    """Write all or nothing: a temporary file beside the target, then a rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # as an ordinary new file would be, not mkstemp's 0600
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise HarnessError(f"{option} {path}", f"cannot write ({e.strerror})") from None


@app.command()
def run(
    scenario: Annotated[str, typer.Argument(help="A scenario .toml file, or the name of a shipped one (see `harness list`).")],
    format: FormatOption = Format.rich,
    save: Annotated[Path | None, typer.Option(help="Also save the transcript (save format v1) to this file.")] = None,
    no_stop: Annotated[bool, typer.Option("--no-stop", help="Turn the stop sequences off: see what the model writes when nothing cuts it.")] = False,
    max_steps: Annotated[int | None, typer.Option(min=0, help="Model calls before the run stops (default: the scenario's).")] = None,
    live: Annotated[bool, typer.Option("--live", help="Draw the run as it streams, slowly enough to watch.")] = False,
    delay: Annotated[float | None, typer.Option(min=0, help="Seconds to wait after each piece of streamed text (implies --live).")] = None,
    cost: Annotated[bool, typer.Option("--cost", help="After the run, a table of what each model call was sent.")] = False,
) -> None:
    """Run a scenario on its scripted model and print the transcript."""
    if (live or delay is not None or cost) and format is not Format.rich:
        flag = "--cost" if cost else "--live"
        raise HarnessError(flag, "goes with the rich view; it cannot go with --format " + format.value)
    path = find_scenario(scenario)
    spec = load_scenario(path)
    if max_steps is not None:
        spec = spec.but(max_steps=max_steps)
    if no_stop:
        spec = spec.but(use_stop=False)
    if save is not None:
        _check_target("--save", save, HEADER)
    # rich and events are drawn from the events as they happen; tagged and json at the end.
    if format is Format.rich:
        recorded = run_scenario(spec, LiveView(_console(), delay if delay is not None else 0.03 if live else 0.0))
    elif format is Format.events:
        recorded = run_scenario(spec, _print_event)
    else:
        recorded = run_scenario(spec)
    if save is not None:
        _write(save, recorded.saved)
    if format in (Format.tagged, Format.json):
        _emit(format, recorded.saved, str(path))
    if cost:
        typer.echo("\nThe model is sent the whole buffer on every call:\n" + cost_table(costs(recorded.result.transcript)))
    if recorded.result.stop_reason == "canceled" and spec.interrupt is None:
        raise typer.Exit(130)  # a real Ctrl-C; a scenario's scripted interrupt is a demo, not a failure


@app.command()
def show(
    saved: Annotated[Path, typer.Argument(help="A saved transcript.")],
    format: FormatOption = Format.rich,
) -> None:
    """Print a saved transcript."""
    _emit(format, _read(saved), str(saved))


@app.command()
def replay(
    saved: Annotated[Path, typer.Argument(help="A saved transcript.")],
    check: Annotated[bool, typer.Option("--check", help="Exit 1 with a unified diff if the replay differs from the file.")] = False,
    format: FormatOption = Format.rich,
) -> None:
    """Run the loop again from a saved transcript: its model turns are the script."""
    result = replay_text(_read(saved), str(saved))
    if not check:
        _emit(format, result.fresh, str(saved))
        return
    if result.matches:
        typer.echo(f"ok: replaying {saved} gives the same transcript, byte for byte")
        return
    typer.echo(result.diff(str(saved)), nl=False)
    raise typer.Exit(1)


@app.command()
def agent(
    transcript: Annotated[Path | None, typer.Option(help="Also save the run's transcript (save format v1) here.")] = None,
) -> None:
    """Read one run_agent request (JSON) on stdin; print one JSON answer on stdout."""
    try:
        request = parse_request(typer.get_binary_stream("stdin").read())
    except BadRequest as e:
        typer.echo(e.to_json())
        typer.echo(f"error: {e.message}", err=True)
        raise typer.Exit(2) from None
    if transcript is not None:
        _check_target("--transcript", transcript, HEADER)
    recorded = run_scenario(scenario_for(request))
    if transcript is not None:
        _write(transcript, recorded.saved, "--transcript")
    typer.echo(answer(recorded).to_json())


@app.command()
def step(
    target: Annotated[str, typer.Argument(help="A scenario (file or shipped name) or a saved transcript.")],
    frame: Annotated[int | None, typer.Option("--frame", min=0, help="Print frame K and exit (no keys, no screen).")] = None,
) -> None:
    """Step through a run in the terminal, one addition to the buffer at a time."""
    fs = frames(*open_run(target))
    if frame is not None:
        if frame >= len(fs):
            raise HarnessError(f"--frame {frame}", f"this run has frames 0 to {len(fs) - 1}")
        _console().print(frame_view(fs, frame))
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise HarnessError("harness step", "needs a terminal to read keys; use --frame K to print one frame")
    step_through(_console(), fs)


@app.command()
def export(
    target: Annotated[str, typer.Argument(help="A scenario (file or shipped name) or a saved transcript.")],
    html: Annotated[Path | None, typer.Option("--html", help="Write one self-contained HTML stepper here.")] = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="Write the steps as Markdown, for course notes.")] = None,
) -> None:
    """Export a run as one HTML file that opens anywhere (a stepper, the facts, the cost), or as Markdown."""
    if html is None and markdown is None:
        raise HarnessError("harness export", "say where: --html FILE and/or --markdown FILE")
    if html is not None:
        _check_target("--html", html, GENERATOR)
    if markdown is not None:
        _check_target("--markdown", markdown, "# harness · ")
    transcript, info = open_run(target)
    title = "harness · " + ((info.get("scenario") or {}).get("title") or Path(target).stem)
    if html is not None:
        _write(html, page(transcript, info, title), "--html")
        typer.echo(f"wrote {html}: open it in any browser")
    if markdown is not None:
        _write(markdown, notes(transcript, info, title), "--markdown")
        typer.echo(f"wrote {markdown}")


@app.command("list")
def list_scenarios() -> None:
    """List the scenarios shipped with harness."""
    for path in shipped_scenarios():
        spec = load_scenario(path)
        typer.echo(f"{path.stem:<22} {spec.dialect:<12} {spec.title or spec.question}")


def main() -> None:
    app()
