"""`harness run A B DIR ...`: many scenarios, each run as `harness run A` runs it, with
bounded concurrency (harness.batch), progress on stderr (harness.batch_progress), a
summary on stdout and reports for CI (harness.batch_report). `harness replay A B DIR`
shares `run_batch`."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from harness.cli_files import output_path
from harness.cli_models import CallOptions, RunModels
from harness.errors import HarnessError

if TYPE_CHECKING:  # imported when a batch runs: `harness --help` stays fast
    from harness.batch import Job, Outcome, Work, Wrap
    from harness.model import Model
    from harness.scenario import Scenario

INTERRUPTED = 130

Jobs = Annotated[int, typer.Option("--jobs", "-j", min=1, max=256, help="Several scenarios: how many run at once.")]
SaveDir = Annotated[Path | None, typer.Option("--save-dir", parser=output_path, metavar="<path>", help="Several scenarios: save each transcript as DIR/<scenario>.txt.")]
Report = Annotated[Path | None, typer.Option("--report", parser=output_path, metavar="<path>", help="Several scenarios: write the summary as JSON here.")]
Junit = Annotated[Path | None, typer.Option("--junit", parser=output_path, metavar="<path>", help="Several scenarios: write a JUnit XML report here, for CI.")]
FailOn = Annotated[
    str | None,
    typer.Option("--fail-on", metavar="REASON,...", help="Several scenarios: exit 1 if a run ends so (stop reasons, or mismatch)."),
]


@dataclass(frozen=True, slots=True)
class Options:
    jobs: int = 1
    save_dir: Path | None = None
    report: Path | None = None
    junit: Path | None = None
    fail_on: frozenset[str] = frozenset()
    model: str | None = None
    base_url: str | None = None
    call: CallOptions = CallOptions()
    peek: int = 0
    max_steps: int | None = None
    no_stop: bool = False


def gather(arguments: list[str]) -> list[Job]:
    """Names, files and folders (every *.toml under them, sorted), in the order given; a
    file given twice runs once. One that cannot be loaded is a Job with its error."""
    from harness.batch import Job
    from harness.cli_files import is_folder, scenario_file
    from harness.files import same_file
    from harness.scenario import load_scenario

    jobs, seen = [], set()
    for argument in arguments:
        if not argument.strip():  # Path("") is ".": an empty argument would run everything under here
            jobs.append(Job(repr(argument), None, f"{argument!r} names no scenario"))
            continue
        folder = Path(argument)
        try:
            # every *.toml that is not a folder: a FIFO or a broken link is named, never skipped unsaid
            paths = sorted(p for p in folder.rglob("*.toml") if not p.is_dir()) if is_folder(folder) else [scenario_file(argument)]
        except HarnessError as e:
            jobs.append(Job(Path(argument).stem, None, str(e)))
            continue
        if not paths:
            jobs.append(Job(argument, None, f"{argument}: the folder holds no .toml scenario"))
        for path in paths:
            if (key := same_file(path)) in seen:
                continue
            seen.add(key)
            try:
                jobs.append(Job(path.stem, load_scenario(path)))
            except HarnessError as e:
                jobs.append(Job(path.stem, None, str(e)))
    return jobs


def check(jobs: list[Job], options: Options) -> None:
    """Everything that can be refused is refused before the first run (exit 2)."""
    from harness.batch_report import JSON_HEADER, JUNIT_HEADER
    from harness.events import StopReason
    from harness.files import check_target, same_file
    from harness.transcript import HEADER

    known = {"mismatch", *StopReason}
    if unknown := sorted(options.fail_on - known):
        raise HarnessError("--fail-on", f"{unknown[0]!r} is not a stop reason or mismatch (known: {', '.join(sorted(known))})")
    if options.peek and options.model in (None, "scripted"):
        raise HarnessError("--peek", "goes with a live --model; a script is always read whole")
    for path, header, option in ((options.report, JSON_HEADER, "--report"), (options.junit, JUNIT_HEADER, "--junit")):
        if path is not None:
            check_target(path, header, option)
    outputs = [(o, p) for o, p in (("--report", options.report), ("--junit", options.junit)) if p is not None]
    if len(outputs) == 2 and same_file(outputs[0][1]) == same_file(outputs[1][1]):
        raise HarnessError(f"--junit {options.junit}", "is the file --report writes too; give each its own")
    if options.save_dir is None:
        return
    for option, path in outputs:  # a transcript would be written over the report, or the report over it
        if same_file(path.parent) == same_file(options.save_dir) and path.suffix == ".txt":
            raise HarnessError(f"{option} {path}", f"lies in --save-dir {options.save_dir}, among the transcripts; write it elsewhere")
    folder = options.save_dir
    try:
        os.lstat(folder)  # a name too long to look up: one line here, not in every run
    except FileNotFoundError:
        pass
    except OSError as e:
        raise HarnessError(f"--save-dir {folder}", f"cannot look at the folder ({e.strerror or e})") from None
    if folder.is_symlink() and not folder.exists():
        raise HarnessError(f"--save-dir {folder}", "is a link that loops or leads nowhere")
    if folder.exists() and not folder.is_dir():
        raise HarnessError(f"--save-dir {folder}", "is not a folder")
    if not folder.parent.is_dir():
        raise HarnessError(f"--save-dir {folder}", "its parent folder does not exist")
    names: dict[str, Job] = {}
    for job in (j for j in jobs if j.scenario is not None):
        if job.name in names:
            first, second = names[job.name].scenario.source, job.scenario.source  # type: ignore[union-attr]
            raise HarnessError(f"--save-dir {folder}", f"{first} and {second} would both be saved as {job.name}.txt")
        names[job.name] = job
    if folder.is_dir():  # a folder of earlier runs: only harness's own files are replaced
        for name in names:
            check_target(folder / f"{name}.txt", HEADER, "--save-dir")
    try:
        folder.mkdir(exist_ok=True)
    except OSError as e:
        raise HarnessError(f"--save-dir {folder}", f"cannot create the folder ({e.strerror or e})") from None


def worker(options: Options, root: Path, models: RunModels) -> Work:
    """The work of one run: what `harness run NAME --save DIR/NAME.txt` does."""
    from harness.batch import Outcome
    from harness.expect import matches
    from harness.files import write_file
    from harness.record import run_scenario
    from harness.transcript import HEADER

    def work(job: Job, wrap: Wrap) -> Outcome:
        start = time.perf_counter()
        assert job.scenario is not None
        spec = as_asked(job.scenario, options.max_steps, options.no_stop)
        try:
            with models.one() as live:  # a model of its own
                record = run_scenario(spec, model=live, peek=options.peek, root=root, wrap=wrap)
            seconds = time.perf_counter() - start
            saved = None
            if options.save_dir is not None:
                saved = (options.save_dir / f"{job.name}.txt").absolute()
                record = record.placed(saved)
                write_file(saved, record.saved, HEADER, "--save-dir")
        except HarnessError as e:  # a template or tool that is missing: found when it is built
            return Outcome(job.name, seconds=time.perf_counter() - start, error=str(e))
        outcome = Outcome.of(job.name, record, seconds, saved, matches(spec, record.final_answer))
        return replace(outcome, wanted=wanted(spec), notes=notes_of(live))

    return work


def as_asked(spec: Scenario, max_steps: int | None, no_stop: bool) -> Scenario:
    """The scenario with --max-steps and --no-stop applied."""
    spec = spec if max_steps is None else spec.but(max_steps=max_steps)
    return spec.but(use_stop=False) if no_stop else spec


def wanted(spec: Any) -> tuple[str, str] | None:
    """The scenario's `expect` or `expect_regex`, named, for the reports to say what a mismatch missed."""
    for field in ("expect", "expect_regex"):
        if getattr(spec, field) is not None:
            return field, getattr(spec, field)
    return None


