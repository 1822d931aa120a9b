"""Assembling a run from a scenario, running it, and replaying a saved transcript.

    build(scenario)          the developer's prompt as the start of the buffer, the tools,
                             and the scripted model (wrapped to fail or be interrupted
                             where the scenario says so)
    run_scenario(scenario)   run it: a RunRecord that knows the scenario it came from
    replay(text, source)     run a saved transcript again, its model turns as the script

A saved transcript names its source (harness.source): a scenario file or an importable
Agent. Replay rebuilds the run from that source as it is *now* (the scenario's fields, its
template, its tools) and feeds it the recorded model turns (the `model` spans, with what
the stop sequence cut put back), so one source of truth decides what drift is: an edited
question, canned result, template or tool shows in the new file. What only the recording
can know (the model's token counts) is kept, not recomputed. If the new file differs from
the saved one by a byte, the check fails. A file without a source (written before sources
existed, or by `harness agent`) replays from the scenario copy it stores.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

from harness import prompts
from harness import source as sources
from harness.dialects import get_dialect
from harness.errors import HarnessError, TranscriptFormatError
from harness.events import StopReason
from harness.files import read_input
from harness.loop import UNLIMITED, Emit, Setup, nobody, run
from harness.model import FailingModel, InterruptedModel, Model, ScriptedModel
from harness.prompts import data_dir
from harness.run_record import RunRecord, load_record
from harness.scenario import Scenario, find_scenario, load_scenario
from harness.tools import Registry
from harness.transcript import HEADER, Author, Transcript
from harness.workspace import Workspace


@functools.cache
def shipped() -> Path:
    """The shipped scenarios' folder (looked up once: it does not move)."""
    return data_dir("transcripts")


class Built(NamedTuple):
    setup: Setup
    model: Model
    workspace: Workspace | None  # the files the tools change, when the scenario has any
    sha256: str  # of what it was built from: the scenario as loaded, the template, the tools' modules


def build(scenario: Scenario, watched: bool = True) -> Built:
    dialect = get_dialect(scenario.dialect, f"{scenario.source}: dialect")
    workspace = None if scenario.workspace is None else Workspace(scenario.workspace)
    tools = Registry(spec.build(workspace, scenario.base, scenario.source) for spec in scenario.tools)
    buffer = Transcript()
    variables = {"question": scenario.question, "tools": tools.render(dialect.signature)}
    template = scenario.template()
    filled = prompts.render(template, variables)
    buffer.append(Author.DEVELOPER, filled.text)
    modules = (sources.module_bytes(tool.fn) for tool, spec in zip(tools, scenario.tools) if spec.python)
    sha = sources.fingerprint([sources.canonical(scenario.loaded or scenario.to_meta()), template.read_bytes(), *modules])
    # (watched, head: see ScriptedModel; the one read that stops on a chunk is decided within the prefix)
    model: Model = ScriptedModel(scenario.completions, scenario.chunk_size, watched, len(dialect.required_prefix or ""))
    if scenario.model_error is not None:
        model = FailingModel(model, *scenario.model_error)
    if scenario.interrupt is not None:
        model = InterruptedModel(model, *scenario.interrupt)
    if scenario.endpoint == "chat":  # a chat run replayed: the same messages, counted by the same rule
        from harness.backends.messages import ChatScript

        model = ChatScript(model)
    # A script costs nothing to read on: what the stop sequence prevented is shown whole.
    setup = Setup(buffer, dialect, tools, scenario.limits, scenario.use_stop, peek=UNLIMITED, frames=filled.frames, question=scenario.question)
    return Built(setup, model, workspace, sha)


def run_scenario(
    scenario: Scenario,
    emit: Emit = nobody,
    model: Model | None = None,
    peek: int = 0,
    root: Path | None = None,
    wrap: Callable[[Model], Model] | None = None,
) -> RunRecord:
    """Run a scenario on its scripted model, or on a live `model`; the record knows its source
    (a scenario loaded from a file: by its path relative to `root`, by default the working folder).
    `wrap` wraps whichever model runs (a batch's Ctrl-C, harness.batch).

    With a live model and `peek`, the server is not told the stop strings: the scanner cuts
    and reads up to `peek` characters more, only to record what the stop prevented."""
    root = (root or Path.cwd()).absolute()  # now: a tool's os.chdir cannot move it
    setup, scripted, workspace, sha = build(scenario, watched=emit is not nobody)
    if model is not None:
        setup.peek, setup.send_stop = peek, peek == 0
        # How this run reached the model, written down for its replay.
        scenario = scenario.but(endpoint="chat" if hasattr(model, "stream_spans") else "completions")
        if hasattr(model, "stream_spans"):  # what a chat endpoint refuses, refused before any view shows a byte
            from harness.backends.messages import messages

            messages(setup.transcript.spans)
    record = run(setup, wrap(model or scripted) if wrap else model or scripted, emit)
    last = record.transcript.last_author
    if record.stop_reason is StopReason.CANCELED and scenario.interrupt is None and last is Author.MODEL:
        # A real Ctrl-C while the model streamed: write it down, so the replay stops there too.
        scenario = scenario.but(interrupt=(record.steps, len(record.transcript.spans[-1].text)))
    if record.stop_reason is StopReason.MODEL_ERROR and scenario.model_error is None:
        # A live model failed: write it down, so the replay fails there too.
        scenario = scenario.but(model_error=(record.steps + 1, record.detail))
    source = None
    if scenario.file is not None:
        source = sources.for_scenario(scenario.file, sha, scenario.overrides, shipped(), root)
    return record.but(scenario=scenario, workspace=None if workspace is None else workspace.files, source=source)


