"""`harness replay FILE...`: run the loop again from saved transcripts, their model turns
as the script (or a live --model); with --check, exit 1 and a diff if a byte differs.
Several files, or folders, are a batch (harness.cli_batch), as is --update."""

from __future__ import annotations

import os
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from harness.cli_io import (
    BaseUrlOption, Format, FormatOption, Jobs, MaxChars, MaxSeconds, MaxTokens, ModelOption, ModelOptions, Strict, WaitForServer,
    call_lines, failure, named, saved_text, show_record, tell_stderr,
)  # fmt: skip
from harness.errors import HarnessError

if TYPE_CHECKING:  # imported when replays run: `harness --help` stays fast
    from harness.batch import Job, Outcome, Work
    from harness.model import Model

REHASHED = "its source was edited since the recording (--update, or pytest --harness-update, records the new hash; --strict-source fails on it)"
RECORD_HINT = "`harness run SCENARIO --save FILE` or `pytest --harness-record MODEL` asks the model again"
HINT = (
    "(`harness replay FILE... --update` or `pytest --harness-update` rewrites a saved transcript whose replay changed, keeping its "
    "recorded model turns; `pytest --harness-record MODEL` asks the model again)"
)


def replay(
    files: Annotated[list[str], typer.Argument(metavar="FILE...", help="Saved transcripts (from run --save), or folders (every transcript under them, except in hidden folders such as .venv).")],
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
    strict_source: Annotated[bool, typer.Option("--strict-source", help="With --check: fail a replay that is the same but whose source was edited (only source.sha256 differs); by default it passes.")] = False,
    update: Annotated[bool, typer.Option("--update", help="Rewrite each file whose replay changed, keeping its recorded model turns (as pytest --harness-update).")] = False,
) -> None:
    """Run the loop again from saved transcripts: their model turns are the script (or a live --model)."""
    for file in files:
        named(file, "FILE", "transcript")
    if strict_source and not check:
        raise HarnessError("--strict-source", "goes with --check")
    models = ModelOptions(model, base_url, max_tokens, max_chars, max_seconds, strict, wait_for_server)
    if update and (check or models.live):
        raise HarnessError("--update", "keeps the recorded model turns and accepts what --check would find; give it alone")
    if len(files) > 1 or os.path.isdir(files[0]) or update:
        if format is not Format.rich:
            raise HarnessError("--format", "goes with one file; several replays print a summary")
        return replay_many(files, check, jobs, models, strict_source, update)
    from harness.diff import transcript_diff
    from harness.loop import nobody
    from harness.record import replay as replay_text

    path = Path(files[0])
    live_model = models.open()
    with saved_text(path) as text:
        result = replay_text(text, str(path), call_lines(nobody, live_model is not None), live_model, root=Path.cwd())
    tell_stderr(result.record, live_model)
    if not check:
        show_record(format, result.record)
    if code := failure(result.record, live_model, result.recording.stop_reason == "canceled"):  # (3 or 130, whatever --check would say)
        raise typer.Exit(code)
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


def worker(check: bool, root: Path, strict_source: bool, update: bool, model: Model | None) -> Work:
    """The work of one replay: what `harness replay FILE [--check]` does, without printing;
    with `update`, the file rewritten if its replay changed and completed."""
    from harness.batch import Outcome
    from harness.diff import transcript_diff
    from harness.record import replay as replay_text
    from harness.source import only_rehashed

    def work(job: Job, wrap) -> Outcome:
        path = job.saved
        assert path is not None
        live = None if model is None else model.another()  # a replay's own: the batch's model shared
        with saved_text(path, job.name) as text:  # a scripted replay takes no time to cancel: only a live one is wrapped
            result = replay_text(text, job.name, model=None if live is None else wrap(live), base=path.parent, root=root)
        outcome = Outcome.of(job.name, result.record, notes=tuple(live.notes) if live is not None else ())
        if update:
            return updated(outcome, result, path)
        if not check:
            return outcome
        same = result.matches or (not strict_source and only_rehashed(result.saved, result.fresh))
        return replace(outcome, same=same, diff="" if same else transcript_diff(result.saved, result.fresh, job.name))

    return work


def updated(outcome: Outcome, result, path: Path) -> Outcome:
    """--update: the file rewritten with the replay, if it changed and did not break off
    (out of recorded turns, or canceled, where the recording was not); `transcript` says
    it was, and a note names a kept turn that followed text the update changed."""
    from harness.files import write_file
    from harness.source import stale_turn
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


def replay_many(arguments: list[str], check: bool, jobs: int, options: ModelOptions, strict_source: bool, update: bool) -> None:
    from harness.batch_report import exit_code, one_line
    from harness.cli_batch import gather, run_batch

    work = partial(worker, check, Path.cwd(), strict_source, update)
    ordered, _, interrupted = run_batch(gather(arguments, "transcript"), work, options, jobs, "transcript")
    for o in ordered:
        if o.transcript is not None:
            typer.echo(f"replaced {one_line(o.name)}", err=True)
    if interrupted:
        raise typer.Abort()  # "interrupted", exit 130 (harness.cli)
    if any(o.same is False for o in ordered):
        typer.echo(HINT, err=True)
    raise typer.Exit(exit_code(ordered, (), model_failed=options.live))
