"""`harness run SCENARIO` (several, or a folder, go to harness.cli_batch) and `harness
agent`, the same single run asked for as one run_agent request on stdin."""

import os
from pathlib import Path
from typing import Annotated

import typer

from harness.cli_io import (
    BaseUrlOption, Format, FormatOption, Jobs, MaxChars, MaxSeconds, MaxTokens, ModelOption, ModelOptions, NoStop, Strict, WaitForServer,
    as_asked, checked, failure, listener, named, output_path, scenario_file, seconds, show_record, tell_stderr, write,
)  # fmt: skip
from harness.errors import HarnessError

def _scenario_names(incomplete: str) -> list[str]:
    """Shell completion for a scenario: the shipped names, and .toml files here."""
    from harness.scenario import shipped_scenarios

    names = [p.stem for p in shipped_scenarios()] + [str(p) for p in Path().glob("*.toml")]
    return [n for n in names if n.startswith(incomplete)]


def run(
    scenarios: Annotated[
        list[str],
        typer.Argument(
            metavar="SCENARIO...",
            help="Scenario .toml files, names of shipped ones (see `harness list`), or folders (every scenario under them, except in hidden folders such as .venv).",
            autocompletion=_scenario_names,
        ),
    ],
    format: FormatOption = Format.rich,
    save: Annotated[Path | None, typer.Option(parser=output_path, metavar="<path>", help="Also save the transcript (save format v1) to this file.")] = None,
    no_stop: NoStop = False,
    max_steps: Annotated[int | None, typer.Option(min=0, help="Model calls before the run stops (default: the scenario's).")] = None,
    live: Annotated[bool, typer.Option("--live", help="Draw the run as it streams, slowly enough to watch.")] = False,
    delay: Annotated[float | None, typer.Option(min=0, max=10, callback=seconds, help="Seconds to wait after each piece of streamed text (implies --live).")] = None,
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
    save_dir: Annotated[Path | None, typer.Option(parser=output_path, metavar="<path>", help="Several scenarios: save each transcript as DIR/<scenario>.txt.")] = None,
    report: Annotated[Path | None, typer.Option(parser=output_path, metavar="<path>", help="Several scenarios: write the summary as JSON here.")] = None,
    junit: Annotated[Path | None, typer.Option(parser=output_path, metavar="<path>", help="Several scenarios: write a JUnit XML report here, for CI.")] = None,
    fail_on: Annotated[str | None, typer.Option(metavar="REASON,...", help="Several scenarios: exit 1 if a run ends so (stop reasons, or mismatch).")] = None,
) -> None:
    """Run scenarios on their scripted model, or on a live one; one prints its transcript, several a summary."""
    models = ModelOptions(model, base_url, max_tokens, max_chars, max_seconds, strict, wait_for_server)
    if peek is not None and not models.live:
        raise HarnessError("--peek", "goes with a live --model; a script is always read whole")
    if len(scenarios) == 1:  # (among several, an empty one is a run that cannot start: cli_batch)
        named(scenarios[0], "SCENARIO", "scenario")
    if save is not None and save_dir is not None:
        raise HarnessError("--save", "and --save-dir both say where to save; give one of them")
    one_run = [(option, instead) for option, given, instead in (  # options that show one run, and what to give instead with several
        ("--save", save is not None, "use --save-dir DIR"),
        ("--format", format is not Format.rich, "several runs print a summary; --report FILE writes it as JSON"),
        ("--live", live or delay is not None, "several runs show progress on stderr"),
        ("--cost", cost, "run one scenario to see its cost"),
    ) if given]  # fmt: skip
    batch = [o for o, value in (("--save-dir", save_dir), ("--report", report), ("--junit", junit), ("--fail-on", fail_on)) if value is not None]
    several = len(scenarios) > 1 or any(os.path.isdir(s) for s in scenarios)
    for option, instead in one_run if several or batch else ():  # the first one given is named
        raise HarnessError(option, f"goes with one scenario; {instead}" if several else f"shows one run, and {batch[0]} makes this a batch (a summary of runs); give one of them")
    if not (several or batch):
        return run_one(scenarios[0], format, save, max_steps, no_stop, live or delay is not None, delay, cost, models, peek)
    from harness.cli_batch import run_many

    run_many(scenarios, jobs, save_dir, report, junit, fail_on, models, peek or 0, max_steps, no_stop)


