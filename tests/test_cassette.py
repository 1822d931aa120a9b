"""A transcript is a cassette you can trust: kept anywhere, replayed from its source, never
a false green. Driven through pytester (the plugin) and the command, as a user would.

The project of issue 17's first item: scenarios apart from their saved runs,

    scenarios/weather.toml          prompt_file = "prompts/weather.txt", a Python tool, a canned one
    scenarios/prompts/weather.txt
    scenarios/weather_tools.py
    tests/transcripts/weather.txt   saved with: harness run scenarios/weather.toml --save tests/transcripts/weather.txt
    pytest.ini                      harness_transcripts = tests/transcripts
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import os
from pathlib import Path

import pytest

from tests.conftest import record_with_base_url
from typer.testing import CliRunner

import harness.agent  # noqa: F401 (loaded here, so pytester's in-process runs share one Agent class)
from harness.cli import app
from textfiles import edit, read, write

pytest_plugins = ["pytester"]
runner = CliRunner()

WEATHER = '''question = "What is the weather in Oslo?"
prompt_file = "prompts/weather.txt"
completions = ["Thought: ask the forecast.\\nAction: forecast(Oslo)\\nObservation: sunny\\n", "Action: units(Oslo)\\n", "Final Answer: rain\\n"]
[tools.forecast]
python = "weather_tools:forecast"
[tools.units]
description = "The units the forecast is in"
params = ["x"]
results = { Oslo = "metric" }
'''
TEMPLATE = "You are a weather desk.\n$tools\nQuestion: $question\n"
TOOLS = 'def forecast(city):\n    """The forecast for a city."""\n    return f"rain in {city}"\n'
SAVED = Path("tests/transcripts/weather.txt")


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})




@pytest.fixture
def project(pytester, monkeypatch) -> Path:
    """The layout of item 1, its run saved by the command from the project's root."""
    root = pytester.path
    write(root / "scenarios" / "weather.toml", WEATHER)
    write(root / "scenarios" / "prompts" / "weather.txt", TEMPLATE)
    write(root / "scenarios" / "weather_tools.py", TOOLS)
    write(root / "pytest.ini", "[pytest]\nharness_transcripts = tests/transcripts\n")
    (root / "tests" / "transcripts").mkdir(parents=True)
    monkeypatch.chdir(root)
    result = invoke("run", "scenarios/weather.toml", "--save", str(SAVED), "-f", "tagged")
    assert result.exit_code == 0, result.output
    return root


def test_the_layout_of_scenarios_apart_from_their_saved_runs_replays(pytester, project):
    saved = read(project / SAVED)
    assert '# source: {"scenario": "../../scenarios/weather.toml", "from": "transcript", "sha256": ' in saved
    pytester.runpytest().assert_outcomes(passed=1)
    pytester.runpytest("-n", "2").assert_outcomes(passed=1)  # under pytest-xdist too
    assert invoke("replay", str(SAVED), "--check").exit_code == 0  # the command finds it the same way


def test_the_layout_fails_on_an_edited_observation_and_harness_update_repairs_it(pytester, project):
    good = read(project / SAVED)
    edit(project / SAVED, "code      | Observation: rain in Oslo", "code      | Observation: snow in Oslo")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["tests/transcripts/weather.txt: first difference in step 1 (code: Observation: snow in Oslo)"])
    update = pytester.runpytest("--harness-update")
    update.assert_outcomes(passed=1)
    update.stdout.fnmatch_lines(["rewrote tests/transcripts/weather.txt"])
    assert read(project / SAVED) == good
    pytester.runpytest().assert_outcomes(passed=1)


@pytest.mark.parametrize(
    "path, old, new, shown",
    [
        ("scenarios/weather.toml", "in Oslo?", "in Bergen?", "+developer | Question: What is the weather in Bergen?"),
        ("scenarios/weather.toml", 'Oslo = "metric"', 'Oslo = "imperial"', "+code      | Observation: imperial"),
        ("scenarios/prompts/weather.txt", "weather desk", "forecast desk", "+developer | You are a forecast desk."),
        ("scenarios/weather_tools.py", "rain in", "hail in", "+code      | Observation: hail in Oslo"),
    ],
    ids=["question", "canned-result", "template", "python-tool"],
)
def test_an_edit_anywhere_in_the_source_is_drift(pytester, project, path, old, new, shown):
    edit(project / path, old, new)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*" + shown + "*"])
    assert "Traceback" not in result.stdout.str()


