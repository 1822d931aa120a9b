"""A pattern compiled when first used (harness.patterns) is the regex pattern to its callers."""

from __future__ import annotations

import copy
import re
import subprocess
import sys

import pytest
import regex

from harness.patterns import lazy


def test_a_lazy_pattern_matches_as_the_regex_pattern_does():
    text = "Action: calculator(2 + 3)\nAction: echo(x)\n"
    ours, theirs = lazy(r"^Action:[ \t]*(?P<tool>\w+)\((?P<args>[^\r\n]*)\)$", re.MULTILINE), regex.compile(r"^Action:[ \t]*(?P<tool>\w+)\((?P<args>[^\r\n]*)\)$", regex.MULTILINE)
    assert ours.match(text, timeout=1)[0] == theirs.match(text)[0] == "Action: calculator(2 + 3)"
    assert [m.groupdict() for m in ours.finditer(text)] == [m.groupdict() for m in theirs.finditer(text)]
    assert ours.sub("-", text) == theirs.sub("-", text) and (ours.groups, ours.groupindex) == (theirs.groups, theirs.groupindex)
    assert ours.quick.findall(text) == theirs.findall(text)  # the re twin reads it alike


def test_regex_is_loaded_only_when_a_pattern_is_first_used():
    code = (
        "import sys, copy\n"
        "from harness.patterns import lazy\n"
        "p = lazy(r'[a-z]{1,3}')\n"
        "copy.copy(p); repr(p); p.quick.fullmatch('ab')\n"  # none of these compiles it
        "print('regex' in sys.modules, end=' ')\n"
        "p.fullmatch('ab')\n"
        "print('regex' in sys.modules)\n"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False True\n"


def test_flags_that_re_and_regex_read_differently_are_refused():
    with pytest.raises(ValueError, match="flags"):
        lazy("a", re.ASCII)  # re's ASCII is 256; regex's is 128
    with pytest.raises(TypeError, match="only MULTILINE"):
        lazy("a", re.DOTALL).quick  # a twin only for what both read alike
    assert copy.deepcopy(lazy("a+")).fullmatch("aa")


def test_the_patterns_read_by_their_re_twin_read_every_blank_as_regex_does():
    # re's \s also takes \x1c-\x1f; these patterns write out regex's \s, so both engines
    # agree, and agree with regex's own \s (what they were written with before).
    from harness.backends.control import PATTERN, _break
    from harness.judge import _SPACE

    blanks = regex.compile(r"\s")
    for c in [c for c in range(sys.maxunicode + 1) if chr(c).isspace() or blanks.match(chr(c))] + [ord(c) for c in "a|<>_-é"]:
        text = f"x{chr(c)}<|a{chr(c)}b|> [INST] <|im_end|>"
        assert PATTERN.quick.sub(_break, text) == PATTERN.sub(_break, text), hex(c)
        assert bool(PATTERN.quick.search(f"<|a{chr(c)}|>")) is (not blanks.match(chr(c)) and chr(c) not in "|<>"), hex(c)
        assert bool(PATTERN.quick.search(f"<\uff5ca{chr(c)}\uff5c>")) is (not blanks.match(chr(c)) and chr(c) not in "<>"), hex(c)
        assert _SPACE.quick.sub("", text) == _SPACE.sub("", text) == blanks.sub("", text), hex(c)