def run_one(
    scenario: str, format: Format, save: Path | None, max_steps: int | None, no_stop: bool,
    live: bool, delay: float | None, cost: bool, models: ModelOptions, peek: int | None,
) -> None:  # fmt: skip
    """`harness run SCENARIO`: the one run, shown and saved."""
    from harness.record import run_scenario
    from harness.scenario import load_scenario
    from harness.transcript import HEADER

    if (live or cost) and format is not Format.rich:
        raise HarnessError("--cost" if cost else "--live", "goes with the rich view; it cannot go with --format " + format.value)
    spec = as_asked(load_scenario(scenario_file(scenario)), max_steps, no_stop)
    live_model = models.open()
    [target] = checked(("--save", save, HEADER))
    emit = listener(format, delay if delay is not None else 0.03 if live else 0.0, live_model is not None, not spec.use_stop)
    record = run_scenario(spec, emit, live_model, peek or 0, Path.cwd())
    tell_stderr(record, live_model)
    if (spec.expect, spec.expect_regex) != (None, None) and record.stop_reason != "canceled":  # as a batch's summary says it
        from harness.expect import matches

        typer.echo(f"expect: {'match' if matches(spec, record.final_answer) else 'mismatch'}", err=True)
    failed = failure(record, live_model, spec.interrupt is not None)  # a scenario's scripted interrupt is a demo, not a failure
    if target is not None:  # the scenario named relative to the saved file, which replay finds it by
        record = record.placed(target)
        write(save, record.saved, HEADER, "--save", target, failed)
    if format in (Format.tagged, Format.json):
        show_record(format, record)
    if cost:
        from harness.render.frames import cost_table, costs

        typer.echo("\nThe model is sent the whole buffer on every call:\n" + cost_table(costs(record.transcript), [c.tokens for c in record.calls]))
    raise typer.Exit(failed)


def agent(
    transcript: Annotated[Path | None, typer.Option(parser=output_path, metavar="<path>", help="Also save the run's transcript (save format v1) here.")] = None,
) -> None:
    """Read one run_agent request (JSON) on stdin; print one JSON answer on stdout.

    \b
    In:  {"op": "run_agent", "task": TEXT, "max_steps": 15, "workspace": {PATH: TEXT},
          "model_turns": [{"thought": TEXT, "action": {"tool": NAME, "args": {...}}}, ...]}
    Out: {"final_message": TEXT, "status": STATUS, "steps": N, "workspace": {PATH: TEXT}}

    Each turn runs through the ordinary loop, on an in-memory workspace, never the disk:
    read_file(path), write_file(path, content), patch_file(path, old_str, new_str) (only
    where old_str occurs once) and finish(message). STATUS is completed (finish was
    called), max_steps_exceeded, turns_exhausted (the turns ran out first) or canceled. A
    bad request prints {"error": {"code": ..., "message": ...}} (invalid_utf8,
    invalid_json, not_an_object, unknown_op, invalid_field: a misspelt field too, or a
    workspace path the tools would refuse) and exits 2. Other fields are ignored.
    """
    from harness.protocol import BadRequest, answer, parse_request, scenario_for
    from harness.record import run_scenario
    from harness.transcript import HEADER

    try:
        request = parse_request(typer.get_binary_stream("stdin").read())
    except BadRequest as e:
        typer.echo(e.to_json())
        raise  # and, as any bad input, one line on stderr and exit 2 (harness.cli)
    [target] = checked(("--transcript", transcript, HEADER))
    record = run_scenario(scenario_for(request))
    if transcript is not None:
        write(transcript, record.saved, HEADER, "--transcript", target)
    typer.echo(answer(record))