def test_the_source_s_own_completions_are_not_the_recording(pytester, project):
    # The recorded turns are the model's: editing the scenario's script is not drift until recorded again.
    edit(project / "scenarios" / "weather.toml", "Final Answer: rain", "Final Answer: rain all day")
    pytester.runpytest().assert_outcomes(passed=1)
    recorded = pytester.runpytest("--harness-record", "scripted", "-n", "2")  # the workers' reports carry the list
    recorded.stdout.fnmatch_lines(["*harness --harness-record*", "rewrote tests/transcripts/weather.txt"])
    assert "model     | Final Answer: rain all day\n" in read(project / SAVED)
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_source_that_is_a_looping_link_or_a_fifo_says_which(project, monkeypatch):
    monkeypatch.chdir(project)
    scenario = project / "scenarios" / "weather.toml"
    scenario.unlink()
    scenario.symlink_to(scenario)
    result = invoke("replay", str(SAVED), "--check")
    assert result.exit_code == 2 and "recorded from cannot be read (Too many levels of symbolic links)" in result.stderr
    scenario.unlink()
    os.mkfifo(scenario)
    result = invoke("replay", str(SAVED), "--check")
    assert result.exit_code == 2 and "recorded from is not a regular file" in result.stderr


def test_a_source_that_is_gone_is_one_line_naming_it(pytester, project):
    (project / "scenarios" / "weather.toml").rename(project / "scenarios" / "renamed.toml")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["tests/transcripts/weather.txt: source: the scenario it was recorded from is gone: '../../scenarios/weather.toml'*"])
    assert "Traceback" not in result.stdout.str()
    cli = invoke("replay", str(SAVED), "--check")
    assert cli.exit_code == 2 and cli.stderr.count("\n") == 1 and "'../../scenarios/weather.toml'" in cli.stderr


def test_a_mailed_file_shows_steps_exports_and_loads_without_its_source(project, tmp_path, monkeypatch):
    mailed = tmp_path / "mailed.txt"
    write(mailed, read(project / SAVED))
    monkeypatch.chdir(tmp_path)  # nowhere near the scenario, its template or its tool
    for args in (["show", "mailed.txt"], ["show", "mailed.txt", "-f", "json"], ["step", "mailed.txt", "--frame", "2"]):
        result = invoke(*args)
        assert result.exit_code == 0, (args, result.output)
    assert invoke("export", "mailed.txt", "--html", "page.html", "--markdown", "notes.md").exit_code == 0
    from harness import load_record

    record = load_record(read(mailed), "mailed.txt")
    assert record.source.scenario == "../../scenarios/weather.toml" and record.scenario.prompt_file == "prompts/weather.txt"


def test_a_file_without_a_source_line_still_loads_and_replays_from_its_stored_copy(tmp_path, monkeypatch):
    from harness.record import run_scenario
    from harness.scenario import find_scenario, load_scenario

    old = "".join(line for line in run_scenario(load_scenario(find_scenario("nimbus"))).saved.splitlines(True) if not line.startswith("# source:"))
    write(tmp_path / "old.txt", old)
    monkeypatch.chdir(tmp_path)
    assert invoke("replay", "old.txt", "--check").exit_code == 0
    assert invoke("show", "old.txt").exit_code == 0


