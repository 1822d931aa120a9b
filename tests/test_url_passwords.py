"""A URL's password is in no output, whatever it holds.

RFC 3986 ends a URL's authority at the first `/`, `?` or `#`, so `http://user:pa/ss@host/v1`
reads `ss@host/v1` as its path: a parser's idea of the user-info leaves half the password
in what it would print. harness's rule: everything between `//` and the last `@` is
user-info, never shown; a URL with an `@` after its host is refused (percent-encode the
password), and one that cannot be parsed is quoted nowhere. Tested from every source a
base URL has: --base-url, HARNESS_BASE_URL (the command), --harness-base-url and
HARNESS_BASE_URL (the pytest plugin's usage error).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import record_with_base_url

pytest_plugins = ["pytester"]

# Each holds SECRET (the password, or part of it) or USERNAME where a parser would not look.
URLS = {
    "a / in the password": "http://user:SECRET/PART@host/v1",
    "a ? in the password": "http://user:SECRET?PART@host/v1",
    "a # in the password": "http://user:SECRET#PART@host/v1",
    "a / in the user name": "http://USERNAME/X:SECRET@127.0.0.1:9/v1",  # parses: host "USERNAME", the rest a path
    "a query after a password": "http://user:SECRET@127.0.0.1:9/v1?key=PART",
    "an unparseable host": "http://user:SECRET@[::1/v1",
}
LEAKS = ("SECRET", "PART", "USERNAME", "RET@")


def harness(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "HARNESS_BASE_URL"} | env
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=full, timeout=60)


@pytest.mark.parametrize("source", ["--base-url", "HARNESS_BASE_URL"])
@pytest.mark.parametrize("case", URLS)
def test_the_command_refuses_the_url_in_one_line_without_its_password(tmp_path, case, source):
    url = URLS[case]
    saved = tmp_path / "run.txt"
    args = ["run", "calculator", "--model", "openai:m", "--save", str(saved), "-f", "tagged"]
    result = harness(*args, "--base-url", url, env={}) if source == "--base-url" else harness(*args, env={"HARNESS_BASE_URL": url})
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {source}: "), line
    assert not any(leak in result.stdout + result.stderr for leak in LEAKS), line
    assert not saved.exists()


@pytest.mark.parametrize("source", ["--harness-base-url", "HARNESS_BASE_URL"])
@pytest.mark.parametrize("case", URLS)
def test_pytest_s_usage_error_names_the_source_without_the_password(pytester, monkeypatch, case, source):
    pytester.makeini("[pytest]\n")
    result = record_with_base_url(pytester, monkeypatch, "openai:m", URLS[case], source)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {source}: " in result.stderr.str()
    assert not any(leak in result.stdout.str() + result.stderr.str() for leak in LEAKS)


@pytest.mark.parametrize("url", ["http://user:SECRET%2FPART@127.0.0.1:9/v1", "http://user:SEC@RET@127.0.0.1:9/v1"])
def test_a_url_whose_password_is_read_one_way_still_runs_and_shows_only_its_host(url):
    """The refusal is for the ambiguous spellings only: %2F in a password, or an @ before
    the last one (every parser takes the last `@`), is a URL that works."""
    result = harness("run", "calculator", "--model", "openai:m", "--base-url", url, "-f", "tagged", env={})
    assert result.returncode == 3  # it got as far as calling: nobody listens on port 9
    assert "cannot connect to http://127.0.0.1:9/v1" in result.stderr
    assert not any(leak in result.stdout + result.stderr for leak in LEAKS)
