"""The harness_proxy fixture, driven through pytester as a user's test suite runs it: the
first run records from the upstream, later runs replay with the upstream gone, a changed
prompt fails with the diff, and a test that fails while recording leaves no cassette."""

from __future__ import annotations

import json

import pytest

from harness.pytest_plugin import folder_name
from tests.loopback import FakeServer, Reply

pytest_plugins = ["pytester"]

AGENT = '''
import httpx

QUESTION = "2+3?"


def test_agent(harness_proxy):
    buffer = "Question: " + QUESTION + "\\nThought:"
    for _ in range(2):
        r = httpx.post(harness_proxy + "/completions", json={"model": "m", "prompt": buffer})
        assert r.status_code == 200, r.json()["error"]["message"]
        buffer += r.json()["choices"][0]["text"] + "\\nObservation: 5\\nThought:"
    assert buffer.endswith(" done\\nObservation: 5\\nThought:")
'''


def answer(text: str) -> Reply:
    return Reply(chunks=[json.dumps({"choices": [{"index": 0, "text": text, "finish_reason": "stop"}]}).encode()], content_type="application/json")


@pytest.fixture
def upstream():
    fake = FakeServer()
    fake.serve(answer(" add."), answer(" done"))
    yield fake
    fake.close()


def test_record_once_then_replay_offline_then_fail_on_a_changed_prompt(pytester, upstream):
    pytester.makepyfile(test_proxied_agent=AGENT)
    pytester.runpytest("--harness-proxy-base-url", upstream.url).assert_outcomes(passed=1)
    saved = pytester.path / "cassettes" / folder_name("test_proxied_agent.py::test_agent") / "run-001.txt"
    assert "model     \\  done" in saved.read_text()
    upstream.close()
    pytester.runpytest("--harness-proxy-base-url", upstream.url).assert_outcomes(passed=1)  # replayed
    pytester.makepyfile(test_proxied_agent=AGENT.replace('"2+3?"', '"2+4?"'))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*-developer | Question: 2+3?*", "*+developer | Question: 2+4?*"])


def test_a_test_that_fails_while_recording_writes_no_cassette(pytester, upstream):
    pytester.makepyfile(test_proxied_agent=AGENT.replace('" done\\n', '" other\\n'))
    pytester.runpytest("--harness-proxy-base-url", upstream.url).assert_outcomes(failed=1)
    assert not (pytester.path / "cassettes" / folder_name("test_proxied_agent.py::test_agent")).exists()


def test_mode_none_without_a_cassette_fails_every_call_offline(pytester):
    pytester.makepyfile(test_proxied_agent=AGENT)
    result = pytester.runpytest("--harness-proxy", "none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*not recorded*the cassette holds no such call*"])


@pytest.mark.parametrize(
    ("args", "said"),
    [(["--harness-proxy", "sometimes"], "harness_proxy: --harness-proxy: must be one of once, new_episodes, all, none, not 'sometimes'"),
     ([], "harness_proxy: --harness-proxy-base-url (or HARNESS_BASE_URL): mode once records a new cassette: name the upstream server")],
)
def test_a_bad_mode_or_no_server_to_record_from_fails_the_test_in_one_line_naming_pytest_s_option(pytester, monkeypatch, args, said):
    monkeypatch.delenv("HARNESS_BASE_URL", raising=False)
    pytester.makepyfile(test_proxied_agent=AGENT)
    result = pytester.runpytest(*args)
    result.assert_outcomes(errors=1)
    # once as its own line; the short summary may repeat it, cut to the terminal's width
    assert result.stdout.lines.count(said) == 1 and "During handling" not in result.stdout.str(), result.stdout.str()


def test_parametrized_tests_whose_ids_differ_only_in_unsafe_characters_keep_a_cassette_each(pytester, upstream):
    upstream.answer = lambda body: answer(" done" if "Observation" in body["prompt"] else " add.")
    parametrized = AGENT.replace('QUESTION = "2+3?"\n\n\n', "import pytest\n\n\n@pytest.mark.parametrize('QUESTION', ['2/3?', '2_3?', '2:3?'])\n")
    pytester.makepyfile(test_proxied_agent=parametrized.replace("def test_agent(harness_proxy)", "def test_agent(harness_proxy, QUESTION)"))
    pytester.runpytest("--harness-proxy-base-url", upstream.url).assert_outcomes(passed=3)
    folders = sorted((pytester.path / "cassettes").iterdir())
    assert len(folders) == 3 and all(f.name.startswith("test_proxied_agent.py__test_agent[2_3_]-") for f in folders)
    assert sorted("2/3?" in t or "2_3?" in t or "2:3?" in t for t in (f.joinpath("run-001.txt").read_text() for f in folders)) == [True] * 3
    upstream.close()
    pytester.runpytest("--harness-proxy", "none").assert_outcomes(passed=3)  # each replays its own


def test_a_cassette_under_its_old_name_is_one_line_saying_what_to_rename_it_to(pytester):
    # Before parameters had a cassette each, a test's cassette was cassettes/TEST_NAME.
    pytester.makepyfile(test_proxied_agent=AGENT)
    (pytester.path / "cassettes" / "test_agent").mkdir(parents=True)
    result = pytester.runpytest("--harness-proxy", "none")
    result.assert_outcomes(errors=1)
    new = folder_name("test_proxied_agent.py::test_agent")
    result.stdout.fnmatch_lines([f"*harness_proxy: *cassettes/test_agent is this test's cassette under its old name; rename it to {new}*"])
