"""`harness replay FILE...`: run the loop again from saved transcripts, their model turns
as the script (or a live --model); with --check, exit 1 and a diff if a byte differs.

Several files, or folders (every transcript under them, sorted), are a batch through
harness.cli_batch's run_batch, the diffs of those that differ printed before the summary.
With --update, as `pytest --harness-update`: each file whose replay changed is rewritten,
keeping its recorded model turns, and named (`replaced PATH`); only a replay that
completed replaces its file, one that failed or broke off leaves it byte for byte.
"""


import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from harness.cli_files import is_folder, scenario_hint
from harness.cli_models import (
    BaseUrlOption,
    CallOptions,
    MaxChars,
    MaxSeconds,
    MaxTokens,
    ModelOption,
    RunModels,
    Strict,
    WaitForServer,
    exit_if_failed,
    live_model_from,
    tell_stderr,
)
from harness.cli_views import Format, FormatOption, call_lines, show_record
from harness.errors import HarnessError

if TYPE_CHECKING:  # imported when replays run: `harness --help` stays fast
    from harness.batch import Job, Work

Jobs = Annotated[int, typer.Option("--jobs", "-j", min=1, max=256, help="Several files: how many replay at once.")]
StrictSource = Annotated[
    bool,
    typer.Option(
        "--strict-source",
        help="With --check: fail a replay that is the same but whose source was edited (only source.sha256 differs); by default it passes.",
    ),
]
Update = Annotated[
    bool,
    typer.Option("--update", help="Rewrite each file whose replay changed, keeping its recorded model turns (as pytest --harness-update)."),
]
REHASHED = "its source was edited since the recording (--update, or pytest --harness-update, records the new hash; --strict-source fails on it)"
RECORD_HINT = "`harness run SCENARIO --save FILE` or `pytest --harness-record MODEL` asks the model again"
HINT = (
    "(`harness replay FILE... --update` or `pytest --harness-update` rewrites a saved transcript whose replay changed, keeping its "
    "recorded model turns; `pytest --harness-record MODEL` asks the model again)"
)


def replay(
    files: Annotated[list[str], typer.Argument(metavar="FILE...", help="Saved transcripts (from run --save), or folders (every transcript under them).")],
    check: Annotated[bool, typer.Option("--check", help="Exit 1 with a diff if the replay differs from the file.")] = False,
    format: FormatOption = Format.rich,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    max_tokens: MaxTokens = None,
    max_chars: MaxChars = None,
    max_seconds: MaxSeconds = None,
    strict: Strict = None,
    wait_for_server: WaitForServer = None,
    jobs: Jobs = 1,
    strict_source: StrictSource = False,
    update: Update = False,
) -> None:
    """Run the loop again from saved transcripts: their model turns are the script (or a live --model)."""
    if any(not f.strip() for f in files):  # Path("") is ".": it would replay everything under here
        raise HarnessError("FILE", "an empty argument names no transcript")
    if strict_source and not check:
        raise HarnessError("--strict-source", "goes with --check")
    if update and (check or model not in (None, "scripted")):
        raise HarnessError("--update", "keeps the recorded model turns and accepts what --check would find; give it alone")
    saved = [Path(f) for f in files]
    call = CallOptions(max_tokens, max_chars, max_seconds, strict, wait_for_server)
    if len(saved) > 1 or is_folder(saved[0]) or update:
        if format is not Format.rich:
            raise HarnessError("--format", "goes with one file; several replays print a summary")
        replay_many(saved, check, jobs, model, base_url, call, strict_source, update)
        return
    from harness.diff import transcript_diff
    from harness.loop import nobody
    from harness.record import read_text
    from harness.record import replay as replay_text

    path = saved[0]
    live_model = live_model_from(model, base_url, call)
    emit = call_lines(nobody) if live_model is not None and not sys.stderr.isatty() else nobody
    with scenario_hint(path):
        result = replay_text(read_text(path), str(path), emit, live_model, root=Path.cwd())
    tell_stderr(result.record, live_model)
    if not check:
        show_record(format, result.record)
    exit_if_failed(result.record, live_model)  # (a failed live call: 3, whatever --check would say)
    if not check:
        return
    from harness.escape import one_line
    from harness.source import only_rehashed

    if result.matches:
        typer.echo(f"ok: replaying {one_line(str(path))} gives the same transcript, byte for byte")
        return
    if not strict_source and only_rehashed(result.saved, result.fresh):
        typer.echo(f"ok: replaying {one_line(str(path))} gives the same run; only source.sha256 differs: {REHASHED}")
        return
    diff = transcript_diff(result.saved, result.fresh, str(path))
    typer.echo(diff if diff.endswith("\n") else diff + "\n", nl=False)
    typer.echo(HINT, err=True)
    raise typer.Exit(1)


