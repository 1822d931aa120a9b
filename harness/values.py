"""Frozen values that are quick to build and quick to make: `@value` on a class of fields.

    @value
    class Usage:
        step: int
        prompt_chars: int = 0

A value is a frozen, slotted dataclass to everything that asks (`dataclasses.fields`,
`replace`, `asdict`, its params, repr, equality, hash, pickling, weak references, a frozen
dataclass subclassing it, a method the class writes itself, and `u.step = 2` raises
FrozenInstanceError); `@value(slots=False)` keeps a __dict__ instead, for the public
values that always had one. Two costs of `@dataclass(frozen=True, slots=True)` are what it avoids:

- **Building the class.** dataclasses writes six methods as source and compiles each one,
  about 1.2 ms a class here; forty of them were a fifth of `harness run`'s start-up.
  `value` asks dataclasses for the fields and the slots only, compiles the one method
  whose speed matters (`__init__`), and shares plain functions for the rest, which read
  the field names the class keeps in `_value_fields`.
- **Making a value.** The frozen dataclass's `__init__` writes each field through
  `object.__setattr__`, since its own `__setattr__` refuses; this one writes each slot
  through the slot's own setter, which is what that call ends up doing, without the
  lookup: about 5,300 machine instructions for five fields instead of 8,800.

What it leaves out: `__post_init__`, `InitVar` and ordering (none of these values needs one).
"""

from __future__ import annotations

from dataclasses import MISSING, FrozenInstanceError, dataclass, fields
from inspect import signature
from operator import attrgetter
from types import CodeType, FunctionType
from typing import TypeVar

T = TypeVar("T", bound=type)


def value(cls: T | None = None, *, slots: bool = True) -> T:
    """`@value`, or `@value(slots=False)` for a class whose instances keep a __dict__ (vars()
    works, and each field's default is also a class attribute, as in a dataclass)."""
    if cls is None:
        return lambda cls: value(cls, slots=slots)
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: a @value has no __post_init__ (its __init__ would skip it)")
    documented = bool(cls.__doc__)
    if not documented:  # dataclasses would write one from a signature it reads the slow way
        cls.__doc__ = cls.__name__
    own = set(cls.__dict__)  # methods the class wrote itself are kept, as dataclasses keeps them
    cls = dataclass(init=False, repr=False, eq=False, slots=slots, weakref_slot=slots)(cls)  # compiles nothing
    params = cls.__dataclass_params__  # what it is to everything that asks: a frozen dataclass
    params.init = params.repr = params.eq = params.frozen = True
    every = fields(cls)
    cls._value_fields = tuple(f.name for f in every)
    cls._value_shown = tuple(f.name for f in every if f.repr)
    compared = [f.name for f in every if f.compare]
    key = attrgetter(*compared) if len(compared) > 1 else _one(*compared) if compared else _nothing
    cls._value_key = staticmethod(key)  # called as self._value_key(self): never bound to self
    cls.__init__ = _init(cls, every, slots)
    if not documented:  # as dataclasses words it: `Usage(step: 'int', prompt_chars: 'int' = 0)`
        cls.__doc__ = _described(cls, every)
    shared = {"__repr__": _repr, "__eq__": _eq, "__hash__": _hash, "__setattr__": _refuse_set, "__delattr__": _refuse_delete, "__reduce__": _reduce}
    for name, method in shared.items():
        if name not in own:
            setattr(cls, name, method)
    return cls