def notes_of(model: Model | None) -> tuple[str, ...]:
    """What a run's model dropped on arrival, for its Outcome (the progress says it as it ends)."""
    return tuple(model.notes) if model is not None else ()


def run_batch(jobs: list[Job], work: Work, workers: int, what: str = "scenario", interrupt: Callable[[], Any] = lambda: None) -> tuple[list[Outcome], int, bool]:
    """The jobs run by `work` with progress on stderr, then the summary on stdout (after
    the diffs of replays that differ): every outcome in the jobs' order, how many never
    started, and whether Ctrl-C came. Each job that cannot run is one line on stderr."""
    from harness.batch import Outcome, run_all
    from harness.batch_progress import progress_for
    from harness.batch_report import one_line, summary

    for job in jobs:
        if job.error:
            typer.echo(f"error: {one_line(job.error)}", err=True)
    runnable = [j for j in jobs if not j.error]
    progress = progress_for(sys.stderr, len(runnable))
    try:
        outcomes, interrupted = run_all(runnable, work, workers, progress.started, progress.finished, interrupt, progress.heard, progress.tick)
    finally:
        progress.end()
    for outcome in outcomes:
        if outcome is not None and outcome.error:
            typer.echo(f"error: {one_line(outcome.error)}", err=True)
    ran = iter(outcomes)  # in the order of `runnable`; None: never started (Ctrl-C)
    ordered = [Outcome(j.name, error=j.error) if j.error else next(ran) for j in jobs]
    not_started = ordered.count(None)
    ordered = [o for o in ordered if o is not None]
    for o in ordered:  # a replay --check that differs: its diff, before the summary
        if o.diff:
            typer.echo(o.diff if o.diff.endswith("\n") else o.diff + "\n", nl=False)
    typer.echo(summary(ordered, not_started, what), nl=False)
    return ordered, not_started, interrupted


