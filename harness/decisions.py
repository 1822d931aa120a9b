"""What one completion decided: immutable values (NamedTuples, like the events) the reader
(harness.governor) makes and everyone else reads, equal for any chunking of the same completion.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Action(NamedTuple):
    tool: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}  # (never changed: the default is shared)
    raw: str = ""  # the arguments as the model wrote them


class Rejection(NamedTuple):
    code: str  # stable: protocol_violation.no_action, gate.incompatible_action, ...
    message: str
    index: int | None = None  # the Action line's number in the completion, from 1
    tool: str | None = None
    violations: tuple[str, ...] = ()


class Lane(NamedTuple):
    index: int  # order of appearance in the completion, from 0
    kind: str  # thinking | action | answer
    status: str  # allowed | denied
    emitted_chars: int  # what the user saw of it (a denied lane: 0)
    text: str  # all the model wrote in it, shown or not


class Round(NamedTuple):
    lanes: tuple[Lane, ...] = ()
    actions: tuple[tuple[int, Action], ...] = ()  # (Action line number, action), accepted, in order
    answer: str | None = None  # the final answer, if its lane opened
    answer_streamed: bool = False  # whether any of it reached the user
    rejections: tuple[Rejection, ...] = ()
    shown: str = ""  # all that reached the user, in order
    prefix_rejected: bool = False


def unran(decided: Round) -> list[str]:
    """The accepted Action lines of a reply whose Final Answer ended the run: they never ran."""
    if decided.answer is None:
        return []
    return [lane.text.strip() for lane in decided.lanes if lane.kind == "action" and lane.status == "allowed"]
