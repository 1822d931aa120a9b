"""Reading a run_agent request with the turns past max_steps checked but not kept
(harness.skim): every request gets the same answer as from json.loads, whole."""

from __future__ import annotations

import json
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness import protocol
from harness.protocol import BadRequest, parse_request


def outcome(raw: bytes) -> tuple[str, object]:
    """What a user gets from the request: the checked request, or the refusal's code and message."""
    try:
        return "ok", parse_request(raw)
    except BadRequest as e:
        return e.code, e.message


def both(raw: bytes) -> tuple[tuple[str, object], tuple[str, object]]:
    """(skimmed, read whole by json.loads): each at the same depth of the stack."""
    skimmed = outcome(raw)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(protocol, "skim", lambda *args: None)
        whole = outcome(raw)
    return skimmed, whole


# --- random requests, spelled in random ways, some of them broken ---------------------------

_strings = st.sampled_from(["", "a", "run_agent", "\\", '"', "\ud800", "\udc00x", "é", "\x00", "\n"]) | st.text(max_size=4)
_scalars = st.none() | st.booleans() | st.integers(-10, 10) | st.integers() | st.floats() | _strings
_values = st.recursive(_scalars, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(_strings, kids, max_size=3), max_leaves=8)
_turns = st.lists(
    st.fixed_dictionaries({"thought": _strings, "action": st.fixed_dictionaries({"tool": _strings, "args": _values})}) | _values,
    max_size=6,
)
_usual = st.tuples(  # the members a request has, mostly well formed
    st.tuples(st.just("op"), st.sampled_from(["run_agent"] * 8 + ["run"]) | _values.filter(lambda v: v != "run_agent")),
    st.tuples(st.just("max_steps"), st.integers(1, 8) | st.integers(-1, 8) | _values),
    st.tuples(st.just("model_turns"), _turns | _turns | _values),
    st.tuples(st.just("workspace"), st.dictionaries(_strings, _strings, max_size=2) | _values),
)
_extra = st.lists(st.tuples(st.sampled_from(["task", "x", "model_turns", "max_steps", "op"]), _turns | _values), max_size=2)
_members = st.tuples(_usual, st.lists(st.sampled_from([True, True, True, False]), min_size=4, max_size=4), _extra).flatmap(
    lambda t: st.permutations([m for m, keep in zip(t[0], t[1]) if keep or m[0] == "op"] + t[2])
)
_blank = st.text(alphabet=" \t\n\r", max_size=2)
_edit = st.tuples(st.sampled_from(["none"] * 5 + ["delete", "insert", "replace", "cut"]), st.integers(0, 10**6), st.sampled_from(list('[]{},:"\\ 0e-.ntu') + ["\\ud800"]))


_runs = st.tuples(  # requests that run, their turns given twice at times (the last counts)
    st.just([("op", "run_agent")]),
    st.lists(st.tuples(st.just("max_steps"), st.integers(0, 8)), min_size=1, max_size=2),
    st.lists(st.tuples(st.just("model_turns"), st.lists(st.integers() | _turns, min_size=1, max_size=6)), min_size=1, max_size=2),
).flatmap(lambda usual: st.permutations([m for ms in usual for m in ms]))


@st.composite
def requests(draw, members=_members, edit=_edit) -> bytes:
    """A request's text: its members in any order (a name may repeat), any JSON blanks
    between the tokens, escaped or not, then maybe one edit that may break it anywhere."""
    parts = []
    for name, value in draw(members):
        dumped = json.dumps(value, ensure_ascii=draw(st.sampled_from([True, True, True, False])), indent=draw(st.sampled_from([None, 0, 1])))
        parts.append(f"{draw(_blank)}{json.dumps(name)}{draw(_blank)}:{draw(_blank)}{dumped}{draw(_blank)}")
    text = draw(_blank) + "{" + ",".join(parts) + "}" + draw(_blank)
    kind, at, piece = draw(edit)
    at %= len(text) + 1
    text = {
        "none": text,
        "delete": text[:at] + text[at + 1 :],
        "insert": text[:at] + piece + text[at:],
        "replace": text[:at] + piece + text[at + 1 :],
        "cut": text[:at],
    }[kind]
    return text.encode("utf-8", "surrogatepass")  # (a raw surrogate is not UTF-8: refused as such)


@given(requests())
def test_a_request_gets_the_same_answer_as_when_read_whole(raw):
    skimmed, whole = both(raw)
    assert skimmed == whole


@given(requests(_runs, st.just(("none", 0, ""))))
def test_a_request_that_runs_keeps_the_same_turns(raw):
    skimmed, whole = both(raw)
    assert skimmed == whole
    assert skimmed[0] == "ok" or "surrogate" in skimmed[1] or skimmed[0] == "invalid_utf8"  # (_strings has "\ud800")


def test_a_bad_byte_in_a_turn_past_max_steps_is_refused_word_for_word():
    turn = '{"thought": "look", "action": {"tool": "read_file", "args": {"path": "a"}}}'
    broken = '{"op": "run_agent", "max_steps": 3, "model_turns": [' + ", ".join([turn] * 10_000) + ', {"thought": tru}]}'
    skimmed, whole = both(broken.encode())
    assert skimmed == whole and skimmed[0] == "invalid_json" and "Expecting value" in skimmed[1]
    lone = broken.replace("tru}", '"\\ud800"}')  # a lone surrogate, far past the turns a run reaches
    assert both(lone.encode())[0] == ("invalid_json", "the request holds a lone surrogate ('\\ud800'), which is not text")


@pytest.mark.parametrize("member", ['"model_turns": [%s]', '"model_turns": [1, %s]', '"workspace": %s', '"x": %s'])
def test_nesting_near_the_parsers_limit_gets_the_same_answer(member):
    """json's parser gives up near 1,000 levels (how near depends on the stack): skimming
    must give up there too, not a level later."""
    answers = []
    for depth in range(900, 1_100, 3):
        nested = "[" * depth + "]" * depth
        raw = ('{"op": "run_agent", "max_steps": 1, ' + member.replace("%s", nested) + "}").encode()
        skimmed, whole = both(raw)
        assert skimmed == whole, depth
        answers.append(whole[0])
    assert "invalid_json" in answers and answers[0] != "invalid_json"  # the limit is inside the range


def test_the_turns_past_max_steps_are_not_kept_while_the_request_is_read():
    """A request of 50,000 turns with max_steps 3 is read in memory for its text, not for
    50,000 dicts (read whole, the same request took about ten times its size)."""
    turn = {"thought": "look", "action": {"tool": "read_file", "args": {"path": "nope.py"}}}
    raw = json.dumps({"op": "run_agent", "max_steps": 3, "model_turns": [turn] * 50_000}).encode()
    tracemalloc.start()
    try:
        request = parse_request(raw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert request["model_turns"] == [turn] * 3
    assert peak < 3 * len(raw), f"{peak:,} bytes for a request of {len(raw):,}"
