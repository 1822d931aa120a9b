"""The buffer and its save format: exact round trips, hand-worked examples, bad records."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import TranscriptFormatError
from harness.transcript import Author, Transcript, dumps, loads, records

ISSUE_EXAMPLE = """\
# harness transcript v1
# stop_reason: "final_answer"
developer | Question: Why do my Nimbus uploads fail?
model     | Thought: check the quota first.
model     \\ Action: check_quota(nimbus)
code      | Observation: 99.8 GB of 100 GB used
"""


def test_the_documented_example_loads_to_the_buffer_worked_out_by_hand():
    transcript, meta = loads(ISSUE_EXAMPLE)
    assert meta == {"stop_reason": "final_answer"}
    assert transcript.text == (
        "Question: Why do my Nimbus uploads fail?\n"
        "Thought: check the quota first.\n"
        "Action: check_quota(nimbus)"  # `\` : no newline here, code's text goes on
        "Observation: 99.8 GB of 100 GB used\n"
    )
    assert [s.author for s in transcript.spans] == [Author.DEVELOPER, Author.MODEL, Author.CODE]
    assert dumps(transcript, meta) == ISSUE_EXAMPLE


def test_a_line_shared_by_two_authors_gets_a_backslash_record():
    t = Transcript()
    t.append(Author.CODE, "Thought 1:")
    t.append(Author.MODEL, " look it up\nAction 1: Search[x]")
    assert records(t) == ["code      \\ Thought 1:", "model     |  look it up", "model     \\ Action 1: Search[x]"]


def test_appending_by_the_same_author_extends_the_span_and_the_buffer_only_grows():
    t = Transcript()
    t.append(Author.DEVELOPER, "a")
    before = t.text
    t.append(Author.DEVELOPER, "b\n")
    t.append(Author.MODEL, "")  # an empty completion is still the model's turn
    t.append(Author.CODE, "c")
    assert t.text.startswith(before)
    assert [(s.author.value, s.text) for s in t.spans] == [("developer", "ab\n"), ("model", ""), ("code", "c")]


awkward_text = st.lists(
    st.sampled_from(["a", " ", "\t", "\r", "\n", "|", "\\", "#", "é", "🙂", "\u2028", "\x0b", "model     | x", "# k: 1"]),
    max_size=30,
).map("".join)


@given(st.lists(st.tuples(st.sampled_from(list(Author)), st.one_of(st.text(max_size=20), awkward_text)), max_size=12))
def test_saving_and_loading_gives_back_the_same_spans_and_bytes(appends):
    t = Transcript()
    for author, text in appends:
        t.append(author, text)
    meta = {"stop_reason": "final_answer", "note": "line\nbreak \r é"}
    loaded, loaded_meta = loads(dumps(t, meta))
    assert loaded.spans == t.spans
    assert loaded.text == t.text
    assert loaded_meta == meta


@given(st.lists(st.tuples(st.sampled_from(list(Author)), st.one_of(st.text(max_size=20), awkward_text)), max_size=12))
def test_the_saved_file_holds_one_record_per_line_segment_of_each_span(appends):
    """The file writes a span's records at once (one replace); they are the records all the same."""
    t = Transcript()
    for author, text in appends:
        t.append(author, text)
    assert dumps(t) == "\n".join(["# harness transcript v1", *records(t)]) + "\n"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("", 1),
        ("developer | no header\n", 1),
        ("# harness transcript v1\nrobot     | hi\n", 2),
        ("# harness transcript v1\nmodel | not padded\n", 2),
        ("# harness transcript v1\nmodel     |no space\n", 2),
        ("# harness transcript v1\n# steps: three\n", 2),
        ("# harness transcript v1\n#steps: 3\n", 2),
    ],
)
def test_a_bad_line_is_reported_with_its_line_number(text, line):
    with pytest.raises(TranscriptFormatError) as err:
        loads(text, "t.txt")
    assert err.value.where == f"t.txt:{line}"


@given(
    st.lists(st.tuples(st.sampled_from(list(Author)), st.text(alphabet="ab\n", max_size=6), st.booleans()), max_size=12),
)
def test_text_and_spans_agree_however_appends_and_asks_interleave(appends):
    # The buffer is kept as pieces and joined when asked for; asking in between, and
    # keeping what was given, must never change what the next ask gives.
    t, expected, kept = Transcript(), "", []
    for author, text, ask in appends:
        t.append(author, text)
        expected += text
        if ask:
            kept.append(t.text)  # somebody holds the text given: the next append must not change it
        assert len(t) == len(expected)
    assert t.text == expected and "".join(s.text for s in t.spans) == expected
    assert all(expected.startswith(k) for k in kept)
    assert t == Transcript(t.spans)
