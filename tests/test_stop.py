"""The stop scanner: whatever the chunking, it decides as the whole text would."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.stop import StopScanner


def cut_at_stop(text: str, stops: list[str]) -> tuple[str, str]:
    """The whole text fed at once: (kept, cut). Fed in any chunks, the scanner must agree with this."""
    scanner = StopScanner(stops)
    kept = scanner.feed(text)
    return kept + scanner.finish(), scanner.cut


def stream(text: str, sizes: list[int], stops: list[str]) -> tuple[str, str, list[str]]:
    """Feed `text` in chunks of the given sizes; return (shown, cut, each emission)."""
    scanner, shown, emitted, i = StopScanner(stops), [], [], 0
    for size in sizes + [len(text)]:
        chunk, i = text[i : i + max(size, 1)], i + max(size, 1)
        out = scanner.feed(chunk)
        shown.append(out)
        emitted.append(out)
        if scanner.stopped or i >= len(text):
            break
    shown.append(scanner.finish())
    return "".join(shown), scanner.cut, emitted


def test_the_stop_string_and_all_after_it_are_cut():
    assert cut_at_stop("Action: x()\nObservation: fake\nmore", ["Observation:"]) == (
        "Action: x()\n",
        "Observation: fake\nmore",
    )


def test_a_partial_stop_string_is_held_back_until_it_cannot_be_one():
    scanner = StopScanner(["Observation:"])
    assert scanner.feed("Action: x()\nObser") == "Action: x()\n"  # "Obser" might go on
    assert scanner.feed("ved it") == "Observed it"  # it did not
    assert scanner.finish() == ""


def test_one_character_chunks_never_show_any_part_of_the_stop_string():
    shown, cut, emitted = stream("ok\nObservation: no", [1] * 40, ["Observation:"])
    assert shown == "ok\n"
    assert cut.startswith("Observation:")
    assert "O" not in "".join(emitted)


def test_the_stop_string_that_completes_first_wins():
    # "bc" is complete at index 3, before "abcd" is; a server stops there too.
    assert cut_at_stop("xabcd", ["abcd", "bc"]) == ("xa", "bcd")
    assert stream("xabcd", [1] * 5, ["abcd", "bc"])[:2] == ("xa", "bc")  # read no further


def test_no_stop_strings_means_nothing_is_cut():
    assert cut_at_stop("Observation: anything", []) == ("Observation: anything", "")


stop_alphabet = st.sampled_from("abO:\n")


@given(
    text=st.text(alphabet=stop_alphabet, max_size=40),
    stops=st.lists(st.text(alphabet=stop_alphabet, min_size=1, max_size=4), min_size=1, max_size=3),
    sizes=st.lists(st.integers(min_value=1, max_value=6), max_size=40),
)
def test_any_chunking_shows_and_cuts_exactly_what_the_whole_text_would(text, stops, sizes):
    kept, cut = cut_at_stop(text, stops)
    shown, streamed_cut, _ = stream(text, sizes, stops)
    assert shown == kept
    assert kept + cut == text if cut else kept == text
    # The streamed cut starts where the whole-text cut starts (it may have read less).
    assert cut.startswith(streamed_cut) and (streamed_cut != "") == (cut != "")


def test_scanners_of_different_stop_strings_never_share_an_answer():
    # Short texts are remembered per set of stop strings; "Obs" is held for one, shown for another.
    assert stream("Obs", [1, 1, 1], ["Observation:"])[0] == "Obs"  # released by finish()
    assert StopScanner(["Observation:"]).feed("Obs") == ""
    assert StopScanner(["Obsolete"]).feed("Obs") == ""
    assert StopScanner(["\nObservation 1:"]).feed("Obs") == "Obs"
    assert StopScanner(["Obs", "b"]).feed("Obs") == "O"


@given(
    text=st.text(alphabet=stop_alphabet, max_size=60),
    stops=st.lists(st.text(alphabet=stop_alphabet, min_size=1, max_size=5), min_size=1, max_size=3),
)
def test_one_character_chunks_agree_with_the_whole_text(text, stops):
    # The case the scanner is tuned for (a server that streams a character at a time).
    kept, cut = cut_at_stop(text, stops)
    shown, streamed_cut, _ = stream(text, [1] * len(text), stops)
    assert shown == kept
    assert cut.startswith(streamed_cut) and (streamed_cut != "") == (cut != "")
