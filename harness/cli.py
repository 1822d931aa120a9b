"""The `harness` command. Thin: parse arguments, call the library, print.

Exit codes: 0 done, 1 a replay check found a difference, 2 bad input (one line on
stderr naming the file, field or argument; never a traceback), 3 the model failed
(the run is still saved), 130 interrupted.

Each command imports what it uses when it runs, so `harness --help` stays fast.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from harness.cli_batch import FailOn, Jobs, Junit, Report, SaveDir
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
from harness.cli_views import (  # under the names the commands have always called them by
    Format,
    FormatOption,
)
from harness.cli_views import despite_a_closed_pipe as _despite_a_closed_pipe
from harness.cli_views import live_view as _live
from harness.cli_views import new_console as _console
from harness.cli_views import print_event as _print_event
from harness.cli_views import show_record as _show
from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.run_record import RunRecord

MODEL_FAILED = 3  # the run ended in model_error: a live model or server failed


class OneLineErrors(TyperGroup):
    """Every user error, click's or ours, becomes one line on stderr and exit code 2."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # `harness show x | head`: the reader has all it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush
            return 0

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except typer.TyperException as e:  # click's usage errors: a bad option or argument
            typer.echo(f"error: {e.format_message()}", err=True)
            code = 2
        except HarnessError as e:  # it may quote a saved file's text: shown, never obeyed
            from harness.escape import for_terminal

            typer.echo(f"error: {for_terminal(str(e))}", err=True)
            code = 2
        except (typer.Abort, KeyboardInterrupt):
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


