"""A readable diff of two saved transcripts: what changed, in which step, and by whom.

    transcripts/nimbus.txt: first difference in step 1 (code: Observation: 99.9 GB of 100 GB used)
    @@ -saved line 23, +replayed line 23 · step 1 @@
     model     | Action: check_quota(nimbus)
    -code      | Observation: 99.9 GB of 100 GB used
    +code      | Observation: 99.8 GB of 100 GB used

Step k is the k-th model call and what code appended after it; metadata lines are named
by key. Bounded for huge files: the equal ends are set aside before difflib sees the rest,
and a shown line is cut to a window around its first difference.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import json
import os

from harness.escape import for_terminal

MAX_LINES = 60  # diff lines shown; the rest are counted
WIDTH = 200  # characters of one line shown
CONTEXT = 3  # equal lines shown around each change
_AUTHORS = ("developer", "model", "code")


def transcript_diff(saved: str, fresh: str, name: str, labels: tuple[str, str] = ("saved", "replayed")) -> str:
    """The readable difference between a saved transcript and a fresh one ("" if equal)."""
    if saved == fresh:
        return ""
    old_label, new_label = labels
    a, b = _lines(saved), _lines(fresh)
    # difflib's hunks, after setting aside the equal ends (one edit in a huge file costs linear time)
    head = len(os.path.commonprefix([a, b]))  # (of lists: the equal lines they begin with)
    tail = len(os.path.commonprefix([a[head:][::-1], b[head:][::-1]]))
    head, tail = max(0, head - CONTEXT), max(0, tail - CONTEXT)
    middle = difflib.SequenceMatcher(None, a[head : len(a) - tail], b[head : len(b) - tail], autojunk=False)
    groups = [[(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in group] for group in middle.get_grouped_opcodes(CONTEXT)]
    steps_a, steps_b = _steps(a), _steps(b)
    hunks = functools.partial(_hunks, a, b, groups, steps_a, steps_b, old_label, new_label)  # (mark, line, focus, step), lazily
    headline = "the records are the same; only the metadata differs" if groups else "the lines are the same"
    for mark, line, at, step in hunks():  # the first changed record, if any
        if mark in ("-", "+") and (author := _author(line)) is not None:
            headline = f"first difference in {_where(step)} ({author}: {_show(line[12:], max(0, at - 12), 80)})"
            break
    out = [f"{name}: {headline}"]
    keys = _meta_keys(a, b)
    if keys:
        out.append("metadata that differs: " + ", ".join(keys))
    if keys == ["source.sha256"] and not headline.startswith("first difference"):  # an edit the run does not show
        out.append("the source was edited since this was recorded, and the run is the same: pytest --harness-update records its new hash")
    shown = hunks()
    out += [mark + _show(line, at) for mark, line, at, _ in itertools.islice(shown, MAX_LINES)]
    hidden = sum(1 for _ in shown)  # counted, never rendered
    if hidden:
        out.append(f"… {hidden} more diff lines not shown")
    for label, text in ((old_label, saved), (new_label, fresh)):
        if not text.endswith("\n") and saved.endswith("\n") != fresh.endswith("\n"):
            out.append(f"(the {label} file does not end with a newline)")
    return "\n".join(out)


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _author(line: str) -> str | None:
    word = line[:9].rstrip(" ")
    return word if word in _AUTHORS and line[9:11] in (" |", " \\") else None


def _steps(lines: list[str]) -> list[int]:
    """The step of each line: a new step begins where a run of model records begins (-1: metadata)."""
    steps, step, previous = [], 0, None
    for line in lines:
        author = _author(line)
        if author == "model" and previous != "model":
            step += 1
        if author is not None:
            previous = author
        steps.append(-1 if author is None and line.startswith("#") else step)
    return steps


def _where(step: int) -> str:
    return {-1: "the metadata", 0: "the prompt"}.get(step, f"step {step}")


def _meta_keys(a: list[str], b: list[str]) -> list[str]:
    """The metadata keys whose values differ; for an object, the keys inside it too (scenario.prompt)."""
    # Each side's metadata lines (`# key: value`), by key.
    old, new = (dict(x[2:].split(": ", 1) for x in lines if x.startswith("# ") and ": " in x) for lines in (a, b))
    keys = []
    for key in _differing(old, new):
        x, y = _object(old.get(key)), _object(new.get(key))
        inner = _differing(x, y) if x is not None and y is not None else []
        keys += [f"{key}.{k}" for k in inner] or [key]
    return keys


def _differing(x: dict, y: dict) -> list[str]:
    return [k for k in [*x, *(k for k in y if k not in x)] if x.get(k, ...) != y.get(k, ...)]


def _object(value: str | None) -> dict | None:
    try:
        found = json.loads(value or "null")
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _hunks(a, b, groups, steps_a, steps_b, old_label, new_label):
    """Unified-style hunks, as (mark, line, where to look in it, its step): a header, then ' ', '-', '+' lines."""
    for group in groups:
        i1, j1 = group[0][1], group[0][3]
        _, ci1, ci2, cj1, _ = next(op for op in group if op[0] != "equal")
        step = steps_a[ci1] if ci2 > ci1 else steps_b[cj1]  # the step of the first change
        yield "", f"@@ -{old_label} line {i1 + 1}, +{new_label} line {j1 + 1} · {_where(step)} @@", 0, step
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from ((" ", line, 0, step) for line in a[i1:i2])
                continue
            olds, news = a[i1:i2], b[j1:j2]
            # Where to look in each changed line: where the k-th old and the k-th new part.
            focus = [_first_difference(x, y) for x, y in zip(olds, news)] + [0] * abs(len(olds) - len(news))
            yield from (("-", line, at, step) for line, at, step in zip(olds, focus, steps_a[i1:i2]))
            yield from (("+", line, at, step) for line, at, step in zip(news, focus, steps_b[j1:j2]))


def _first_difference(x: str, y: str) -> int:
    """The length of the common prefix, by halving (a long line is compared in few steps)."""
    low, high = 0, min(len(x), len(y))
    while low < high:
        mid = (low + high + 1) // 2
        if x[low:mid] == y[low:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _show(line: str, focus: int = 0, width: int = WIDTH) -> str:
    """One line, at most `width` characters around `focus`, shown but never obeyed by a terminal."""
    start = max(0, focus - width // 4) if focus > width * 3 // 4 else 0
    text = for_terminal(line[start : start + width])
    return ("…" if start else "") + text + ("…" if start + width < len(line) else "")
