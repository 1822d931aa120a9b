"""Users' own redaction patterns: a scenario's `redact` and pytest.ini's `harness_redact`.

Whatever a pattern matches in a model's text or a tool's output is masked (`***`) before
anything keeps or shows it, recorded or replayed, so a redacted run still replays byte for
byte. Driven through the command, a loopback server and pytester, as a user would.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from harness.cli import app
from harness.entry import redaction
from tests.test_backends import FakeServer, Reply, sse, text
from textfiles import read, write

pytest_plugins = ["pytester"]
runner = CliRunner()

SECRET, TOKEN = "hunter2-pw", "tok-5e5e5e5e"
VAULT = f'''question = "What is the vault's password?"
redact = ["hunter2-\\\\w+", "tok-[0-9a-f]+"]
chunk_size = 3
completions = ["Thought: maybe it is {SECRET}.\\nAction: vault(main)\\n", "Final Answer: the token is {TOKEN}\\n"]
[tools.vault]
python = "vault_tools:vault"
'''
TOOLS = f'def vault(name):\n    """Open a vault."""\n    return "the password is {SECRET}, the token {TOKEN}"\n'


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})


@pytest.fixture
def vault(tmp_path, monkeypatch):
    write(tmp_path / "vault.toml", VAULT)
    write(tmp_path / "vault_tools.py", TOOLS)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("view", [["-f", "tagged"], ["-f", "json"], ["-f", "events"], ["-f", "rich"], ["--live", "--delay", "0"]])
def test_a_scenario_s_patterns_mask_model_text_and_tool_output_in_every_view_and_the_saved_file(vault, view):
    result = invoke("run", "vault.toml", "--save", "run.txt", *view)
    assert result.exit_code == 0, result.output
    saved = read(vault / "run.txt")
    for shown in (result.output, saved):
        assert SECRET not in shown and TOKEN not in shown
        assert "hunter2" not in shown.replace('hunter2-\\\\w+', "")  # (the pattern itself is saved, as the scenario has it)
    assert "model     | Thought: maybe it is ***.\n" in saved
    assert "code      | Observation: the password is ***, the token ***\n" in saved
    assert '# final_answer: "the token is ***"\n' in saved
    assert invoke("replay", "run.txt", "--check").exit_code == 0  # replayed, redacted the same: byte for byte
    stepped = invoke("step", "run.txt", "--frame", "3")
    assert stepped.exit_code == 0 and SECRET not in stepped.output


def test_how_the_model_s_text_is_chunked_does_not_change_what_is_masked(vault):
    runs = []
    for size in (1, 8, 1000):
        write(vault / "vault.toml", VAULT.replace("chunk_size = 3", f"chunk_size = {size}"))
        assert invoke("run", "vault.toml", "--save", f"run{size}.txt").exit_code == 0
        runs.append([line for line in read(vault / f"run{size}.txt").splitlines() if not line.startswith(("# source:", "# scenario:"))])
    assert "model     | Thought: maybe it is ***." in runs[0]
    assert runs[1:] == [runs[0]] * 2  # the same file, but for the chunk size its scenario names


@given(st.lists(st.text(alphabet="tok-5e\n x", max_size=12), max_size=8))
def test_a_stream_is_masked_as_its_whole_text_is_whatever_its_chunks(chunks):
    redact = redaction(["tok-[0-9a-f]+", "x x"], "redact")
    assert "".join(redact.over(chunk for chunk in chunks)) == redact("".join(chunks))


def test_a_live_model_s_secret_split_across_chunks_never_reaches_the_file_or_the_screen(vault):
    write(vault / "vault.toml", VAULT.replace('python = "vault_tools:vault"', 'description = "Open a vault"\nresults = { main = "sealed" }'))
    server = FakeServer()
    pieces = ["Thought: the token is to", "k-5e5e", "5e5e, I", " think\nFinal Answer: to", "k-5e5e5e5e"]
    server.serve(Reply(chunks=sse(*(text(p) for p in pieces), text("", "stop"), "[DONE]")))
    try:
        result = invoke("run", "vault.toml", "--model", "openai:m", "--base-url", server.url, "--save", "live.txt", "-f", "events")
    finally:
        server.close()
    assert result.exit_code == 0, result.output
    saved = read(vault / "live.txt")
    assert TOKEN not in saved + result.output and "5e5e" not in saved + result.output
    assert "model     | Thought: the token is ***, I think\nmodel     \\ Final Answer: ***\n" in saved  # (\\: no newline at its end)
    assert invoke("replay", "live.txt", "--check").exit_code == 0  # offline: no server now


def test_a_server_s_error_that_quotes_a_secret_is_masked_in_the_file_the_screen_and_the_reports(vault):
    write(vault / "vault.toml", VAULT.replace('python = "vault_tools:vault"', 'description = "Open a vault"\nresults = { main = "sealed" }'))
    server = FakeServer()
    server.serve(*[Reply(400, [f'{{"error": {{"message": "rejected token {TOKEN}"}}}}'.encode()], content_type="application/json")] * 3)
    try:
        single = invoke("run", "vault.toml", "--model", "openai:m", "--base-url", server.url, "--save", "live.txt")
        batch = invoke("run", "vault.toml", "--model", "openai:m", "--base-url", server.url, "--report", "r.json", "--junit", "j.xml")
    finally:
        server.close()
    assert single.exit_code == 3 and "rejected token ***" in single.stderr, single.output
    assert batch.exit_code == 3 and "rejected token ***" in read(vault / "r.json"), batch.output
    everything = single.output + batch.output + read(vault / "live.txt") + read(vault / "r.json") + read(vault / "j.xml")
    assert TOKEN not in everything and "5e5e" not in everything
    assert invoke("replay", "live.txt", "--check").exit_code == 0  # offline, the error as it was saved


def test_the_environment_s_api_keys_are_masked_in_what_a_tool_prints_and_returns_too(vault, monkeypatch):
    key = "sk-live-0123456789abcdef"
    monkeypatch.setenv("HARNESS_API_KEY", "test")  # a placeholder, sent first: the other is masked all the same
    monkeypatch.setenv("OPENAI_API_KEY", key)  # (a tool can read the environment: the key is masked wherever it enters)
    tool = 'import os\ndef vault(name):\n    """Open a vault."""\n    print(os.environ["OPENAI_API_KEY"])\n    return "key=" + os.environ["OPENAI_API_KEY"] + " passed"\n'
    write(vault / "vault_tools.py", tool)
    server = FakeServer()
    server.serve(*(Reply(chunks=sse(text(t), text("", "stop"), "[DONE]")) for t in ("Action: vault(main)\n", "Final Answer: done\n")))
    url = server.url.replace("http://", "http://user:passed@")  # the URL's password masks the model's text, never a tool's: no replay could
    try:
        result = invoke("run", "vault.toml", "--model", "openai:m", "--base-url", url, "--save", "live.txt", "-f", "events")
    finally:
        server.close()
    assert result.exit_code == 0, result.output
    scripted = invoke("run", "vault.toml", "--save", "scripted.txt")  # its own script: the key is the environment's
    for saved, shown in ((read(vault / "live.txt"), result.output), (read(vault / "scripted.txt"), scripted.output)):
        assert key not in saved + shown and "code      | Observation: ***\ncode      | key=*** passed\n" in saved
    assert [invoke("replay", name, "--check").exit_code for name in ("live.txt", "scripted.txt")] == [0, 0]  # the key still set


@pytest.mark.parametrize(
    "patterns, says",
    [
        ('["(unclosed"]', "pattern 1 is not a regular expression (missing ) at position 9)"),
        ('["ok", "\\\\*"]', "pattern 2 matches the mask *** itself; a replay would mask it again"),
        ("[5]", "must be a list of strings"),
        ('"tok-.*"', "must be a list of strings"),
    ],
)
def test_a_bad_pattern_is_one_line_naming_the_scenario_file_and_field(vault, patterns, says):
    write(vault / "vault.toml", VAULT.replace('redact = ["hunter2-\\\\w+", "tok-[0-9a-f]+"]', f"redact = {patterns}"))
    result = invoke("run", "vault.toml")
    assert result.exit_code == 2
    assert result.stderr == f"error: vault.toml: redact: {says}\n"


@pytest.fixture
def project(pytester, monkeypatch):
    """A scenario whose tool gives away a secret, saved before anyone asked to mask it."""
    root = pytester.path
    write(root / "scenarios" / "vault.toml", VAULT.replace('redact = ["hunter2-\\\\w+", "tok-[0-9a-f]+"]\n', ""))
    write(root / "scenarios" / "vault_tools.py", TOOLS)
    (root / "tests" / "transcripts").mkdir(parents=True)
    monkeypatch.chdir(root)
    assert invoke("run", "scenarios/vault.toml", "--save", "tests/transcripts/vault.txt").exit_code == 0
    assert SECRET in read(root / "tests/transcripts/vault.txt")
    return root


def test_harness_redact_in_pytest_ini_masks_what_is_recorded_and_replayed(pytester, project):
    write(project / "pytest.ini", "[pytest]\nharness_transcripts = tests/transcripts\nharness_redact =\n    hunter2-\\w+\n    tok-[0-9a-f]+\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)  # the replay masks now, and the file holds the secret
    result = pytester.runpytest("--harness-record", "scripted")
    result.assert_outcomes(passed=1)
    saved = read(project / "tests/transcripts/vault.txt")
    assert SECRET not in saved and TOKEN not in saved and SECRET not in "\n".join(result.outlines)
    assert '"overrides": {"redact": ["hunter2-\\\\w+", "tok-[0-9a-f]+"]}' in saved  # which patterns were applied
    pytester.runpytest().assert_outcomes(passed=1)  # replayed byte for byte
    assert invoke("replay", "tests/transcripts/vault.txt", "--check").exit_code == 0  # without the ini: the file says


def test_harness_redact_accepted_by_harness_update_replays_the_same_from_the_command_line(pytester, project):
    write(project / "pytest.ini", "[pytest]\nharness_transcripts = tests/transcripts\nharness_redact = hunter2-\\w+\n")
    pytester.runpytest().assert_outcomes(failed=1)
    pytester.runpytest("--harness-update").assert_outcomes(passed=1)
    assert SECRET not in read(project / "tests/transcripts/vault.txt")
    pytester.runpytest().assert_outcomes(passed=1)
    assert invoke("replay", "tests/transcripts/vault.txt", "--check").exit_code == 0  # the file says which patterns (it said none)


def test_a_bad_harness_redact_line_is_a_usage_error_naming_the_option(pytester, project):
    write(project / "pytest.ini", "[pytest]\nharness_transcripts = tests/transcripts\nharness_redact =\n    ok\n    [unclosed\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: harness_redact: pattern 2 is not a regular expression (unterminated character set at position 9)"])


def test_a_pattern_added_to_the_scenario_after_a_recording_with_ini_patterns_still_applies(pytester, project):
    """The ini's patterns are recorded as the run's; the scenario's own, added later, join them."""
    write(project / "pytest.ini", "[pytest]\nharness_transcripts = tests/transcripts\nharness_redact = hunter2-\\w+\n")
    pytester.runpytest("--harness-record", "scripted").assert_outcomes(passed=1)
    assert TOKEN in read(project / "tests/transcripts/vault.txt")  # only the ini's pattern so far
    toml = project / "scenarios/vault.toml"
    write(toml, 'redact = ["tok-[0-9a-f]+"]\n' + read(toml))
    pytester.runpytest().assert_outcomes(failed=1)  # the replay masks the token now: not the file it was
    pytester.runpytest("--harness-record", "scripted").assert_outcomes(passed=1)
    saved = read(project / "tests/transcripts/vault.txt")
    assert SECRET not in saved and TOKEN not in saved
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_ctrl_c_mid_line_keeps_nothing_of_the_line_it_cut_and_replays(vault):
    """The line a Ctrl-C cut was never shown whole, so none of it is kept: it might hold half a secret."""
    write(vault / "vault.toml", VAULT.replace("chunk_size = 3", "chunk_size = 3\ninterrupt = { step = 2, at = 30 }"))
    result = invoke("run", "vault.toml", "--save", "cut.txt", "-f", "tagged")
    saved = read(vault / "cut.txt")
    assert '# stop_reason: "canceled"' in saved
    assert "the token is" not in saved + result.output  # (30 characters: "Final Answer: the token is tok")
    assert invoke("replay", "cut.txt", "--check").exit_code == 0


