"""Assembling a run from a scenario, running it, and replaying a saved transcript.

    build(scenario)          the developer's prompt as the start of the buffer, the tools,
                             and the scripted model (wrapped to fail or be interrupted
                             where the scenario says so)
    run_scenario(scenario)   run it: a RunRecord that knows the scenario it came from
    replay(text, source)     run a saved transcript again, its model turns as the script

A saved transcript carries, in its metadata, everything a replay needs except the
model's completions, which are its `model` spans. Replay renders the developer's prompt
again from its template, canned tools answer from the metadata (not from the buffer, so
an edited observation line is caught), and real tools run again. If the new file
differs from the saved one by a byte, the check fails.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

from harness import prompts
from harness.backends.messages import ChatScript
from harness.dialects import get_dialect
from harness.errors import TranscriptFormatError
from harness.events import StopReason
from harness.files import read_input
from harness.loop import UNLIMITED, Emit, Setup, nobody, run
from harness.model import FailingModel, InterruptedModel, Model, ScriptedModel
from harness.run_record import RunRecord, load_record
from harness.scenario import Scenario, find_scenario, load_scenario
from harness.tools import Registry
from harness.transcript import HEADER, Author, Transcript
from harness.workspace import Workspace


class Built(NamedTuple):
    setup: Setup
    model: Model
    workspace: Workspace | None  # the files the tools change, when the scenario has any


def build(scenario: Scenario) -> Built:
    dialect = get_dialect(scenario.dialect, f"{scenario.source}: dialect")
    workspace = None if scenario.workspace is None else Workspace(scenario.workspace)
    tools = Registry(spec.build(workspace, scenario.base, scenario.source) for spec in scenario.tools)
    buffer = Transcript()
    variables = {"question": scenario.question, "tools": tools.render(dialect.signature)}
    filled = prompts.render(scenario.template(), variables)
    buffer.append(Author.DEVELOPER, filled.text)
    model: Model = ScriptedModel(scenario.completions, scenario.chunk_size)
    if scenario.model_error is not None:
        model = FailingModel(model, *scenario.model_error)
    if scenario.interrupt is not None:
        model = InterruptedModel(model, *scenario.interrupt)
    if scenario.endpoint == "chat":  # a chat run replayed: the same messages, counted by the same rule
        model = ChatScript(model)
    # A script costs nothing to read on: what the stop sequence prevented is shown whole.
    setup = Setup(buffer, dialect, tools, scenario.limits, scenario.use_stop, peek=UNLIMITED, frames=filled.frames)
    return Built(setup, model, workspace)


def run_scenario(scenario: Scenario, emit: Emit = nobody, model: Model | None = None, peek: int = 0) -> RunRecord:
    """Run a scenario on its scripted model, or on a live `model`; the record knows the scenario.

    With a live model and `peek`, the server is not told the stop strings: the scanner cuts
    and reads up to `peek` characters more, only to record what the stop prevented."""
    setup, scripted, workspace = build(scenario)
    if model is not None:
        setup.peek, setup.send_stop = peek, peek == 0
        # How this run reached the model, written down for its replay.
        scenario = scenario.but(endpoint="chat" if hasattr(model, "stream_spans") else "completions")
    record = run(setup, model or scripted, emit)
    last = record.transcript.last_author
    if record.stop_reason is StopReason.CANCELED and scenario.interrupt is None and last is Author.MODEL:
        # A real Ctrl-C while the model streamed: write it down, so the replay stops there too.
        scenario = scenario.but(interrupt=(record.steps, len(record.transcript.spans[-1].text)))
    if record.stop_reason is StopReason.MODEL_ERROR and scenario.model_error is None:
        # A live model failed: write it down, so the replay fails there too.
        scenario = scenario.but(model_error=(record.steps + 1, record.detail))
    return record.but(scenario=scenario, workspace=None if workspace is None else workspace.files)


@dataclass(frozen=True)
class Replay:
    saved: str  # the file as it was
    record: RunRecord  # the run again

    @property
    def fresh(self) -> str:
        """The file the replay would write."""
        return self.record.saved

    @property
    def matches(self) -> bool:
        return self.saved == self.fresh


def scenario_of(record: RunRecord, source: str) -> Scenario:
    """The scenario a saved run was made from, its completions taken from the buffer."""
    if record.scenario is None:
        raise TranscriptFormatError(source, "metadata 'scenario' is missing: this file cannot be replayed")
    # The model's turns are its spans, each with what was cut put back.
    turns = tuple(text + call.cut for text, call in zip(record.transcript.texts_by(Author.MODEL), record.calls))
    return record.scenario.but(completions=turns)


def replay(
    text: str, source: str, emit: Emit = nobody, model: Model | None = None, base: Path | None = None
) -> Replay:
    """Run a saved transcript again; with `model`, live instead of from its recorded turns.
    A template or tool of its own is looked for in `base`, by default the file's folder."""
    saved = load_record(text, source, base or Path(source).parent)
    fresh = run_scenario(scenario_of(saved, source), emit, model)
    if model is None:  # the model's token counts are facts only the recording knows: kept
        counts = [call.tokens for call in saved.calls]
        calls = (replace(c, tokens=counts[i]) if i < len(counts) else c for i, c in enumerate(fresh.calls))
        fresh = fresh.but(calls=tuple(calls))
    return Replay(text, fresh)


def open_run(target: str) -> RunRecord:
    """A saved transcript, or a scenario (path or shipped name) run now on its script."""
    path = Path(target)
    if path.is_file():
        text = read_text(path)
        if text.startswith(HEADER):
            return load_record(text, target, path.parent)
    return run_scenario(load_scenario(find_scenario(target)))


def read_text(path: Path) -> str:
    """A saved transcript as text; only a regular file is read (harness/files.py)."""
    return read_input(path)
