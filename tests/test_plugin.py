"""The pytest plugin, driven through pytester as a user would run it: plain and under xdist.

Each test writes a small project (a pytest.ini naming a folder of saved transcripts, or a
test module using the snapshot fixture), runs pytest in it and reads what the user reads.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.record import run_scenario
from harness.scenario import find_scenario, load_scenario
from textfiles import edit, read, write

pytest_plugins = ["pytester"]

EXAMPLE = Path(__file__).parent / "examples" / "support"
QUOTA = "code      | Observation: 99.8 GB of 100 GB used"
EDITED = "code      | Observation: 42 GB of 100 GB used"


def saved(name: str) -> str:
    return run_scenario(load_scenario(find_scenario(name))).saved


@pytest.fixture(params=[[], ["-n", "2"]], ids=["plain", "xdist"])
def workers(request) -> list[str]:
    return request.param


@pytest.fixture
def folder(pytester):
    """A project with two saved transcripts, and two files in the same folder that are not transcripts."""
    pytester.makeini("[pytest]\nharness_transcripts = transcripts\n")
    transcripts = pytester.mkdir("transcripts")
    for name in ("nimbus", "calculator"):
        write(transcripts / f"{name}.txt", saved(name))
    write(transcripts / "notes.txt", "Notes about these runs, not a transcript.\n")
    write(transcripts / "almost.txt", "# harness transcripts: notes\ndeveloper | not a header line\n")
    return transcripts




def assert_readable(output: str) -> None:
    """What a failure must never show: a bytes repr, or a traceback through the plugin."""
    assert "b'" not in output and 'b"' not in output
    assert "Traceback" not in output and "pytest_plugin.py" not in output


def test_each_saved_transcript_is_one_passing_test(pytester, folder, workers):
    result = pytester.runpytest("-v", *workers)
    result.assert_outcomes(passed=2)
    for node in ("transcripts/calculator.txt::calculator", "transcripts/nimbus.txt::nimbus"):  # xdist puts PASSED first
        result.stdout.re_match_lines_random([rf".*({node} PASSED|PASSED {node}).*"])


def test_a_transcript_whose_name_holds_two_colons_is_named_whole(pytester, folder):
    (folder / "nimbus.txt").rename(folder / "we::ird.txt")  # pytest's own separator, in a file name
    edit(folder / "we::ird.txt", QUOTA, EDITED)
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["transcripts/we::ird.txt: first difference in step 1 (code: Observation: 42 GB of 100 GB used)"])
    pytester.runpytest("--harness-update").stdout.fnmatch_lines(["rewrote transcripts/we::ird.txt"])


def test_files_that_are_not_transcripts_are_not_collected(pytester, folder):
    result = pytester.runpytest("--collect-only", "-q")
    collected = [line for line in result.stdout.lines if "::" in line]
    assert collected == ["transcripts/calculator.txt::calculator", "transcripts/nimbus.txt::nimbus"]


def test_a_transcript_of_another_save_format_version_fails_rather_than_passing_unchecked(pytester, folder):
    write(folder / "future.txt", "# harness transcript v2\ndeveloper | a format of the future\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*transcripts/future.txt:1: expected the header line '# harness transcript v1'*"])


def test_an_edited_observation_fails_naming_the_step_with_author_columns(pytester, folder, workers):
    edit(folder / "nimbus.txt", QUOTA, EDITED)
    result = pytester.runpytest(*workers)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "transcripts/nimbus.txt: first difference in step 1 (code: Observation: 42 GB of 100 GB used)",
            "@@ -saved line *, +replayed line * · step 1 @@",
            " model     | Action: check_quota(nimbus)",
            "-" + EDITED,
            "+" + QUOTA,
            " model     | Thought: 99.8 GB of 100 GB is nearly full*",
        ]
    )
    result.stdout.fnmatch_lines(["(if the new replay is right: pytest --harness-update rewrites transcripts/nimbus.txt, keeping the recorded model turns; *--harness-record MODEL*"])
    assert_readable(result.stdout.str())


def test_prompt_drift_shows_as_developer_lines(pytester, folder, workers):
    # Replay renders the prompt again from its template: a saved prompt that differs is drift.
    edit(folder / "calculator.txt", "developer | Use exactly this format:", "developer | Use this format:")
    result = pytester.runpytest(*workers)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "transcripts/calculator.txt: first difference in the prompt (developer: Use this format:)",
            "@@ * · the prompt @@",
            "-developer | Use this format:",
            "+developer | Use exactly this format:",
        ]
    )
    assert_readable(result.stdout.str())


def test_a_transcript_that_does_not_load_fails_with_one_line(pytester, folder, workers):
    write(folder / "broken.txt", "# harness transcript v1\nthis is not a record\n")
    result = pytester.runpytest(*workers)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["transcripts/broken.txt:2: a record must read *"])
    assert_readable(result.stdout.str())


def test_harness_update_rewrites_only_what_changed_and_says_which(pytester, folder, workers):
    edit(folder / "nimbus.txt", QUOTA, EDITED)
    before = {path.name: (read(path), path.stat().st_mtime_ns) for path in folder.iterdir()}
    result = pytester.runpytest("--harness-update", *workers)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*harness --harness-update*", "rewrote transcripts/nimbus.txt"])
    assert "rewrote transcripts/calculator.txt" not in result.stdout.str()
    assert read(folder / "nimbus.txt") == saved("nimbus")
    for name in ("calculator.txt", "notes.txt", "almost.txt"):  # untouched, to the nanosecond
        assert (read(folder / name), (folder / name).stat().st_mtime_ns) == before[name]
    assert sorted(p.name for p in folder.iterdir()) == sorted(before)  # no temporary file left behind
    again = pytester.runpytest("--harness-update", *workers)
    again.assert_outcomes(passed=2)
    again.stdout.fnmatch_lines(["harness: no saved transcript changed"])


def test_a_folder_that_does_not_exist_is_a_usage_error(pytester):
    pytester.makeini("[pytest]\nharness_transcripts = transcript\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: harness_transcripts: */transcript is not a folder"])


def test_a_file_that_stopped_being_a_transcript_is_never_written(tmp_path):
    # --harness-update checks the header again right before it writes.
    from harness.errors import HarnessError
    from harness.files import write_file
    from harness.transcript import HEADER

    path = tmp_path / "notes.txt"
    write(path, "My notes: keep these.\n")
    with pytest.raises(HarnessError, match="harness did not write it; not overwriting it"):
        write_file(path, saved("nimbus"), HEADER + "\n", "notes.txt")  # as pytest_plugin rewrites one
    assert read(path) == "My notes: keep these.\n"
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


SNAPSHOT_TESTS = """
from harness.record import run_scenario
from harness.scenario import find_scenario, load_scenario