def test_a_file_whose_stored_copy_names_a_python_tool_is_refused_and_runs_nothing(tmp_path, monkeypatch):
    # A saved file is data: mailed, added by a pull request. Its stored scenario copy naming
    # `os:system` as a tool must not make `replay --check` (or the pytest plugin) run it.
    monkeypatch.chdir(tmp_path)
    pwned = tmp_path / "PWNED"
    write(tmp_path / "mk.toml", f'question = "q"\ncompletions = ["Action: system(touch {pwned})\\n", "Final Answer: 4\\n"]\n[tools.system]\npython = "os:system"\n')
    assert invoke("run", "mk.toml", "--save", "made.txt").exit_code == 0
    pwned.unlink()  # (the recording ran it: the scenario on disk is the user's own code)
    text = read(tmp_path / "made.txt")
    write(tmp_path / "mail" / "stealth.txt", "".join(line for line in text.splitlines(True) if not line.startswith("# source:")))
    for command in (["replay", "mail/stealth.txt", "--check"], ["replay", "mail/stealth.txt"]):
        result = invoke(*command)
        assert result.exit_code == 2, result.output
        assert result.stderr == (
            "error: mail/stealth.txt: metadata scenario: its stored copy names a Python tool (system = 'os:system'): a saved file "
            "runs code and reads files only through the scenario file it names as its source (save it again with harness run)\n"
        )
    assert not pwned.exists()
    assert invoke("show", "mail/stealth.txt").exit_code == 0  # it still shows: it is only text


def test_a_file_whose_stored_copy_names_a_prompt_file_is_refused_and_reads_nothing(tmp_path, monkeypatch):
    # Its prompt_file would read any file beside the transcript (an .env) into the buffer, the
    # output and, with --model, the request.
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.txt", "Question: $question\n")
    write(tmp_path / "mk.toml", 'question = "q"\nprompt_file = "p.txt"\ncompletions = ["Final Answer: 4\\n"]\n')
    assert invoke("run", "mk.toml", "--save", "made.txt").exit_code == 0
    text = read(tmp_path / "made.txt").replace('"prompt_file": "p.txt"', '"prompt_file": ".env"')
    write(tmp_path / "mail" / ".env", "SECRET_TOKEN=abc123\n")
    write(tmp_path / "mail" / "evil.txt", "".join(line for line in text.splitlines(True) if not line.startswith("# source:")))
    result = invoke("replay", "mail/evil.txt", "-f", "tagged")
    assert result.exit_code == 2 and "its stored copy names a prompt_file ('.env')" in result.stderr
    assert "abc123" not in result.output


# --- a run made from Python ---------------------------------------------------------

AGENT = '''from harness import Agent


def add(a: int, b: int) -> str:
    """Add two whole numbers."""
    return str(a + b)


desk = Agent(prompt="Use these tools:\\n$tools\\n\\nQuestion: $question\\n", tools=[add], source="desk_agent:desk")
'''
AGENT_TEST = '''from harness import ScriptedModel
from desk_agent import desk

TURNS = ["Thought: add them.\\nAction: add(2, 3)\\nObservation: 6\\n", "Final Answer: 5\\n"]


def test_desk(transcript_snapshot):
    assert desk.run("What is 2 + 3?", ScriptedModel(TURNS)) == transcript_snapshot


def test_save_a_cassette():
    record = desk.run("What is 2 + 3?", ScriptedModel(TURNS))
    with open("tests/transcripts/desk.txt", "w", encoding="utf-8", newline="") as f:
        f.write(record.saved)
'''


def test_an_agent_run_saved_by_the_snapshot_fixture_and_by_record_saved_replays(pytester, monkeypatch):
    root = pytester.path
    write(root / "desk_agent.py", AGENT)
    write(root / "tests" / "test_desk.py", AGENT_TEST)
    (root / "tests" / "transcripts").mkdir()
    write(root / "pytest.ini", "[pytest]\npythonpath = .\nharness_transcripts = tests\n")  # the snapshots live under tests/ too
    monkeypatch.chdir(root)
    pytester.runpytest("--snapshot-update", "tests/test_desk.py").assert_outcomes(passed=2)
    snapshot = root / "tests" / "__snapshots__" / "test_desk" / "test_desk.txt"
    assert '# source: {"agent": "desk_agent:desk", "question": "What is 2 + 3?", "sha256": ' in read(snapshot)
    # The snapshot folder is the fixture's: never collected as replays; the cassette is.
    result = pytester.runpytest("--collect-only", "-q")
    assert [line for line in result.stdout.lines if "::" in line and ".txt" in line] == ["tests/transcripts/desk.txt::desk"]
    pytester.runpytest().assert_outcomes(passed=3)
    for saved in (snapshot, root / "tests" / "transcripts" / "desk.txt"):
        assert invoke("replay", str(saved), "--check").exit_code == 0, saved
    sys.modules.pop("desk_agent", None)  # the replays above imported it into this process
    edit(root / "desk_agent.py", "return str(a + b)", "return str(a + b + 1)")  # the agent's tool changed
    result = pytester.runpytest("tests/transcripts")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*-code      | Observation: 5", "*+code      | Observation: 6"])


