"""Events as JSON Lines: one object per event, in order, as they happen.

    {"event": "round_started", "step": 1, "prompt_chars": 612}

For programs and for snapshot tests of what a run did, not only what it left behind.
The text is exactly `json.dumps({"event": name, **asdict(event)}, ensure_ascii=False)`,
written without the copy: each type's name and field names are worked out once; plain
values (text, whole numbers, true, false, null) are written directly, text with json's
own string writer; anything else goes to json, where a dataclass inside an event (a
Round, its Lanes and Actions) becomes an object of its fields as json meets it.
"""

from __future__ import annotations

import json
import re
from dataclasses import fields
from typing import Any

from harness.escape import for_json
from harness.events import Event

_string = json.encoder.encode_basestring  # how json writes text when ensure_ascii=False

_FIELDS: dict[type, tuple[str, ...]] = {}  # a dataclass -> its field names, in order


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in fields(cls))
    return names


def _as_object(value: Any) -> dict[str, Any]:
    """json's hook for what it cannot write itself: a dataclass, as its fields."""
    try:
        names = _fields(type(value))
    except TypeError:  # not a dataclass: what json would have said
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable") from None
    return {name: getattr(value, name) for name in names}


_encode = json.JSONEncoder(ensure_ascii=False, default=_as_object).encode


def _value(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return repr(value)
    if isinstance(value, str):  # an Author or a StopReason too: json writes its text
        return _string(value)
    return _encode(value)  # a Round, a tuple, a dict, a float: json, with the hook for dataclasses


_LAYOUTS: dict[type, tuple[str, tuple[tuple[str, str], ...]]] = {}  # an event class -> how to write it


def _layout(cls: type) -> tuple[str, tuple[tuple[str, str], ...]]:
    name = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()  # RoundStarted -> round_started
    keys = tuple((field, _string(field) + ": ") for field in _fields(cls))
    layout = _LAYOUTS[cls] = ('{"event": ' + _string(name), keys)
    return layout


def event_line(event: Event) -> str:
    head, keys = _LAYOUTS.get(type(event)) or _layout(type(event))
    parts = [head]
    for field, key in keys:
        parts.append(key + _value(getattr(event, field)))
    return for_json(", ".join(parts) + "}")