def run_many(arguments: list[str], options: Options) -> None:
    from harness.batch_report import exit_code, one_line, write_reports

    jobs = gather(arguments)
    check(jobs, options)
    given = {p.absolute(): p for p in (options.report, options.junit) if p is not None}
    earlier = earlier_runs(jobs, options.save_dir)
    options = replace(options, **{k: getattr(options, k).absolute() for k in ("save_dir", "report", "junit") if getattr(options, k) is not None})  # now: a tool's os.chdir cannot move them
    models = RunModels(options.model, options.base_url, options.call, options.jobs, sum(not j.error for j in jobs))  # a bad --model: one line, once
    try:
        ordered, not_started, interrupted = run_batch(jobs, worker(options, Path.cwd(), models), options.jobs, interrupt=models.interrupt)
    finally:
        models.close()
    for o in ordered:  # a folder reused by another recipe never loses a recording unsaid
        if o.transcript is not None and o.transcript in earlier:
            typer.echo(f"replaced {one_line(str(earlier[o.transcript]))} (it held an earlier run)", err=True)
    for path in write_reports(ordered, options.report, options.junit, options.fail_on, not_started):
        typer.echo(f"wrote {one_line(str(given.get(path, path)))}", err=True)
    if interrupted:
        end_interrupted()
    raise typer.Exit(exit_code(ordered, options.fail_on))


def earlier_runs(jobs: list[Job], save_dir: Path | None) -> dict[Path, Path]:
    """The transcripts --save-dir holds already that this batch will save again: absolute
    path -> the path as the user named it (check() has made sure harness wrote each one)."""
    if save_dir is None:
        return {}
    paths = (save_dir / f"{job.name}.txt" for job in jobs if job.scenario is not None)
    return {path.absolute(): path for path in paths if path.is_file()}


def end_interrupted() -> None:
    """Exit 130 after Ctrl-C (runs left stuck in their threads do not hold the command: harness.__main__)."""
    typer.echo("interrupted", err=True)
    raise typer.Exit(INTERRUPTED)


def refuse_single_run_options(format_given: bool, save: Path | None, live: bool, cost: bool, save_dir: Path | None = None, batch_option: str = "") -> None:
    """What shows one run (its transcript, as it streams, its cost) cannot show several;
    `batch_option`: the option that made one scenario a batch, if one did."""
    if save is not None and save_dir is not None:
        raise HarnessError("--save", "and --save-dir both say where to save; give one of them")
    for given, option, instead in (
        (save is not None, "--save", "use --save-dir DIR"),
        (format_given, "--format", "several runs print a summary; --report FILE writes it as JSON"),
        (live, "--live", "several runs show progress on stderr"),
        (cost, "--cost", "run one scenario to see its cost"),
    ):
        if given and batch_option:
            raise HarnessError(option, f"shows one run, and {batch_option} makes this a batch (a summary of runs); give one of them")
        if given:
            raise HarnessError(option, f"goes with one scenario; {instead}")

