"""Frozen values built quickly (harness.values) are still frozen dataclasses to a user."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import weakref

import pytest

from harness.events import Notice, TextDelta, Usage
from harness.transcript import Author
from harness.values import value


@value
class Point:
    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)
    note: str = dataclasses.field(default="", compare=False, repr=False)


def test_a_value_is_made_as_its_dataclass_would_make_it():
    assert Point(1) == Point(1, 0, []) == Point(x=1, tags=[]) and Point(1, 2).y == 2
    assert Point(1).tags is not Point(1).tags  # a factory's default is made afresh each time
    assert repr(Point(1, 2, ["a"])) == "Point(x=1, y=2, tags=['a'])"  # note has repr=False
    assert Point(1, note="a") == Point(1, note="b")  # compare=False: as dataclasses does it
    assert Point(1) != Point(2) and Point(1) != (1, 0, [], "") and dataclasses.is_dataclass(Point)
    assert [f.name for f in dataclasses.fields(Point)] == ["x", "y", "tags", "note"] and Point.__match_args__[0] == "x"
    with pytest.raises(TypeError):
        Point()  # x is required, as in the dataclass's own __init__
    with pytest.raises(TypeError):
        Point(1, 2, [], "", 5)


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


def test_a_value_is_described_as_its_dataclass_would_be():
    plain = dataclasses.dataclass(frozen=True, slots=True)(type("Point", (), {"__annotations__": dict(Point.__annotations__), "y": 0, "tags": dataclasses.field(default_factory=list), "note": dataclasses.field(default="", compare=False, repr=False)}))
    assert Point.__doc__ == plain.__doc__ == "Point(x: 'int', y: 'int' = 0, tags: 'list[str]' = <factory>, note: 'str' = '')"
    assert str(inspect.signature(Point)) == str(inspect.signature(plain))
    assert Usage.__doc__ == "Usage(step: 'int', prompt_chars: 'int', completion_chars: 'int', total_prompt_chars: 'int')"
    from harness.model import TokenUsage

    assert TokenUsage.__doc__.startswith("What a backend that can count reports")  # a docstring of its own is kept


def test_a_value_copies_and_pickles_without_assigning_a_field():
    point = Point(1, 2, ["a"], note="kept")
    for copied in (copy.copy(point), copy.deepcopy(point), pickle.loads(pickle.dumps(point))):
        assert copied == point and copied.note == "kept" and copied.tags == ["a"]
    assert copy.deepcopy(point).tags is not point.tags


def test_a_value_has_slots_and_builds_no_method_but_its_init():
    assert not hasattr(Point(1), "__dict__")  # slotted: no stray attribute can be set
    with pytest.raises(dataclasses.FrozenInstanceError):
        Point(1).z = 3
    shared = ("__repr__", "__eq__", "__hash__", "__setattr__", "__reduce__")  # one function for every value
    assert all(getattr(Point, name) is getattr(Usage, name) for name in shared)
    assert Point.__init__ is not Usage.__init__ and Point.__init__.__qualname__ == "Point.__init__"


def test_a_value_is_a_frozen_dataclass_to_subclasses_weakrefs_and_its_own_methods():
    from harness import Limits, Scenario, Span, TokenUsage

    @dataclasses.dataclass(frozen=True)
    class Longer(Limits):  # dataclasses refuses a frozen subclass of a class it thinks is not frozen
        extra: int = 0

    assert Longer(extra=3).max_steps == 15 and Longer().extra == 0 and Longer.__dataclass_params__.frozen
    with pytest.raises(TypeError, match="non-frozen dataclass from a frozen one"):
        dataclasses.dataclass(type("Loose", (Limits,), {"__annotations__": {"x": "int"}, "x": 0}))
    nan = float("nan")  # the same object: a dataclass compares fields as tuples, identity first
    assert weakref.ref(TextDelta("x")) is not None and TextDelta(nan) == TextDelta(nan)
    for public in (Limits(), TokenUsage(1), Span(Author.MODEL, "x")):  # a __dict__, as before
        assert vars(public) == dataclasses.asdict(public)
    assert Limits.max_steps == 15 and "max_steps" in {f.name for f in dataclasses.fields(Scenario("q").limits)}

    @value
    class Own:
        x: int

        def __repr__(self) -> str:
            return "mine"

    assert repr(Own(1)) == "mine" and Own(1) == Own(1)


def test_a_tool_is_the_frozen_dataclass_it_always_was():
    from harness import Tool, from_function

    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper()

    tool = from_function(shout)
    assert dataclasses.is_dataclass(tool) and Tool.__dataclass_params__.frozen and tool == from_function(shout)
    assert tool.call(("hi",), {}) == "HI" and "_params" in vars(tool)  # its cached lookups live in its __dict__
    with pytest.raises(dataclasses.FrozenInstanceError):
        tool.name = "other"
    assert dataclasses.replace(tool, trait="neutral").trait == "neutral" and hash(tool) == hash(from_function(shout))
    assert repr(tool).startswith("Tool(name='shout', description='Say it louder.', params=('text',), fn=<function")


def test_value_refuses_what_it_would_get_wrong():
    class Checked:
        x: int

        def __post_init__(self):
            raise AssertionError("never skipped silently")

    with pytest.raises(TypeError, match="__post_init__"):
        value(Checked)


def test_values_of_one_shape_share_code_but_keep_their_own_names_defaults_and_errors():
    @value
    class Left:
        a: int
        b: list = dataclasses.field(default_factory=list)

    @value
    class Right:
        x: str
        y: dict = dataclasses.field(default_factory=dict)

    assert Left.__init__.__code__.co_code == Right.__init__.__code__.co_code  # one compile for both
    assert Left(b=[1], a=2) == Left(2, [1]) and Right(x="s").y == {} and Left(1).b == [] and Right("s").y is not Right("s").y
    assert str(inspect.signature(Right)) == "(x: 'str', y: 'dict' = <factory>) -> None"
    with pytest.raises(TypeError, match=r"Right.__init__\(\) missing 1 required positional argument: 'x'"):
        Right()
    with pytest.raises(TypeError, match="unexpected keyword argument 'a'"):
        Right(a=1)
    with pytest.raises(TypeError, match="non-default argument 'late' follows default argument"):
        value(type("Bad", (), {"__annotations__": {"early": "int", "late": "int"}, "early": 0, "__module__": __name__}))
