"""Frozen values that are quick to make: `@value` on a frozen, slotted dataclass.

A run makes about twenty small values a step (its events, the round the reader decided,
the call's record). A frozen dataclass's generated `__init__` writes each field through
`object.__setattr__`, since its own `__setattr__` refuses: a five-field value costs
about 8,800 machine instructions to make (a plain class's: 2,400), and twenty of them were
a quarter of what one step of the loop costs. With `@value` it costs about 5,300.

    @value
    @dataclass(frozen=True, slots=True)
    class Usage:
        step: int
        prompt_chars: int

`value` keeps the class as it is (a frozen dataclass: its fields, repr, equality, hash,
`dataclasses.replace`, and `u.step = 2` still raises FrozenInstanceError) and gives it an
`__init__` of the same signature that writes each slot through the slot's own setter,
which is what `object.__setattr__` ends up calling, without looking the name up first.
What it leaves out: `__post_init__` and `InitVar` fields (none of these values has one).
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import TypeVar

T = TypeVar("T", bound=type)


def value(cls: T) -> T:
    if "__slots__" not in cls.__dict__ or not cls.__dataclass_params__.frozen or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: @value takes a dataclass(frozen=True, slots=True) without __post_init__")
    params, body, env = [], [], {"_MISSING": MISSING}
    for f in fields(cls):
        if not f.init:
            raise TypeError(f"{cls.__name__}.{f.name}: @value makes every field an __init__ argument")
        env[f"_set_{f.name}"] = cls.__dict__[f.name].__set__  # the slot's own setter
        if f.default is not MISSING:
            env[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not MISSING:
            env[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_MISSING")
            body.append(f"if {f.name} is _MISSING: {f.name} = _factory_{f.name}()")
        else:
            params.append(f.name)
        body.append(f"_set_{f.name}(self, {f.name})")
    source = f"def __init__(self, {', '.join(params)}):\n    " + "\n    ".join(body or ["pass"])
    exec(source, env)  # the same way dataclasses writes the __init__ it generates
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init
    return cls