def test_a_ctrl_c_after_a_line_the_stop_scanner_held_at_its_end_replays(tmp_path, monkeypatch):
    """The line " I think\n" passed the redaction whole, but the stop scanner held its newline
    (it might begin "\nObservation 1:"): the user saw " I think". The replay must read that
    newline too, or the redaction holds the unfinished line and shows nothing."""
    write(tmp_path / "held.toml", '''question = "q"
dialect = "react-paper"
prompt = "react-paper"
redact = ["tok-\\\\w+"]
interrupt = { step = 1, at = 12 }
completions = [" I think\\nmore text\\n"]
[tools.calculator]
''')
    monkeypatch.chdir(tmp_path)
    assert invoke("run", "held.toml", "--save", "held.txt").exit_code == 0
    assert "model     \\  I think\n" in read(tmp_path / "held.txt")
    assert invoke("replay", "held.txt", "--check").exit_code == 0
    assert "✂ read as Ctrl-C came, never shown, never in the buffer: ⏎" in invoke("show", "held.txt").output


@pytest.mark.parametrize("pattern", ["abc(?!\\\\n)", "abc$", "abc\\\\b"])
def test_a_first_line_the_prefix_rule_stops_at_the_stop_sequence_replays_under_any_pattern(tmp_path, monkeypatch, pattern):
    """governed: "Sure abc" breaks the prefix rule and the stop "\\nObservation" ends its line;
    the recorded cut is the line without the stop, and a pattern that looks past its match
    masks it on replay as it did live."""
    write(tmp_path / "cut.toml", f'''question = "q"
dialect = "governed"
prompt = "governed"
chunk_size = 3
redact = ["{pattern}"]
completions = ["Sure abc\\nObservation: 5\\n", "Thought: done\\nFinal Answer: 5\\n"]
[tools.calculator]
''')
    monkeypatch.chdir(tmp_path)
    assert invoke("run", "cut.toml", "--save", "cut.txt").exit_code == 0
    assert "began 'Sure ***'" in read(tmp_path / "cut.txt")
    assert invoke("replay", "cut.txt", "--check").exit_code == 0


def test_a_pattern_that_backtracks_without_end_masks_the_whole_line_and_the_run_goes_on(tmp_path):
    """`(a|a)+$` takes exponential time on a long run of a's: the line it is stuck on is
    masked whole (secret and all), and the run ends as usual instead of hanging."""
    hostile = f"{TOKEN} " + "a" * 60 + "!"
    write(tmp_path / "slow.toml", f'''question = "What does the vault say?"
redact = ["(a|a)+$|tok-[0-9a-f]+"]
completions = ["Thought: {hostile}\\nAction: vault(main)\\n", "Final Answer: done\\n"]
[tools.vault]
description = "Open a vault"
results = {{ main = "{hostile}" }}
''')
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", "slow.toml", "--save", "run.txt"],
        cwd=tmp_path, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    saved = read(tmp_path / "run.txt")
    assert "model     | Thought: ***\n" not in saved  # (the whole line goes, "Thought:" too)
    assert "model     | ***\n" in saved and "code      | Observation: ***\n" in saved
    assert TOKEN not in saved + done.stdout and "aaaa" not in saved + done.stdout
