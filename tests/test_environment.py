"""Every environment variable harness or httpx reads is input: a bad one is one line naming
it, exit 2, never a traceback or a message about something else ("writing the output
failed"). Through the command, as a user meets it, with the variable set alone.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
READ = ("proxy", "ssl_cert", "harness_", "openai_api_key")  # what the cases set, kept out of the inherited environment


def run(env: dict[str, str], url: str = "https://127.0.0.1:9/v1", *more: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.lower().startswith(READ) and not k.lower().endswith("_proxy")}
    command = [sys.executable, "-m", "harness", "run", "calculator", "--model", "openai:m", "--base-url", url, "-f", "tagged", *more]
    return subprocess.run(command, capture_output=True, text=True, env=clean | env, timeout=60)


CASES = {
    "socks without socksio": ({"ALL_PROXY": "socks5://127.0.0.1:1080"}, "ALL_PROXY: a socks5:// proxy needs the socksio package"),
    "socks, lower case": ({"all_proxy": "socks5h://127.0.0.1:1080"}, "all_proxy: a socks5:// proxy needs the socksio package"),
    "an unclosed bracket": ({"HTTP_PROXY": "http://[::1"}, "HTTP_PROXY: is not a URL that can be read"),
    "a port that is no number": ({"HTTPS_PROXY": "proxy:80a"}, "HTTPS_PROXY: is not a URL that can be read"),
    "a scheme httpx has no proxy for": ({"HTTPS_PROXY": "ftp://proxy:21"}, "HTTPS_PROXY: 'ftp://proxy:21' is not a proxy URL httpx can use"),
    "a password holding /": ({"HTTP_PROXY": "http://u:SECRET/PART@proxy:3128"}, "HTTP_PROXY: is not a URL that can be read, and is not shown"),
    "a bad NO_PROXY host": ({"HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "example.com,[::1"}, "NO_PROXY: httpx cannot use it"),
    "no such certificate file": ({"SSL_CERT_FILE": "/nonexistent/ca.pem"}, "SSL_CERT_FILE: '/nonexistent/ca.pem' cannot be read as certificates to trust (No such file or directory)"),
    "a certificate file with no certificate": ({"SSL_CERT_FILE": str(HERE / "loopback.py")}, "SSL_CERT_FILE: "),
    "a certificate file that is a folder": ({"SSL_CERT_FILE": str(HERE)}, "SSL_CERT_FILE: "),
    "no such certificate folder": ({"SSL_CERT_DIR": "/nonexistent/certs"}, "SSL_CERT_DIR: '/nonexistent/certs' is not a folder"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_bad_variable_is_one_line_naming_it_and_exit_2(tmp_path, case):
    env, says = CASES[case]
    if "socksio" in says and importlib.util.find_spec("socksio") is not None:
        pytest.skip("socksio is installed here: a socks5:// proxy is usable")
    saved = tmp_path / "run.txt"
    result = run(env, "https://127.0.0.1:9/v1", "--save", str(saved))
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {says}"), line
    assert "SECRET" not in line and "PART" not in line
    assert not saved.exists()


def test_good_variables_are_used_as_before():
    """A proxy given as host:port and the system's certificates: the call is made (through
    the proxy, which is not there) and fails as a model error, not as bad input."""
    result = run({"HTTPS_PROXY": "127.0.0.1:9", "SSL_CERT_DIR": str(HERE)})
    assert result.returncode == 3, result.stderr
    assert "through the proxy a *_proxy variable names" in result.stderr


def test_a_certificate_variable_is_not_read_for_a_plain_http_server():
    """httpx loads certificates only for TLS: a plain http:// server on this machine is
    reached whatever SSL_CERT_FILE says."""
    result = run({"SSL_CERT_FILE": "/nonexistent/ca.pem"}, "http://127.0.0.1:9/v1")
    assert result.returncode == 3, result.stderr
    assert "cannot connect to http://127.0.0.1:9/v1" in result.stderr


@pytest.mark.parametrize(("name", "value"), [("COLUMNS", "0"), ("LINES", "-1"), ("COLUMNS", "wide")])
def test_a_terminal_size_that_is_no_size_is_one_line_naming_it(name, value):
    """rich sizes the stepper's console by COLUMNS and LINES; 0 columns was a traceback."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")} | {name: value}
    result = subprocess.run([sys.executable, "-m", "harness", "step", "nimbus", "--frame", "1"], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [f"error: {name}: {value!r} is not a whole number from 1 to 100,000 (unset it, or give the terminal's size)"]
