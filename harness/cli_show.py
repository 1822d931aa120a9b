"""The commands that look at a run without changing it: `show`, `step`, `export`, `list`."""


import sys
from pathlib import Path
from typing import Annotated

import typer

from harness.cli_io import (
    BaseUrlOption, Format, FormatOption, ModelOption, ModelOptions, NoStop,
    as_asked, checked, failure, named, new_console, output_path, saved_text, scenario_file, show_record, tell_stderr, write,
)  # fmt: skip
from harness.errors import HarnessError


def show(
    saved: Annotated[str, typer.Argument(help="A saved transcript (from run --save).")],
    format: FormatOption = Format.rich,
    messages: Annotated[bool, typer.Option("--messages", help="A chat run: the messages each call sent, as the server got them.")] = False,
) -> None:
    """Print a saved transcript."""
    from harness.saved import load_record

    path = Path(named(saved, "saved", "transcript"))
    with saved_text(path) as text:
        record = load_record(text, str(path))  # everything to show is in the file
    if messages:
        from harness.backends.messages import sent_text

        typer.echo(sent_text(record, saved), nl=False)
        return
    show_record(format, record)


Target = Annotated[str, typer.Argument(help="A scenario (file or shipped name) or a saved transcript.")]


def open_target(target: str, no_stop: bool, models: ModelOptions):
    """A saved transcript as it was run, or a scenario run now (as `run` would, options too)."""
    from harness.files import read_input
    from harness.record import open_run, run_scenario
    from harness.scenario import load_scenario
    from harness.transcript import HEADER

    named(target, "target", "scenario or transcript")
    if not no_stop and models == ModelOptions():
        return open_run(target)
    if Path(target).is_file() and read_input(Path(target)).startswith(HEADER):
        raise HarnessError("--no-stop" if no_stop else "--model", f"goes with a scenario; {target} is a saved run and is shown as it was run")
    spec = as_asked(load_scenario(scenario_file(target)), None, no_stop)
    live = models.open()
    record = run_scenario(spec, model=live)
    tell_stderr(record, live)  # (the command exits 3, cli_io.failure, once it has written what it writes)
    return record


def step(
    target: Target,
    frame: Annotated[int | None, typer.Option("--frame", min=0, help="Print frame K and exit (no keys, no screen).")] = None,
    no_stop: NoStop = False,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    messages: Annotated[bool, typer.Option("--messages", help="With --frame K, a chat run: the messages that frame's call sent (the m key).")] = False,
) -> None:
    """Step through a run in the terminal, one frame (one addition to the buffer) at a time.

    Keys: Enter, right arrow or space next; left arrow or backspace back; Home, End;
    PgUp, PgDn, up, down scroll; c the cut text whole or short; m (a chat run) the messages
    the call was sent; q quits.
    """
    from harness.render.frames import frames, stop_was_off
    from harness.render.sent import SentMessages
    from harness.render.stepper import frame_view, sent_view, step_through

    if messages and frame is None:
        raise HarnessError("--messages", "goes with --frame K; while stepping, the m key shows them")
    models = ModelOptions(model, base_url)
    record = open_target(target, no_stop, models)
    fs, stop_off = frames(record), stop_was_off(record)
    sent = SentMessages(record, fs)
    if not fs:
        raise HarnessError(target, "this run has nothing to step through: its transcript holds no text")
    if frame is None:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            raise HarnessError("harness step", "needs a terminal to read keys; use --frame K to print one frame")
        step_through(new_console(), fs, sent, stop_off)
    else:
        if frame >= len(fs):
            raise HarnessError(f"--frame {frame}", f"this run has frames 0 to {len(fs) - 1}")
        if messages and not sent.chat:
            from harness.backends.messages import NOT_CHAT

            raise HarnessError(f"{target}: --messages", NOT_CHAT)
        console = new_console()
        console.print(sent_view(console, fs, frame, sent) if messages else frame_view(fs, frame, console, stop_off))
    raise typer.Exit(failure(record, models.live))  # a live model that failed (said on stderr): exit 3 after the frames


def export(
    target: Target,
    html: Annotated[Path | None, typer.Option("--html", parser=output_path, metavar="<path>", help="Write one self-contained HTML stepper here.")] = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", parser=output_path, metavar="<path>", help="Write the frames as Markdown, for course notes.")] = None,
    no_stop: NoStop = False,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
) -> None:
    """Export a run as one HTML file that opens anywhere (a stepper, the facts, the cost per call), or as Markdown."""
    from harness.render.frames import stop_was_off
    from harness.render.html import PAGE_HEADER, page
    from harness.render.markdown import NOTES_HEADER, notes

    if html is None and markdown is None:
        raise HarnessError("harness export", "say where: --html FILE and/or --markdown FILE")
    outputs = (("--html", html, PAGE_HEADER), ("--markdown", markdown, NOTES_HEADER))
    targets = checked(*outputs)
    models = ModelOptions(model, base_url)
    record = open_target(target, no_stop, models)
    title = (record.scenario.title if record.scenario else "") or Path(target).stem
    if stop_was_off(record):  # its title may say what the stop sequence does: say what happened instead
        title = f"{title.split(':')[0]} — run with no stop sequence (--no-stop): nothing cut what the model wrote"
    for (option, path, header), target, view in zip(outputs, targets, (page, notes)):
        if path is not None:
            write(path, view(record, "harness · " + title), header, option, target)
    raise typer.Exit(failure(record, models.live))  # a live model failed (said on stderr): the page shows where


def list_scenarios() -> None:
    """List the scenarios shipped with harness."""
    from harness.scenario import load_scenario, shipped_scenarios

    typer.echo(f"{'scenario':<22} {'dialect':<12} what it shows")
    for path in shipped_scenarios():
        spec = load_scenario(path)
        typer.echo(f"{path.stem:<22} {spec.dialect:<12} {spec.title or spec.question}")  # shipped: ours
