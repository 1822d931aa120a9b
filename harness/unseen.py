"""What of a completion the user never saw: in the buffer, but not shown.

The gates (harness.governor) decide what reaches the user; the buffer keeps the whole
completion. Each entry is (start, end, lane): "action" for an Action line its gate denied,
"answer" for a withheld final answer and every line after it.

    unseen("Thought: go\\nAction: a()\\nAction: b()\\n", decided)  ->  ((23, 35, "action"),)
"""

from __future__ import annotations

from harness.decisions import Round

Unseen = tuple[tuple[int, int, str], ...]  # (start, end, "action" | "answer")


def unseen(text: str, decided: Round) -> Unseen:
    if all(lane.status != "denied" for lane in decided.lanes):
        return ()  # the usual reply: the user saw all of it
    out: list[tuple[int, int, str]] = []
    cursor, size, last_end = 0, len(text), -1  # (last_end: where the last entry ends)
    for lane in decided.lanes:
        line = lane.text[: lane.text.find("\n") + 1 or None]  # its first line, with its newline
        at = text.find(line, cursor)
        while at > 0 and text[at - 1] != "\n":  # where it begins a line of `text`, from the cursor on (-1: nowhere)
            at = text.find(line, at + 1)
        if at < 0 or not line:
            continue
        cursor = at + len(line)
        if lane.status != "denied" or at < last_end:  # shown, or inside a withheld answer
            continue
        if lane.kind == "answer":
            out.append((at, size, "answer"))
            last_end = size
        else:
            last_end = min(at + len(lane.text), size)
            out.append((at, last_end, "action"))
    return tuple(out)

