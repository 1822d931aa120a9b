"""The run record: one typed value from the loop to every view, and to and from a file.

The loop makes it, whole, at the end of a run; `saved` writes it in save format v1
(harness.transcript), and harness.saved reads it back. What only the recording knows (the
model's name, its endpoint, token counts, where a live model failed or a Ctrl-C came) is
the record's; the file also writes the last three as scenario fields (`source.overrides`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.entry import redaction
from harness.errors import HarnessError
from harness.events import StopReason
from harness.transcript import Author, Transcript, dumps

if TYPE_CHECKING:
    from harness.scenario import Scenario
    from harness.source import Source


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One model call: what was cut from its reply, which tools ran, and what it cost."""

    cut: str = ""  # read from the model but kept out of the buffer
    cut_by: str = ""  # "stop" (a stop sequence), "prefix" (the prefix rule), or ""
    ran: tuple[str, ...] = ()  # the tools that ran, in order
    notices: tuple[str, ...] = ()  # the codes of the notices code wrote
    tokens: dict[str, int | None] | None = None  # prompt_tokens, evaluated_tokens, completion_tokens
    hidden: tuple[tuple[int, int, str], ...] = ()  # (start, end, lane) of the completion: in the buffer, never shown (harness.unseen)
    messages: int | None = None  # through a chat endpoint: the buffer was sent as this many messages

    def to_meta(self) -> dict[str, Any]:
        told = {"cut_by": self.cut_by or None, "tokens": self.tokens, "hidden": [list(h) for h in self.hidden] or None, "messages": self.messages}
        return {"ran": list(self.ran), "notices": list(self.notices)} | {k: v for k, v in told.items() if v is not None}


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A whole run: its tagged transcript, why it stopped, one CallRecord per call."""

    transcript: Transcript
    stop_reason: StopReason
    final_answer: str | None = None
    steps: int = 0
    detail: str = ""
    calls: tuple[CallRecord, ...] = ()
    scenario: Scenario | None = None
    workspace: dict[str, str] | None = field(default=None, compare=False)  # files as the run left them
    source: Source | None = None
    model: str = ""  # a fact of the recording, like the token counts: a replay keeps it
    endpoint: str = "completions"  # how the model was reached: "chat", the buffer as messages

    @property
    def saved(self) -> str:
        """The run in save format v1: the file `--save` writes and a snapshot holds."""
        return dumps(self.transcript, self.meta())

    def meta(self) -> dict[str, Any]:
        """The run's metadata as the save format writes it (and `--format json` shows it)."""
        meta: dict[str, Any] = {"stop_reason": self.stop_reason.value, "final_answer": self.final_answer, "steps": self.steps}
        if self.detail:
            meta["detail"] = self.detail
        if self.model:
            meta["model"] = self.model
        meta["cuts"] = {str(i): c.cut for i, c in enumerate(self.calls, 1) if c.cut}
        meta["calls"] = [call.to_meta() for call in self.calls]
        scenario, overrides = self.scenario, {}
        if scenario is not None:
            facts = self.facts(scenario)
            scenario = scenario.but(**facts) if facts else scenario  # the file's copy of it: as if the run had been scripted so
            copy = scenario.to_meta()
            merged = {**(self.source.overrides if self.source is not None else {}), **json.loads(json.dumps(facts))}
            overrides = {key: merged[key] for key in copy if key in merged}
        if self.source is not None:
            meta["source"] = replace(self.source, overrides=overrides).to_meta() if scenario is not None else self.source.to_meta()
        if scenario is not None:  # the copy as a file keeps it: canned results are a tool's output, masked too
            meta["scenario"], redact = copy, redaction(scenario.redact, "redact")
            for spec in copy["tools"].values():
                if "results" in spec:
                    spec["results"] = {key: redact(value) for key, value in spec["results"].items()}
                if spec.get("default") is not None:
                    spec["default"] = redact(spec["default"])
        return meta

    def facts(self, scenario: Scenario | None = None) -> dict[str, Any]:
        """What only the recording knows (where a live model failed or a Ctrl-C came, the
        endpoint) as scenario fields; with `scenario`, those it does not say already."""
        out: dict[str, Any] = {}
        if self.stop_reason is StopReason.CANCELED and self.transcript.last_author is Author.MODEL:
            out["interrupt"] = (self.steps, len(self.transcript.spans[-1].text) + len(self.calls[-1].cut))  # all it read
        if self.stop_reason is StopReason.MODEL_ERROR:
            out["model_error"] = (self.steps + 1, self.detail)
        if scenario is None:
            return out
        said = {key: value for key, value in out.items() if getattr(scenario, key) is None}
        return said | ({"endpoint": self.endpoint} if scenario.endpoint != self.endpoint else {})

    def placed(self, target: Path) -> RunRecord:
        """The record as it is saved at `target`: its scenario named relative to that file's folder."""
        if self.source is None:
            return self
        placed = self.source.placed(target)
        try:
            str(placed.scenario).encode("utf-8")
        except UnicodeEncodeError:
            why = "its file name is not UTF-8, and a saved run names its scenario in UTF-8 text; rename the file to save its run"
            raise HarnessError(str(self.source.scenario), why) from None
        return replace(self, source=placed)