class Run:  # anything with the saved text as .saved, as a run record has
    def __init__(self, saved):
        self.saved = saved


def test_nimbus(transcript_snapshot):
    assert run_scenario(load_scenario(find_scenario("nimbus"))).saved == transcript_snapshot


def test_calculator(transcript_snapshot):
    assert Run(run_scenario(load_scenario(find_scenario("calculator"))).saved) == transcript_snapshot
"""


def test_the_snapshot_fixture_stores_the_saved_text_and_fails_with_the_readable_diff(pytester, workers):
    pytester.makepyfile(test_my_agent=SNAPSHOT_TESTS)  # a name no module of this suite has
    pytester.runpytest("--snapshot-update", *workers).assert_outcomes(passed=2)
    stored = pytester.path / "__snapshots__" / "test_my_agent"
    assert read(stored / "test_nimbus.txt") == saved("nimbus")  # the save format, byte for byte
    assert read(stored / "test_calculator.txt") == saved("calculator")
    pytester.runpytest(*workers).assert_outcomes(passed=2)

    edit(stored / "test_nimbus.txt", QUOTA, EDITED)
    result = pytester.runpytest(*workers)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*snapshot: first difference in step 1 (code: Observation: 42 GB of 100 GB used)", "*-" + EDITED, "*+" + QUOTA + "*"]
    )
    assert "b'" not in result.stdout.str()


def test_the_snapshot_keeps_a_carriage_return(pytester):
    pytester.makepyfile(test_cr='def test_cr(transcript_snapshot):\n    assert "# harness transcript v1\\ncode      | a\\rb\\n" == transcript_snapshot\n')
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    assert (pytester.path / "__snapshots__" / "test_cr" / "test_cr.txt").read_bytes().endswith(b"| a\rb\n")
    pytester.runpytest().assert_outcomes(passed=1)


def test_the_worked_example_runs_as_written_and_fails_on_an_edited_observation(pytester, workers):
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    folder = pytester.path / "tests" / "transcripts"
    transcripts = [p for p in folder.iterdir() if p.suffix == ".txt"]  # the scenarios, templates and tools live apart
    assert sorted(p.name for p in transcripts) == ["calculator.txt", "nimbus.txt", "orders.txt"]
    pytester.runpytest(*workers).assert_outcomes(passed=len(transcripts))
    edit(folder / "nimbus.txt", QUOTA, EDITED)
    result = pytester.runpytest(*workers)
    result.assert_outcomes(passed=len(transcripts) - 1, failed=1)
    result.stdout.fnmatch_lines(["tests/transcripts/nimbus.txt: first difference in step 1 (code: Observation: 42 GB*"])


def test_loading_the_plugin_imports_neither_the_loop_nor_syrupy():
    # The plugin loads in every pytest session of the environment: it must stay light.
    code = "import sys, harness.pytest_plugin; print(sorted(m for m in sys.modules if m.startswith(('harness', 'syrupy'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['harness', 'harness.pytest_plugin']"


# --- the diff itself ------------------------------------------------------------------


def test_the_diff_of_a_huge_line_is_bounded_and_shows_where_it_differs():
    from harness.diff import transcript_diff

    line = "a" * 5_000_000
    old = f"# harness transcript v1\nmodel     | {line}x{line}\n"
    diff = transcript_diff(old, old.replace("x", "y"), "big.txt")
    assert len(diff) < 2_000
    assert "first difference in step 1 (model: …" in diff
    assert "-…" + "a" * 50 + "x" in diff and "+…" + "a" * 50 + "y" in diff


def test_the_diff_shows_its_first_lines_and_counts_the_rest():
    from harness.diff import MAX_LINES, transcript_diff

    old = "# harness transcript v1\n" + "".join(f"code      | line {i}\n" for i in range(1000))
    diff = transcript_diff(old, old.replace("line", "row"), "long.txt").splitlines()
    assert len(diff) == 1 + MAX_LINES + 1
    assert diff[-1] == f"… {1 + 1 + 2000 - MAX_LINES} more diff lines not shown"  # @@, the header as context, 2,000 changed


def test_the_diff_names_metadata_keys_and_draws_control_characters():
    from harness.diff import transcript_diff

    old = saved("nimbus")
    new = old.replace('"prompt": "default"', '"prompt": "mine"').replace(QUOTA, QUOTA + "\x1b[2J\r")
    diff = transcript_diff(old, new, "nimbus.txt")
    assert "metadata that differs: scenario.prompt" in diff
    assert "+" + QUOTA + "␛[2J␍" in diff
    assert "\x1b" not in diff and "\r" not in diff


def test_the_example_s_own_template_drifting_shows_as_developer_lines(pytester, workers):
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    edit(pytester.path / "scenarios" / "prompts" / "orders.txt", "small web shop", "large web shop")
    result = pytester.runpytest(*workers)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["tests/transcripts/orders.txt: first difference in the prompt*", "*-developer | You are the support desk of a small web shop*", "*+developer | You are the support desk of a large web shop*"])


def test_the_example_s_python_tool_runs_again_on_replay(pytester):
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    edit(pytester.path / "scenarios" / "order_tools.py", '"shipped"', '"lost"')  # the tool now answers otherwise
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*-code      | Observation: order 42: shipped on 2026-11-28", "*+code      | Observation: order 42: lost on 2026-11-28"])


def test_the_example_replays_from_whatever_folder_pytest_is_started_in(pytester, monkeypatch):
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(pytester.path / "tests" / "transcripts")  # each file names its scenario relative to itself
    pytester.runpytest("-c", str(pytester.path / "pytest.ini"), str(pytester.path)).assert_outcomes(passed=3)
