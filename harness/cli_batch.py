"""`harness run A B DIR ...`: many scenarios, each run as `harness run A` runs it, with
bounded concurrency (harness.batch), progress on stderr, a summary on stdout and reports
for CI (harness.batch_report). `harness replay A B DIR` shares `run_batch`."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from harness.cli_io import KEPT, ModelOptions, as_asked, checked, failure, scenario_file, write
from harness.errors import HarnessError

if TYPE_CHECKING:  # imported when a batch runs: `harness --help` stays fast
    from harness.batch import Job, Outcome, Work, Wrap
    from harness.model import Model


def gather(arguments: list[str], kind: str = "scenario") -> list[Job]:
    """Scenarios (names and files) or saved transcripts, and folders (every one under them,
    sorted, except hidden files and folders), in the order given; a file given twice runs once.
    One that cannot be loaded, and a folder that holds none, is a Job with its error; a folder's
    .toml that has no scenario field at all (a pyproject.toml) is skipped with a note."""
    from harness.batch import Job
    from harness.files import is_transcript, same_file
    from harness.scenario import load_scenario

    suffix, held = (".toml", ".toml scenario") if kind == "scenario" else (".txt", "saved transcript (*.txt)")
    jobs, seen = [], set()
    for argument in arguments:
        if not argument.strip():  # Path("") is ".": an empty argument would run everything under here
            jobs.append(Job(repr(argument), None, f"{argument!r} names no {kind}"))
            continue
        if os.path.isdir(argument):  # a FIFO or a broken or looping link is named, never skipped unsaid
            found = (p for p in Path(argument).rglob("*" + suffix) if not any(part.startswith(".") for part in p.relative_to(argument).parts))  # none in .venv, .git
            paths = sorted(p for p in found if not p.is_dir() and (kind == "scenario" or not p.is_file() or is_transcript(p)))
        else:
            try:
                paths = [scenario_file(argument) if kind == "scenario" else Path(argument)]
            except HarnessError as e:
                jobs.append(Job(Path(argument).stem, None, str(e)))
                continue
        skipped = 0
        for path in paths:
            if (key := same_file(path)) in seen:
                continue
            seen.add(key)
            try:  # a transcript is read as it replays (absolute: a tool's os.chdir cannot lose the next)
                jobs.append(Job(path.stem, load_scenario(path)) if kind == "scenario" else Job(str(path), None, saved=path.absolute()))
            except HarnessError as e:
                if os.path.isdir(argument) and kind == "scenario" and _not_a_scenario(path):  # a pyproject.toml, say
                    from harness.escape import one_line

                    typer.echo(f"note: skipped {one_line(str(path))}: none of its keys is a scenario's field", err=True)
                    skipped += 1
                    continue
                jobs.append(Job(path.stem, None, str(e)))
        if os.path.isdir(argument) and skipped == len(paths):  # (none at all, or none but such files)
            jobs.append(Job(argument, None, f"{argument}: the folder holds no {held}"))
    return jobs


def _not_a_scenario(path: Path) -> bool:
    """A TOML file none of whose keys a scenario has: not a scenario with a mistake in it."""
    from harness.files import load_toml, read_input
    from harness.scenario import FIELDS

    try:
        return not set(load_toml(read_input(path))) & FIELDS
    except (HarnessError, ValueError):  # unreadable, or not TOML: an error of its own, said as the scenario's
        return False


def check(jobs: list[Job], folder: Path | None, report: Path | None, junit: Path | None) -> dict[Path, Path]:
    """Refuse every output the batch would write wrongly, before the first run. Returns the
    earlier runs of ours --save-dir holds, which the batch replaces: absolute -> as named."""
    from harness.batch_report import JSON_HEADER, JUNIT_HEADER
    from harness.files import check_target, same_file
    from harness.transcript import HEADER

    checked(("--report", report, JSON_HEADER), ("--junit", junit, JUNIT_HEADER))
    if folder is None:
        return {}
    where = f"--save-dir {folder}"
    for option, path in (("--report", report), ("--junit", junit)):  # a transcript would be written over the report, or the report over it
        if path is not None and same_file(path.parent) == same_file(folder) and path.suffix == ".txt":
            raise HarnessError(f"{option} {path}", f"lies in {where}, among the transcripts; write it elsewhere")
    sources: dict[str, str] = {}
    for job in (j for j in jobs if j.scenario is not None):
        if job.name in sources:
            raise HarnessError(where, f"{sources[job.name]} and {job.scenario.source} would both be saved as {job.name}.txt")
        sources[job.name] = job.scenario.source
    try:  # made only now, once nothing else refuses the batch; a folder made now holds no earlier run
        folder.mkdir(exist_ok=True)
    except FileExistsError:
        raise HarnessError(where, "is a link that loops or leads nowhere" if folder.is_symlink() else "is not a folder") from None
    except OSError as e:  # (a name too long to look up: one line here, not in every run)
        missing = isinstance(e, FileNotFoundError) and not folder.parent.is_dir()
        raise HarnessError(where, "its parent folder does not exist" if missing else f"cannot create the folder ({e.strerror or e})") from None
    earlier = {}
    for name in sources:  # a folder of earlier runs: only harness's own files are replaced
        check_target(path := folder / f"{name}.txt", HEADER, "--save-dir")
        if path.is_file():
            earlier[path.absolute()] = path
    return earlier


def worker(save_dir: Path | None, peek: int, max_steps: int | None, no_stop: bool, root: Path, model: Model | None) -> Work:
    """The work of one run: what `harness run NAME --save DIR/NAME.txt` does."""
    from harness.batch import Outcome
    from harness.expect import matches
    from harness.files import write_file
    from harness.record import run_scenario
    from harness.transcript import HEADER

    def work(job: Job, wrap: Wrap) -> Outcome:
        spec = as_asked(job.scenario, max_steps, no_stop)
        live = None if model is None else model.another()  # a run's own: the batch's model shared (its connections, its server)
        record = run_scenario(spec, model=live, peek=peek, root=root, wrap=wrap)
        saved = None if save_dir is None else (save_dir / f"{job.name}.txt").absolute()
        if saved is not None and failure(record, live, spec.interrupt is not None) and saved.exists():
            saved = None  # a saved run is never replaced by one that failed (run_many says it was kept)
        elif saved is not None:
            record = record.placed(saved)
            write_file(saved, record.saved, HEADER, "--save-dir")
        wanted = next(((f, getattr(spec, f)) for f in ("expect", "expect_regex") if getattr(spec, f) is not None), None)  # for the reports to say what a mismatch missed
        notes = tuple(live.notes) if live is not None else ()  # what its model dropped on arrival
        return Outcome.of(job.name, record, transcript=saved, expected=matches(spec, record.final_answer), wanted=wanted, notes=notes)

    return work


def run_batch(jobs: list[Job], worker: Callable[[Model | None], Work], options: ModelOptions, workers: int, what: str = "scenario") -> tuple[list[Outcome], int, bool]:
    """The jobs run by the worker of their models (closed at the end), then the summary on
    stdout: every outcome in the jobs' order, how many never started, and whether Ctrl-C came."""
    from harness.batch import Outcome, run_all
    from harness.batch_report import Progress, one_line, summary
    from harness.model import Model

    model = options.open(connections=workers)  # a bad --model: one line, once, before any run
    first = Model() if model is None else model  # (the base Model: scripts have nothing to interrupt or close)
    work = worker(model)
    for job in jobs:
        if job.error:
            typer.echo(f"error: {one_line(job.error)}", err=True)
    runnable = [j for j in jobs if not j.error]
    progress = Progress(sys.stderr, len(runnable))
    try:
        outcomes, interrupted = run_all(runnable, work, workers, progress, first.interrupt)  # Ctrl-C: a server's calls in flight end now, and a wait for it stops
    finally:
        progress.end()
        first.close()
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