@dataclass(frozen=True, slots=True)
class Replay:
    saved: str  # the file as it was
    record: RunRecord  # the run again (offline: with the recording's token counts)
    facts: RunRecord  # the run again with the recording's facts: what --check compares

    @property
    def fresh(self) -> str:
        """The file the replay would write: what code and the developer wrote now, the
        model's turns and the facts only the recording knows as they were."""
        return self.facts.saved

    @property
    def matches(self) -> bool:
        return self.saved == self.fresh


def turns_of(record: RunRecord) -> tuple[str, ...]:
    """The model's turns are its spans, each with what was cut put back."""
    return tuple(text + call.cut for text, call in zip(record.transcript.texts_by(Author.MODEL), record.calls))


def scenario_of(record: RunRecord, source: str) -> Scenario:
    """The scenario copy a saved run stores, its completions taken from the buffer (files
    without a source line: written before sources existed, or by `harness agent`)."""
    if record.scenario is None:
        raise TranscriptFormatError(
            source, "names no source and stores no scenario: this file cannot be replayed (an Agent names its source with Agent(..., source='module:attribute'))"
        )
    # A file alone brings no code and reads no other file: those come only through the scenario it names.
    python = [spec for spec in record.scenario.tools if spec.python is not None]
    if python or record.scenario.prompt_file is not None:
        what = f"a Python tool ({python[0].name} = {python[0].python[:80]!r})" if python else f"a prompt_file ({record.scenario.prompt_file[:80]!r})"
        raise TranscriptFormatError(
            f"{source}: metadata scenario",
            f"its stored copy names {what}: a saved file runs code and reads files only "
            "through the scenario file it names as its source (save it again with harness run)",
        )
    return record.scenario.but(completions=turns_of(record))


def rebuilt(record: RunRecord, where: str, folder: Path, root: Path, keep_facts: bool = True) -> Scenario:
    """The scenario the file names, loaded as it is now, with the run's overrides (without a
    past live run's Ctrl-C and model error, unless `keep_facts`); its own completions."""
    path = sources.resolve(record.source, where, folder, root, shipped())
    now = load_scenario(path, sources.shown(path, root))
    facts = () if keep_facts else ("interrupt", "model_error")
    overrides = {k: v for k, v in record.source.overrides.items() if k not in facts}
    if not overrides:
        return now
    try:
        changed = Scenario.from_dict((now.loaded or {}) | overrides, f"{where}: metadata source.overrides", now.base)
    except HarnessError as e:
        raise TranscriptFormatError(e.where, e.message) from None
    return changed.but(completions=now.completions, source=now.source, file=now.file, loaded=now.loaded)


def replay(
    text: str,
    source: str,
    emit: Emit = nobody,
    model: Model | None = None,
    base: Path | None = None,
    root: Path | None = None,
) -> Replay:
    """Run a saved transcript again; with `model`, live instead of from its recorded turns.
    Its source is looked for relative to `base` (by default the file's folder) or `root` (the
    project root, by default the working folder), as the file says."""
    folder, root = (base or Path(source).parent).absolute(), (root or Path.cwd()).absolute()
    saved = load_record(text, source, folder)
    if saved.source is None:
        record = run_scenario(scenario_of(saved, source), emit, model)
    elif saved.source.agent is not None:
        from harness.agent import replay_agent

        record = replay_agent(saved, source, emit, model, root)
    else:
        scenario = rebuilt(saved, source, folder, root).but(completions=turns_of(saved))
        record = run_scenario(scenario, emit, model, root=root)
    if saved.source is not None:  # named as the file names it; the hash is the source's now
        record = record.but(source=saved.source.but(sha256=record.source.sha256 if record.source else ""))
    facts = with_facts(record, saved)
    return Replay(text, facts if model is None else record, facts)


def with_facts(record: RunRecord, saved: RunRecord) -> RunRecord:
    """The run with what only the recording knew put back: the model's name and each call's
    token counts (a replay cannot count a model's tokens; a live replay's are not compared)."""
    recorded = [call.tokens for call in saved.calls]
    calls = tuple(
        replace(call, tokens=recorded[i]) if i < len(recorded) else call for i, call in enumerate(record.calls)
    )
    return record.but(calls=calls, model=saved.model)


def record_again(text: str, source: str, path: Path, root: Path, model: Model | None, name: str = "") -> str:
    """The file recorded again: its source run now on `model` (None: a scenario's own
    script), saved relative to `path`. Nothing of the old recording is kept but the run's
    options (--max-steps, --no-stop); a past run's Ctrl-C or model error is not one."""
    saved = load_record(text, source)
    if saved.source is None:
        raise TranscriptFormatError(source, "names no source, so it cannot be recorded again (save it again with harness run)")
    if saved.source.agent is not None:
        from harness.agent import record_agent

        return record_agent(saved, source, model, root).but(model=name).saved
    scenario = rebuilt(saved, source, path.parent, root, keep_facts=False)
    record = run_scenario(scenario, model=model, root=root).placed(path).but(model=name)
    if saved.source.origin == "root":  # named as the file named it
        record = record.but(source=record.source.but(scenario=saved.source.scenario, origin="root"))
    return record.saved


def open_run(target: str) -> RunRecord:
    """A saved transcript, or a scenario (path or shipped name) run now on its script."""
    path = Path(target)
    if path.is_file():
        text = read_text(path)
        if text.removeprefix("\ufeff").startswith(HEADER) or path.suffix == ".txt":  # a transcript (a .txt says why not)
            return load_record(text, target, path.parent)
    return run_scenario(load_scenario(find_scenario(target)))


def read_text(path: Path, shown: str | None = None) -> str:
    """A saved transcript as text; only a regular file is read (harness/files.py)."""
    return read_input(path, shown=shown)
