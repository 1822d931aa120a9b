"""The run record: one typed value from the loop to every view, and to and from a file.

    RunRecord
        transcript     the buffer, every span with its author
        stop_reason    why the loop stopped; final_answer, steps, detail (an error's message)
        calls          per model call: what was cut and by what, the tools that ran, the
                       notices code wrote, the model's own token counts when it gave them
        model          the live model's name as the run was started with it ("" for a script)
        source         where the run came from (harness.source), so a replay rebuilds it from there
        scenario       the scenario's fields as the run used them: a record, for reading

The loop produces it, `saved` writes it in save format v1 (harness.transcript), and
`load_record` reads a saved file back into the same type, checking every metadata field:
a saved transcript is untrusted input (people mail them; CI replays them on pull
requests), so anything of the wrong shape is a TranscriptFormatError naming the line
and the field, never a crash later in a view.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import regex

from harness.errors import HarnessError, TranscriptFormatError
from harness.events import StopReason
from harness.scenario import Scenario
from harness.source import Source, from_meta
from harness.transcript import Author, Transcript, dumps, loads


@dataclass(frozen=True, slots=True)
class CallRecord:
    cut: str = ""  # read from the model but kept out of the buffer
    cut_by: str = ""  # "stop" (a stop sequence), "prefix" (the prefix rule), or ""
    ran: tuple[str, ...] = ()  # the tools that ran, in order
    notices: tuple[str, ...] = ()  # the codes of the notices code wrote
    tokens: dict[str, int | None] | None = None  # prompt_tokens, evaluated_tokens, completion_tokens
    hidden: tuple[tuple[int, int, str], ...] = ()  # (start, end, lane) of the completion: in the buffer, never shown (harness.unseen)
    messages: int | None = None  # through a chat endpoint: the buffer was sent as this many messages

    def to_meta(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ran": list(self.ran), "notices": list(self.notices)}
        if self.cut_by:
            out["cut_by"] = self.cut_by
        if self.tokens is not None:
            out["tokens"] = self.tokens
        if self.hidden:
            out["hidden"] = [list(h) for h in self.hidden]
        if self.messages is not None:
            out["messages"] = self.messages
        return out


@dataclass(frozen=True, slots=True)
class RunRecord:
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

    @property
    def saved(self) -> str:
        """The run in save format v1: the file `--save` writes and a snapshot holds."""
        meta: dict[str, Any] = {"stop_reason": self.stop_reason.value, "final_answer": self.final_answer, "steps": self.steps}
        if self.detail:
            meta["detail"] = self.detail
        if self.model:
            meta["model"] = self.model
        meta["cuts"] = {str(i): c.cut for i, c in enumerate(self.calls, 1) if c.cut}
        meta["calls"] = _metas(self.calls)
        if self.source is not None:
            meta["source"] = self.source.to_meta()
        if self.scenario is not None:
            meta["scenario"] = self.scenario.to_meta()
        return dumps(self.transcript, meta)

    def but(self, **changes: Any) -> RunRecord:
        return replace(self, **changes)

    def placed(self, target: Path) -> RunRecord:
        """The record as it is saved at `target`: its scenario named relative to that file's folder.
        A name that is not UTF-8 (Python holds its bytes as lone surrogates) cannot be saved:
        a saved file is UTF-8 text, and a replay finds the scenario by that name."""
        if self.source is None:
            return self
        placed = self.source.placed(target)
        try:
            str(placed.scenario).encode("utf-8")
        except UnicodeEncodeError:
            why = "its file name is not UTF-8, and a saved run names its scenario in UTF-8 text; rename the file to save its run"
            raise HarnessError(str(self.source.scenario), why) from None
        return replace(self, source=placed)


def _metas(calls: tuple[CallRecord, ...]) -> list[dict[str, Any]]:
    """Each call's metadata; the loop shares one CallRecord between the calls alike (most of
    them), so each shared record's is made once (by identity: the calls hold them meanwhile)."""
    made: dict[int, dict[str, Any]] = {}
    out = []
    for call in calls:
        meta = made.get(id(call))
        if meta is None:
            meta = made[id(call)] = call.to_meta()
        out.append(meta)
    return out


# --- reading a saved file back: every field checked -------------------------------------