def run_many(
    arguments: list[str], jobs: int, save_dir: Path | None, report: Path | None, junit: Path | None,
    fail_on: str | None, models: ModelOptions, peek: int, max_steps: int | None, no_stop: bool,
) -> None:  # fmt: skip
    from harness.batch_report import JSON_HEADER, JUNIT_HEADER, exit_code, one_line, to_json, to_junit
    from harness.events import StopReason

    reasons = frozenset(r.strip() for r in (fail_on or "").split(",") if r.strip())  # --fail-on's stop reasons (or mismatch), each checked
    if fail_on is not None and not reasons:
        raise HarnessError("--fail-on", "names no stop reason (give REASON,... or mismatch)")
    known = {"mismatch", *StopReason}
    if unknown := sorted(reasons - known):
        raise HarnessError("--fail-on", f"{unknown[0]!r} is not a stop reason or mismatch (known: {', '.join(sorted(known))})")
    runs = gather(arguments)
    earlier = check(runs, save_dir, report, junit)
    folder, report_to, junit_to = (None if p is None else p.absolute() for p in (save_dir, report, junit))  # now: a tool's os.chdir cannot move them
    ordered, not_started, interrupted = run_batch(runs, partial(worker, folder, peek, max_steps, no_stop, Path.cwd()), models, jobs)
    for o in ordered:  # a folder reused by another recipe never loses a recording unsaid
        if o.transcript is not None and o.transcript in earlier:
            typer.echo(f"replaced {one_line(str(earlier[o.transcript]))} (it held an earlier run)", err=True)
        elif folder is not None and o.stop_reason and (kept := folder / f"{o.name}.txt") in earlier:
            typer.echo(f"kept {one_line(str(earlier[kept]))} as it was: {KEPT}", err=True)
    if report is not None:  # each written whole or not at all
        write(report, to_json(ordered, not_started), JSON_HEADER, "--report", report_to)
    if junit is not None:
        write(junit, to_junit(ordered, reasons), JUNIT_HEADER, "--junit", junit_to)
    if interrupted:
        raise typer.Abort()  # "interrupted", exit 130 (harness.cli), once the reports are written
    raise typer.Exit(exit_code(ordered, reasons))