def test_an_agent_without_a_source_says_how_to_name_one(tmp_path, monkeypatch):
    from harness import Agent, ScriptedModel

    record = Agent(prompt="Q: $question\n$tools\n").run("q?", ScriptedModel(["Final Answer: a\n"]))
    write(tmp_path / "a.txt", record.saved)
    monkeypatch.chdir(tmp_path)
    result = invoke("replay", "a.txt")
    assert result.exit_code == 2 and "Agent(..., source='module:attribute')" in result.stderr


# --- no false green -------------------------------------------------------------------


@pytest.mark.parametrize(
    "mangle, says",
    [
        (lambda t: t.replace("\n", "\r\n"), "Windows line endings (CRLF, \\r\\n)*add `*.txt -text` to .gitattributes*"),
        (lambda t: "\ufeff" + t, "*byte-order mark (BOM*"),
        (lambda t: "\ufeff" + t.replace("\n", "\r\n"), "*byte-order mark (BOM*"),
    ],
    ids=["crlf", "bom", "bom-crlf"],
)
def test_a_crlf_or_bom_transcript_is_collected_and_fails_loudly(pytester, project, mangle, says):
    write(project / "tests" / "transcripts" / "windows.txt", mangle(read(project / SAVED)))
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)  # never "1 passed" with the mangled file not run
    result.stdout.fnmatch_lines(["tests/transcripts/windows.txt:1: *" + says])


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_a_utf16_transcript_is_collected_and_fails_loudly(pytester, project, tmp_path, monkeypatch, encoding):
    text = read(project / SAVED)
    mangled = ("\ufeff" + text).encode("utf-16-be") if encoding == "utf-16-be" else text.encode("utf-16")  # PowerShell 5's `>`
    (project / "tests" / "transcripts" / "windows.txt").write_bytes(mangled)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)  # never "1 passed" with the re-encoded file not run
    result.stdout.fnmatch_lines(["*windows.txt*UTF-16*save it as UTF-8*"])
    monkeypatch.chdir(project)
    replayed = invoke("replay", "tests/transcripts", "--check")
    assert replayed.exit_code == 2 and "windows.txt: the file is UTF-16 text" in replayed.stderr


def test_replay_check_names_the_line_endings(tmp_path, monkeypatch):
    from harness.record import run_scenario
    from harness.scenario import find_scenario, load_scenario

    write(tmp_path / "crlf.txt", run_scenario(load_scenario(find_scenario("nimbus"))).saved.replace("\n", "\r\n"))
    monkeypatch.chdir(tmp_path)
    result = invoke("replay", "crlf.txt", "--check")
    assert result.exit_code == 2
    assert "crlf.txt:1: the file has Windows line endings (CRLF" in result.stderr and ".gitattributes" in result.stderr


@pytest.mark.parametrize("command", [["show"], ["step", "--frame", "0"], ["export", "--html", "p.html"]])
def test_every_command_that_reads_a_transcript_names_a_byte_order_mark(tmp_path, monkeypatch, command):
    from harness.record import run_scenario
    from harness.scenario import find_scenario, load_scenario

    write(tmp_path / "bom.txt", "\ufeff" + run_scenario(load_scenario(find_scenario("nimbus"))).saved)
    monkeypatch.chdir(tmp_path)
    result = invoke(command[0], "bom.txt", *command[1:])
    assert result.exit_code == 2 and "bom.txt:1: the file begins with a byte-order mark (BOM" in result.stderr


