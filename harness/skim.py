"""A JSON object read as json.loads reads it, except that of one array only the elements
the caller will use are kept; the others are checked as JSON and dropped.

    skim(text, "model_turns", lambda members: 3)["model_turns"]   # its first 3 elements

A run_agent request may carry a million model turns, of which a run reaches max_steps:
building them all as dicts would be most of its cost.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.decoder import WHITESPACE, JSONObject
from typing import Any

_REAL = json.JSONDecoder()
_CHECKED = json.JSONDecoder(object_pairs_hook=len)  # every object parsed, then kept as its size
_SPACE = WHITESPACE.match  # JSON's own whitespace: " \t\n\r"

Members = dict[str, Any]


def skim(text: str, key: str, kept: Callable[[Members], int]) -> Members | None:
    """json.loads(text) for an object, but an array under `key` keeps only its first
    kept(members) elements (`members`: the object's other values). None where json.loads
    could decide differently (not an object, not JSON, deep nesting): let it decide."""
    start = _SPACE(text, 0).end()
    if not text.startswith("{", start):
        return None
    try:
        return _skim(text, start, key, kept)
    except (ValueError, RecursionError):  # (JSONDecodeError is a ValueError)
        return None


def _skim(text: str, start: int, key: str, kept: Callable[[Members], int]) -> Members | None:
    arrays: list[int | None] = []  # where each member's value begins, if it is an array

    def value(s: str, at: int) -> tuple[Any, int]:
        arrays.append(at if (array := s.startswith("[", at)) else None)
        return (_CHECKED if array else _REAL).scan_once(s, at)

    # The object's members, by json's own reader, each value through `value`, in order.
    pairs, end = JSONObject((text, start + 1), True, value, None, list)
    if _SPACE(text, end).end() != len(text):
        return None  # "Extra data": json.loads says so
    members: Members = {}
    at_key = None  # where the array under `key` begins
    for (name, got), at in zip(pairs, arrays):
        if name == key:
            at_key = at  # (a repeated name: the last one counts, as in json.loads)
        elif at is not None:
            got = _REAL.scan_once(text, at)[0]  # another array: read as it is
        members[name] = got
    if at_key is not None:
        members[key] = _head(text, at_key, len(members[key]), kept(members))
    return members


def _head(text: str, at: int, length: int, n: int) -> list[Any]:
    """The first n elements of the array of `length` that begins at `at`, read again."""
    out: list[Any] = []
    i = _SPACE(text, at + 1).end()
    for _ in range(min(n, length)):  # (it was checked: "[" value ("," value)* "]")
        element, i = _REAL.scan_once(text, i)
        out.append(element)
        i = _SPACE(text, _SPACE(text, i).end() + 1).end()  # past the "," and the blanks after it
    return out
