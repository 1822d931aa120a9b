"""Recording a run into the save format, and replaying a saved transcript.

A saved transcript carries, in its metadata, everything a replay needs except the
model's completions, which are its `model` spans. Replay runs the loop again: the
developer's prompt is rendered again from prompts/, canned tools answer from the
metadata (not from the buffer, so an edited observation line is caught), real tools
run again. If the new file differs from the saved one by a byte, the check fails.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import TranscriptFormatError
from harness.events import CompletionEnded, Event, StopReason
from harness.loop import RunResult, run
from harness.scenario import Scenario, build, find_scenario, load_scenario
from harness.transcript import HEADER, Author, Transcript, dumps, loads


def meta(scenario: Scenario, result: RunResult, cuts: dict[str, str]) -> dict[str, Any]:
    return {
        "stop_reason": result.stop_reason.value,
        "final_answer": result.final_answer,
        "steps": result.steps,
        "cuts": cuts,  # step -> what the stop sequence cut from that completion
        "scenario": scenario.to_meta(),
    }


@dataclass(frozen=True)
class Recorded:
    result: RunResult
    saved: str  # the save format of the run
    workspace: dict[str, str] | None  # the files as the run left them, if it had any


def run_scenario(scenario: Scenario, emit: Callable[[Event], None] = lambda event: None) -> Recorded:
    """Run a scenario on its scripted model; return the result and its saved form."""
    agent, model, workspace = build(scenario)
    cuts: dict[str, str] = {}

    def record(event: Event) -> None:
        if isinstance(event, CompletionEnded) and event.cut:
            cuts[str(event.step)] = event.cut
        emit(event)

    result = run(agent, model, record)
    last = result.transcript.spans[-1]
    if result.stop_reason is StopReason.CANCELED and scenario.interrupt is None and last.author is Author.MODEL:
        # A real Ctrl-C while the model streamed: write it down, so the replay stops there too.
        scenario = scenario.but(interrupt=(result.steps, len(last.text)))
    saved = dumps(result.transcript, meta(scenario, result, cuts))
    return Recorded(result, saved, None if workspace is None else workspace.files)


@dataclass(frozen=True)
class Replay:
    saved: str  # the file as it was
    fresh: str  # the file the replay would write
    result: RunResult

    @property
    def matches(self) -> bool:
        return self.saved == self.fresh

    def diff(self, name: str) -> str:
        lines = difflib.unified_diff(
            self.saved.splitlines(keepends=True), self.fresh.splitlines(keepends=True), f"{name} (saved)", f"{name} (replayed)"
        )
        return "".join(lines)


def scenario_of(text: str, source: str) -> Scenario:
    """The scenario a saved transcript was made from, its completions taken from the buffer."""
    transcript, info = loads(text, source)
    spec, cuts = info.get("scenario"), info.get("cuts", {})
    if not isinstance(spec, dict):
        raise TranscriptFormatError(source, "metadata 'scenario' is missing: this file cannot be replayed")
    if not isinstance(cuts, dict) or not all(isinstance(v, str) for v in cuts.values()):
        raise TranscriptFormatError(source, "metadata 'cuts' must map step numbers to text")
    # The model's turns are its spans, each with what the stop sequence cut put back.
    turns = [text + cuts.get(str(step), "") for step, text in enumerate(transcript.texts_by(Author.MODEL), 1)]
    return Scenario.from_dict(spec | {"completions": turns}, f"{source}: metadata scenario")


def open_run(target: str) -> tuple[Transcript, dict[str, Any]]:
    """A saved transcript, or a scenario (path or shipped name) run now on its script."""
    path = Path(target)
    if path.is_file():
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            text = f.read()
        if text.startswith(HEADER):
            return loads(text, target)
    return loads(run_scenario(load_scenario(find_scenario(target))).saved)


def replay(text: str, source: str, emit: Callable[[Event], None] = lambda event: None) -> Replay:
    recorded = run_scenario(scenario_of(text, source), emit)
    return Replay(text, recorded.saved, recorded.result)