def test_the_worked_example_ships_a_gitattributes_that_keeps_transcripts_byte_exact():
    example = Path(__file__).parent / "examples" / "support"
    assert "*.txt -text" in (example / ".gitattributes").read_text(encoding="utf-8").splitlines()


# --- facts of the recording ---------------------------------------------------------


class CountingModel:
    """A backend that reports its own token counts, as a server honouring include_usage does."""

    def __init__(self, completions):
        from harness.model import ScriptedModel

        self.script = ScriptedModel(completions)

    def stream(self, prompt, stop):
        from harness.model import TokenUsage

        yield from self.script.stream(prompt, stop)
        yield TokenUsage(len(prompt) // 4, 3, 9)


def test_a_replay_keeps_the_recorded_token_counts(tmp_path, monkeypatch):
    from harness.record import run_scenario
    from harness.scenario import find_scenario, load_scenario

    scenario = load_scenario(find_scenario("nimbus"))
    record = run_scenario(scenario, model=CountingModel(scenario.completions), peek=100, root=tmp_path).placed(tmp_path / "live.txt")
    assert record.calls[-1].tokens["completion_tokens"] == 9
    write(tmp_path / "live.txt", record.saved)
    monkeypatch.chdir(tmp_path)
    result = invoke("replay", "live.txt", "--check")
    assert result.exit_code == 0, result.output
    shown = invoke("replay", "live.txt", "-f", "tagged").stdout
    assert shown == record.saved  # the counts are facts of the recording: kept, not recomputed or dropped


@pytest.mark.parametrize("bad", ['"nine"', "true", "1e999", "-1", "NaN"])
def test_a_file_with_bad_token_counts_is_refused_in_one_line(tmp_path, monkeypatch, bad):
    from harness.record import run_scenario
    from harness.scenario import find_scenario, load_scenario

    text = run_scenario(load_scenario(find_scenario("calculator"))).saved
    text = text.replace('"notices": []}', f'"notices": [], "tokens": {{"prompt_tokens": 1, "completion_tokens": {bad}}}}}', 1)
    write(tmp_path / "bad.txt", text)
    monkeypatch.chdir(tmp_path)
    for command in ("show", "replay"):
        result = invoke(command, "bad.txt")
        assert result.exit_code == 2, result.output
        assert result.stderr.count("\n") == 1 and "metadata calls: entry 1: tokens must map names to whole numbers" in result.stderr


# --- record mode against a live (loopback) server ------------------------------------


class Server:
    """An OpenAI-compatible completions server on 127.0.0.1 that answers each call with the
    next completion of its script (ignoring the stop strings, as some servers do) and counts."""

    def __init__(self, completions: list[str]) -> None:
        script = iter(completions)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                events = [{"choices": [{"index": 0, "text": next(script), "finish_reason": "stop"}]}]
                events.append({"choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 7}})
                body = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_harness_record_runs_each_source_live_and_the_plain_run_replays_it_offline(pytester, project):
    server = Server(["Thought: check.\nAction: forecast(Bergen)\n", "Final Answer: rain in Bergen\n"])
    try:
        result = pytester.runpytest("--harness-record", "openai:fake", "--harness-base-url", server.url)
    finally:
        server.close()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["rewrote tests/transcripts/weather.txt"])
    saved = read(project / SAVED)
    assert "model     | Action: forecast(Bergen)\n" in saved and "code      | Observation: rain in Bergen\n" in saved
    assert '"tokens": {"prompt_tokens": 40, "evaluated_tokens": null, "completion_tokens": 7}' in saved
    assert '# model: "openai:fake"\n' in saved  # which model made it: a fact of the recording
    pytester.runpytest().assert_outcomes(passed=1)  # offline: no server now, the recorded turns and counts


@pytest.mark.parametrize("source", ["--harness-base-url", "HARNESS_BASE_URL"])
def test_a_recording_base_url_with_a_query_is_a_usage_error_naming_where_it_came_from(pytester, project, monkeypatch, source):
    result = record_with_base_url(pytester, monkeypatch, "openai:fake", "http://127.0.0.1:9/v1?key=SECRETSECRET", source)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{source}: 'http://127.0.0.1:9/v1…' has a ?query" in result.stderr.str()
    assert "SECRET" not in result.stdout.str() + result.stderr.str()


def test_record_and_update_do_not_go_together(pytester, project):
    result = pytester.runpytest("--harness-record", "scripted", "--harness-update")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_a_live_replay_check_compares_only_what_a_replay_can_reproduce(project, monkeypatch):
    # Recorded with one server's counts, replayed live on another that counts differently:
    # the same text is a match; the counts are facts of each recording, not drift.
    first = Server(["Thought: check.\nAction: forecast(Oslo)\n", "Final Answer: rain\n"])
    try:
        assert invoke("run", "scenarios/weather.toml", "--model", "openai:fake", "--base-url", first.url, "--save", "live.txt").exit_code == 0
    finally:
        first.close()
    saved = read(project / "live.txt")
    assert '# model: "openai:fake"\n' in saved
    write(project / "live.txt", saved.replace('"prompt_tokens": 40', '"prompt_tokens": 41'))
    second = Server(["Thought: check.\nAction: forecast(Oslo)\n", "Final Answer: rain\n"])
    try:
        result = invoke("replay", "live.txt", "--check", "--model", "openai:other", "--base-url", second.url)
    finally:
        second.close()
    assert result.exit_code == 0, result.output
    assert invoke("replay", "live.txt", "--check").exit_code == 0  # and offline


def test_an_edit_that_changes_nothing_the_run_shows_passes_and_is_listed(pytester, project):
    """A comment in a shared tools module is not drift (issue 31, item 6): the replay passes,
    the summary names the file whose hash is stale, and --harness-update refreshes it."""
    saved = read(project / SAVED)
    edit(project / "scenarios" / "weather_tools.py", "def forecast", "# a comment\ndef forecast")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*harness: edited sources, the same runs*",
            "1 saved transcript replayed the same from an edited source (only source.sha256 differs; "
            "--harness-update records the new hash, --harness-strict-source fails on it):",
            "  tests/transcripts/weather.txt",
        ]
    )
    assert read(project / SAVED) == saved  # nothing written without --harness-update
    single = invoke("replay", str(SAVED), "--check")  # the command agrees, for one file and for a folder
    assert single.exit_code == 0 and "gives the same run; only source.sha256 differs" in single.stdout
    assert invoke("replay", "tests/transcripts", "--check").exit_code == 0
    update = pytester.runpytest("--harness-update")
    update.assert_outcomes(passed=1)
    update.stdout.fnmatch_lines(["rewrote tests/transcripts/weather.txt"])
    assert read(project / SAVED) != saved
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert "edited sources" not in result.stdout.str()