def gather(arguments: list[Path]) -> "list[Job]":
    """Files and folders in the order given (a folder's transcripts sorted); a file given
    twice replays once. A folder without a transcript is a Job with its error."""
    from harness.batch import Job
    from harness.files import is_transcript, same_file

    jobs, seen = [], set()
    for argument in arguments:
        paths = [argument]
        if is_folder(argument):
            # a regular file that is a transcript; a FIFO or a broken or looping link is named, never skipped unsaid
            paths = sorted(p for p in argument.rglob("*.txt") if (is_transcript(p) if p.is_file() else not p.is_dir()))
            if not paths:
                jobs.append(Job(str(argument), None, f"{argument}: the folder holds no saved transcript (*.txt)"))
        for path in paths:
            if (key := same_file(path)) not in seen:
                seen.add(key)
                jobs.append(Job(str(path), None, saved=path.absolute()))  # (a tool's os.chdir cannot lose the next)
    return jobs


def worker(check: bool, models: RunModels, root: Path, strict_source: bool = False, update: bool = False) -> "Work":
    """The work of one replay: what `harness replay FILE [--check]` does, without printing;
    with `update`, the file rewritten if its replay changed and completed."""
    from harness.batch import Outcome
    from harness.cli_batch import notes_of
    from harness.diff import transcript_diff
    from harness.record import read_text
    from harness.record import replay as replay_text
    from harness.source import only_rehashed

    def work(job: "Job", wrap) -> "Outcome":
        start, path = time.perf_counter(), job.saved
        assert path is not None
        try:
            with models.one() as live, scenario_hint(Path(job.name)):  # a scripted replay takes no time to cancel: only a live one is wrapped
                result = replay_text(read_text(path, job.name), job.name, model=None if live is None else wrap(live), base=path.parent, root=root)
            seconds = time.perf_counter() - start
            outcome = replace(Outcome.of(job.name, result.record, seconds, None, None), notes=notes_of(live))
            if update:
                return updated(outcome, result, path)
        except HarnessError as e:  # the file, or the source it names, cannot be loaded (or written)
            return Outcome(job.name, seconds=time.perf_counter() - start, error=str(e))
        if not check:
            return outcome
        same = result.matches or (not strict_source and only_rehashed(result.saved, result.fresh))
        return replace(outcome, same=same, diff="" if same else transcript_diff(result.saved, result.fresh, job.name))

    return work


def updated(outcome: "Outcome", result, path: Path) -> "Outcome":
    """--update: the file rewritten with the replay, if it changed and did not break off
    (out of recorded turns, or canceled, where the recording was not); `transcript` says
    it was, and a note names a kept turn that followed text the update changed."""
    from harness.files import write_file
    from harness.stale import stale_turn
    from harness.transcript import HEADER

    ended, recorded = result.record.stop_reason.value, result.recording.stop_reason.value
    if ended != recorded and ended in ("model_exhausted", "canceled", "model_error"):
        return replace(outcome, error=f"{outcome.name}: the replay did not complete ({ended}); the file was left as it was")
    if result.matches:
        return outcome
    write_file(path, result.fresh, HEADER, f"--update {outcome.name}:")
    stale = stale_turn(result.recording.transcript, result.record.transcript)
    if stale is not None:
        said = f'call {stale.call}\'s recorded turn was kept, but it followed {stale.author}\'s text that changed ("{stale.old}" is now "{stale.new}"); {RECORD_HINT}'
        outcome = replace(outcome, notes=(*outcome.notes, said))
    return replace(outcome, transcript=path)


def replay_many(
    arguments: list[Path], check: bool, jobs: int, model: str | None, base_url: str | None, call: CallOptions, strict_source: bool = False, update: bool = False
) -> None:  # fmt: skip
    from harness.batch_report import exit_code, one_line
    from harness.cli_batch import end_interrupted, run_batch

    found = gather(arguments)
    models = RunModels(model, base_url, call, jobs, sum(not j.error for j in found))  # a bad --model is one line, once, before any replay
    try:
        ordered, _, interrupted = run_batch(found, worker(check, models, Path.cwd(), strict_source, update), jobs, "transcript", interrupt=models.interrupt)
    finally:
        models.close()
    for o in ordered:
        if o.transcript is not None:
            typer.echo(f"replaced {one_line(o.name)}", err=True)
    if interrupted:
        end_interrupted()
    if any(o.same is False for o in ordered):
        typer.echo(HINT, err=True)
    raise typer.Exit(exit_code(ordered, (), model_failed=model not in (None, "scripted")))