def load_record(text: str, source: str = "<transcript>", base: Path | None = None) -> RunRecord:
    """A saved file as a RunRecord; `base` is the folder a template or tool of its own is in."""
    if not isinstance(text, str):  # bytes too: which encoding they are in is the caller's to say
        raise TranscriptFormatError(f"{source}: load_record(text)", f"must be the saved file's text, a str, not {type(text).__name__}")
    transcript, meta = loads(text, source)

    def fail(key: str, message: str) -> TranscriptFormatError:
        return TranscriptFormatError(f"{source}: metadata {key}", message)

    reason = meta.get("stop_reason", StopReason.MAX_STEPS.value)  # a file without one has not finished
    if not isinstance(reason, str) or reason not in StopReason._value2member_map_:
        raise fail("stop_reason", f"must be one of {', '.join(StopReason)}")
    answer = meta.get("final_answer")
    if answer is not None and not isinstance(answer, str):
        raise fail("final_answer", "must be a string or null")
    steps = meta.get("steps", 0)
    if type(steps) is not int or steps < 0:
        raise fail("steps", "must be a whole number, 0 or more")
    detail = meta.get("detail", "")
    if not isinstance(detail, str):
        raise fail("detail", "must be a string")
    replies = transcript.texts_by(Author.MODEL)
    model_calls = len(replies)
    if "steps" in meta and not model_calls <= steps <= model_calls + 1:  # a step is a model call (one canceled before its first text, too)
        raise fail("steps", f"must be the number of model calls, {model_calls} (or one more, if the last was canceled); it is {steps}")
    cuts = _cuts(meta.get("cuts", {}), model_calls, fail)
    calls = _calls(meta.get("calls"), replies, cuts, fail)
    scenario = None
    if "scenario" in meta:
        if not isinstance(meta["scenario"], dict):
            raise fail("scenario", "must be a table of the scenario's fields")
        try:
            scenario = Scenario.from_dict(meta["scenario"], f"{source}: metadata scenario", base)
        except HarnessError as e:
            raise TranscriptFormatError(e.where, e.message) from None
    model = meta.get("model", "")
    if not isinstance(model, str) or len(model) > 1000:
        raise fail("model", "must be the model's name, a string")
    source_ = from_meta(meta["source"], source) if "source" in meta else None
    return RunRecord(transcript, StopReason(reason), answer, steps, detail, calls, scenario, source=source_, model=model)


_STEP = regex.compile(r"[1-9][0-9]{0,8}")  # ASCII digits only: "²".isdigit() is true, int("²") fails


def _cuts(value: Any, model_calls: int, fail) -> dict[int, str]:
    if not isinstance(value, dict):
        raise fail("cuts", "must map step numbers to text")
    out = {}
    for key, cut in value.items():
        if not (_STEP.fullmatch(key) and 1 <= int(key) <= model_calls) or not isinstance(cut, str):
            raise fail("cuts", f"must map step numbers (1 to {model_calls}) to text; {key!r} does not")
        out[int(key)] = cut
    return out


def _calls(value: Any, replies: list[str], cuts: dict[int, str], fail) -> tuple[CallRecord, ...]:
    """Files written before `calls` existed still load: their calls carry only the cuts."""
    model_calls = len(replies)
    if value is None:
        return tuple(CallRecord(cuts.get(i, ""), "stop" if cuts.get(i) else "") for i in range(1, model_calls + 1))
    if not isinstance(value, list) or len(value) != model_calls:
        raise fail("calls", f"must be a list with one entry per model call ({model_calls})")
    out = []
    for i, entry in enumerate(value, 1):
        if not isinstance(entry, dict):
            raise fail("calls", f"entry {i} must be a table")
        ran, told, cut_by, tokens = entry.get("ran", []), entry.get("notices", []), entry.get("cut_by", ""), entry.get("tokens")
        if not _strings(ran) or not _strings(told) or cut_by not in ("", "stop", "prefix"):
            raise fail("calls", f"entry {i}: ran and notices must be lists of strings, cut_by stop or prefix")
        if tokens is not None and not (
            isinstance(tokens, dict) and all(v is None or (type(v) is int and v >= 0) for v in tokens.values())
        ):  # `true`, "nine", 1e999 (Infinity), -1: refused here, in one line, not later in a view
            raise fail("calls", f"entry {i}: tokens must map names to whole numbers, 0 or more")
        hidden = _hidden(entry.get("hidden", []), len(replies[i - 1]))
        if hidden is None:
            raise fail("calls", f"entry {i}: hidden must list [start, end, \"action\" or \"answer\"], in order, within the reply")
        messages = entry.get("messages")
        if messages is not None and (type(messages) is not int or messages < 1):
            raise fail("calls", f"entry {i}: messages must be a whole number, 1 or more")
        out.append(CallRecord(cuts.get(i, ""), cut_by, tuple(ran), tuple(told), tokens, hidden, messages))
    return tuple(out)


def _hidden(value: Any, length: int) -> tuple[tuple[int, int, str], ...] | None:
    """The parts of a reply the user was not shown, checked: None if they are not that."""
    if not isinstance(value, list):
        return None
    out, after = [], 0
    for item in value:
        if not (isinstance(item, list) and len(item) == 3 and item[2] in ("action", "answer")):
            return None
        start, end = item[0], item[1]
        if type(start) is not int or type(end) is not int or not after <= start < end <= length:
            return None
        out.append((start, end, item[2]))
        after = end
    return tuple(out)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)