def test_a_real_edit_fails_only_the_runs_it_changes(pytester, project):
    """Two scenarios share a tools module; an edit that changes one's observation fails that
    one alone: the other's run is the same, and passes with its hash listed as stale."""
    units = WEATHER.replace('completions = ["Thought: ask the forecast.\\nAction: forecast(Oslo)\\nObservation: sunny\\n", ', "completions = [")
    assert units != WEATHER
    write(project / "scenarios" / "units.toml", units)
    assert invoke("run", "scenarios/units.toml", "--save", "tests/transcripts/units.txt", "-f", "tagged").exit_code == 0
    edit(project / "scenarios" / "weather_tools.py", 'f"rain in {city}"', 'f"snow in {city}"')
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["tests/transcripts/weather.txt: first difference in step 1 (code: Observation: rain in Oslo)", "  tests/transcripts/units.txt"])
    assert "the run is the same" not in result.stdout.str()  # (only units.txt's is, and it passes)


@pytest.mark.parametrize("strict", [["--harness-strict-source"], ["-o", "harness_strict_source=true"]], ids=["option", "ini"])
def test_strict_source_fails_on_the_source_s_hash_alone(pytester, project, strict):
    edit(project / "scenarios" / "weather_tools.py", "def forecast", "# a comment\ndef forecast")
    result = pytester.runpytest(*strict)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "tests/transcripts/weather.txt: the records are the same; only the metadata differs",
            "metadata that differs: source.sha256",
            "the source was edited since this was recorded, and the run is the same: pytest --harness-update records its new hash",
        ]
    )
    check = invoke("replay", str(SAVED), "--check", "--strict-source")
    assert check.exit_code == 1 and "metadata that differs: source.sha256" in check.stdout
    assert invoke("replay", "tests/transcripts", "--check", "--strict-source").exit_code == 1
    pytester.runpytest("--help").stdout.fnmatch_lines(["*--harness-strict-source*", "*harness_strict_source (bool)*"])
    pytester.runpytest("--harness-update").assert_outcomes(passed=1)
    pytester.runpytest(*strict).assert_outcomes(passed=1)