def _version(value: bool) -> None:
    if value:
        from harness import __version__

        typer.echo(f"harness {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())


def _scenario_names(incomplete: str) -> list[str]:
    """Shell completion for a scenario: the shipped names, and .toml files here."""
    from harness.scenario import shipped_scenarios

    names = [p.stem for p in shipped_scenarios()] + [str(p) for p in Path().glob("*.toml")]
    return [n for n in names if n.startswith(incomplete)]


def _saved(path: Path) -> RunRecord:
    """A saved transcript, read and checked; any problem is one line naming the file."""
    from harness.record import read_text
    from harness.run_record import load_record

    with _scenario_hint(path):
        return load_record(read_text(path), str(path))  # everything to show is in the file


@contextmanager
def _scenario_hint(path: Path) -> Iterator[None]:
    """A scenario given where a saved transcript belongs: the error says to `run` it."""
    from harness.errors import TranscriptFormatError

    try:
        yield
    except TranscriptFormatError as e:
        if path.suffix != ".toml" or "header line" not in e.message:
            raise
        raise HarnessError(e.where, f"{e.message}; {path} is a scenario: run it with `harness run {path}`") from None


def _write(path: Path, text: str, header: str, option: str, target: Path | None = None) -> None:
    """Write `target` (the path made absolute before the run, so a tool's os.chdir cannot
    move it), named as the user gave it."""
    from harness.files import write_file

    write_file(target or path, text, header, option)
    typer.echo(f"wrote {path}", err=True)


def _seconds(value: float | None) -> float | None:
    """A number of seconds: NaN passes every range check (it compares false), so say so."""
    if value is not None and math.isnan(value):
        raise typer.BadParameter("nan is not a number of seconds; give one from 0 to 10")
    return value


@app.command()
def run(
    scenarios: Annotated[
        list[str],
        typer.Argument(
            metavar="SCENARIO...",
            help="Scenario .toml files, names of shipped ones (see `harness list`), or folders (every *.toml under them).",
            autocompletion=_scenario_names,
        ),
    ],
    format: FormatOption = Format.rich,
    save: Annotated[Path | None, typer.Option(help="Also save the transcript (save format v1) to this file.")] = None,
    no_stop: Annotated[bool, typer.Option("--no-stop", help="Turn the stop sequences off: see what the model writes when nothing cuts it.")] = False,
    max_steps: Annotated[int | None, typer.Option(min=0, help="Model calls before the run stops (default: the scenario's).")] = None,
    live: Annotated[bool, typer.Option("--live", help="Draw the run as it streams, slowly enough to watch.")] = False,
    delay: Annotated[float | None, typer.Option(min=0, max=10, callback=_seconds, help="Seconds to wait after each piece of streamed text (implies --live).")] = None,
    cost: Annotated[bool, typer.Option("--cost", help="After the run, a table of what each model call was sent.")] = False,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    peek: Annotated[int | None, typer.Option(min=1, help="With a live model: read N characters past the stop, only to show what it prevented.")] = None,
    max_tokens: MaxTokens = None,
    max_chars: MaxChars = None,
    max_seconds: MaxSeconds = None,
    strict: Strict = None,
    wait_for_server: WaitForServer = None,
    jobs: Jobs = 1,
    save_dir: SaveDir = None,
    report: Report = None,
    junit: Junit = None,
    fail_on: FailOn = None,
) -> None:
    """Run scenarios on their scripted model, or on a live one; one prints its transcript, several a summary."""
    batch = (save_dir, report, junit, fail_on)
    if len(scenarios) > 1 or any(Path(s).is_dir() for s in scenarios) or any(o is not None for o in batch):
        from harness.cli_batch import Options, refuse_single_run_options, run_many

        refuse_single_run_options(format is not Format.rich, save, live or delay is not None, cost)
        reasons = frozenset(r.strip() for r in (fail_on or "").split(",") if r.strip())
        call = CallOptions(max_tokens, max_chars, max_seconds, strict, wait_for_server)
        run_many(scenarios, Options(jobs, save_dir, report, junit, reasons, model, base_url, call, peek or 0, max_steps, no_stop))
        return
    scenario = scenarios[0]
    from harness.loop import nobody
    from harness.record import run_scenario
    from harness.scenario import find_scenario, load_scenario
    from harness.transcript import HEADER

    if (live or delay is not None or cost) and format is not Format.rich:
        flag = "--cost" if cost else "--live"
        raise HarnessError(flag, "goes with the rich view; it cannot go with --format " + format.value)
    spec = load_scenario(find_scenario(scenario))
    if max_steps is not None:
        spec = spec.but(max_steps=max_steps)
    if no_stop:
        spec = spec.but(use_stop=False)
    live_model = live_model_from(model, base_url, CallOptions(max_tokens, max_chars, max_seconds, strict, wait_for_server))
    if peek is not None and live_model is None:
        raise HarnessError("--peek", "goes with a live --model; a script is always read whole")
    target = None if save is None else save.absolute()  # before the run: a tool may os.chdir
    if save is not None:
        from harness.files import check_target

        check_target(save, HEADER, "--save")
    # rich and events are drawn from the events as they happen; tagged and json at the end.
    emit = _live(delay if delay is not None else 0.03 if live else 0.0) if format is Format.rich else None
    if format is Format.events:
        emit = _print_event
    root = Path.cwd()
    record = run_scenario(spec, _despite_a_closed_pipe(emit) if emit else nobody, live_model, peek or 0, root)
    if live_model is not None:
        record = record.but(model=model)  # a fact of the recording: which model made it
    tell_stderr(record, live_model)
    if target is not None:  # the scenario named relative to the saved file, which replay finds it by
        record = record.placed(target)
        _write(save, record.saved, HEADER, "--save", target)
    if format in (Format.tagged, Format.json):
        _show(format, record)
    if cost:
        from harness.render.frames import cost_table, costs

        typer.echo("\nThe model is sent the whole buffer on every call:\n" + cost_table(costs(record.transcript), [c.tokens for c in record.calls]))
    if record.stop_reason == "canceled" and spec.interrupt is None:
        raise typer.Exit(130)  # a real Ctrl-C; a scenario's scripted interrupt is a demo, not a failure
    if record.stop_reason == "model_error" and live_model is not None:
        raise typer.Exit(MODEL_FAILED)


@app.command()
def show(
    saved: Annotated[Path, typer.Argument(help="A saved transcript (from run --save).")],
    format: FormatOption = Format.rich,
    messages: Annotated[bool, typer.Option("--messages", help="A chat run: the messages each call sent, as the server got them.")] = False,
) -> None:
    """Print a saved transcript."""
    if messages:
        from harness.backends.messages import sent_text

        typer.echo(sent_text(_saved(saved), str(saved)), nl=False)
        return
    _show(format, _saved(saved))


@app.command()
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
    with _scenario_hint(saved):
        result = replay_text(read_text(saved), str(saved), model=live_model, root=Path.cwd())
    tell_stderr(result.record, live_model)
    if not check:
        _show(format, result.record)
        return
    if result.matches:
        typer.echo(f"ok: replaying {saved} gives the same transcript, byte for byte")
        return
    diff = transcript_diff(result.saved, result.fresh, str(saved))
    typer.echo(diff if diff.endswith("\n") else diff + "\n", nl=False)
    typer.echo("(under pytest, `pytest --harness-update` rewrites a saved transcript whose replay changed)", err=True)
    raise typer.Exit(1)


@app.command()
def agent(
    transcript: Annotated[Path | None, typer.Option(help="Also save the run's transcript (save format v1) here.")] = None,
) -> None:
    """Read one run_agent request (JSON) on stdin; print one JSON answer on stdout."""
    from harness.protocol import BadRequest, answer, parse_request, scenario_for
    from harness.record import run_scenario
    from harness.transcript import HEADER

    try:
        request = parse_request(typer.get_binary_stream("stdin").read())
    except BadRequest as e:
        typer.echo(e.to_json())
        typer.echo(f"error: {e.message}", err=True)
        raise typer.Exit(2) from None
    target = None if transcript is None else transcript.absolute()
    if transcript is not None:
        from harness.files import check_target

        check_target(transcript, HEADER, "--transcript")
    record = run_scenario(scenario_for(request))
    if transcript is not None:
        _write(transcript, record.saved, HEADER, "--transcript", target)
    typer.echo(answer(record).to_json())


def _open(target: str, no_stop: bool = False, model: str | None = None, base_url: str | None = None) -> RunRecord:
    """A saved transcript as it was run, or a scenario run now (as `run` would, options too)."""
    from harness.record import open_run, read_text, run_scenario
    from harness.scenario import find_scenario, load_scenario
    from harness.transcript import HEADER

    if not no_stop and model is None and base_url is None:
        return open_run(target)
    path = Path(target)
    if path.is_file() and read_text(path).startswith(HEADER):
        flag = "--no-stop" if no_stop else "--model"
        raise HarnessError(flag, f"goes with a scenario; {target} is a saved run and is shown as it was run")
    spec = load_scenario(find_scenario(target))
    return run_scenario(spec.but(use_stop=False) if no_stop else spec, model=live_model_from(model, base_url))


NoStopOption = Annotated[bool, typer.Option("--no-stop", help="Run the scenario without its stop sequences, as `run --no-stop`.")]


@app.command()
def step(
    target: Annotated[str, typer.Argument(help="A scenario (file or shipped name) or a saved transcript.")],
    frame: Annotated[int | None, typer.Option("--frame", min=0, help="Print frame K and exit (no keys, no screen).")] = None,
    no_stop: NoStopOption = False,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    messages: Annotated[bool, typer.Option("--messages", help="With --frame K, a chat run: the messages that step's call sent (the m key).")] = False,
) -> None:
    """Step through a run in the terminal, one addition to the buffer at a time."""
    from harness.render.frames import frames
    from harness.render.sent import SentMessages
    from harness.render.stepper import frame_view, sent_view, step_through

    if messages and frame is None:
        raise HarnessError("--messages", "goes with --frame K; while stepping, the m key shows them")
    record = _open(target, no_stop, model, base_url)
    fs = frames(record)
    sent = SentMessages(record, fs)
    if frame is not None:
        if frame >= len(fs):
            raise HarnessError(f"--frame {frame}", f"this run has frames 0 to {len(fs) - 1}")
        if messages and not sent.chat:
            raise HarnessError(f"{target}: --messages", "this run did not go through a chat endpoint: each call was sent the buffer as one text")
        console = _console()
        console.print(sent_view(console, fs, frame, sent) if messages else frame_view(fs, frame, console))
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise HarnessError("harness step", "needs a terminal to read keys; use --frame K to print one frame")
    step_through(_console(), fs, sent)


@app.command()
def export(
    target: Annotated[str, typer.Argument(help="A scenario (file or shipped name) or a saved transcript.")],
    html: Annotated[Path | None, typer.Option("--html", help="Write one self-contained HTML stepper here.")] = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="Write the steps as Markdown, for course notes.")] = None,
    no_stop: NoStopOption = False,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
) -> None:
    """Export a run as one HTML file that opens anywhere (a stepper, the facts, the cost), or as Markdown."""
    from harness.files import check_target
    from harness.render.html import PAGE_HEADER, page
    from harness.render.markdown import NOTES_HEADER, notes

    if html is None and markdown is None:
        raise HarnessError("harness export", "say where: --html FILE and/or --markdown FILE")
    if html is not None:
        check_target(html, PAGE_HEADER, "--html")
    if markdown is not None:
        check_target(markdown, NOTES_HEADER, "--markdown")
    outputs = {option: path.absolute() for option, path in (("html", html), ("markdown", markdown)) if path}
    record = _open(target, no_stop, model, base_url)
    title = "harness · " + ((record.scenario.title if record.scenario else "") or Path(target).stem)
    if record.scenario is not None and not record.scenario.use_stop:
        title += " — but this run had no stop sequence (--no-stop)"
    if html is not None:
        _write(html, page(record, title), PAGE_HEADER, "--html", outputs["html"])
    if markdown is not None:
        _write(markdown, notes(record, title), NOTES_HEADER, "--markdown", outputs["markdown"])


@app.command("list")
def list_scenarios() -> None:
    """List the scenarios shipped with harness."""
    from harness.scenario import load_scenario, shipped_scenarios

    typer.echo(f"{'scenario':<22} {'dialect':<12} what it shows")
    for path in shipped_scenarios():
        spec = load_scenario(path)
        typer.echo(f"{path.stem:<22} {spec.dialect:<12} {spec.title or spec.question}")  # shipped: ours


def main() -> None:
    app()
