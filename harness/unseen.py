"""What of a completion the user never saw: in the buffer, but not shown.

The lanes' gates (harness.governor) decide what reaches the user; the buffer keeps the
whole completion all the same, since the model must see what it wrote. So a view has
two different facts to tell, and must not mix them up:

    denied / withheld   in the buffer, not shown to the user   (a lane its gate denied)
    cut                 never in the buffer                     (the stop sequence's cut)

    unseen("Thought: go\\nAction: a()\\nAction: b()\\n", decided)  ->  ((23, 35, "action"),)

Each entry is (start, end, lane) in the completion's text: "action" for an Action line
its gate denied, "answer" for a final answer that was withheld (it and every line after
it, which all belong to its lane or are refused actions after it). A lane is made of
whole lines, and the lanes come in the order they open, so each is found at the start of
a line, after the one before: one pass over the text.
"""

from __future__ import annotations

from harness.decisions import Round

Unseen = tuple[tuple[int, int, str], ...]  # (start, end, "action" | "answer")


def unseen(text: str, decided: Round) -> Unseen:
    for lane in decided.lanes:
        if lane.status == "denied":
            break
    else:
        return ()  # the usual reply: the user saw all of it
    out: list[tuple[int, int, str]] = []
    cursor = 0
    for lane in decided.lanes:
        line = lane.text[: lane.text.find("\n") + 1 or len(lane.text)]  # its first line
        # Lanes are mostly one line after another: the next one begins where the last ended.
        at = cursor if text.startswith(line, cursor) and (not cursor or text[cursor - 1] == "\n") else _line_start(text, line, cursor)
        if at < 0 or not line:
            continue
        cursor = at + len(line)
        if lane.status != "denied" or (out and at < out[-1][1]):  # shown, or inside a withheld answer
            continue
        end = len(text) if lane.kind == "answer" else min(len(text), at + len(lane.text))
        out.append((at, end, "answer" if lane.kind == "answer" else "action"))
    return tuple(out)


def _line_start(text: str, line: str, start: int) -> int:
    """Where `line` occurs at the start of a line of `text`, from `start` on (-1: nowhere)."""
    at = text.find(line, start)
    while at > 0 and text[at - 1] != "\n":
        at = text.find(line, at + 1)
    return at