def test_a_model_name_that_is_not_a_string_is_refused_in_one_line(tmp_path, monkeypatch):
    from harness.record import run_scenario
    from harness.scenario import find_scenario, load_scenario

    text = run_scenario(load_scenario(find_scenario("calculator"))).saved.replace("# cuts:", "# model: 5\n# cuts:", 1)
    write(tmp_path / "bad.txt", text)
    monkeypatch.chdir(tmp_path)
    result = invoke("show", "bad.txt")
    assert result.exit_code == 2 and "bad.txt: metadata model: must be the model's name, a string" in result.stderr


@pytest.mark.parametrize(
    "source, says",
    [
        ("5", ": must be a table naming a scenario or an agent"),
        ('{"scenario": 5, "from": "root"}', ".scenario: must be a string"),
        ('{"scenario": "a.toml", "from": "anywhere"}', ".from: must be one of transcript, root, shipped, not 'anywhere'"),
        ('{"scenario": "/etc/a.toml", "from": "root"}', ".scenario: must be a relative path to a .toml file"),
        ('{"scenario": "notes.txt", "from": "transcript"}', ".scenario: must be a relative path to a .toml file"),
        ('{"scenario": "../nimbus", "from": "shipped"}', ".scenario: a shipped scenario is named without a path"),
        ('{"agent": "os", "question": "q"}', ".agent: must read 'module:attribute'"),
        ('{"agent": "os:path", "question": 1}', ".question: must be a string"),
        ('{"scenario": "nimbus", "from": "shipped", "sha256": "zz"}', ".sha256: must be 64 hex digits"),
        ('{"scenario": null, "from": "root"}', ".scenario: must be a string"),
        ('{"scenario": "nimbus", "from": "shipped", "overrides": []}', ".overrides: must be a table of scenario fields"),
        (  # a file that looks like a shipped scenario's run, carrying a tool of its own
            '{"scenario": "nimbus", "from": "shipped", "overrides": {"tools": {"system": {"python": "os:system"}}}}',
            ".overrides: may change only what a run changes (max_steps, use_stop, endpoint, interrupt, model_error, redact), not 'tools'",
        ),
    ],
)
def test_a_bad_source_line_is_refused_in_one_line_by_every_command(tmp_path, monkeypatch, source, says):
    from harness.record import run_scenario
    from harness.scenario import find_scenario, load_scenario

    text = run_scenario(load_scenario(find_scenario("nimbus"))).saved
    start = text.index("# source: ")
    write(tmp_path / "bad.txt", text[:start] + f"# source: {source}" + text[text.index("\n", start):])
    monkeypatch.chdir(tmp_path)
    for command in (["show"], ["replay", "--check"], ["step", "--frame", "0"]):
        result = invoke(command[0], "bad.txt", *command[1:])
        assert result.exit_code == 2, (command, result.output)
        assert result.stderr == f"error: bad.txt: metadata source{says}\n"


def test_an_agent_source_that_is_not_an_agent_is_one_line(tmp_path, monkeypatch):
    from harness.record import run_scenario
    from harness.scenario import find_scenario, load_scenario

    text = run_scenario(load_scenario(find_scenario("nimbus"))).saved
    start = text.index("# source: ")
    write(tmp_path / "a.txt", text[:start] + '# source: {"agent": "json:dumps", "question": "q"}' + text[text.index("\n", start):])
    monkeypatch.chdir(tmp_path)
    result = invoke("replay", "a.txt")
    assert result.exit_code == 2 and result.stderr == "error: a.txt: metadata source.agent: 'json:dumps' is a function, not an Agent\n"
    assert invoke("show", "a.txt").exit_code == 0  # showing it never imports anything


