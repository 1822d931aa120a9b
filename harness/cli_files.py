"""What the commands share about files: reading a saved run, opening a target (a saved
run or a scenario run now), writing an output file and saying so on stderr."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from harness.cli_models import live_model_from, tell_stderr
from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.run_record import RunRecord


def named(argument: str, what: str, names: str) -> str:
    """An argument that names something: an empty one would be Path("."), the folder here."""
    if not argument.strip():
        raise HarnessError(what, f"an empty argument names no {names}")
    return argument


def scenario_file(argument: str) -> Path:
    """find_scenario's file, any OSError of looking for it one line naming the argument: on
    Python 3.11 `Path.is_dir()` raises on a name longer than the system allows."""
    from harness.errors import ScenarioError
    from harness.scenario import find_scenario

    try:
        return find_scenario(argument)
    except OSError as e:
        raise ScenarioError(argument, f"cannot be looked up ({e.strerror or e})") from None


def is_folder(path: Path) -> bool:
    """Whether `path` is a folder; False, never an OSError, for a name too long to look up
    (which then fails where it is read, as one line naming it)."""
    import os

    return os.path.isdir(path)


def output_path(value: str | Path) -> Path:
    """The value of an option that names an output (--save, --html, --save-dir, ...): an
    empty one is refused as empty, where Path("") would be ".", the folder here."""
    if isinstance(value, Path):
        return value
    if not value.strip():
        raise typer.BadParameter("the argument is empty; give a path")
    return Path(value)


def saved_run(path: Path) -> RunRecord:
    """A saved transcript, read and checked; any problem is one line naming the file."""
    from harness.record import read_text
    from harness.saved import load_record

    with scenario_hint(path):
        return load_record(read_text(path), str(path))  # everything to show is in the file


@contextmanager
def scenario_hint(path: Path) -> Iterator[None]:
    """A scenario given where a saved transcript belongs: the error says to `run` it."""
    from harness.errors import TranscriptFormatError

    try:
        yield
    except TranscriptFormatError as e:
        if path.suffix != ".toml" or "header line" not in e.message:
            raise
        raise HarnessError(e.where, f"{e.message}; {path} is a scenario: run it with `harness run {path}`") from None


def write(path: Path, text: str, header: str, option: str, target: Path | None = None) -> None:
    """Write `target` (the path made absolute before the run, so a tool's os.chdir cannot
    move it), named as the user gave it."""
    from harness.files import write_file

    write_file(target or path, text, header, option)
    from harness.escape import one_line

    typer.echo(f"wrote {one_line(str(path))}", err=True)


def open_target(target: str, no_stop: bool = False, model: str | None = None, base_url: str | None = None) -> RunRecord:
    """A saved transcript as it was run, or a scenario run now (as `run` would, options too)."""
    from harness.record import open_run, read_text, run_scenario
    from harness.scenario import load_scenario
    from harness.transcript import HEADER

    named(target, "target", "scenario or transcript")
    if not no_stop and model is None and base_url is None:
        return open_run(target)
    path = Path(target)
    if path.is_file() and read_text(path).startswith(HEADER):
        flag = "--no-stop" if no_stop else "--model"
        raise HarnessError(flag, f"goes with a scenario; {target} is a saved run and is shown as it was run")
    spec = load_scenario(scenario_file(target))
    live = live_model_from(model, base_url)
    record = run_scenario(spec.but(use_stop=False) if no_stop else spec, model=live)
    tell_stderr(record, live)  # (the command exits 3 once it has written what it writes: exit_if_failed)
    return record