def _init(cls: type, every, slots: bool) -> object:
    """The class's own `__init__`, compiled once: the signature dataclasses would give it."""
    if slots and "self" not in (f.name for f in every):  # (a field named self: let the compiler refuse it)
        return _shaped_init(cls, every)
    params, body, env = [], [] if slots else ["_fields = self.__dict__"], {"_FACTORY": _FACTORY}
    for f in every:
        if slots:
            env[f"_set_{f.name}"] = cls.__dict__[f.name].__set__  # the slot's own setter
        if f.default is not MISSING:
            env[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not MISSING:
            env[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_FACTORY")
            body.append(f"if {f.name} is _FACTORY: {f.name} = _factory_{f.name}()")
        else:
            params.append(f.name)
        body.append(f"_set_{f.name}(self, {f.name})" if slots else f"_fields[{f.name!r}] = {f.name}")
    source = f"def __init__(self, {', '.join(params)}):\n    " + "\n    ".join(body or ["pass"])
    exec(source, env)  # the way dataclasses writes the __init__ it generates
    init = env["__init__"]
    init.__qualname__, init.__module__ = f"{cls.__qualname__}.__init__", cls.__module__
    init.__annotations__ = {f.name: f.type for f in every} | {"return": None}
    return init


def _described(cls: type, every) -> str:
    """What inspect.signature prints for the class, written out from its fields: a tenth of
    the cost (about 90 µs a class, a dozen of them in a run's start-up). Annotations that are
    not strings (a module without `from __future__ import annotations`) are left to inspect."""
    if not all(isinstance(f.type, str) for f in every):
        return cls.__name__ + str(signature(cls)).replace(" -> None", "")
    shown = []
    for f in every:
        default = f.default if f.default is not MISSING else _FACTORY if f.default_factory is not MISSING else MISSING
        shown.append(f"{f.name}: {f.type!r}" + ("" if default is MISSING else f" = {default!r}"))
    return f"{cls.__name__}({', '.join(shown)})"


_SHAPES: dict[tuple[bool, ...], CodeType] = {}  # which fields have a factory -> that __init__'s code


def _shaped_init(cls: type, every) -> object:
    """A slotted value's `__init__`, from code compiled once per shape (how many fields, which
    have a factory) with neutral names, renamed for this class's fields: compiling costs about
    120 µs a class, and a run's modules define twenty-odd of them in eleven shapes. The same
    bytecode, signature, defaults and errors as the code compiled for the class itself."""
    shape = tuple(f.default_factory is not MISSING for f in every)
    if (code := _SHAPES.get(shape)) is None:
        body = []
        for i, factory in enumerate(shape):
            body += [f"if p{i} is _FACTORY: p{i} = _factory_{i}()"] if factory else []
            body.append(f"_set_{i}(self, p{i})")
        made: dict = {}
        exec(f"def __init__({', '.join(['self', *(f'p{i}' for i in range(len(shape)))])}):\n    " + "\n    ".join(body or ["pass"]), made)
        code = _SHAPES[shape] = made["__init__"].__code__
    defaults, env = [], {"_FACTORY": _FACTORY}
    for i, f in enumerate(every):
        env[f"_set_{i}"] = cls.__dict__[f.name].__set__  # the slot's own setter
        if f.default is not MISSING:
            defaults.append(f.default)
        elif f.default_factory is not MISSING:
            env[f"_factory_{i}"] = f.default_factory
            defaults.append(_FACTORY)
        elif defaults:  # (the compiler's words for such a signature; dataclasses says the same)
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    qualname = f"{cls.__qualname__}.__init__"
    init = FunctionType(code.replace(co_varnames=("self", *(f.name for f in every)), co_qualname=qualname), env, "__init__", tuple(defaults) or None)
    init.__qualname__, init.__module__ = qualname, cls.__module__
    init.__annotations__ = {f.name: f.type for f in every} | {"return": None}
    return init


class _Factory:
    """The default of a field made by a factory, until the factory makes it."""

    def __repr__(self) -> str:
        return "<factory>"  # as dataclasses shows it in a signature


_FACTORY = _Factory()


def _one(name: str):
    """A one-field key as a tuple, as dataclasses compares it (so a NaN equals itself)."""
    get = attrgetter(name)
    return lambda self: (get(self),)


def _nothing(_self: object) -> tuple:
    return ()


def _repr(self) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._value_shown)
    return f"{type(self).__qualname__}({shown})"


def _eq(self, other: object):
    if other.__class__ is self.__class__:
        return self._value_key(self) == self._value_key(other)
    return NotImplemented


def _hash(self) -> int:
    return hash(self._value_key(self))


def _refuse_set(self, name: str, _value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _refuse_delete(self, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _reduce(self) -> tuple:
    """Pickled and copied as a call of the class with its fields, so nothing is assigned."""
    return type(self), tuple(getattr(self, name) for name in self._value_fields)
