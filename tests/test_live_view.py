"""The live view draws the same run whether rich writes it or it is written as plain text.

Off a terminal the view never loads rich (start-up); what it writes must be what rich,
not colouring, would have written: the same rows, the same notes, tabs expanded by the
cells each character fills. On a terminal rich draws it, coloured by author.
"""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from harness.decisions import Lane, Round
from harness.events import Appended, CompletionEnded, RoundStarted, Stopped, StopReason, TextDelta
from harness.render.live import LiveView
from harness.transcript import Author
from tests.test_startup import imported

# Text that tests the rows: tabs after wide characters, control characters, lines that
# go on by another author, and nothing at all.
TEXT = st.lists(st.sampled_from(["a", " ", "\t", "\n", "界", "😀", "\x1b", "\r", "é", "\u200b", "Observation:"]), max_size=30).map("".join)
EVENTS = st.lists(
    st.one_of(
        st.builds(Appended, st.sampled_from([Author.DEVELOPER, Author.CODE]), TEXT),
        st.builds(TextDelta, TEXT),
        st.builds(RoundStarted, st.integers(0, 10**6), st.integers(0, 10**7)),
        st.builds(lambda text, cut, lane: CompletionEnded(1, text, cut, "stop", Round(lanes=(Lane(0, "answer", "denied", 0, lane),))), TEXT, TEXT, TEXT),
    ),
    max_size=12,
).map(lambda events: [*events, Stopped(StopReason.FINAL_ANSWER, "42\t界", 2, "")])


def drawn(out, events, by_rich: bool = False) -> None:
    view = LiveView(out)
    view.plain = not by_rich  # by rich: rich renders each piece and writes it, as on a terminal
    for event in events:
        view(event)


@settings(max_examples=300, deadline=None)
@given(EVENTS)
def test_the_plain_view_writes_what_rich_writes_off_a_terminal(events):
    by_rich, plain = io.StringIO(), io.StringIO()
    drawn(Console(file=by_rich, highlight=False, soft_wrap=True), events, by_rich=True)  # a pipe, as rich sees it
    drawn(plain, events)
    assert plain.getvalue() == by_rich.getvalue()
    by_char = io.StringIO()  # the same model text a character at a time: a file gets the same rows
    drawn(by_char, [piece for e in events for piece in (([TextDelta(c) for c in e.text] or [e]) if type(e) is TextDelta else [e])])
    assert by_char.getvalue() == plain.getvalue()


def test_on_a_terminal_rich_colours_each_author():
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, color_system="standard", highlight=False, soft_wrap=True)
    drawn(console, by_rich=True, events=[Appended(Author.DEVELOPER, "Question: q\n"), TextDelta("Thought: t\n"), Stopped(StopReason.FINAL_ANSWER, "a", 1, "")])
    shown = screen.getvalue()
    assert "\x1b[" in shown and "developer │ Question: q" in Text.from_ansi(shown).plain


def test_a_run_off_a_terminal_loads_no_rich_unless_the_environment_asks_for_colour(monkeypatch):
    assert "rich" not in imported("run", "nimbus")  # stdout is not a terminal here
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich would colour a pipe: rich draws it
    assert "rich" in imported("run", "nimbus")


# Styled is built as rich's Text would be: the same calls on both must draw the same.
PIECE = st.tuples(st.sampled_from(["a", "b c", "界", "\t", "\n"]), st.sampled_from(["", "bold", "green", "dim italic", "reverse blue", "bold red"]))
BUILT = st.recursive(
    st.tuples(PIECE, st.lists(PIECE, max_size=3)),
    lambda inner: st.tuples(PIECE, st.lists(st.one_of(PIECE, inner), max_size=3)),
    max_leaves=8,
)


def build(kind, spec):
    (text, style), parts = spec
    out = kind(text, style=style)
    for part in parts:
        if isinstance(part[1], list):  # a whole text appended, with its own style
            out.append_text(build(kind, part))
        else:
            out.append(part[0], style=part[1])
    return out


def looks(text: Text) -> list[tuple[str, object]]:
    """Each character as a terminal draws it, with the style it is drawn in."""
    console = Console(force_terminal=True, color_system="standard", width=80, soft_wrap=True)
    return [(char, segment.style) for segment in console.render(text) for char in segment.text]


@settings(max_examples=300, deadline=None)
@given(BUILT)
def test_styled_text_draws_on_a_terminal_as_rich_text_built_the_same_way(spec):
    from harness.render.styled import Styled

    assert looks(build(Styled, spec).rich()) == looks(build(Text, spec))
    assert build(Styled, spec).plain == build(Text, spec).plain
