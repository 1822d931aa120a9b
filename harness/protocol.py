"""The run_agent protocol (seed 003): one JSON request in, one JSON answer out.

There is no second loop here. Each model turn is written as the completion a model would
have written (`Thought: ...` / `Action: tool({json args})`), and the ordinary loop runs
them as a scenario's script, with no stop sequence and no consecutive-error limits.
Fields, statuses and error codes: `harness agent --help`.
"""

from __future__ import annotations

import json
from typing import Any

from harness.errors import HarnessError
from harness.events import StopReason
from harness.limits import Limits
from harness.run_record import RunRecord
from harness.scenario import Scenario, ToolSpec
from harness.skim import skim
from harness.workspace import TOOL_NAMES, ToolError, check_path

DEFAULT_MAX_STEPS = Limits().max_steps
FIELDS = ("op", "task", "max_steps", "workspace", "model_turns")
MAX_NESTING = 100  # arrays and objects inside one another in a turn; deeper, its Action line
# could not be read back (JSON's parser gives up near 1,000 levels, sooner inside the loop)

STATUS = {
    StopReason.FINAL_ANSWER: ("completed", None),
    StopReason.MAX_STEPS: ("max_steps_exceeded", "Maximum steps reached"),
    StopReason.MODEL_EXHAUSTED: ("turns_exhausted", "Model turns ran out before finish was called"),
    StopReason.CANCELED: ("canceled", "Interrupted"),
}


class BadRequest(HarnessError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__("", message)
        self.code = code

    def to_json(self) -> str:
        return compact({"error": {"code": self.code, "message": self.message}})


def compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def parse_request(raw: bytes) -> dict[str, Any]:
    """The request, checked; only the turns a run can reach are kept."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadRequest("invalid_utf8", f"the request is not UTF-8 (byte {e.start})") from None
    # The turns past max_steps are checked as JSON but not kept (harness.skim); a request with
    # a \uD escape, which may spell a lone surrogate (not text), is read whole and checked.
    surrogate = "\\u" in text and ("\\ud" in text or "\\uD" in text)
    try:
        request = None if surrogate else skim(text, "model_turns", lambda members: _steps(members) or 0)
        if request is None:
            request = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise BadRequest("invalid_json", f"the request is not JSON ({e})") from None
    if not isinstance(request, dict):
        raise BadRequest("not_an_object", "the request must be a JSON object")
    try:
        if surrogate:
            json.dumps(request, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as e:
        raise BadRequest("invalid_json", f"the request holds a lone surrogate ({e.object[e.start]!r}), which is not text") from None
    except RecursionError:
        raise BadRequest("invalid_json", f"the request nests arrays and objects more than {MAX_NESTING} levels deep") from None
    if request.get("op") != "run_agent":
        raise BadRequest("unknown_op", f'op must be "run_agent", not {json.dumps(request.get("op"))}')
    if unknown := sorted(set(request) - set(FIELDS)):  # a client's own (an id) passes; one misspelt would be a default, unsaid
        import difflib

        for key in unknown:
            if near := difflib.get_close_matches(key, FIELDS, 1):
                raise BadRequest("invalid_field", f"unknown field {json.dumps(key)}: is it {near[0]}? (known: {', '.join(FIELDS)})")
    if (steps := _steps(request)) is None:
        raise BadRequest("invalid_field", f"max_steps must be a whole number, 0 or more, not {json.dumps(request['max_steps'])}")
    for key, kind, what in (("task", str, "a string"), ("workspace", dict, "an object mapping paths to strings"), ("model_turns", list, "a list")):
        value = request.get(key, kind())
        if not isinstance(value, kind) or kind is dict and not all(isinstance(v, str) for v in value.values()):
            raise BadRequest("invalid_field", f"{key} must be {what}")
    for path in request.get("workspace", {}):
        try:
            check_path(path)  # the workspace tools' own rule, as for a scenario's: else no replay could build it
        except ToolError as e:
            raise BadRequest("invalid_field", f"workspace: {e}") from None
    request["model_turns"] = turns = request.get("model_turns", [])[:steps]  # only the turns a run can reach are kept, or read
    for i, turn in enumerate(turns):
        if _too_deep(turn):
            raise BadRequest("invalid_field", f"model_turns[{i}] nests arrays and objects more than {MAX_NESTING} levels deep")
    return request


def _steps(request: dict[str, Any]) -> int | None:
    """How many turns a run can reach: max_steps, or None if it is not a whole number, 0 or more."""
    steps = request.get("max_steps", DEFAULT_MAX_STEPS)
    return steps if type(steps) is int and steps >= 0 else None  # (a boolean is not a step count)


def _too_deep(value: Any, levels: int = MAX_NESTING) -> bool:
    """Whether arrays and objects go more than `levels` deep inside one another ({} is one level)."""
    if not isinstance(value, dict | list):
        return False
    children = value.values() if isinstance(value, dict) else value
    return levels == 0 or any(_too_deep(child, levels - 1) for child in children if isinstance(child, dict | list))


def render_turn(turn: Any) -> str:
    """A model turn as the text the model would have written."""
    if not isinstance(turn, dict):
        return ""  # nothing usable: the loop answers with a notice
    lines = []
    thought = turn.get("thought")
    if isinstance(thought, str) and thought.strip():
        lines.append("Thought: " + " ".join(thought.splitlines()).strip())
    action = turn.get("action")
    if isinstance(action, dict) and "tool" in action:
        tool = action["tool"]
        name = tool if isinstance(tool, str) else json.dumps(tool)
        args = action.get("args", {})
        lines.append(f"Action: {' '.join(name.splitlines())}({json.dumps(args, ensure_ascii=False)})")
    return "".join(line + "\n" for line in lines)


def scenario_for(request: dict[str, Any]) -> Scenario:
    """The scenario a checked request (parse_request) describes: its turns as the script."""
    return Scenario(
        question=request.get("task", ""),
        completions=tuple(map(render_turn, request["model_turns"])),
        title="run_agent request",
        prompt="agent",
        tools=tuple(ToolSpec(name) for name in TOOL_NAMES),
        max_steps=request.get("max_steps", DEFAULT_MAX_STEPS),
        unknown_tool_limit=0,  # off: a bad turn is a step, and the run goes on
        format_error_limit=0,
        repeat_limit=0,
        use_stop=False,
        workspace=dict(request.get("workspace", {})),
        source="<stdin>",
    )


def answer(record: RunRecord) -> str:
    """The answer's JSON: {"final_message", "status", "steps", "workspace"} (see `harness agent --help`)."""
    status, message = STATUS.get(record.stop_reason, (record.stop_reason.value, record.detail))
    final = record.final_answer if message is None else message
    return compact({"final_message": final or "", "status": status, "steps": record.steps, "workspace": record.workspace or {}})
