"""Frozen values built quickly (harness.values) are still frozen dataclasses to a user."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from harness.events import Notice, TextDelta, Usage
from harness.values import value


@value
@dataclasses.dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)


def test_a_value_is_made_as_its_dataclass_would_make_it():
    assert Point(1) == Point(1, 0, []) == Point(x=1, tags=[]) and Point(1, 2).y == 2
    assert Point(1).tags is not Point(1).tags  # a factory's default is made afresh each time
    assert repr(Point(1, 2, ["a"])) == "Point(x=1, y=2, tags=['a'])"
    with pytest.raises(TypeError):
        Point()  # x is required, as in the dataclass's own __init__
    with pytest.raises(TypeError):
        Point(1, 2, [], 4)


def test_a_value_cannot_be_changed_and_keeps_what_a_frozen_dataclass_has():
    delta, usage = TextDelta("hi"), Usage(1, 10, 2, 12)
    for event, field in ((delta, "text"), (usage, "step")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(event, field, "changed")
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(event, field)
    assert dataclasses.asdict(usage) == {"step": 1, "prompt_chars": 10, "completion_chars": 2, "total_prompt_chars": 12}
    assert dataclasses.replace(usage, step=2) == Usage(2, 10, 2, 12) and hash(delta) == hash(TextDelta("hi"))
    assert pickle.loads(pickle.dumps(Notice(3, "c", "m", tool="t"))) == Notice(3, "c", "m", None, "t", ())


def test_value_refuses_what_it_would_get_wrong():
    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        x: int

        def __post_init__(self):
            raise AssertionError("never skipped silently")

    with pytest.raises(TypeError, match="__post_init__"):
        value(Checked)
    with pytest.raises(TypeError, match="slots=True"):
        value(dataclasses.dataclass(frozen=True)(type("Open", (), {"__annotations__": {"x": "int"}})))
