"""The wording of every rejection: what rule was broken, and the exact format to use.

A notice is self-sufficient (seed 000): the model may never see its rejected text again,
so the notice names the tool, the rule and the fix, in plain sentences a small model can
act on (the governed dialect writes the whole structured diagnosis). harness.governor and
harness.loop decide when; this module only says what.

    code                                   when                                      shipped scenario
    protocol_violation.no_action           no Action line and no final answer        format-recovery
    protocol_violation.tool_call_invalid   a line starting `Action` that does not    format-limit
                                           parse
    protocol_violation.unknown_tool        no such tool (the notice lists them)      unknown-tool
    protocol_violation.nested_call         a call inside another's arguments, or
                                           two calls on one line: call one first
    protocol_violation.text_after_call     text after the call's closing bracket
    protocol_violation.placeholder         a parameter's name as its value (the
                                           notice shows the tool's example)
    protocol_violation.copied_example      the tool list's made-up example, for a
                                           question that never names its values
    protocol_violation.repeated_call       the same call with the same result or
                                           error; repeat_limit of them end the run
    protocol_violation.too_many_actions    more Action lines than the dialect runs   two-actions
    protocol_violation.action_after_answer an Action line after the final answer     governed-late
    gate.incompatible_action               a second action that could read the       governed-research
                                           first's unseen result
    gate.answer_withheld                   a final answer after a non-neutral action governed-research
    prefix.rejected                        a reply without the required prefix       governed-prefix
    protocol_violation.more_rejections     past 10 rejections in one reply: one
                                           summary for the rest

No observation is ever written for a call that did not run.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.decisions import Action, Rejection

PREVIEW = 80  # characters of a rejected generation quoted back in its notice


def no_action(expected_action: str) -> Rejection:
    message = (
        f"Your reply has no Action line, so no tool ran. Call a tool now, on a line of its own: "
        f"{expected_action}. Write `Final Answer:` only when an observation has given you the answer."
    )
    return Rejection("protocol_violation.no_action", message, violations=("no Action line", "no final answer"))


def action_after_answer(number: int, tool: str | None) -> Rejection:
    message = "An Action line came after the final answer; it did not run. The final answer ends the run."
    return Rejection("protocol_violation.action_after_answer", message, number, tool, ("Action line after the final answer",))


def tool_call_invalid(
    number: int, line: str, expected_action: str, expected: str, args_max: int, example: str | None = None
) -> Rejection:
    if len(line) > args_max:  # the real cause, not a puzzling "does not read"
        message = (
            f"Action line {number} is longer than {args_max:,} characters, the limit for one Action line; "
            "it did not run. Split the work into smaller calls."
        )
        violation = f"Action line of {len(line):,} characters, over the limit of {args_max:,}"
    else:
        fix = f"Write the call alone on its line, as in Action: {example}" if example else f"Write {expected}."
        message = f"Action line {number} does not read {expected_action}; it did not run. {fix}"
        violation = f"not of the form {expected_action}: {line.strip()[:PREVIEW]!r}"
    return Rejection("protocol_violation.tool_call_invalid", message, number, None, (violation,))


def after_call(number: int, tool: str, args: str, after: str, close: str) -> Rejection:
    arithmetic = after.strip()[:1] in "+-*/%"
    fix = f"{tool}({args} {after.strip()})" if arithmetic and close == ")" else f"{tool}({args})"
    message = (
        f"Action line {number} goes on after the `{close}` that ends the call ({_quote(after.strip())}); "
        f"it did not run. Put everything inside the brackets and end the line there: Action: {fix}"
    )
    return Rejection("protocol_violation.text_after_call", message, number, tool, (f"text after the closing {close!r}: {_quote(after.strip())}",))


def nested_call(number: int, tool: str, inner: str, inner_call: str) -> Rejection:
    """`calculator(price("lamp") * 4)`: `inner` is called inside `tool`'s arguments."""
    return _one_call(number, tool, f"a call to {inner} as well as {tool}", inner, inner_call, f"{inner} called inside {tool}")


def two_calls(number: int, tool: str, first_call: str, second: str) -> Rejection:
    """`alpha("x") + beta("y")`: a call to `tool`, then one to `second` after it."""
    both = f"two calls to {tool}" if second == tool else f"a call to {tool} as well as {second}"
    return _one_call(number, tool, both, tool, first_call, f"{second} called after {tool}")