def test_an_update_that_changes_what_a_kept_turn_followed_says_so_and_names_harness_record(pytester, project):
    """The observation now says snow, the recorded answer still says rain (issue 31, item 7):
    the failure names --harness-record beside --harness-update, and the update warns."""
    edit(project / "scenarios" / "weather_tools.py", 'f"rain in {city}"', 'f"snow in {city}"')
    failed = pytester.runpytest()
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(
        [
            "(if the new replay is right: pytest --harness-update rewrites tests/transcripts/weather.txt, keeping the recorded "
            "model turns; if the model should answer the new text: pytest --harness-record MODEL (a live model, or `scripted`: "
            "the scenario's own completions) asks the model again)"
        ]
    )
    update = pytester.runpytest("--harness-update")
    update.assert_outcomes(passed=1)
    update.stdout.fnmatch_lines(
        [
            "rewrote tests/transcripts/weather.txt",
            "warning: tests/transcripts/weather.txt: call 2's recorded turn was kept, but it followed code's text that this "
            'update changed ("Observation: rain in Oslo" is now "Observation: snow in Oslo"), which the model never read; '
            "pytest --harness-record MODEL*",
        ]
    )
    assert "code      | Observation: snow in Oslo\nmodel     | Action: units(Oslo)" in read(project / SAVED)
    edit(project / "scenarios" / "prompts" / "weather.txt", "\nQuestion:", "\nQuestion (short):")  # the prompt every turn followed
    again = pytester.runpytest("--harness-update", "-n", "2")  # carried from the workers under xdist
    again.stdout.fnmatch_lines(["warning: tests/transcripts/weather.txt: call 1's recorded turn was kept, but it followed developer's text*"])
    assert "warning:" not in pytester.runpytest("--harness-update").stdout.str()  # nothing changed: nothing to say


@pytest.mark.parametrize("name, option", [("governed-research", "--no-stop"), ("step-limit", "--max-steps=7"), ("calc-fix", "--max-steps=9")])
def test_a_run_saved_with_options_replays_its_tools_and_results_in_the_file_s_order(tmp_path, monkeypatch, name, option):
    monkeypatch.chdir(tmp_path)  # its overrides rebuild the scenario: in the order its file gives, never sorted
    assert invoke("run", name, option, "--save", "saved.txt").exit_code == 0
    result = invoke("replay", "saved.txt", "--check")
    assert result.exit_code == 0, result.output


def test_a_replay_writes_token_counts_back_as_the_file_orders_them(tmp_path, monkeypatch):
    from harness.record import run_scenario
    from harness.scenario import find_scenario, load_scenario

    scenario = load_scenario(find_scenario("nimbus"))
    record = run_scenario(scenario, model=CountingModel(scenario.completions), peek=100, root=tmp_path).placed(tmp_path / "live.txt")
    reordered = [{**c.to_meta(), "tokens": dict(reversed(c.tokens.items()))} if c.tokens else c.to_meta() for c in record.calls]
    text = record.saved.replace(f"# calls: {json.dumps([c.to_meta() for c in record.calls])}", f"# calls: {json.dumps(reordered)}")
    assert text != record.saved
    write(tmp_path / "live.txt", text)
    monkeypatch.chdir(tmp_path)
    assert invoke("replay", "live.txt", "--check").exit_code == 0  # the same counts, in another order: the file's


def test_a_lone_surrogate_in_metadata_is_refused_escaped_or_not():
    from harness.errors import TranscriptFormatError
    from harness.saved import load_record

    for value in ('"\\ud800"', '"\ud800"'):  # a str handed to the API may hold one as it is
        with pytest.raises(TranscriptFormatError, match="lone surrogate"):
            load_record(f"# harness transcript v1\n# final_answer: {value}\nmodel     | x\n")