def _one_call(number: int, tool: str, holds: str, first: str, first_call: str, violation: str) -> Rejection:
    message = (
        f"Action line {number} holds {holds}; one Action line runs one tool, "
        f"so nothing ran. Call {first} first, on a line of its own: Action: {first_call} "
        "Then use the result its observation gives you."
    )
    return Rejection("protocol_violation.nested_call", message, number, tool, (violation,))


def copied_example(number: int, tool: str, call: str) -> Rejection:
    message = (
        f"{call} is the example from the tool list, not a step of this question, so it did not run. "
        "Write the call this question needs, with its own values; a value you do not have yet "
        "comes from the tool that gives it."
    )
    return Rejection("protocol_violation.copied_example", message, number, tool, ("the tool list's example, copied as it is",))


def placeholder(number: int, tool: str, param: str, example: str) -> Rejection:
    message = f"`{param}` is the name of {tool}'s parameter, not a value. Write the value itself, as in Action: {example}"
    return Rejection("protocol_violation.placeholder", message, number, tool, (f"the argument is the parameter name {param!r}",))


def repeated_call(number: int, tool: str, first_step: int, answered: bool = False) -> Rejection:
    same = "result" if answered else "error"
    message = f"You already made exactly this call in step {first_step} and got the same {same}; " + (
        "use it: call the next tool you need, or write the Final Answer."  # it worked: move on
        if answered
        else f"repeating it will not help. Change the arguments to {tool} as the error says, or call another tool."
    )
    return Rejection("protocol_violation.repeated_call", message, number, tool, (f"the same call and {same} as in step {first_step}",))


def unknown_tool(number: int, tool: str, valid: Iterable[str]) -> Rejection:
    message = f"There is no tool named {tool!r}; it did not run. Valid tools: {', '.join(valid)}."
    return Rejection("protocol_violation.unknown_tool", message, number, tool, (f"unknown tool {tool!r}",))


def too_many_actions(number: int, tool: str, max_actions: int) -> Rejection:
    count = "one Action line" if max_actions == 1 else f"{max_actions} Action lines"
    message = (
        f"Only {count} per reply can run; action {number} did not run. "
        "Ask for it again after you have read the observations."
    )
    return Rejection("protocol_violation.too_many_actions", message, number, tool, (f"more than {count} in one reply",))


def incompatible_action(number: int, tool: str, trait: str, first: int, first_tool: str, first_trait: str) -> Rejection:
    message = (
        f"Action {number} ({tool}, {trait}) could depend on the result of action {first} "
        f"({first_tool}, {first_trait}), which you have not seen yet; it did not run. "
        "Ask for it again after you have read the observation."
    )
    return Rejection("gate.incompatible_action", message, number, tool, (f"{trait} action after {first_trait} action {first}",))


def answer_withheld(accepted: Iterable[tuple[int, Action, str]]) -> Rejection:
    message = (
        "Your final answer was not shown and the run goes on: it came after an action whose result "
        "you have not seen yet. Read the observations, then write the final answer in a reply of its own."
    )
    violations = tuple(f"action {n} ({a.tool}) is {trait}, not neutral" for n, a, trait in accepted)
    return Rejection("gate.answer_withheld", message, violations=violations)


def prefix_rejected(prefix: str, head: str, expected: str) -> Rejection:
    message = (
        f"A reply must begin with {prefix!r}; this one began {_quote(head)} and was stopped there. "
        f"Nothing of it was shown or run. Begin with {prefix!r}, then write {expected}."
    )
    return Rejection("prefix.rejected", message, violations=(f"does not begin with {prefix!r}",))


def more_rejections(count: int, codes: Iterable[str]) -> Rejection:
    kinds = sorted(set(codes))
    message = (
        f"{count:,} more candidates in this reply did not pass and are not listed one by one "
        f"({', '.join(kinds)}). Write one reply at a time, in the format above."
    )
    return Rejection("protocol_violation.more_rejections", message, violations=tuple(kinds))


def _quote(text: str) -> str:
    """A rejected text as its notice quotes it: the first PREVIEW characters."""
    return repr(text[:PREVIEW] + ("…" if len(text) > PREVIEW else ""))
